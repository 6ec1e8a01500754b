package corpus_test

import (
	"testing"

	"blpp/internal/testsupport/callgrind"
	"blpp/internal/testsupport/corpus"
	"blpp/meta"
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
