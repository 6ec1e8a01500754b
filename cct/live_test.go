package cct

import (
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"testing"
	"unsafe"

	rt "github.com/blpp/blpp/runtime"
)

// liveFile lays out a live file as the runtime's memory would be: the
// header page, then objects at the addresses alloc hands out (base +
// file offset).
type liveFile struct {
	base uint64
	data []byte
}

func newLiveFile(nmetrics int) *liveFile {
	l := &liveFile{base: 0x7f1200000000, data: make([]byte, rt.LiveHeaderSize)}
	var h rt.LiveHeader
	copy(l.data, LiveMagic)
	l.hdr(unsafe.Offsetof(h.Version), rt.LiveVersion)
	l.hdr(unsafe.Offsetof(h.Base), l.base)
	l.hdr(unsafe.Offsetof(h.PID), 4242)
	l.hdr(unsafe.Offsetof(h.TimeNS), 1e18)
	l.hdr(unsafe.Offsetof(h.NMetrics), uint64(nmetrics))
	l.hdr(unsafe.Offsetof(h.Stride), uint64(1+nmetrics))
	if nmetrics > 0 {
		copy(l.data[unsafe.Offsetof(h.MName):], "tsc")
		l.hdr(unsafe.Offsetof(h.MKind), uint64(MetricFallback))
	}
	return l
}

func (l *liveFile) hdr(field uintptr, v uint64) { binary.LittleEndian.PutUint64(l.data[field:], v) }

// alloc reserves n zero bytes, 64-byte aligned as the runtime's arena.
func (l *liveFile) alloc(n uintptr) uint64 {
	for len(l.data)%64 != 0 {
		l.data = append(l.data, 0)
	}
	a := l.base + uint64(len(l.data))
	l.data = append(l.data, make([]byte, n)...)
	return a
}

func (l *liveFile) put(addr uint64, field uintptr, v uint64) {
	binary.LittleEndian.PutUint64(l.data[addr-l.base+uint64(field):], v)
}

// bytes ends the file: the header's size is what was laid out.
func (l *liveFile) bytes() []byte {
	var h rt.LiveHeader
	l.hdr(unsafe.Offsetof(h.Size), uint64(len(l.data)))
	return append([]byte(nil), l.data...)
}

var (
	lr rt.Record
	ln rt.Node
	lt rt.LiveThread
	lm rt.LiveMod
	lp rt.Pent
	lh rt.LiveHeader
)

// record lays out a record of fid under parent at call-site id site, with
// its function's call sites [first, first+nsites), its calls and dense
// path counts (stride words each), counters right after it.
func (l *liveFile) record(fid, parent, site, first, nsites, index, calls uint64, stride uint64, paths ...uint64) uint64 {
	// Room for the two words a record may have before it (Ext).
	r := l.alloc(16+rt.RecordInlineCounts+uintptr(8*(1+uint64(len(paths))*stride))) + 16
	l.put(r, unsafe.Offsetof(lr.Func), fid)
	l.put(r, unsafe.Offsetof(lr.Parent), parent)
	l.putN(r, unsafe.Offsetof(lr.Site), 4, site)
	l.put(r, unsafe.Offsetof(lr.FirstSite), first)
	l.put(r, unsafe.Offsetof(lr.NSites), nsites)
	l.putN(r, unsafe.Offsetof(lr.Index), 4, index)
	l.put(r, unsafe.Offsetof(lr.DenseN), uint64(len(paths)))
	l.put(r, rt.RecordInlineCounts, calls)
	for i, c := range paths {
		l.put(r, rt.RecordInlineCounts+uintptr(8*(1+uint64(i)*stride)), c)
		if stride > 1 {
			l.put(r, rt.RecordInlineCounts+uintptr(8*(2+uint64(i)*stride)), 100*c)
		}
	}
	return r
}

func (l *liveFile) link(from, to uint64) { l.put(from, unsafe.Offsetof(lr.Next), to) }

// putN stores the low size bytes of v at field of the object at addr:
// Record's narrower fields.
func (l *liveFile) putN(addr uint64, field uintptr, size int, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	copy(l.data[addr-l.base+uint64(field):], b[:size])
}

// ext gives record r the words before it that its Ext names: twin
// (when not 0) just before it, via before that (decision 146).
func (l *liveFile) ext(r, twin, via uint64) {
	var e uint64
	back := uint64(8)
	if twin != 0 {
		e |= rt.RecordExtTwin
		l.put(r-8, 0, twin)
		back = 16
	}
	if via != 0 {
		e |= rt.RecordExtVia
		l.put(r-back, 0, via)
	}
	l.putN(r, unsafe.Offsetof(lr.Ext), 1, e)
}

// htab lays out a hash table of cap entries, {key (path+1), count,
// metric sums (100 times the count)}.
func (l *liveFile) htab(capa, next, stride uint64, entries map[uint64]uint64) uint64 {
	ew := 8 * (1 + stride)
	h := l.alloc(rt.HTabEntriesOff + uintptr(ew*(capa+1)))
	l.put(h, rt.HTabCapOff, capa)
	l.put(h, rt.HTabNextOff, next)
	i := uint64(0)
	for key, c := range entries {
		l.put(h, rt.HTabEntriesOff+uintptr(ew*i), key)
		l.put(h, rt.HTabEntriesOff+uintptr(ew*i+8), c)
		if stride > 1 {
			l.put(h, rt.HTabEntriesOff+uintptr(ew*i+16), 100*c)
		}
		i++
	}
	return h
}

func (l *liveFile) ptab(es ...rt.Pent) uint64 {
	t := l.alloc(rt.LivePtabCap * unsafe.Sizeof(lp))
	for i, e := range es {
		a := t + uint64(uintptr(i)*unsafe.Sizeof(lp))
		l.put(a, unsafe.Offsetof(lp.Rec), e.Rec)
		l.put(a, unsafe.Offsetof(lp.Func), e.Func)
		l.put(a, unsafe.Offsetof(lp.Block), e.Block)
		l.put(a, unsafe.Offsetof(lp.Reg), uint64(e.Reg))
		l.put(a, unsafe.Offsetof(lp.Count), e.Count)
	}
	return t
}

func (l *liveFile) module(next, tag uint64, flags ModuleFlags, path string, id []byte) uint64 {
	m := l.alloc(unsafe.Sizeof(lm))
	l.put(m, unsafe.Offsetof(lm.Next), next)
	l.put(m, unsafe.Offsetof(lm.Tag), tag)
	l.put(m, unsafe.Offsetof(lm.Flags), uint64(flags))
	l.put(m, unsafe.Offsetof(lm.Bias), 0x1000*tag)
	l.put(m, unsafe.Offsetof(lm.BuildIDLen), uint64(len(id)))
	copy(l.data[m-l.base+uint64(unsafe.Offsetof(lm.BuildID)):], id)
	l.put(m, unsafe.Offsetof(lm.PathLen), uint64(len(path)))
	copy(l.data[m-l.base+uint64(unsafe.Offsetof(lm.Path)):], path)
	return m
}

// sampleLive lays out a live file of two modules and two threads: in the
// first, main (root) called f at its second call site; a recursive g
// folded onto itself; a hashed h whose path 7 is in two tables, with a
// hot twin that counts its path 1 and that a partial names; a record
// k under a left-out function's record d (via) and a twin of it, linked
// before its via was set; partials, and the fork prefixes of struct
// wiped; the second thread has one root record. It returns the file and
// the profile ParseLive must make of it.
func sampleLive(metrics bool) ([]byte, *Profile) {
	stride := uint64(1)
	nm := 0
	if metrics {
		stride, nm = 2, 1
	}
	l := newLiveFile(nm)
	exe := l.module(0, 0, ModuleFlagExecutable, "/bin/prog", []byte{0xab, 0xcd})
	mods := l.module(exe, 2, 0, "/lib/libz.so.1", []byte{1, 2, 3})
	l.hdr(unsafe.Offsetof(lh.Mods), mods)
	w := l.alloc(rt.LiveWipedPrefixOwnerOff + 8)
	l.hdr(unsafe.Offsetof(lh.Wiped), w)
	l.put(w, rt.LiveWipedStatsOff+8*7, 3) // dropped_records
	block := uint64(0x5000)

	main := l.record(0, 0, 0, 10, 2, 0, 1, stride, 0, 1)
	f := l.record(1, main, 11, 20, 0, 1, 4, stride, 3, 0, 1)
	g := l.record(uint64(Fid(2, 5)), main, 10, 30, 1, 2, 6, stride, 6)
	hh := l.record(3, f, 0, 40, 0, 3, 9, stride)
	old := l.htab(4, 0, stride, map[uint64]uint64{8: 2, 2: 1})
	l.put(hh, unsafe.Offsetof(lr.Hash), l.htab(16, old, stride, map[uint64]uint64{8: 5}))
	// hh is cold and has a hot twin, not in the list (decision 99): its
	// calls and dense paths are hh's, and a partial may name it.
	ht := l.record(3, f, 0, 40, 0, 3, 2, stride, 0, 4)
	// hh was called back from main's uninstrumented callee too: its
	// Via comes before its Twin (decision 146), and main is its parent.
	l.ext(hh, ht, main)
	l.ext(ht, hh, 0)
	d := l.record(4, main, 10, 0, 0, 4, 1, stride)
	k := l.record(5, main, 10, 50, 0, 5, 2, stride, 2)
	l.ext(k, 0, d)
	// A second record of k's function and context (the runtime makes
	// none, but a reader of its memory must not trip on one): its
	// counts go to k's.
	twin := l.record(5, main, 10, 50, 0, 6, 1, stride, 1)
	l.ext(twin, 0, d)
	for _, p := range [][2]uint64{{main, f}, {f, g}, {g, hh}, {hh, d}, {d, k}, {k, twin}} {
		l.link(p[0], p[1])
	}
	fold := l.alloc(unsafe.Sizeof(ln))
	l.put(fold, unsafe.Offsetof(ln.Rec), g)
	l.put(fold, unsafe.Offsetof(ln.Owner), g)
	l.put(fold, unsafe.Offsetof(ln.Site), 30)
	l.put(fold, unsafe.Offsetof(ln.Count), 5)
	parts := l.ptab(rt.Pent{Rec: f, Func: 1, Block: 2, Reg: -1, Count: 1}, rt.Pent{Rec: 0, Func: 3, Block: 0, Reg: 4, Count: 2},
		rt.Pent{Rec: f, Func: 1, Block: 2, Reg: -1, Count: 3}, rt.Pent{Rec: main, Func: 9, Block: 1, Reg: 0, Count: 1},
		rt.Pent{Rec: ht, Func: 3, Block: 1, Reg: 0, Count: 1})
	l.put(w, rt.LiveWipedPrefixesOff, l.ptab(rt.Pent{Rec: main, Func: 0, Block: 1, Reg: 2, Count: 1}))
	l.put(w, rt.LiveWipedPrefixOwnerOff, block)
	t1 := l.alloc(unsafe.Sizeof(lt))
	l.put(t1, unsafe.Offsetof(lt.TID), 77)
	l.put(t1, unsafe.Offsetof(lt.Records), main)
	l.put(t1, unsafe.Offsetof(lt.Folded), fold)
	l.put(t1, unsafe.Offsetof(lt.Partials), parts)
	l.put(t1, unsafe.Offsetof(lt.Block), block)
	// The second thread's record counts in its slot counters (decision
	// 146): the word before it says where; its own words say 0 calls.
	r2 := l.record(0, 0, 0, 10, 2, 0, 0, stride, 0, 0)
	slots := l.alloc(uintptr(8 * (1 + 2*stride)))
	l.put(slots, 0, 3)
	l.put(r2-8, 0, slots)
	l.putN(r2, unsafe.Offsetof(lr.Ext), 1, rt.RecordExtSlot)
	t2 := l.alloc(unsafe.Sizeof(lt))
	l.put(t2, unsafe.Offsetof(lt.TID), 78)
	l.put(t2, unsafe.Offsetof(lt.Records), r2)
	l.put(t2, unsafe.Offsetof(lt.Next), t1)
	l.hdr(unsafe.Offsetof(lh.Threads), t2) // newest first

	path := func(id, c uint64) Path {
		p := Path{ID: id, Count: c}
		if metrics {
			p.Metrics = []uint64{100 * c}
		}
		return p
	}
	want := &Profile{
		Version: Version, BuildID: []byte{0xab, 0xcd}, PID: 4242, TimeNS: 1e18,
		Modules: []Module{{Tag: 0, Flags: ModuleFlagExecutable, Path: "/bin/prog", BuildID: []byte{0xab, 0xcd}},
			{Tag: 2, Bias: 0x2000, Path: "/lib/libz.so.1", BuildID: []byte{1, 2, 3}}},
		Metrics: []Metric{{Name: FreqMetric, Kind: MetricReal}},
		Threads: []Thread{
			{TID: 77, Records: []Record{
				{Func: 0, Parent: -1, Calls: 1, Paths: []Path{path(1, 1)}},
				{Func: 1, Parent: 0, CallSite: 2, Calls: 4, Paths: []Path{path(0, 3), path(2, 1)}},
				{Func: Fid(2, 5), Parent: 0, CallSite: 1, Calls: 6, Paths: []Path{path(0, 6)}},
				{Func: 3, Parent: 0, Calls: 11, Paths: []Path{path(1, 5), path(7, 7)}},
				{Func: 4, Parent: 0, CallSite: 1, Calls: 1},
				{Func: 5, Parent: 4, Calls: 3, Paths: []Path{path(0, 3)}},
			},
				Partials: []Partial{{Record: -1, Func: 3, Block: 0, Reg: 4, Count: 2}, {Record: -1, Func: 9, Block: 1, Reg: 0, Count: 1},
					{Record: 1, Func: 1, Block: 2, Reg: -1, Count: 4}, {Record: 3, Func: 3, Block: 1, Reg: 0, Count: 1}},
				Folded:   []FoldedCall{{From: 2, CallSite: 1, To: 2, Count: 5}},
				Prefixes: []Partial{{Record: 0, Func: 0, Block: 1, Reg: 2, Count: 1}},
			},
			{TID: 78, Records: []Record{{Func: 0, Parent: -1, Calls: 3}}},
		},
		Stats: map[string]uint64{"live": 1, StatThreads: 2, StatRecords: 7},
	}
	if metrics {
		want.Metrics = append(want.Metrics, Metric{Name: "tsc", Kind: MetricFallback})
	}
	data := l.bytes()
	for i, name := range rt.LiveStatNames {
		want.Stats[name] = binary.LittleEndian.Uint64(data[w-l.base+rt.LiveWipedStatsOff+uint64(8*i):])
	}
	want.Stats[StatArenaBytes] = uint64(len(data))
	return data, want
}

// TestParseLive reads a live file laid out as the runtime's memory would
// be, with and without a metric, into the profile it holds.
func TestParseLive(t *testing.T) {
	for _, metrics := range []bool{false, true} {
		data, want := sampleLive(metrics)
		got, live, err := ParseLive(data)
		if err != nil {
			t.Fatalf("metrics %v: %v", metrics, err)
		}
		if live == nil || live.Size != uint64(len(data)) {
			t.Errorf("metrics %v: live %+v, want the file's size %d", metrics, live, len(data))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("metrics %v:\n got %+v\nwant %+v", metrics, got, want)
		}
	}
}

// TestParseLiveRefuses: damage is refused with the right sentinel, never
// read past.
func TestParseLiveRefuses(t *testing.T) {
	data, _ := sampleLive(false)
	rec := func(d []byte) uint64 { // the first thread's first record
		l := &liveMem{data: d, base: binary.LittleEndian.Uint64(d[unsafe.Offsetof(lh.Base):])}
		th := binary.LittleEndian.Uint64(d[unsafe.Offsetof(lh.Threads):])
		return l.word(uintptr(th), unsafe.Offsetof(lt.Records), "")
	}
	base := binary.LittleEndian.Uint64(data[unsafe.Offsetof(lh.Base):])
	put := func(d []byte, addr uint64, field uintptr, v uint64) {
		binary.LittleEndian.PutUint64(d[addr-base+uint64(field):], v)
	}
	cases := []struct {
		name string
		edit func(d []byte) []byte
		want error
	}{
		{"magic", func(d []byte) []byte { d[7] = 'X'; return d }, ErrBadMagic},
		{"version", func(d []byte) []byte { d[8] = 9; return d }, ErrVersion},
		{"short", func(d []byte) []byte { return d[:len(d)-8] }, ErrTruncated},
		{"header only", func(d []byte) []byte { return d[:100] }, ErrTruncated},
		{"pointer outside", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.Next), base+1<<40)
			return d
		}, ErrCorrupt},
		{"pointer into the header", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.Next), base+64)
			return d
		}, ErrCorrupt},
		{"record list loops", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.Next), rec(d))
			return d
		}, ErrCorrupt},
		{"parent not earlier", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.Parent), rec(d))
			return d
		}, ErrCorrupt},
		{"dense counts past the end", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.DenseN), 1<<40)
			return d
		}, ErrCorrupt},
		{"dense count whose size overflows", func(d []byte) []byte {
			put(d, rec(d), unsafe.Offsetof(lr.DenseN), 1<<61)
			return d
		}, ErrCorrupt},
		{"too many metrics", func(d []byte) []byte {
			binary.LittleEndian.PutUint64(d[unsafe.Offsetof(lh.NMetrics):], rt.MaxMetrics+1)
			return d
		}, ErrCorrupt},
	}
	for _, c := range cases {
		d := c.edit(append([]byte(nil), data...))
		p, _, err := ParseLive(d)
		var fe *FormatError
		if p != nil || !errors.As(err, &fe) || !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, %v; want a *FormatError wrapping %v", c.name, p, err, c.want)
		}
	}
}

// TestReadFileLive: ReadFile reads a live file as a profile, and
// ReadFileLive says it is one.
func TestReadFileLive(t *testing.T) {
	data, want := sampleLive(false)
	name := t.TempDir() + "/live"
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ReadFile(name)
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("ReadFile: %v, %+v", err, p)
	}
	if _, live, err := ReadFileLive(name); err != nil || live == nil {
		t.Fatalf("ReadFileLive: %v, %v", live, err)
	}
	// A live profile written out is an ordinary profile, read the same.
	out := t.TempDir() + "/prof"
	if err := p.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	q, live, err := ReadFileLive(out)
	if err != nil || live != nil || !reflect.DeepEqual(q, p) {
		t.Fatalf("the written profile reads back as %+v, %v, %v", q, live, err)
	}
}

// FuzzParseLive: no input makes ParseLive panic; what it accepts is
// valid.
func FuzzParseLive(f *testing.F) {
	for _, m := range []bool{false, true} {
		data, _ := sampleLive(m)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := ParseLive(data)
		if errors.Is(err, errInternal) {
			t.Fatalf("panic: %v", err)
		}
		if err == nil {
			if err := p.CheckValid(); err != nil {
				t.Fatalf("accepted an invalid profile: %v", err)
			}
		}
	})
}
