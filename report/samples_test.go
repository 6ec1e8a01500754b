package report

import (
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// TestPathWeights: a sample at block 2 is shared among the context's
// paths through 2 by their counts; with a prefix, among those that begin
// with it (and start where it starts); none fits: nil.
func TestPathWeights(t *testing.T) {
	n := &CNode{Paths: []CPath{
		{ID: 0, Blocks: []int{0, 1, 3}, Metrics: []uint64{10}},
		{ID: 1, Blocks: []int{0, 2, 3}, Metrics: []uint64{30}},
		{ID: 2, Blocks: []int{1, 2, 3}, Metrics: []uint64{10}},
	}}
	c := &Model{}
	w := c.pathWeights(n, 2, nil)
	if len(w) != 3 || w[0] != 0 || w[1] != 0.75 || w[2] != 0.25 {
		t.Errorf("block 2: weights %v, want [0 0.75 0.25]", w)
	}
	if w := c.pathWeights(n, 5, nil); w != nil {
		t.Errorf("block 5: weights %v, want none", w)
	}
	if !fits([]int{0, 2, 3}, 2, &meta.Expansion{Blocks: []int{0, 2}}) || fits([]int{1, 2, 3}, 2, &meta.Expansion{Blocks: []int{0, 2}}) {
		t.Error("fits: a path extends a prefix when it begins with the prefix's blocks")
	}
}

func TestFormatSampled(t *testing.T) {
	s := &SampleInfo{Sampling: cct.Sampling{Requested: "cycles", Event: "cpu-clock", Kind: cct.MetricFallback, Source: cct.SourcePerf,
		Unit: cct.UnitNanoseconds, Period: 1000, Dropped: 2, Missed: 1}, Recorded: 40}
	for v, want := range map[uint64]string{0: "0 (0 samples)", 5000: "5000 (5 samples)", 2500: "2500 (2.5 samples)"} {
		if got := s.FormatSampled(v); got != want {
			t.Errorf("FormatSampled(%d) = %q, want %q", v, got, want)
		}
	}
	want := "sampled: 1 sample per 1000 ns of thread CPU time (user space) by perf, 40 samples; fallback: cycles could not be sampled here; 3 lost; a path's value is its estimated share"
	if got := s.Describe(); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
