package report

import (
	"bytes"
	"testing"
)

// inlineDebug gives exTable's functions DWARF with the cases where the
// line table and the inline tree disagree (see lineOwners):
//
//	main (c.c:1) inlines lost (d.c:1) at line 0, which has no place in a
//	sample profile; work (a.c:19) inlines helper (b.c:5) at a.c:21, and
//	helper inlines inner (b.c:50) at b.c:31.
//
// In helper's range lies a row of a.c:25, a line of work; in inner's a
// row of b.c:31, helper's call of inner. work's last block is a copy of
// an unrolled loop, one of 4 (LLVM's duplication factor).
func inlineDebug() *DebugInfo {
	const a, b, c, d = "/src/a.c", "/src/b.c", "/src/c.c", "/src/d.c"
	di := &DebugInfo{rows: []LineRange{
		{Addr: 0x1000, End: 0x1008, File: c, Line: 2},
		{Addr: 0x1008, End: 0x1010, File: c, Line: 3},
		{Addr: 0x1010, End: 0x1015, File: c, Line: 4},
		{Addr: 0x1015, End: 0x101a, File: d, Line: 7},
		{Addr: 0x101a, End: 0x1020, File: c, Line: 5},
		{Addr: 0x1100, End: 0x1104, File: a, Line: 20},
		{Addr: 0x1104, End: 0x1108, File: a, Line: 25},
		{Addr: 0x1108, End: 0x110c, File: b, Line: 31},
		{Addr: 0x110c, End: 0x1110, File: b, Line: 52},
		{Addr: 0x1110, End: 0x1118, File: a, Line: 23, Dup: 4},
	}}
	main := &Scope{Name: "main", DeclFile: c, DeclLine: 1, Ranges: [][2]uint64{{0x1000, 0x1020}}}
	main.Inlined = []*Scope{{Name: "lost", DeclFile: d, DeclLine: 1, Ranges: [][2]uint64{{0x1015, 0x101a}}, Parent: main}}
	work := &Scope{Name: "work", DeclFile: a, DeclLine: 19, Ranges: [][2]uint64{{0x1100, 0x1118}}}
	helper := &Scope{Name: "helper", DeclFile: b, DeclLine: 5, Ranges: [][2]uint64{{0x1104, 0x1110}},
		CallFile: a, CallLine: 21, Parent: work}
	helper.Inlined = []*Scope{{Name: "inner", DeclFile: b, DeclLine: 50, Ranges: [][2]uint64{{0x1108, 0x1110}},
		CallFile: b, CallLine: 31, Parent: helper}}
	work.Inlined = []*Scope{helper}
	di.scopes = []*Scope{main, work}
	return di.finish()
}

// TestExportLLVMSampleInlineRows: each row goes to the frame whose source
// holds its line; a row whose frame has no place is left out; an unrolled
// copy's count is multiplied by its duplication factor. The block counts
// of exModel are main 9, 30, 12, 12, 18 and work 9, 3, 9 (see
// export-llvm-sample.golden).
func TestExportLLVMSampleInlineRows(t *testing.T) {
	m := exModel(t, false)
	m.Debug = inlineDebug()
	m.Modules[0].Debug = m.Debug
	var b bytes.Buffer
	if err := ExportLLVMSample(&b, m, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	// Before lineOwners: main had "6: 12" (lost's d.c:7 six lines below
	// main's declaration in c.c) and helper "20: 9" (work's a.c:25).
	const want = `main:69:2
 1: 9
 2: 30
 3: 12 work:12
 4: 18
work:60:12
 1: 9
 4: 36
 6: 9
 2: helper:6
  26: 3
  26: inner:3
   2: 3
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLineOwner(t *testing.T) {
	di := inlineDebug()
	o := newLineOwners(di)
	for _, tc := range []struct {
		addr uint64
		file string
		line int
		want int // index in Frames(addr), -1: none
	}{
		{0x1104, "/src/a.c", 25, 0}, // work's line in helper's range
		{0x1104, "/src/b.c", 6, 1},  // helper's own
		{0x1108, "/src/b.c", 31, 1}, // helper's call of inner, in inner's range
		{0x1108, "/src/b.c", 52, 2}, // inner's own
		{0x1108, "/src/b.c", 4, -1}, // above every function of b.c
		{0x1108, "/src/e.c", 9, -1}, // a file no frame is in
		{0x1015, "/src/d.c", 7, 1},  // lost's own (the export drops it: no call line)
		{0x1015, "/src/c.c", 3, 0},  // main's
		{0x1100, "/src/a.c", 0, -1}, // line 0
	} {
		if got := o.owner(di.Frames(tc.addr), tc.file, tc.line); got != tc.want {
			t.Errorf("owner at %#x of %s:%d = %d, want %d", tc.addr, tc.file, tc.line, got, tc.want)
		}
	}
	// A function declared inside another (a C++ lambda) shortens the
	// span holds allows; the innermost frame still keeps its rows below.
	outer := &Scope{Name: "outer", DeclFile: "/src/x.cc", DeclLine: 10, Ranges: [][2]uint64{{0x2000, 0x2010}}}
	lambda := &Scope{Name: "lambda", DeclFile: "/src/x.cc", DeclLine: 12, Ranges: [][2]uint64{{0x2010, 0x2020}}}
	dl := (&DebugInfo{rows: []LineRange{{Addr: 0x2000, End: 0x2020, File: "/src/x.cc", Line: 11}}, scopes: []*Scope{outer, lambda}}).finish()
	if got := newLineOwners(dl).owner(dl.Frames(0x2000), "/src/x.cc", 15); got != 0 {
		t.Errorf("outer's line below its lambda: owner %d, want 0", got)
	}
}

// TestLLVMDiscriminators decodes LLVM's discriminator encoding
// (DILocation::encodeDiscriminator: base, duplication factor, copy id).
func TestLLVMDiscriminators(t *testing.T) {
	for _, tc := range []struct{ raw, base, dup int }{
		{0, 0, 0},
		{2, 1, 0},    // base 1
		{17, 0, 4},   // base 0 (one bit), duplication factor 4
		{9, 0, 2},    // base 0, factor 2
		{1026, 1, 4}, // base 1 (seven bits), factor 4
		{1028, 2, 4},
		{0xfe, 0x3f, 0},         // a 14-bit base, no factor
		{0xc0 | 6<<14, 0x20, 3}, // a 14-bit base, factor 3
	} {
		if b, d := llvmBaseDiscriminator(tc.raw), llvmDupFactor(tc.raw); b != tc.base || d != tc.dup {
			t.Errorf("discriminator %#x: base %d, factor %d; want %d, %d", tc.raw, b, d, tc.base, tc.dup)
		}
	}
}

// TestExportProbeSample: the probe-based profile of exModel's counts
// (main 9, 30, 12, 12, 18 at 0x1000, 0x1008, 0x1010, 0x1015, 0x101a; work
// 9, 3, 9 at 0x1100, 0x1108, 0x1110; helper not instrumented). A probe
// gets the count of the instruction it marks, copies of one probe add up,
// probes that never ran are left out, a call probe carries the call's
// targets, an inlined function nests under its call probe with its own
// checksum (helper's copy inlined into main included: it ran, counted),
// and a function blpp did not instrument gets no top-level profile, not
// even from the trees clang gives inlined copies of it on their own.
func TestExportProbeSample(t *testing.T) {
	m := exModel(t, false)
	g := ProbeGUID
	pp := &PseudoProbes{Desc: map[uint64]ProbeDesc{}}
	for i, name := range []string{"main", "work", "helper", "inl"} {
		pp.Desc[g(name)] = ProbeDesc{GUID: g(name), Hash: uint64(100 + i), Name: name}
	}
	pp.Roots = []*ProbeNode{
		{GUID: g("main"), Probes: []Probe{
			{Addr: 0x1000, Index: 1}, {Addr: 0x1008, Index: 2}, {Addr: 0x1015, Index: 2}, // a copy of 2
			{Addr: 0x1010, Index: 3, Kind: ProbeDirectCall}, {Addr: 0x101a, Index: 5, Disc: 3}},
			Children: []*ProbeNode{
				{GUID: g("inl"), Site: 4, Probes: []Probe{{Addr: 0x1004, Index: 1}}},
				{GUID: g("helper"), Site: 6, Probes: []Probe{{Addr: 0x1016, Index: 1}}},
			}},
		{GUID: g("work"), Probes: []Probe{{Addr: 0x1100, Index: 1}, {Addr: 0x1108, Index: 2}, {Addr: 0x1200, Index: 3}}},
		// inl's probe whose inline context clang lost: a tree of its own
		// inside work.
		{GUID: g("inl"), Probes: []Probe{{Addr: 0x1110, Index: 2}}},
		{GUID: g("helper"), Probes: []Probe{{Addr: 0x1200, Index: 1}}},
		// helper's copy in work does not make helper's profile.
		{GUID: g("helper"), Probes: []Probe{{Addr: 0x1104, Index: 2}}},
	}
	var b bytes.Buffer
	if err := exportProbeSample(&b, m, pp); err != nil {
		t.Fatal(err)
	}
	const want = `main:102:2
 1: 9
 2: 42
 3: 12 work:12
 5.3: 18
 4: inl:9
  1: 9
  !CFGChecksum: 103
 6: helper:12
  1: 12
  !CFGChecksum: 102
 !CFGChecksum: 100
work:12:12
 1: 9
 2: 3
 !CFGChecksum: 101
inl:9:0
 2: 9
 !CFGChecksum: 103
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
