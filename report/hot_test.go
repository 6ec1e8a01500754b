package report

// Golden tests of the hot-path view on the synthetic calling-context tree
// of cct_test.go (testdata/hot-*.golden, rewritten by -update), and its
// laws: the hot set is the shortest prefix of the ranking that reaches
// the threshold, and dense means a rate at least the average.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/golden"
)

func TestHotGolden(t *testing.T) {
	for _, tc := range []struct {
		metric string
		share  float64
	}{{"", 0.9}, {"insns", 0.9}, {"tsc", 0.5}, {"freq", 1}} {
		name := fmt.Sprintf("hot-metric-%s-share-%g.golden", tc.metric, tc.share)
		if tc.metric == "" {
			name = fmt.Sprintf("hot-share-%g.golden", tc.share)
		}
		m := viewTree(t)
		m.Debug = viewLines()
		m.Modules[0].Debug = m.Debug
		h, err := MakeHotPaths(m, tc.metric, tc.share)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := HotText(&buf, h, HotOptions{}); err != nil {
			t.Fatal(err)
		}
		golden.CheckString(t, name, buf.String())
	}
}

func TestHotLaws(t *testing.T) {
	c := viewTree(t)
	if got := DefaultHotMetric(c); got != "tsc" {
		t.Errorf("default metric %q, want tsc (the profile's measured metric)", got)
	}
	for _, share := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		h, err := MakeHotPaths(c, "tsc", share)
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for i, hp := range h.Hot {
			if i > 0 && hp.Value > h.Hot[i-1].Value {
				t.Errorf("share %g: not ranked: %d after %d", share, hp.Value, h.Hot[i-1].Value)
			}
			if float64(sum) >= share*float64(h.Total) {
				t.Errorf("share %g: path %d is not needed (sum %d of %d before it)", share, i, sum, h.Total)
			}
			sum += hp.Value
			if hp.Dense != (hp.Rate >= h.Average) {
				t.Errorf("share %g: path %d: dense %v, rate %g, average %g", share, i, hp.Dense, hp.Rate, h.Average)
			}
			if want := float64(hp.Value) / float64(hp.Count*hp.Insns); hp.Rate != want {
				t.Errorf("rate %g, want %g", hp.Rate, want)
			}
		}
		if float64(sum) < share*float64(h.Total) || sum != h.HotSum {
			t.Errorf("share %g: hot paths sum to %d (HotSum %d) of %d", share, sum, h.HotSum, h.Total)
		}
	}
	if _, err := MakeHotPaths(c, "tsc", 0); err == nil {
		t.Error("share 0 accepted")
	}
	if _, err := MakeHotPaths(c, "cycles", 0.9); err == nil {
		t.Error("unknown metric accepted")
	}
}

func TestLineSpan(t *testing.T) {
	lt := viewLines()
	for _, tc := range []struct {
		lo, hi uint64
		want   string
	}{
		{0x1000, 0x1010, "main.c:3-10"},
		{0x1010, 0x1018, "main.c:11-12"},
		{0x1004, 0x1006, "main.c:3"},
		{0x2010, 0x3010, "a.c:9, b.c:1"},
		{0x3010, 0x3020, ""},
	} {
		if got := lt.Span(tc.lo, tc.hi); got != tc.want {
			t.Errorf("Span(%#x, %#x) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	if got := (*DebugInfo)(nil).Span(0, 10); got != "" {
		t.Errorf("nil table: %q", got)
	}
}
