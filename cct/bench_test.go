package cct

import (
	"testing"
	"time"
)

// bigProfile has one thread of n records (a chain of calls fanning out)
// with four paths each and two metrics after freq.
func bigProfile(n int) *Profile {
	p := &Profile{
		Version: Version,
		Metrics: []Metric{{FreqMetric, MetricReal}, {"tsc", MetricFallback}, {"instructions", MetricReal}},
	}
	t := Thread{TID: 1, Records: make([]Record, n)}
	vals := make([]uint64, 4*n*2)
	for i := range t.Records {
		r := Record{Func: uint32(i % 1000), Parent: -1, Calls: uint64(i)}
		if i >= 1000 {
			r.Parent = i/1000 - 1
			r.CallSite = uint32(i % 7)
			r.Func = uint32(i)
		}
		r.Paths = make([]Path, 4)
		for k := range r.Paths {
			m := vals[(4*i+k)*2 : (4*i+k)*2+2]
			m[0], m[1] = uint64(1000*i+k), uint64(3*i)
			r.Paths[k] = Path{ID: uint64(k * 1000), Count: uint64(i + 1), Metrics: m}
		}
		t.Records[i] = r
	}
	p.Threads = []Thread{t}
	return p
}

// TestParseLinear: one big thread followed by many small ones must not
// cost big × many (per-thread state is dropped, not cleared). The bound is
// a ratio to the two parts parsed alone in the same run, so that a slow or
// busy machine (or -race) does not fail it: a parse that clears the big
// thread's state per small thread takes thousands of times as long.
func TestParseLinear(t *testing.T) {
	const big, many = 100_000, 300_000
	bigThread := rawFile{}.uv(1).uv(big)
	for i := range big {
		bigThread = bigThread.uv(uint64(i)).uv(0).uv(0).uv(1).uv(0)
	}
	bigThread = bigThread.uv(0)
	small := rawFile{}.uv(2).uv(1).uv(0).uv(0).uv(0).uv(1).uv(0).uv(0)
	file := func(withBig bool, nsmall int) []byte {
		body := rawHeader()
		if withBig {
			body = body.u8(TagThread)
			body = append(body.uv(uint64(len(bigThread))), bigThread...)
		}
		for range nsmall {
			body = body.section(TagThread, small)
		}
		return body.trailer()
	}
	parse := func(data []byte, threads int) time.Duration {
		start := time.Now()
		p, err := Parse(data)
		if err != nil || len(p.Threads) != threads {
			t.Fatalf("%d threads: %v", threads, err)
		}
		return time.Since(start)
	}
	alone := parse(file(true, 0), 1) + parse(file(false, many), many)
	if both := parse(file(true, many), many+1); both > 5*alone+100*time.Millisecond {
		t.Fatalf("parsing one thread of %d records and %d small ones took %v; the parts alone %v", big, many, both, alone)
	}
}

func BenchmarkParse(b *testing.B) {
	data, err := bigProfile(100_000).MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	p := bigProfile(100_000)
	for b.Loop() {
		if _, err := p.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFoldThreads(b *testing.B) {
	p := bigProfile(100_000)
	p.Threads = append(p.Threads, p.Threads[0], p.Threads[0])
	for b.Loop() {
		p.FoldThreads()
	}
}
