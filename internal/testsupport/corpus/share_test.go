package corpus_test

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/meta"
)

// TestDynamicSharePLT: instructions in the PLT ranges are charged to the
// PLT stubs, not to code outside functions.
func TestDynamicSharePLT(t *testing.T) {
	tab := &meta.Table{Funcs: []meta.Func{
		{Name: "f", Entry: 0x1000, Size: 0x10, Instrumented: true, Blocks: []meta.Block{{Addr: 0x1000, End: 0x1010}}},
		// An entry jump moved to 0x1804 (decision 67): 0x1800 runs in
		// place, in no block.
		{Name: "h", Entry: 0x1800, Size: 0x10, Instrumented: true, Blocks: []meta.Block{{Addr: 0x1804, End: 0x1810}}},
		{Name: "g", Entry: 0x2000, Size: 0x10, Reason: "too short"},
	}}
	cg := &callgrind.Profile{Exec: map[uint64]uint64{0x1000: 10, 0x1800: 4, 0x1804: 6, 0x2004: 5, 0x3008: 3, 0x4000: 2}}
	s := corpus.DynamicShareOf(tab, cg, [][2]uint64{{0x3000, 0x3100}})
	if s.Executed != 30 || s.Counted != 16 || s.PLT != 3 {
		t.Fatalf("executed %d, counted %d, PLT %d; want 30, 16, 3", s.Executed, s.Counted, s.PLT)
	}
	// The gauge leaves PLT stubs out of both sides.
	if r, want := s.Ratio(), 16.0/27; r != want {
		t.Errorf("Ratio %v, want %v", r, want)
	}
	if r, want := s.RatioAll(), 16.0/30; r != want {
		t.Errorf("RatioAll %v, want %v", r, want)
	}
	got := map[string]uint64{}
	for _, l := range s.Left {
		got[l.Name] = l.Insts
	}
	want := map[string]uint64{"g": 5, "h": 4, corpus.PLTName: 3, "(outside functions)": 2}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d instructions, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if s2 := corpus.DynamicShareOf(tab, cg, nil); len(s2.Left) != 3 || s2.PLT != 0 {
		t.Errorf("without PLT ranges: %d left-out entries and PLT %d, want 3 (g, h, outside) and 0", len(s2.Left), s2.PLT)
	}
}

// TestProcessShare: the whole-process gauge adds the libraries' and the
// unplaced code's instructions to the executable's, leaves the dynamic
// loader out of both sides, and keeps the executable's PLT aside.
func TestProcessShare(t *testing.T) {
	s := corpus.Share{Executed: 100, Counted: 90, PLT: 4}
	cg := &callgrind.Profile{
		Object:      "/usr/bin/prog",
		UnknownExec: map[uint64]uint64{0x7000: 6},
		ObjectIr: map[string]uint64{
			"/usr/bin/prog":                                  96, // its ??? code was folded into Exec
			callgrind.UnknownObject:                          10,
			"/usr/lib/x86_64-linux-gnu/libc.so.6":            200,
			"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": 1000,
		},
	}
	ps := corpus.ProcessShareOf(s, cg)
	if ps.Executed != 306 || ps.Counted != 90 || ps.PLT != 4 {
		t.Fatalf("executed %d, counted %d, PLT %d; want 306 (100+6+200), 90, 4", ps.Executed, ps.Counted, ps.PLT)
	}
	if r, want := ps.Ratio(), 90.0/302; r != want {
		t.Errorf("Ratio %v, want %v", r, want)
	}
	if len(ps.Objects) != 4 || !ps.Objects[0].Loader || ps.Objects[0].Insts != 1000 {
		t.Errorf("objects %+v: want 4, the loader first and marked", ps.Objects)
	}
	for _, c := range []struct {
		name string
		want bool
	}{
		{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", true},
		{"/lib64/ld-linux-x86-64.so.2", true},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", false},
		{"/usr/lib/x86_64-linux-gnu/libldap-2.5.so.0", false},
	} {
		if got := corpus.IsLoader(c.name); got != c.want {
			t.Errorf("IsLoader(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
