package cct

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"unsafe"

	rt "github.com/blpp/blpp/runtime"
)

// Live files (decision 94). In continuous mode (BLPP_PROFILE with %c)
// the runtime keeps its counters and calling context trees in a shared
// mapping of the profile file itself, so that the file holds every count
// the moment it is made: when the process dies without writing its
// profile (SIGKILL, the OOM killer) the file is left as the runtime's
// memory was, a live file (runtime/live.go). ParseLive reads one into
// the model: the same records, paths, folded calls, partials and fork
// prefixes the runtime would have written, without the activations that
// were in progress (their paths had not ended: the report says which,
// from the metadata), and with STATS "live" 1. At a clean exit the
// runtime writes the ordinary profile over the live file.
//
// The live file is the runtime's memory, read while (or after) it
// changed: ParseLive trusts nothing in it. Every pointer must fall inside
// the file; a list that loops or runs over the file's size is refused;
// and what the runtime may have been in the middle of making (a record
// whose via it had not yet set, a table entry without its count) reads
// as the runtime publishes it, which is enough for a valid profile.

// LiveMagic opens a live file.
const LiveMagic = "BLPPLIV1"

// IsLive says whether data starts like a live file.
func IsLive(data []byte) bool { return bytes.HasPrefix(data, []byte(LiveMagic)) }

// A Live is what a live file says beyond the profile.
type Live struct {
	// Base is the address the process had the file mapped at; Size the
	// bytes of it the runtime had in use.
	Base, Size uint64
}

// liveMem reads the runtime's memory as the file holds it.
type liveMem struct {
	data []byte
	base uint64
	err  *FormatError
}

func (m *liveMem) fail(off int, format string, args ...any) {
	if m.err == nil {
		m.err = &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
	}
}

// off is the file offset of n bytes at address p, -1 (and the sticky
// error, naming what) when they are not all in the file or p is not
// 8-byte aligned. The header page holds no runtime object.
func (m *liveMem) off(p uint64, n uint64, what string) int {
	o := p - m.base
	if m.err != nil {
		return -1
	}
	if p < m.base || p%8 != 0 || o < rt.LiveHeaderSize || o > uint64(len(m.data)) || n > uint64(len(m.data))-o {
		m.fail(0, "%s at %#x is outside the file (mapped at %#x, %d bytes)", what, p, m.base, len(m.data))
		return -1
	}
	return int(o)
}

// word is the 8-byte word at address p + field, 0 after an error.
func (m *liveMem) word(p, field uintptr, what string) uint64 {
	o := m.off(uint64(p+field), 8, what)
	if o < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(m.data[o:])
}

// fieldOf returns the reader of one object's fields at address p.
func (m *liveMem) obj(p uint64, size uintptr, what string) func(field uintptr) uint64 {
	if m.off(p, uint64(size), what) < 0 {
		return func(uintptr) uint64 { return 0 }
	}
	return func(field uintptr) uint64 { return m.word(uintptr(p), field, what) }
}

func hdrWord(data []byte, field uintptr) uint64 {
	return binary.LittleEndian.Uint64(data[field:])
}

// ParseLive reads a live file into a validated profile. It fails with a
// *FormatError: ErrBadMagic for another kind of file, ErrVersion for a
// live file of another version, ErrTruncated for a file shorter than its
// header says, ErrCorrupt for anything else.
func ParseLive(data []byte) (p *Profile, l *Live, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, l, err = nil, nil, &FormatError{Msg: fmt.Sprint(r), Err: errInternal}
		}
	}()
	var h rt.LiveHeader
	switch {
	case !IsLive(data):
		return nil, nil, &FormatError{Msg: "not a live profile", Err: ErrBadMagic}
	case len(data) < rt.LiveHeaderSize:
		return nil, nil, &FormatError{Off: len(data), Msg: "shorter than the live header", Err: ErrTruncated}
	}
	if v := hdrWord(data, unsafe.Offsetof(h.Version)); v != rt.LiveVersion {
		return nil, nil, &FormatError{Off: 8, Msg: fmt.Sprintf("live file version %d; this blpp reads %d (run the program again)", v, rt.LiveVersion), Err: ErrVersion}
	}
	size := hdrWord(data, unsafe.Offsetof(h.Size))
	if size < rt.LiveHeaderSize || size > uint64(len(data)) {
		return nil, nil, &FormatError{Off: int(unsafe.Offsetof(h.Size)), Msg: fmt.Sprintf("the runtime used %d bytes, the file has %d", size, len(data)), Err: ErrTruncated}
	}
	m := &liveMem{data: data[:size], base: hdrWord(data, unsafe.Offsetof(h.Base))}
	p = &Profile{
		Version: Version,
		Flags:   Flags(hdrWord(data, unsafe.Offsetof(h.Flags))),
		PID:     hdrWord(data, unsafe.Offsetof(h.PID)),
		TimeNS:  hdrWord(data, unsafe.Offsetof(h.TimeNS)),
		Metrics: []Metric{{Name: FreqMetric, Kind: MetricReal}},
		Stats:   map[string]uint64{"live": 1},
	}
	nm := hdrWord(data, unsafe.Offsetof(h.NMetrics))
	if nm > rt.MaxMetrics {
		return nil, nil, &FormatError{Off: int(unsafe.Offsetof(h.NMetrics)), Msg: fmt.Sprintf("%d metrics (at most %d)", nm, rt.MaxMetrics), Err: ErrCorrupt}
	}
	for i := uint64(0); i < nm; i++ {
		off := int(unsafe.Offsetof(h.MName)) + 24*int(i)
		name, _, _ := bytes.Cut(data[off:off+24], []byte{0})
		p.Metrics = append(p.Metrics, Metric{Name: string(name), Kind: MetricKind(hdrWord(data, unsafe.Offsetof(h.MKind)+8*uintptr(i)))})
	}
	// A path's words: its count, its metrics, and with latency
	// distributions its latency word (decisions 93, 148: a kept value
	// or the address of an entry the file does not hold): the live
	// profile has no distributions.
	stride := hdrWord(data, unsafe.Offsetof(h.Stride))
	if stride != 1+nm && stride != 2+nm {
		return nil, nil, &FormatError{Off: int(unsafe.Offsetof(h.Stride)), Msg: fmt.Sprintf("%d words per path with %d metrics", stride, nm), Err: ErrCorrupt}
	}
	lr := &liveReader{m: m, p: p, stride: stride}
	lr.modules(hdrWord(data, unsafe.Offsetof(h.Mods)))
	lr.wiped(hdrWord(data, unsafe.Offsetof(h.Wiped)))
	lr.threads(hdrWord(data, unsafe.Offsetof(h.Threads)))
	if m.err != nil {
		return nil, nil, m.err
	}
	p.Stats[StatThreads] = uint64(len(p.Threads))
	p.Stats[StatArenaBytes] = size
	var nrec uint64
	for _, t := range p.Threads {
		nrec += uint64(len(t.Records))
	}
	p.Stats[StatRecords] = nrec
	if err := p.CheckValid(); err != nil {
		return nil, nil, &FormatError{Msg: err.Error(), Err: ErrCorrupt}
	}
	return p, &Live{Base: m.base, Size: size}, nil
}

// liveReader converts the runtime's objects into the model.
type liveReader struct {
	m        *liveMem
	p        *Profile
	stride   uint64
	prefixes uint64 // struct wiped's fork prefixes table, and the block it belongs to
	owner    uint64
	// sites holds the first call-site id and the number of call sites
	// of each record of the thread being read.
	sites [][2]uint64
}

// most bounds a list of objects of size n: no more than the file holds.
func (lr *liveReader) most(n uintptr) int { return len(lr.m.data)/int(n) + 1 }

func (lr *liveReader) modules(head uint64) {
	var lm rt.LiveMod
	seen := 0
	for a := head; a != 0 && lr.m.err == nil; seen++ {
		if seen > rt.MaxModuleTag+1 {
			lr.m.fail(0, "the module list has more than %d entries", rt.MaxModuleTag+1)
			return
		}
		f := lr.m.obj(a, unsafe.Sizeof(lm), "module entry")
		mod := Module{Tag: uint32(f(unsafe.Offsetof(lm.Tag))), Flags: ModuleFlags(f(unsafe.Offsetof(lm.Flags))), Bias: f(unsafe.Offsetof(lm.Bias))}
		idLen, pathLen := f(unsafe.Offsetof(lm.BuildIDLen)), f(unsafe.Offsetof(lm.PathLen))
		if idLen > uint64(unsafe.Sizeof(lm.BuildID)) || pathLen > uint64(unsafe.Sizeof(lm.Path)) || f(unsafe.Offsetof(lm.Tag)) > MaxTag {
			lr.m.fail(0, "module entry at %#x: tag, build-id or path out of range", a)
			return
		}
		if o := lr.m.off(a+uint64(unsafe.Offsetof(lm.BuildID)), idLen, "build-id"); o >= 0 {
			mod.BuildID = bytes.Clone(lr.m.data[o : o+int(idLen)])
		}
		if o := lr.m.off(a+uint64(unsafe.Offsetof(lm.Path)), pathLen, "module path"); o >= 0 {
			mod.Path = string(lr.m.data[o : o+int(pathLen)])
		}
		if i := slices.IndexFunc(lr.p.Modules, func(x Module) bool { return x.Tag == mod.Tag }); i >= 0 {
			lr.p.Modules[i] = mod // a module loaded again after dlclose: the newest entry
		} else {
			lr.p.Modules = append(lr.p.Modules, mod)
		}
		a = f(unsafe.Offsetof(lm.Next))
	}
	sort.Slice(lr.p.Modules, func(i, j int) bool { return lr.p.Modules[i].Tag < lr.p.Modules[j].Tag })
	if len(lr.p.Modules) > 0 && lr.p.Modules[0].Tag == 0 {
		lr.p.BuildID = lr.p.Modules[0].BuildID
	}
}

// wiped reads struct wiped: the statistics and the fork prefixes.
func (lr *liveReader) wiped(w uint64) {
	if w == 0 {
		return
	}
	f := lr.m.obj(w, rt.LiveWipedPrefixOwnerOff+8, "statistics")
	for i, name := range rt.LiveStatNames {
		lr.p.Stats[name] = f(rt.LiveWipedStatsOff + 8*uintptr(i))
	}
	lr.prefixes, lr.owner = f(rt.LiveWipedPrefixesOff), f(rt.LiveWipedPrefixOwnerOff)
}

func (lr *liveReader) threads(head uint64) {
	var lt rt.LiveThread
	seen := map[uint64]bool{}
	for a := head; a != 0 && lr.m.err == nil; {
		if seen[a] {
			lr.m.fail(0, "the thread list loops at %#x", a)
			return
		}
		seen[a] = true
		f := lr.m.obj(a, unsafe.Sizeof(lt), "thread entry")
		t := Thread{TID: f(unsafe.Offsetof(lt.TID))}
		idx := lr.records(&t, f(unsafe.Offsetof(lt.Records)))
		t.Partials = lr.pents(f(unsafe.Offsetof(lt.Partials)), idx, &t)
		t.Folded = lr.folded(f(unsafe.Offsetof(lt.Folded)), idx, &t)
		if lr.prefixes != 0 && lr.owner == f(unsafe.Offsetof(lt.Block)) {
			t.Prefixes = lr.pents(lr.prefixes, idx, &t)
		}
		lr.p.Threads = append(lr.p.Threads, t)
		a = f(unsafe.Offsetof(lt.Next))
	}
	// The runtime links the newest first; the file's order is the
	// threads' own.
	slices.Reverse(lr.p.Threads)
}

// narrow reads a field of size bytes (1, 2 or 4) at off of an object
// whose words f reads: Record's narrower fields (decision 146).
func narrow(f func(uintptr) uint64, off, size uintptr) uint64 {
	return f(off&^7) >> (8 * (off & 7)) & (1<<(8*size) - 1)
}

// twin is the Twin word of the record at a whose Ext is ext (the word
// before it), 0 when it has none; via its Via (the word before that
// one, or before the record when it has neither Twin nor Counters).
func (lr *liveReader) twin(a, ext uint64) uint64 {
	if ext&rt.RecordExtTwin == 0 || a < 8 {
		return 0
	}
	return lr.m.word(uintptr(a-8), 0, "record's twin")
}

// counts is where the record at a keeps its counters: after it, or,
// with RecordExtSlot, at the address the word before it holds.
func (lr *liveReader) counts(a, ext uint64) uint64 {
	if ext&rt.RecordExtSlot == 0 {
		return a + rt.RecordInlineCounts
	}
	if a < 8 {
		return 0
	}
	return lr.m.word(uintptr(a-8), 0, "record's counters")
}

func (lr *liveReader) via(a, ext uint64) uint64 {
	if ext&rt.RecordExtVia == 0 {
		return 0
	}
	back := uint64(8)
	if ext&(rt.RecordExtTwin|rt.RecordExtSlot) != 0 {
		back = 16
	}
	if a < back {
		return 0
	}
	return lr.m.word(uintptr(a-back), 0, "record's via")
}

// records reads a thread's records, parents first, and returns their
// indices by address.
func (lr *liveReader) records(t *Thread, head uint64) map[uint64]int {
	var r rt.Record
	idx := map[uint64]int{}
	type key struct {
		parent   int
		fn, site uint32
	}
	keys := map[key]int{}
	lr.sites = lr.sites[:0]
	limit := lr.most(unsafe.Sizeof(r))
	n := uint64(0) // records read: the index the runtime gave the next
	for a := head; a != 0 && lr.m.err == nil; {
		if len(idx) > limit {
			lr.m.fail(0, "a record list longer than the file holds")
			return idx
		}
		f := lr.m.obj(a, unsafe.Sizeof(r), "record")
		if narrow(f, unsafe.Offsetof(r.Index), 4) != n {
			lr.m.fail(0, "record at %#x has index %d in place %d", a, narrow(f, unsafe.Offsetof(r.Index), 4), n)
			return idx
		}
		ext := narrow(f, unsafe.Offsetof(r.Ext), 1)
		fn := f(unsafe.Offsetof(r.Func))
		rec := Record{Func: uint32(fn), Parent: -1}
		if fn > 0xffffffff {
			lr.m.fail(0, "record at %#x: function %#x", a, fn)
			return idx
		}
		parent, site := f(unsafe.Offsetof(r.Parent)), narrow(f, unsafe.Offsetof(r.Site), 4)
		if via := lr.via(a, ext); via != 0 {
			parent, site = via, 0 // called back from an uninstrumented function (decision 70)
		}
		if parent != 0 {
			pi, ok := idx[parent]
			if !ok {
				lr.m.fail(0, "record at %#x: parent %#x is not an earlier record of its thread", a, parent)
				return idx
			}
			rec.Parent = pi
			rec.CallSite = lr.localSite(pi, site)
		}
		counts := lr.counts(a, ext)
		rec.Calls = lr.m.word(uintptr(counts), 0, "calls")
		lr.dense(&rec, counts, f(unsafe.Offsetof(r.DenseN)))
		if h := f(unsafe.Offsetof(r.Hash)); h != 0 {
			lr.hashed(&rec, h)
		}
		// A cold record's hot twin (decision 99) counts for it: same
		// header, not in the list, its dense counters inline.
		tw := uint64(0)
		if f(unsafe.Offsetof(r.DenseN)) == 0 {
			tw = lr.twin(a, ext)
		}
		if tw != 0 {
			g := lr.m.obj(tw, unsafe.Sizeof(r), "record")
			if lr.twin(tw, narrow(g, unsafe.Offsetof(r.Ext), 1)) != a || g(unsafe.Offsetof(r.Func)) != fn {
				lr.m.fail(0, "record at %#x: twin %#x is not its own", a, tw)
				return idx
			}
			hot := Record{Func: rec.Func}
			hc := lr.counts(tw, narrow(g, unsafe.Offsetof(r.Ext), 1))
			hot.Calls = lr.m.word(uintptr(hc), 0, "calls")
			lr.dense(&hot, hc, g(unsafe.Offsetof(r.DenseN)))
			lr.merge(&rec, &hot)
		}
		n++
		k := key{rec.Parent, rec.Func, rec.CallSite}
		if j, dup := keys[k]; dup {
			// A twin: the runtime had linked this record and not yet
			// set its via (make_node sets it just after). Its counts
			// are the twin's.
			lr.merge(&t.Records[j], &rec)
			idx[a] = j
			if tw != 0 {
				idx[tw] = j
			}
		} else {
			keys[k] = len(t.Records)
			idx[a] = len(t.Records)
			if tw != 0 {
				idx[tw] = len(t.Records) // frames, folded calls and partials may name the twin
			}
			t.Records = append(t.Records, rec)
			lr.sites = append(lr.sites, [2]uint64{f(unsafe.Offsetof(r.FirstSite)), f(unsafe.Offsetof(r.NSites))})
		}
		a = f(unsafe.Offsetof(r.Next))
	}
	return idx
}

// dense reads the dense counters of n paths at counts (calls at word 0,
// then stride words per path).
func (lr *liveReader) dense(rec *Record, counts, n uint64) {
	if n == 0 {
		return
	}
	if n > uint64(len(lr.m.data))/(8*lr.stride) {
		lr.m.fail(0, "record of %d dense paths: more than the file holds", n)
		return
	}
	o := lr.m.off(counts, 8*(1+n*lr.stride), "counters")
	if o < 0 {
		return
	}
	for id := uint64(0); id < n; id++ {
		v := lr.m.data[o+8*int(1+id*lr.stride):]
		if c := binary.LittleEndian.Uint64(v); c != 0 {
			rec.Paths = append(rec.Paths, lr.path(id, v))
		}
	}
}

func (lr *liveReader) path(id uint64, v []byte) Path {
	pa := Path{ID: id, Count: binary.LittleEndian.Uint64(v)}
	for j := 1; j < len(lr.p.Metrics); j++ {
		x := binary.LittleEndian.Uint64(v[8*j:])
		if lr.p.Metrics[j].Kind == MetricUnavailable {
			x = 0
		}
		pa.Metrics = append(pa.Metrics, x)
	}
	return pa
}

// hashed reads the hash tables of a record (newest first), summing a path
// found in several, and merges them with its dense paths.
func (lr *liveReader) hashed(rec *Record, h uint64) {
	ew := 1 + lr.stride
	sums := map[uint64]Path{}
	seen := map[uint64]bool{}
	for ; h != 0 && lr.m.err == nil; h = lr.m.word(uintptr(h), rt.HTabNextOff, "hash table") {
		if seen[h] {
			lr.m.fail(0, "the hash tables at %#x loop", h)
			return
		}
		seen[h] = true
		capa := lr.m.word(uintptr(h), rt.HTabCapOff, "hash table")
		if capa > uint64(len(lr.m.data)) {
			lr.m.fail(0, "hash table at %#x of %d entries", h, capa)
			return
		}
		o := lr.m.off(h+rt.HTabEntriesOff, 8*capa*ew, "hash table entries")
		if o < 0 {
			return
		}
		for i := uint64(0); i < capa; i++ {
			e := lr.m.data[o+int(8*i*ew):]
			key := binary.LittleEndian.Uint64(e)
			if key == 0 || binary.LittleEndian.Uint64(e[8:]) == 0 {
				continue
			}
			pa := lr.path(key-1, e[8:])
			if s, ok := sums[pa.ID]; ok {
				s.Count += pa.Count
				for j := range s.Metrics {
					s.Metrics[j] += pa.Metrics[j]
				}
				pa = s
			}
			sums[pa.ID] = pa
		}
	}
	for _, pa := range rec.Paths {
		if s, ok := sums[pa.ID]; ok {
			s.Count += pa.Count
			for j := range s.Metrics {
				s.Metrics[j] += pa.Metrics[j]
			}
			pa = s
		}
		sums[pa.ID] = pa
	}
	rec.Paths = rec.Paths[:0]
	for _, pa := range sums {
		rec.Paths = append(rec.Paths, pa)
	}
	sort.Slice(rec.Paths, func(i, j int) bool { return rec.Paths[i].ID < rec.Paths[j].ID })
}

// merge adds record b's counts to a.
func (lr *liveReader) merge(a, b *Record) {
	a.Calls += b.Calls
	byID := map[uint64]int{}
	for i, pa := range a.Paths {
		byID[pa.ID] = i
	}
	for _, pb := range b.Paths {
		if i, ok := byID[pb.ID]; ok {
			a.Paths[i].Count += pb.Count
			for j := range pb.Metrics {
				a.Paths[i].Metrics[j] += pb.Metrics[j]
			}
			continue
		}
		a.Paths = append(a.Paths, pb)
	}
	sort.Slice(a.Paths, func(i, j int) bool { return a.Paths[i].ID < a.Paths[j].ID })
}

// pents reads a partials table: entries with a count, equal ones summed,
// in (record, function, block, register) order.
func (lr *liveReader) pents(tab uint64, idx map[uint64]int, t *Thread) []Partial {
	var e rt.Pent
	if tab == 0 {
		return nil
	}
	es := uint64(unsafe.Sizeof(e))
	o := lr.m.off(tab, rt.LivePtabCap*es, "partials table")
	if o < 0 {
		return nil
	}
	type key struct {
		rec       int
		fn, block uint32
		reg       int64
	}
	sum := map[key]uint64{}
	for i := uint64(0); i < rt.LivePtabCap; i++ {
		b := lr.m.data[o+int(i*es):]
		c := binary.LittleEndian.Uint64(b[unsafe.Offsetof(e.Count):])
		if c == 0 {
			continue
		}
		fn, block := binary.LittleEndian.Uint64(b[unsafe.Offsetof(e.Func):]), binary.LittleEndian.Uint64(b[unsafe.Offsetof(e.Block):])
		if fn > 0xffffffff || block > 0xffffffff {
			lr.m.fail(o+int(i*es), "partial of function %#x, block %#x", fn, block)
			return nil
		}
		k := key{-1, uint32(fn), uint32(block), int64(binary.LittleEndian.Uint64(b[unsafe.Offsetof(e.Reg):]))}
		if ri, ok := idx[binary.LittleEndian.Uint64(b[unsafe.Offsetof(e.Rec):])]; ok && t.Records[ri].Func == k.fn {
			k.rec = ri
		}
		sum[k] += c
	}
	out := make([]Partial, 0, len(sum))
	for k, c := range sum {
		out = append(out, Partial{Record: k.rec, Func: k.fn, Block: k.block, Reg: k.reg, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Record != b.Record {
			return a.Record < b.Record
		}
		if a.Func != b.Func {
			return a.Func < b.Func
		}
		if a.Block != b.Block {
			return a.Block < b.Block
		}
		return a.Reg < b.Reg
	})
	return out
}

// folded reads a thread's folded calls (recursion folded onto an
// ancestor record), as the writer encodes them.
func (lr *liveReader) folded(head uint64, idx map[uint64]int, t *Thread) []FoldedCall {
	var n rt.Node
	var out []FoldedCall
	limit := lr.most(unsafe.Sizeof(n))
	for a, k := head, 0; a != 0 && lr.m.err == nil; k++ {
		if k > limit {
			lr.m.fail(0, "a folded-call list longer than the file holds")
			return nil
		}
		f := lr.m.obj(a, unsafe.Sizeof(n), "folded call")
		c := f(unsafe.Offsetof(n.Count))
		from, okF := idx[f(unsafe.Offsetof(n.Owner))]
		to, okT := idx[f(unsafe.Offsetof(n.Rec))]
		site := uint32(0)
		if via := f(unsafe.Offsetof(n.Via)); via != 0 {
			from, okF = idx[via]
		} else if okF {
			site = lr.localSite(from, f(unsafe.Offsetof(n.Site)))
		}
		if c != 0 && okF && okT && ancestor(t, from, to) {
			out = append(out, FoldedCall{From: from, CallSite: site, To: to, Count: c})
		}
		a = f(unsafe.Offsetof(n.FNext))
	}
	return out
}

// localSite is the profile's call site of call-site id site in record ri
// of the thread being read: its index in the function's list + 1, 0 for
// none (as the runtime's writer has it).
func (lr *liveReader) localSite(ri int, site uint64) uint32 {
	first, n := lr.sites[ri][0], lr.sites[ri][1]
	if site == 0 || site < first || site-first >= n {
		return 0
	}
	return uint32(1 + site - first)
}

// ancestor says whether record to is from or one of its ancestors.
func ancestor(t *Thread, from, to int) bool {
	for a := from; a >= 0; a = t.Records[a].Parent {
		if a == to {
			return true
		}
	}
	return false
}
