package cct

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
)

// ErrIncompatible: the profiles given to Merge cannot be added up.
var ErrIncompatible = errors.New("profiles cannot be merged")

// Merge combines the profiles of several runs of one instrumented program.
// They must agree on the build-id of every module they share (modules
// are matched by tag; the result lists the union, mergeModules), on the
// metrics (names and kinds, in
// order) and on the flow-only flag. The result holds every thread of every
// input, in input order, each keeping its own tree (FoldThreads folds them
// into one); Stats are summed key by key; the fatal-signal and dump flags
// say whether any input had them; PID is kept when all inputs agree and 0
// otherwise; TimeNS is the latest. The inputs are not modified and share
// no memory with the result.
func Merge(ps ...*Profile) (*Profile, error) { return MergeNamed(nil, ps) }

// MergeNamed is Merge with the inputs' names (their files, usually),
// which its errors use; nil (or a missing name) says "profile N".
func MergeNamed(names []string, ps []*Profile) (*Profile, error) {
	name := func(i int) string {
		if i < len(names) && names[i] != "" {
			return names[i]
		}
		return fmt.Sprintf("profile %d", i)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("merge: no profiles: %w", ErrIncompatible)
	}
	for i, p := range ps {
		if err := p.CheckValid(); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", name(i), err)
		}
	}
	first := ps[0]
	out := first.header()
	mods, err := mergeModules(ps, name)
	if err != nil {
		return nil, err
	}
	out.Modules = mods
	if mods != nil {
		out.BuildID = nil
		if mods[0].Tag == 0 {
			out.BuildID = bytes.Clone(mods[0].BuildID)
		}
	}
	for i, p := range ps[1:] {
		i++
		if mods == nil && !bytes.Equal(p.BuildID, first.BuildID) {
			return nil, fmt.Errorf("merge: %s has build-id %x, %s has %x; they are runs of different binaries: %w", name(i), p.BuildID, name(0), first.BuildID, ErrIncompatible)
		}
		if !slices.Equal(p.Metrics, first.Metrics) {
			return nil, fmt.Errorf("merge: %s has metrics %s, %s has %s: %w", name(i), metricList(p.Metrics), name(0), metricList(first.Metrics), ErrIncompatible)
		}
		if (p.Flags^first.Flags)&FlagFlowOnly != 0 {
			return nil, fmt.Errorf("merge: %s is %s, %s is %s: %w", name(i), contextWord(p.Flags), name(0), contextWord(first.Flags), ErrIncompatible)
		}
		// Latency distributions (decision 93) of one metric: a profile
		// without any adds its counts, not its distributions.
		switch {
		case out.LatencyMetric == 0:
			out.LatencyMetric = p.LatencyMetric
		case p.LatencyMetric != 0 && p.LatencyMetric != out.LatencyMetric:
			return nil, fmt.Errorf("merge: %s has latency distributions of metric %d, %s of metric %d: %w", name(i), p.LatencyMetric, name(0), out.LatencyMetric, ErrIncompatible)
		}
		out.Flags |= p.Flags
		if p.PID != out.PID {
			out.PID = 0
		}
		out.TimeNS = max(out.TimeNS, p.TimeNS)
		for k, x := range p.Stats {
			if out.Stats == nil {
				out.Stats = make(map[string]uint64)
			}
			s, carry := bits.Add64(out.Stats[k], x, 0)
			if carry != 0 {
				return nil, fmt.Errorf("merge: the sum of stats key %q overflows 64 bits: %w", k, ErrIncompatible)
			}
			out.Stats[k] = s
		}
	}
	sampling, objIndex, err := mergeSampling(ps, name)
	if err != nil {
		return nil, err
	}
	out.Sampling = sampling
	for pi, p := range ps {
		for i := range p.Threads {
			t := p.Threads[i].clone()
			for k := range t.Samples { // objects renumbered: the order may change
				if q := &t.Samples[k]; q.Object >= 0 {
					q.Object = objIndex[pi][q.Object]
				}
			}
			t.Samples = sortSamples(t.Samples)
			out.Threads = append(out.Threads, t)
		}
	}
	// The totals of the result must still fit in 64 bits.
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return out, nil
}

// mergeModules unites the module tables of ps, nil when none has one
// (executable-only profiles, compared by the header's build-id). A
// profile without a table stands for its executable, tag 0. Modules are
// matched by tag and build-id; the same tag with another build-id is a
// run of another build of that module, refused. A module keeps the first
// input's path and load bias; it is unloaded when it was in any input.
func mergeModules(ps []*Profile, name func(int) string) ([]Module, error) {
	any := false
	for _, p := range ps {
		any = any || p.Modules != nil
	}
	if !any {
		return nil, nil
	}
	byTag := map[uint32]int{} // tag → index in out
	var out []Module
	from := map[uint32]int{} // tag → the input that listed it first
	for i, p := range ps {
		ms := p.Modules
		if ms == nil {
			ms = []Module{{Tag: 0, Flags: ModuleFlagExecutable, BuildID: p.BuildID}}
		}
		for _, m := range ms {
			j, ok := byTag[m.Tag]
			if !ok {
				byTag[m.Tag] = len(out)
				from[m.Tag] = i
				m.BuildID = bytes.Clone(m.BuildID)
				out = append(out, m)
				continue
			}
			o := &out[j]
			if !bytes.Equal(o.BuildID, m.BuildID) {
				if o.Path != "" && m.Path != "" && o.Name() != m.Name() {
					// blpp run's followed execs: a profile per program.
					return nil, fmt.Errorf("merge: %s is a profile of %s, %s one of %s, another program (module tag %d in both): %w",
						name(from[m.Tag]), o.Name(), name(i), m.Name(), m.Tag, ErrIncompatible)
				}
				return nil, fmt.Errorf("merge: module %s (tag %d) has build-id %x in %s and %x in %s; they are runs of different builds of it: %w",
					moduleName(o, &m), m.Tag, o.BuildID, name(from[m.Tag]), m.BuildID, name(i), ErrIncompatible)
			}
			o.Flags |= m.Flags
			if o.Path == "" {
				o.Path = m.Path
			}
		}
	}
	slices.SortFunc(out, func(a, b Module) int { return cmp.Compare(a.Tag, b.Tag) })
	return out, nil
}

// moduleName names a module by whichever of two entries has a path.
func moduleName(a, b *Module) string {
	if a.Path == "" {
		return b.Name()
	}
	return a.Name()
}

func metricList(ms []Metric) string {
	var b bytes.Buffer
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s(%v)", m.Name, m.Kind)
	}
	return b.String()
}

func contextWord(f Flags) string {
	if f&FlagFlowOnly != 0 {
		return "flow-only"
	}
	return "context-sensitive"
}

// header copies everything of p but the threads.
func (p *Profile) header() *Profile {
	q := &Profile{
		Version: Version, // a later version holds everything an earlier one can
		Flags:   p.Flags,
		BuildID: bytes.Clone(p.BuildID),
		PID:     p.PID,
		TimeNS:  p.TimeNS,
		Metrics: slices.Clone(p.Metrics),

		LatencyMetric: p.LatencyMetric,
	}
	if len(p.Stats) > 0 {
		q.Stats = maps.Clone(p.Stats)
	}
	if p.Sampling != nil {
		s := *p.Sampling
		s.Objects = slices.Clone(s.Objects)
		q.Sampling = &s
	}
	if p.Modules != nil {
		q.Modules = make([]Module, len(p.Modules))
		for i, m := range p.Modules {
			m.BuildID = bytes.Clone(m.BuildID)
			q.Modules[i] = m
		}
	}
	return q
}

func (t *Thread) clone() Thread {
	c := Thread{TID: t.TID, Partials: slices.Clone(t.Partials), Folded: slices.Clone(t.Folded), Prefixes: slices.Clone(t.Prefixes),
		Samples: slices.Clone(t.Samples)}
	if t.Records != nil {
		c.Records = make([]Record, len(t.Records))
		for i, r := range t.Records {
			r.Paths = clonePaths(r.Paths)
			c.Records[i] = r
		}
	}
	return c
}

func clonePaths(ps []Path) []Path {
	if ps == nil {
		return nil
	}
	out := make([]Path, len(ps))
	for i, p := range ps {
		p.Metrics = slices.Clone(p.Metrics)
		p.Latency = MergeLatency(p.Latency, nil)
		out[i] = p
	}
	return out
}

// FoldThreads returns a profile with the threads of p folded into one
// tree (no thread when p has none). Records reached through the same
// chain of (function, call site) from a root become one record: calls are
// summed, path lists are united by ID with counts and metrics summed and
// latency distributions merged (MergeLatency).
// Partials are summed by (record, function, block, register). Records
// appear in the order they are first met, threads in order, so parents
// still precede children. The folded thread's TID is the threads' common
// TID, or 0 when they differ.
//
// p must be valid (CheckValid); sums cannot overflow then, because a
// valid profile's totals fit in 64 bits. p is not modified.
func (p *Profile) FoldThreads() *Profile {
	out := p.header()
	if len(p.Threads) == 0 {
		return out
	}
	type recKey struct {
		parent   int
		fn, site uint32
	}
	type partKey struct {
		rec       int
		fn, block uint32
		reg       int64
	}
	nm := len(p.Metrics) - 1
	ft := Thread{TID: p.Threads[0].TID}
	recIndex := make(map[recKey]int)
	var sources [][]Path // per folded record, the path lists that fall into it
	partIndex := make(map[partKey]int)
	prefIndex := make(map[partKey]int)
	type foldKey struct {
		from int
		site uint32
		to   int
	}
	foldIndex := make(map[foldKey]int)
	var m []int
	for ti := range p.Threads {
		t := &p.Threads[ti]
		if t.TID != ft.TID {
			ft.TID = 0
		}
		m = slices.Grow(m[:0], len(t.Records))[:len(t.Records)]
		if len(p.Threads) == 1 {
			// One thread: a valid profile has no two records with the same
			// (parent, function, call site), so every record is its own;
			// no index, and the path lists (sorted, IDs unique) are
			// copied into one allocation.
			ft.Records = make([]Record, len(t.Records))
			np := 0
			for i := range t.Records {
				np += len(t.Records[i].Paths)
			}
			paths, vals := make([]Path, np), make([]uint64, np*nm)
			for i := range t.Records {
				r := &t.Records[i]
				m[i] = i
				ft.Records[i] = Record{Func: r.Func, Parent: r.Parent, CallSite: r.CallSite, Calls: r.Calls}
				if len(r.Paths) == 0 {
					continue
				}
				ps := paths[:len(r.Paths):len(r.Paths)]
				paths = paths[len(r.Paths):]
				for k, q := range r.Paths {
					ps[k] = Path{ID: q.ID, Count: q.Count, Latency: MergeLatency(q.Latency, nil)}
					if nm > 0 {
						ps[k].Metrics, vals = vals[:nm:nm], vals[nm:]
						copy(ps[k].Metrics, q.Metrics)
					}
				}
				ft.Records[i].Paths = ps
			}
		}
		for i := range t.Records {
			if len(p.Threads) == 1 {
				break
			}
			r := &t.Records[i]
			k := recKey{-1, r.Func, r.CallSite}
			if r.Parent >= 0 {
				k.parent = m[r.Parent]
			}
			j, ok := recIndex[k]
			if !ok {
				j = len(ft.Records)
				recIndex[k] = j
				ft.Records = append(ft.Records, Record{Func: r.Func, Parent: k.parent, CallSite: r.CallSite})
				sources = append(sources, nil)
			}
			m[i] = j
			ft.Records[j].Calls += r.Calls
			sources[j] = append(sources[j], r.Paths...)
		}
		// Partials, and a fork child's prefixes, by (record, function,
		// block, register).
		for _, l := range []struct {
			src   []Partial
			dst   *[]Partial
			index map[partKey]int
		}{{t.Partials, &ft.Partials, partIndex}, {t.Prefixes, &ft.Prefixes, prefIndex}} {
			for _, q := range l.src {
				if q.Record >= 0 {
					q.Record = m[q.Record]
				}
				k := partKey{q.Record, q.Func, q.Block, q.Reg}
				if j, ok := l.index[k]; ok {
					(*l.dst)[j].Count += q.Count
					continue
				}
				l.index[k] = len(*l.dst)
				*l.dst = append(*l.dst, q)
			}
		}
		for _, q := range t.Samples {
			if q.Record >= 0 {
				q.Record = m[q.Record]
			}
			ft.Samples = append(ft.Samples, q)
		}
		for _, c := range t.Folded {
			c.From, c.To = m[c.From], m[c.To]
			k := foldKey{c.From, c.CallSite, c.To}
			if j, ok := foldIndex[k]; ok {
				ft.Folded[j].Count += c.Count
				continue
			}
			foldIndex[k] = len(ft.Folded)
			ft.Folded = append(ft.Folded, c)
		}
	}
	if len(p.Threads) > 1 {
		for j := range ft.Records {
			ft.Records[j].Paths = sumPaths(sources[j], nm)
		}
	}
	ft.Samples = sortSamples(ft.Samples)
	out.Threads = []Thread{ft}
	return out
}

// sumPaths unites path lists: one entry per ID, in ID order, counts and
// metrics summed. The result shares no memory with ps.
func sumPaths(ps []Path, nm int) []Path {
	if len(ps) == 0 {
		return nil
	}
	sorted := slices.IsSortedFunc(ps, func(a, b Path) int { return cmp.Compare(a.ID, b.ID) })
	if !sorted {
		ps = slices.Clone(ps)
		slices.SortStableFunc(ps, func(a, b Path) int { return cmp.Compare(a.ID, b.ID) })
	}
	n := 1
	for i := 1; i < len(ps); i++ {
		if ps[i].ID != ps[i-1].ID {
			n++
		}
	}
	out := make([]Path, 0, n)
	var vals []uint64
	if nm > 0 {
		vals = make([]uint64, n*nm)
	}
	for _, p := range ps {
		if k := len(out); k > 0 && out[k-1].ID == p.ID {
			q := &out[k-1]
			q.Count += p.Count
			for j, x := range p.Metrics {
				q.Metrics[j] += x
			}
			q.Latency = MergeLatency(q.Latency, p.Latency)
			continue
		}
		q := Path{ID: p.ID, Count: p.Count, Latency: MergeLatency(p.Latency, nil)}
		if nm > 0 {
			q.Metrics = vals[:nm:nm]
			vals = vals[nm:]
			copy(q.Metrics, p.Metrics)
		}
		out = append(out, q)
	}
	return out
}

// PathTotals are the sums of one path over every context.
type PathTotals struct {
	Count   uint64
	Metrics []uint64 // as Path.Metrics
}

// Flat is the flow view: for each function, for each path ID, its totals
// over every record of every thread. p must be valid (CheckValid).
func (p *Profile) Flat() map[uint32]map[uint64]PathTotals {
	nm := len(p.Metrics) - 1
	out := make(map[uint32]map[uint64]PathTotals)
	for ti := range p.Threads {
		for ri := range p.Threads[ti].Records {
			r := &p.Threads[ti].Records[ri]
			if len(r.Paths) == 0 {
				continue
			}
			fm := out[r.Func]
			if fm == nil {
				fm = make(map[uint64]PathTotals)
				out[r.Func] = fm
			}
			for _, path := range r.Paths {
				tot, ok := fm[path.ID]
				if !ok && nm > 0 {
					tot.Metrics = make([]uint64, nm)
				}
				tot.Count += path.Count
				for j, x := range path.Metrics {
					tot.Metrics[j] += x
				}
				fm[path.ID] = tot
			}
		}
	}
	return out
}
