package cct

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// latencyProfile is smallProfile with latency distributions of its tsc
// metric on two of its three paths (decision 93).
func latencyProfile() *Profile {
	p := smallProfile()
	p.LatencyMetric = 1
	ps := p.Threads[0].Records[0].Paths
	ps[1].Latency = &Latency{Buckets: []Bucket{{6, 4}, {13, 1}}, Slowest: []uint64{9000, 100, 90, 80}}
	p.Threads[0].Records[1].Paths[0].Latency = &Latency{Buckets: []Bucket{{0, 5}}, Slowest: []uint64{1}}
	return p
}

func TestLatencyRoundTrip(t *testing.T) {
	p := latencyProfile()
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip differs:\n%+v\n%+v", p, q)
	}
	if err := q.CheckLatencyCounts(); err != nil {
		t.Fatal(err)
	}
	// The section follows its THREAD section, and the bytes are what
	// the format says.
	want := rawFile{}.uv(0).uv(1).uv(2).
		uv(0).uv(2).uv(2).uv(6).uv(4).uv(13).uv(1).uv(4).uv(9000).uv(100).uv(90).uv(80).
		uv(1).uv(1).uv(1).uv(0).uv(5).uv(1).uv(1)
	sec := rawFile{}.section(TagLatency, want)
	if !bytes.Contains(data, sec) {
		t.Fatalf("no LATENCY section % x in % x", sec, data)
	}
	// A reader that does not know the tag skips it: the same file
	// without the section is the profile without distributions.
	without := bytes.Replace(data[:len(data)-9], sec, nil, 1)
	r, err := Parse(rawFile(without).trailer())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, smallProfile()) {
		t.Fatalf("without LATENCY: %+v", r)
	}
}

var latencyModelCases = []struct {
	name   string
	break_ func(p *Profile)
	msg    string
	parse  error // nil: the writer cannot encode it
}{
	{"no metric", func(p *Profile) { p.LatencyMetric = 0 }, "has a latency distribution, but the profile has no latency metric", nil},
	{"metric out of range", func(p *Profile) { p.LatencyMetric = 2 }, "latency metric 2 is not a metric", ErrCorrupt},
	{"metric freq", func(p *Profile) { p.LatencyMetric = -1 }, "latency metric -1 is not a metric", nil},
	{"metric unavailable", func(p *Profile) {
		p.Metrics[1].Kind = MetricUnavailable
		for i := range p.Threads[0].Records {
			for j := range p.Threads[0].Records[i].Paths {
				p.Threads[0].Records[i].Paths[j].Metrics[0] = 0
			}
		}
	}, "latency metric 1 (tsc) is unavailable", ErrCorrupt},
	{"metric without distributions", func(p *Profile) {
		p.Threads[0].Records[0].Paths[1].Latency = nil
		p.Threads[0].Records[1].Paths[0].Latency = nil
	}, "but no path has a latency distribution", nil},
	{"no buckets", func(p *Profile) { p.Threads[0].Records[1].Paths[0].Latency.Buckets = nil }, "a latency distribution without buckets", ErrCorrupt},
	{"bucket 64", func(p *Profile) { p.Threads[0].Records[1].Paths[0].Latency.Buckets[0].Log2 = 64 }, "bucket 64", ErrCorrupt},
	{"bucket order", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Latency.Buckets[1].Log2 = 6 }, "latency bucket 6 after 6", ErrCorrupt},
	{"bucket count 0", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Latency.Buckets[1].Count = 0 }, "latency bucket 13 with count 0", ErrCorrupt},
	{"bucket total", func(p *Profile) {
		p.Threads[0].Records[0].Paths[1].Latency.Buckets[1].Count = 1 << 63
		p.Threads[0].Records[1].Paths[0].Latency.Buckets[0].Count = 1 << 63
	}, "total of latency counts overflows", ErrCorrupt},
	{"too many slowest", func(p *Profile) {
		p.Threads[0].Records[1].Paths[0].Latency.Slowest = make([]uint64, MaxSlowest+1)
	}, "17 slowest values (at most 16)", ErrCorrupt},
	{"slowest 0", func(p *Profile) { p.Threads[0].Records[1].Paths[0].Latency.Slowest = []uint64{0} }, "slowest value 0", ErrCorrupt},
	{"slowest order", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Latency.Slowest[2] = 101 }, "slowest value 101 after 100 (largest first)", ErrCorrupt},
}

func TestLatencyModelRules(t *testing.T) {
	if err := latencyProfile().CheckValid(); err != nil {
		t.Fatal(err)
	}
	for _, c := range latencyModelCases {
		t.Run(c.name, func(t *testing.T) {
			p := latencyProfile()
			c.break_(p)
			err := p.CheckValid()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("CheckValid: %v, want ErrInvalid with %q", err, c.msg)
			}
			if c.parse == nil {
				return
			}
			data := p.encode()
			q, err := Parse(data)
			if q != nil || !errors.Is(err, c.parse) {
				t.Fatalf("Parse: %v, want %v", err, c.parse)
			}
			checkFormatError(t, err, data)
		})
	}
}

// A thread with one record of function 0 and paths 1 and 4.
var latThread = rawFile{}.uv(1).uv(1).uv(0).uv(0).uv(0).uv(1).uv(2).uv(1).uv(1).uv(1).uv(4).uv(2).uv(2).uv(0)

// lat is a LATENCY payload of thread 0, metric 1, with the given entries.
func lat(n uint64, entries rawFile) rawFile { return rawFile{}.uv(0).uv(1).uv(n).raw(entries...) }

// one is an entry of path 1 of record 0: bucket 3 counted once, no
// slowest value.
var one = rawFile{}.uv(0).uv(1).uv(1).uv(3).uv(1).uv(0)

var latencyRawCases = []struct {
	name string
	data []byte
	msg  string
}{
	{"before its thread", rawHeader().section(TagLatency, lat(1, one)).section(TagThread, latThread).trailer(), "only 0 THREAD sections precede it"},
	{"twice", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, one)).section(TagLatency, lat(1, one)).trailer(), "a second LATENCY section of thread 0"},
	{"metric 0", rawHeader().section(TagThread, latThread).section(TagLatency, rawFile{}.uv(0).uv(0).uv(1).raw(one...)).trailer(), "latency metric 0 is not a metric"},
	{"metric past the list", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, one)).section(TagThread, latThread).
		section(TagLatency, rawFile{}.uv(1).uv(2).uv(1).raw(one...)).trailer(), "latency metric 2 is not a metric"},
	{"empty", rawHeader().section(TagThread, latThread).section(TagLatency, lat(0, nil)).trailer(), "an empty LATENCY section"},
	{"entry count", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1<<40, one)).trailer(), "latency entry count 1099511627776"},
	{"record", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(1).uv(1).uv(1).uv(3).uv(1).uv(0))).trailer(), "thread 0 latency entry 0 (record 1, path 1): record out of range (1 records)"},
	{"no such path", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(0).uv(2).uv(1).uv(3).uv(1).uv(0))).trailer(), "the record has no such path"},
	{"entry order", rawHeader().section(TagThread, latThread).section(TagLatency, lat(2, rawFile{}.uv(0).uv(4).uv(1).uv(3).uv(1).uv(0).raw(one...))).trailer(), "after record 0 path 4 (entries increase)"},
	{"bucket 64", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(0).uv(1).uv(1).uv(64).uv(1).uv(0))).trailer(), "bucket 64 (there are 64)"},
	{"bucket count", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(0).uv(1).uv(1<<50).uv(3).uv(1).uv(0))).trailer(), "latency bucket count 1125899906842624"},
	{"65 buckets", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(0).uv(1).uv(65).raw(make([]byte, 200)...))).trailer(), "65 buckets (there are 64)"},
	{"slowest count", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, rawFile{}.uv(0).uv(1).uv(1).uv(3).uv(1).uv(17).raw(make([]byte, 17)...))).trailer(), "17 slowest values (at most 16)"},
	{"leftover", rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, one).raw(0)).trailer(), "1 bytes left at the end of the LATENCY section"},
}

func TestLatencyRawCorruptions(t *testing.T) {
	// The base case parses.
	good := rawHeader().section(TagThread, latThread).section(TagLatency, lat(1, one)).trailer()
	p, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Threads[0].Records[0].Paths[0].Latency; p.LatencyMetric != 1 || l == nil || !reflect.DeepEqual(l.Buckets, []Bucket{{3, 1}}) || l.Slowest != nil {
		t.Fatalf("parsed %+v", p.Threads[0].Records[0].Paths)
	}
	for _, c := range latencyRawCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.data)
			if p != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Parse: %v, want ErrCorrupt with %q", err, c.msg)
			}
			checkFormatError(t, err, c.data)
		})
	}
}

func TestBucketsAndQuantiles(t *testing.T) {
	for _, c := range []struct {
		v uint64
		b uint8
	}{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}, {255, 7}, {256, 8}, {1 << 40, 40}, {^uint64(0), 63}} {
		if got := BucketOf(c.v); got != c.b {
			t.Errorf("BucketOf(%d) = %d, want %d", c.v, got, c.b)
		}
	}
	// 99 fast executions and 1 slow one: p50 and p99 fast, p100 slow.
	l := &Latency{Buckets: []Bucket{{8, 99}, {14, 1}}, Slowest: []uint64{20000, 300}}
	for _, c := range []struct {
		q float64
		b uint8
	}{{0, 8}, {0.5, 8}, {0.99, 8}, {0.991, 14}, {1, 14}} {
		if b, ok := l.Quantile(c.q); !ok || b != c.b {
			t.Errorf("Quantile(%v) = %d %v, want %d", c.q, b, ok, c.b)
		}
	}
	// 98 and 2: p99 is the slow one.
	l.Buckets = []Bucket{{8, 98}, {14, 2}}
	if b, _ := l.Quantile(0.99); b != 14 {
		t.Errorf("p99 of 98+2: bucket %d, want 14", b)
	}
	if _, ok := (&Latency{}).Quantile(0.5); ok {
		t.Error("an empty histogram has a quantile")
	}
	if l.Count() != 100 || l.Max() != 20000 || (&Latency{}).Max() != 0 {
		t.Errorf("count %d, max %d", l.Count(), l.Max())
	}
}

func TestMergeLatency(t *testing.T) {
	a := &Latency{Buckets: []Bucket{{2, 1}, {5, 3}}, Slowest: []uint64{40, 7, 5}}
	b := &Latency{Buckets: []Bucket{{1, 2}, {5, 1}, {9, 1}}, Slowest: []uint64{600, 6}}
	want := &Latency{Buckets: []Bucket{{1, 2}, {2, 1}, {5, 4}, {9, 1}}, Slowest: []uint64{600, 40, 7}}
	if got := MergeLatency(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	if got := MergeLatency(b, a); !reflect.DeepEqual(got, want) {
		t.Errorf("merged the other way %+v, want %+v", got, want)
	}
	c := MergeLatency(a, nil)
	if !reflect.DeepEqual(c, a) || &c.Buckets[0] == &a.Buckets[0] {
		t.Errorf("a copy of a: %+v", c)
	}
	if MergeLatency(nil, nil) != nil {
		t.Error("nothing merged is something")
	}
}

func TestCheckLatencyCounts(t *testing.T) {
	p := latencyProfile()
	p.Threads[0].Records[0].Paths[1].Latency.Buckets[0].Count = 3
	err := p.CheckLatencyCounts()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "latency histogram counts 4 executions, the path 5") {
		t.Fatalf("CheckLatencyCounts: %v", err)
	}
}

// TestMergeLatencyMetrics: runs whose distributions are of different
// metrics are not merged; a run without distributions merges with one
// that has them.
func TestMergeLatencyMetrics(t *testing.T) {
	p := latencyProfile()
	p.Metrics = append(p.Metrics, Metric{"cycles", MetricReal})
	for i := range p.Threads[0].Records {
		for j := range p.Threads[0].Records[i].Paths {
			x := &p.Threads[0].Records[i].Paths[j]
			x.Metrics = append(x.Metrics, 1)
		}
	}
	q := latencyProfile()
	q.Metrics = p.Metrics
	q.LatencyMetric = 2
	q.Threads = p.Threads
	if _, err := Merge(p, q); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "latency distributions of metric 2") {
		t.Fatalf("Merge: %v", err)
	}
	plain := smallProfile()
	m, err := Merge(plain, latencyProfile())
	if err != nil {
		t.Fatal(err)
	}
	if m.LatencyMetric != 1 || m.Threads[1].Records[0].Paths[1].Latency == nil || m.Threads[0].Records[0].Paths[1].Latency != nil {
		t.Fatalf("merged %+v", m)
	}
	f := m.FoldThreads()
	if l := f.Threads[0].Records[0].Paths[1].Latency; l == nil || l.Count() != 5 || f.Threads[0].Records[0].Paths[1].Count != 10 {
		t.Fatalf("folded %+v", f.Threads[0].Records[0].Paths[1])
	}
}
