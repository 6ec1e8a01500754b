package corpus_test

import (
	"testing"

	"blpp/internal/callgrind"
	"blpp/internal/corpus"
	"blpp/rewriter/meta"
)

// TestDynamicSharePLT: instructions in the PLT ranges are charged to the
// PLT stubs, not to code outside functions.
func TestDynamicSharePLT(t *testing.T) {
	tab := &meta.Table{Funcs: []meta.Func{
		{Name: "f", Entry: 0x1000, Size: 0x10, Instrumented: true, Blocks: []meta.Block{{Addr: 0x1000, End: 0x1010}}},
		{Name: "g", Entry: 0x2000, Size: 0x10, Reason: "too short"},
	}}
	cg := &callgrind.Profile{Exec: map[uint64]uint64{0x1000: 10, 0x2004: 5, 0x3008: 3, 0x4000: 2}}
	s := corpus.DynamicShareOf(tab, cg, [][2]uint64{{0x3000, 0x3100}})
	if s.Executed != 20 || s.Counted != 10 {
		t.Fatalf("executed %d, counted %d; want 20, 10", s.Executed, s.Counted)
	}
	got := map[string]uint64{}
	for _, l := range s.Left {
		got[l.Name] = l.Insts
	}
	want := map[string]uint64{"g": 5, corpus.PLTName: 3, "(outside functions)": 2}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d instructions, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if s2 := corpus.DynamicShare(tab, cg); len(s2.Left) != 2 {
		t.Errorf("without PLT ranges: %d left-out entries, want 2 (g, outside)", len(s2.Left))
	}
}
