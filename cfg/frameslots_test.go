package cfg_test

import (
	"slices"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestFrameSlots analyses testdata/slotcases.c, whose functions reload
// a jump table's address from a frame slot after a call (decision 168):
// the table is found where nothing else can reach the slot (and through
// a push and a pop), and the jump stays unresolved where the slot's
// address is taken, %rsp is copied, a store through an index may land on
// it, one path stores another value there, or the slot lay beyond the
// red zone below %rsp.
func TestFrameSlots(t *testing.T) {
	graph := analysed(t, "slotcases.c", fixture.Config{CC: "gcc", Opt: "-O2"})
	want := map[string]bool{
		"slot_reload": true, "slot_above": true,
		"slot_lea": false, "slot_fp": false, "slot_index": false, "slot_join": false,
		"slot_pushpop": true, "slot_below": false,
	}
	for name, ok := range want {
		g := graph(name)
		switch {
		case g == nil:
			t.Errorf("%s: not analysed", name)
		case ok && !g.Instrumentable():
			t.Errorf("%s: not instrumentable (%s: %s), want its table found", name, g.Reason, g.Detail)
		case !ok && g.Reason != cfg.ReasonUnresolvedIndirectJump:
			t.Errorf("%s: %s (%s), want the indirect jump unresolved", name, g.Reason, g.Detail)
		case ok && len(g.Tables) != 1:
			t.Errorf("%s: %d jump tables, want 1", name, len(g.Tables))
		}
	}
}

// TestLeaJumpTable analyses testdata/leajump.c (decision 168):
// lea_dispatch's switch adds the table's base to the entry with lea (a
// table of four entries, where the jump was taken for an indirect tail
// call and the cases were not part of the function); trap_dispatch's
// case 0 lies outside the function and runs straight into ud2 (a table
// of four entries, the first dead, where the table's size was unknown
// and the function refused).
func TestLeaJumpTable(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "gcc", Opt: "-O2", PIE: true}} {
		graph := analysed(t, "leajump.c", c)
		for name, dead := range map[string][]int{"lea_dispatch": nil, "trap_dispatch": {0}} {
			g := graph(name)
			switch {
			case g == nil:
				t.Errorf("%s: %s not analysed", c, name)
			case !g.Instrumentable() || len(g.Tables) != 1 || g.Tables[0].Entries != 4:
				t.Errorf("%s: %s: instrumentable %v (%s), %d tables, want one of 4 entries", c, name, g.Instrumentable(), g.Detail, len(g.Tables))
			case !slices.Equal(g.Tables[0].Dead, dead):
				t.Errorf("%s: %s: dead entries %v, want %v", c, name, g.Tables[0].Dead, dead)
			}
		}
	}
}

// analysed builds fixture src, analyses every function of it and
// returns the graph of a function by its name (nil when there is none).
func analysed(t *testing.T, src string, c fixture.Config) func(name string) *cfg.Graph {
	t.Helper()
	exe := fixture.Build(t, src, c)
	addrs := fixture.FuncAddrs(t, exe)
	b, err := cfg.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Analyze(b, cfg.Options{})
	return func(name string) *cfg.Graph {
		for i, f := range p.Funcs {
			if a, ok := addrs[name]; ok && f.Addr == a {
				return p.Graphs[i]
			}
		}
		return nil
	}
}
