package cfg_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestFixtures analyses every fixture in every configuration of the matrix
// and checks the facts the fixture package verified independently from
// objdump: every symbol and FDE is a function, loops and their nesting,
// jump-table targets, no-return functions, tail calls, .cold fragments,
// and that every function the fixture describes is instrumentable.
func TestFixtures(t *testing.T) {
	for _, c := range fixture.Matrix() {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, e := range fixture.Expectations() {
				checkFixture(t, e, c)
			}
		})
	}
}

func checkFixture(t *testing.T, e fixture.Expect, c fixture.Config) {
	path := fixture.Build(t, e.Source, c)
	twin := c
	twin.Strip = false
	names := fixture.FuncAddrs(t, fixture.Build(t, e.Source, twin))
	b, err := cfg.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", e.Source, err)
	}
	p := cfg.Analyze(b, cfg.Options{})
	where := e.Source + " " + c.String()

	// Every function symbol and every FDE start is a function entry or a
	// fragment of one.
	starts := map[uint64]bool{}
	for _, f := range p.Funcs {
		starts[f.Addr] = true
		for _, part := range f.Parts {
			starts[part.Addr] = true
		}
	}
	for _, s := range b.Symbols() {
		if !starts[s.Addr] {
			t.Errorf("%s: symbol %s at %#x is not a function", where, s.Name, s.Addr)
		}
	}
	for _, fde := range b.FDEs() {
		if !starts[fde.Addr] {
			t.Errorf("%s: FDE at %#x is not a function", where, fde.Addr)
		}
	}

	cold := map[string]bool{}
	for _, n := range e.ColdFragment {
		cold[n] = true
	}
	for _, name := range e.Names() {
		fe, ok := e.Func(name, c)
		if !ok {
			continue
		}
		addr, ok := names[name]
		if !ok {
			t.Errorf("%s: fixture function %s has no symbol", where, name)
			continue
		}
		f := p.FuncAt(addr)
		if f == nil {
			t.Errorf("%s: %s at %#x not found", where, name, addr)
			continue
		}
		g := p.Graph(f)
		if !g.Instrumentable() {
			t.Errorf("%s: %s not instrumentable: %v: %s", where, name, g.Reason, g.Detail)
			continue
		}
		var depths []int
		irreducible := false
		for _, l := range g.Loops {
			if l.Irreducible {
				irreducible = true
				continue
			}
			depths = append(depths, naturalDepth(g, l))
		}
		sort.Ints(depths)
		if got, want := fmt.Sprint(depths), fmt.Sprint(fe.Depths); len(depths) != fe.Loops || got != want && fe.Loops > 0 {
			t.Errorf("%s: %s: natural loops at depths %v, want %d loops at %v", where, name, depths, fe.Loops, fe.Depths)
		}
		if irreducible != fe.Irreducible {
			t.Errorf("%s: %s: irreducible = %v, want %v", where, name, irreducible, fe.Irreducible)
		}
		targets := map[uint64]bool{}
		for _, jt := range g.Tables {
			for _, a := range jt.Targets {
				targets[a] = true
			}
		}
		if len(targets) != fe.JumpTableTargets {
			t.Errorf("%s: %s: jump tables give %d distinct targets, want %d", where, name, len(targets), fe.JumpTableTargets)
		}
		if got := p.NoReturn(f.Addr); got != fe.NoReturn {
			t.Errorf("%s: %s: no-return = %v, want %v", where, name, got, fe.NoReturn)
		}
		var tails []string
		tailAddr := map[uint64]bool{}
		for _, ed := range g.Edges {
			if ed.Kind == cfg.EdgeTailCall && ed.Target != 0 {
				tailAddr[ed.Target] = true
				if callee := p.FuncAt(ed.Target); callee != nil {
					tails = append(tails, callee.Name)
				}
			}
		}
		for _, want := range fe.TailCalls {
			if a, ok := names[want]; ok && tailAddr[a] {
				continue
			}
			if !containsName(p, tails, want) {
				t.Errorf("%s: %s: no tail call to %s (have %v)", where, name, want, tails)
			}
		}
		hasCold := len(f.Parts) > 0
		// Stripped binaries have no .cold names; their fragments are found
		// from the jumps into them.
		wantCold := cold[name] && c.CC == "gcc" && (c.Opt == "-O2" || c.Opt == "-O3")
		if hasCold != wantCold {
			t.Errorf("%s: %s: has .cold fragment = %v, want %v", where, name, hasCold, wantCold)
		}
	}
}

// naturalDepth counts the natural loops containing l's header, l included,
// as the fixture expectations define depth.
func naturalDepth(g *cfg.Graph, l cfg.Loop) int {
	d := 0
	for _, o := range g.Loops {
		if o.Irreducible {
			continue
		}
		i := sort.Search(len(o.Blocks), func(i int) bool { return o.Blocks[i] >= l.Header })
		if i < len(o.Blocks) && o.Blocks[i] == l.Header {
			d++
		}
	}
	return d
}

func containsName(p *cfg.Program, have []string, want string) bool {
	for _, h := range have {
		if h == want || strings.TrimSuffix(h, "@plt") == want {
			return true
		}
	}
	for _, f := range p.Funcs {
		if f.Name == want || strings.TrimSuffix(f.Name, "@plt") == want {
			for _, a := range f.Aliases {
				for _, h := range have {
					if h == a {
						return true
					}
				}
			}
		}
		for _, a := range f.Aliases {
			if a == want {
				for _, h := range have {
					if h == f.Name {
						return true
					}
				}
			}
		}
	}
	return false
}

// TestFragmentCalledLater: in stripped gcc -O2 code, a function whose
// only known transfer is another's tail jump, while its one caller is
// still cut short by a jump into its own cold fragment, stays a function
// (fragcall.c): sure fragments (mid-frame FDEs) join first, and a range
// that starts like a function joins only once the calls are known.
func TestFragmentCalledLater(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true, Strip: true}
	twin := c
	twin.Strip = false
	names := fixture.FuncAddrs(t, fixture.Build(t, "fragcall.c", twin))
	for _, n := range []string{"target", "jumper", "caller", "caller.cold"} {
		if names[n] == 0 {
			t.Fatalf("fragcall.c %s: no symbol %s (gcc did not split caller?)", c, n)
		}
	}
	b, err := cfg.Open(fixture.Build(t, "fragcall.c", c))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Analyze(b, cfg.Options{})
	byAddr := map[uint64]int{}
	for i, f := range p.Funcs {
		byAddr[f.Addr] = i
	}
	ti, ok := byAddr[names["target"]]
	if !ok {
		t.Fatalf("fragcall.c %s: target (%#x) is not a function: joined as a fragment", c, names["target"])
	}
	if g := p.Graphs[ti]; g == nil || !g.Instrumentable() {
		t.Errorf("fragcall.c %s: target is not instrumentable", c)
	}
	ji, ok := byAddr[names["jumper"]]
	if !ok {
		t.Fatalf("fragcall.c %s: jumper is not a function", c)
	}
	tail := false
	for _, e := range p.Graphs[ji].Edges {
		tail = tail || e.Kind == cfg.EdgeTailCall && e.Target == names["target"]
	}
	if !tail || len(p.Funcs[ji].Parts) != 0 {
		t.Errorf("fragcall.c %s: jumper has a tail call to target: %v, parts %v; want a tail call and no parts", c, tail, p.Funcs[ji].Parts)
	}
	ci, ok := byAddr[names["caller"]]
	if !ok {
		t.Fatalf("fragcall.c %s: caller is not a function", c)
	}
	joined := false
	for _, part := range p.Funcs[ci].Parts {
		joined = joined || part.Addr == names["caller.cold"]
	}
	if !joined || !p.Graphs[ci].Instrumentable() {
		t.Errorf("fragcall.c %s: caller.cold joined to caller: %v, caller instrumentable: %v", c, joined, p.Graphs[ci].Instrumentable())
	}
}
