package cct

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// contextTotals is an oracle for FoldThreads: per calling context (the
// chain of (function, call site) from the root, spelled out), the summed
// calls and, per path, count and metrics; per partial key, the count.
type contextTotals struct {
	calls    map[string]uint64
	paths    map[string]map[uint64][]uint64 // [count, metrics...]
	partials map[string]uint64
	// Per context and path (key "chain|id"): the latency buckets summed
	// and the largest value seen (decision 93).
	hist map[string][LatencyBuckets]uint64
	max  map[string]uint64
}

func chain(t *Thread, i int) string {
	var parts []string
	for ; i >= 0; i = t.Records[i].Parent {
		r := t.Records[i]
		parts = append(parts, fmt.Sprintf("%d@%d", r.Func, r.CallSite))
	}
	return strings.Join(parts, "<")
}

func totalsOf(p *Profile) contextTotals {
	c := contextTotals{map[string]uint64{}, map[string]map[uint64][]uint64{}, map[string]uint64{}, map[string][LatencyBuckets]uint64{}, map[string]uint64{}}
	for ti := range p.Threads {
		t := &p.Threads[ti]
		for ri, r := range t.Records {
			k := chain(t, ri)
			c.calls[k] += r.Calls
			if c.paths[k] == nil {
				c.paths[k] = map[uint64][]uint64{}
			}
			for _, path := range r.Paths {
				v := c.paths[k][path.ID]
				if v == nil {
					v = make([]uint64, 1+len(path.Metrics))
					c.paths[k][path.ID] = v
				}
				v[0] += path.Count
				for j, x := range path.Metrics {
					v[1+j] += x
				}
				if l := path.Latency; l != nil {
					lk := fmt.Sprintf("%s|%d", k, path.ID)
					h := c.hist[lk]
					for _, b := range l.Buckets {
						h[b.Log2] += b.Count
					}
					c.hist[lk] = h
					c.max[lk] = max(c.max[lk], l.Max())
				}
			}
		}
		for _, q := range t.Partials {
			rec := "-"
			if q.Record >= 0 {
				rec = chain(t, q.Record)
			}
			c.partials[fmt.Sprintf("%s|%d|%d|%d", rec, q.Func, q.Block, q.Reg)] += q.Count
		}
	}
	return c
}

func TestFoldThreads(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 4))
		p := randProfile(rng)
		before := p.encode()
		f := p.FoldThreads()
		if err := f.CheckValid(); err != nil {
			t.Fatalf("seed %d: folded profile invalid: %v", seed, err)
		}
		if string(p.encode()) != string(before) {
			t.Fatalf("seed %d: FoldThreads modified its input", seed)
		}
		if want := min(len(p.Threads), 1); len(f.Threads) != want {
			t.Fatalf("seed %d: %d threads after folding %d", seed, len(f.Threads), len(p.Threads))
		}
		if !reflect.DeepEqual(totalsOf(p), totalsOf(f)) {
			t.Fatalf("seed %d: context totals differ after folding", seed)
		}
		if !reflect.DeepEqual(p.Flat(), f.Flat()) {
			t.Fatalf("seed %d: flat view differs after folding", seed)
		}
		if ff := f.FoldThreads(); !reflect.DeepEqual(f, ff) {
			t.Fatalf("seed %d: folding is not idempotent", seed)
		}
		// Folding keeps the header.
		g := *f
		g.Threads = p.Threads
		if !reflect.DeepEqual(&g, p) {
			t.Fatalf("seed %d: header changed by folding", seed)
		}
	}
}

// TestFoldExact: the small profile folded with a copy of itself and a
// thread of different shape; every number is checked by hand.
func TestFoldExact(t *testing.T) {
	p := smallProfile()
	other := Thread{TID: 99, Records: []Record{
		{Func: 7, Parent: -1, Calls: 1, Paths: []Path{{ID: 4, Count: 1, Metrics: []uint64{9}}}},
		{Func: 0, Parent: -1, Calls: 2, Paths: []Path{{ID: 1, Count: 3, Metrics: []uint64{30}}, {ID: 2, Count: 1, Metrics: []uint64{7}}}},
		{Func: 3, Parent: 1, CallSite: 0, Calls: 1}, // another call site: another context
		{Func: 3, Parent: 1, CallSite: 1, Calls: 4, Paths: []Path{{ID: 1, Count: 4, Metrics: []uint64{40}}}},
	}, Partials: []Partial{
		{Record: 1, Func: 0, Block: 2, Reg: -3, Count: 2},
		{Record: -1, Func: 5, Block: 1, Reg: 0, Count: 1},
	}}
	p.Threads = append(p.Threads, other)
	f := p.FoldThreads()
	want := []Thread{{
		TID: 0,
		Records: []Record{
			{Func: 0, Parent: -1, Calls: 3, Paths: []Path{
				{ID: 0, Count: 1, Metrics: []uint64{300}},
				{ID: 1, Count: 3, Metrics: []uint64{30}},
				{ID: 2, Count: 6, Metrics: []uint64{1007}},
			}},
			{Func: 3, Parent: 0, CallSite: 1, Calls: 9, Paths: []Path{{ID: 1, Count: 9, Metrics: []uint64{240}}}},
			{Func: 7, Parent: -1, Calls: 1, Paths: []Path{{ID: 4, Count: 1, Metrics: []uint64{9}}}},
			{Func: 3, Parent: 0, CallSite: 0, Calls: 1},
		},
		Partials: []Partial{
			{Record: 0, Func: 0, Block: 2, Reg: -3, Count: 3},
			{Record: -1, Func: 5, Block: 1, Reg: 0, Count: 1},
		},
	}}
	if !reflect.DeepEqual(f.Threads, want) {
		t.Fatalf("folded:\n%+v\nwant\n%+v", f.Threads, want)
	}
	flat := f.Flat()
	wantFlat := map[uint32]map[uint64]PathTotals{
		0: {0: {1, []uint64{300}}, 1: {3, []uint64{30}}, 2: {6, []uint64{1007}}},
		3: {1: {9, []uint64{240}}},
		7: {4: {1, []uint64{9}}},
	}
	if !reflect.DeepEqual(flat, wantFlat) {
		t.Fatalf("flat %v, want %v", flat, wantFlat)
	}
}

func TestMerge(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 5))
		a := randProfile(rng)
		b := randLike(rng, a)
		c := randLike(rng, a)
		ea, eb := a.encode(), b.encode()
		m, err := Merge(a, b, c)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if string(a.encode()) != string(ea) || string(b.encode()) != string(eb) {
			t.Fatalf("seed %d: Merge modified an input", seed)
		}
		threads := append(append(append([]Thread(nil), a.Threads...), b.Threads...), c.Threads...)
		if !reflect.DeepEqual(m.Threads, threads) {
			t.Fatalf("seed %d: merged threads are not the inputs' threads in order", seed)
		}
		if m.Flags != a.Flags|b.Flags|c.Flags || m.TimeNS != max(a.TimeNS, b.TimeNS, c.TimeNS) {
			t.Fatalf("seed %d: flags %v time %d", seed, m.Flags, m.TimeNS)
		}
		stats := map[string]uint64{}
		for _, p := range []*Profile{a, b, c} {
			for k, x := range p.Stats {
				stats[k] += x
			}
		}
		if len(stats) == 0 {
			stats = nil
		}
		if !reflect.DeepEqual(m.Stats, stats) {
			t.Fatalf("seed %d: stats %v, want %v", seed, m.Stats, stats)
		}
		// The flat view of the merge is the sum of the inputs' flat views.
		want := map[uint32]map[uint64]PathTotals{}
		for _, p := range []*Profile{a, b, c} {
			for fn, paths := range p.Flat() {
				if want[fn] == nil {
					want[fn] = map[uint64]PathTotals{}
				}
				for id, tot := range paths {
					w, ok := want[fn][id]
					if !ok {
						w.Metrics = make([]uint64, len(tot.Metrics))
						if len(tot.Metrics) == 0 {
							w.Metrics = nil
						}
					}
					w.Count += tot.Count
					for j, x := range tot.Metrics {
						w.Metrics[j] += x
					}
					want[fn][id] = w
				}
			}
		}
		if !reflect.DeepEqual(m.Flat(), want) {
			t.Fatalf("seed %d: flat view of the merge is not the sum", seed)
		}
		// No memory shared with the inputs.
		for ti := range m.Threads {
			for ri := range m.Threads[ti].Records {
				for pi := range m.Threads[ti].Records[ri].Paths {
					m.Threads[ti].Records[ri].Paths[pi].Count++
					for j := range m.Threads[ti].Records[ri].Paths[pi].Metrics {
						m.Threads[ti].Records[ri].Paths[pi].Metrics[j]++
					}
				}
			}
		}
		if string(a.encode()) != string(ea) || string(b.encode()) != string(eb) {
			t.Fatalf("seed %d: merged profile shares memory with an input", seed)
		}
	}
}

// TestMergeSmall: two runs of the small profile, folded: every count and
// metric doubles exactly.
func TestMergeSmall(t *testing.T) {
	a, b := smallProfile(), smallProfile()
	b.PID = 5000
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.PID != 0 || len(m.Threads) != 2 {
		t.Fatalf("pid %d, %d threads", m.PID, len(m.Threads))
	}
	f := m.FoldThreads()
	want := smallProfile()
	want.PID = 0
	want.Stats = map[string]uint64{StatRecords: 4, StatThreads: 2}
	for ri := range want.Threads[0].Records {
		r := &want.Threads[0].Records[ri]
		r.Calls *= 2
		for pi := range r.Paths {
			r.Paths[pi].Count *= 2
			r.Paths[pi].Metrics[0] *= 2
		}
	}
	want.Threads[0].Partials[0].Count = 2
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("folded merge:\n%+v\nwant\n%+v", f, want)
	}
	same, err := Merge(a, a)
	if err != nil || same.PID != a.PID {
		t.Fatalf("merge with itself: %v, pid %d", err, same.PID)
	}
}

func TestMergeErrors(t *testing.T) {
	base := smallProfile()
	cases := []struct {
		name   string
		change func(p *Profile)
		err    error
		msg    string
	}{
		{"build-id", func(p *Profile) { p.BuildID = []byte{1}; p.Modules[0].BuildID = []byte{1} }, ErrIncompatible, "module p (tag 0) has build-id deadbeef in profile 0 and 01 in profile 1"},
		{"library build-id", func(p *Profile) { p.Modules[1].BuildID = []byte{2} }, ErrIncompatible, "module libz.so.1 (tag 5) has build-id 0b1d in profile 0 and 02 in profile 1"},
		{"another program", func(p *Profile) {
			p.BuildID = []byte{1}
			p.Modules[0].BuildID = []byte{1}
			p.Modules[0].Path = "/bin/q"
		}, ErrIncompatible, "profile 0 is a profile of p, profile 1 one of q, another program (module tag 0 in both): profiles cannot be merged"},
		{"executable-only build-id", func(p *Profile) { p.Modules = nil; p.BuildID = []byte{1} }, ErrIncompatible, "module p (tag 0) has build-id deadbeef in profile 0 and 01 in profile 1"},
		{"metric name", func(p *Profile) { p.Metrics[1].Name = "cycles" }, ErrIncompatible, "metrics freq(real),cycles(fallback), profile 0 has freq(real),tsc(fallback)"},
		{"metric kind", func(p *Profile) { p.Metrics[1].Kind = MetricReal }, ErrIncompatible, "has metrics"},
		{"metric count", func(p *Profile) {
			p.Metrics = p.Metrics[:1]
			for ri := range p.Threads[0].Records {
				for pi := range p.Threads[0].Records[ri].Paths {
					p.Threads[0].Records[ri].Paths[pi].Metrics = nil
				}
			}
		}, ErrIncompatible, "has metrics freq(real), profile 0"},
		{"flow-only", func(p *Profile) { p.Flags = FlagFlowOnly; p.Threads = nil }, ErrIncompatible, "profile 1 is flow-only, profile 0 is context-sensitive"},
		{"invalid input", func(p *Profile) { p.Threads[0].Records[0].Paths[0].Count = 0 }, ErrInvalid, "merge: profile 1: cct: thread 0 record 0 path 0: path 0 with count 0"},
		{"total overflow", func(p *Profile) { p.Threads[0].Records[0].Paths[0].Count = ^uint64(0) - 10 }, ErrInvalid, "merge: cct: thread 1 record 0 path 0: the profile's total of freq overflows"},
		{"stats overflow", func(p *Profile) { p.Stats[StatThreads] = ^uint64(0) }, ErrIncompatible, `sum of stats key "threads" overflows`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := smallProfile()
			c.change(p)
			m, err := Merge(base, p)
			if m != nil || !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Merge: %v, want %v with %q", err, c.err, c.msg)
			}
		})
	}
	if _, err := Merge(); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("Merge(): %v", err)
	}
}

// TestMergeModules: the merged module table is the union of the inputs',
// by tag; a profile without a table stands for its executable; a module
// unloaded in any input is unloaded in the result.
func TestMergeModules(t *testing.T) {
	a := smallProfile()
	b := smallProfile()
	b.Modules = append(b.Modules[:1], Module{Tag: 9, Flags: ModuleFlagUnloaded, Path: "/lib/libm.so.6", BuildID: []byte{9}})
	b.Modules = append(b.Modules, Module{Tag: 5, Flags: ModuleFlagUnloaded, Path: "/other/libz.so.1", BuildID: []byte{0x0b, 0x1d}})
	b.Modules[1], b.Modules[2] = b.Modules[2], b.Modules[1]
	b.Threads[0].Records = append(b.Threads[0].Records, Record{Func: 9<<FidBits | 1, Parent: 1, CallSite: 0, Calls: 2})
	c := smallProfile()
	c.Modules = nil
	m, err := Merge(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{
		{Tag: 0, Flags: ModuleFlagExecutable, Path: "/bin/p", BuildID: []byte{0xde, 0xad, 0xbe, 0xef}},
		{Tag: 5, Flags: ModuleFlagUnloaded, Bias: 0x7f0000000000, Path: "/lib/libz.so.1", BuildID: []byte{0x0b, 0x1d}},
		{Tag: 9, Flags: ModuleFlagUnloaded, Path: "/lib/libm.so.6", BuildID: []byte{9}},
	}
	if !reflect.DeepEqual(m.Modules, want) {
		t.Fatalf("modules %+v, want %+v", m.Modules, want)
	}
	if string(m.BuildID) != "\xde\xad\xbe\xef" || len(m.Threads) != 3 {
		t.Fatalf("build-id %x, %d threads", m.BuildID, len(m.Threads))
	}
	data, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
	// A library-only process (no instrumented executable) merges too.
	d := smallProfile()
	d.BuildID, d.Modules = nil, d.Modules[1:]
	d.Threads = nil
	if m, err := Merge(d, d); err != nil || len(m.Modules) != 1 || m.BuildID != nil {
		t.Fatalf("library-only merge: %v %+v", err, m)
	}
}
