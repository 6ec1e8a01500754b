package cfg_test

import (
	"debug/elf"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// nofdeConfigs build nofde.c the way Debian builds busybox: static,
// position-dependent, stripped, without unwind tables for the program's
// own code (the static C library keeps its FDEs).
func nofdeConfigs() []fixture.Config {
	var cs []fixture.Config
	for _, opt := range []string{"-O2", "-Os"} {
		cs = append(cs, fixture.Config{CC: "gcc", Opt: opt, Static: true, Strip: true,
			Extra: []string{"-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}})
	}
	return cs
}

// nofdeFuncs are nofde.c's functions; each must be found without a
// symbol or an FDE.
var nofdeFuncs = []string{"main", "square", "twice", "negate", "fail", "checked", "classify", "tailed", "jumper", "cmp_int", "on_exit_msg"}

// fixtureSyms returns the function symbols of the unstripped twin of a
// stripped build, sorted by address.
func fixtureSyms(t *testing.T, src string, c fixture.Config) []elf.Symbol {
	t.Helper()
	twin := c
	twin.Strip = false
	return fixture.FuncSymbols(t, fixture.Build(t, src, twin))
}

// TestDiscoverNoFDE: in a stripped static binary whose own code has no
// FDE, every function of nofde.c is found at its symbol's address, ends
// at or after the symbol's end (padding may follow) and before the next
// symbol, is instrumentable (classify with its cold part joined), and no
// procedure starts inside any function (switch labels, the bytes after a
// call that does not return, the tail of a string are not entries).
func TestDiscoverNoFDE(t *testing.T) {
	for _, c := range nofdeConfigs() {
		syms := fixtureSyms(t, "nofde.c", c)
		b, err := cfg.Open(fixture.Build(t, "nofde.c", c))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.FDEs() {
			for _, s := range syms {
				if s.Name == "main" && r.Addr == s.Value {
					t.Fatalf("%s: main has an FDE; the test needs code without one", c)
				}
			}
		}
		p := cfg.Analyze(b, cfg.Options{})
		byName := map[string]elf.Symbol{}
		for _, s := range syms {
			byName[s.Name] = s
		}
		for _, name := range nofdeFuncs {
			s, ok := byName[name]
			if !ok {
				t.Fatalf("%s: no symbol %s", c, name)
			}
			f := p.FuncAt(s.Value)
			if f == nil {
				t.Errorf("%s: %s at %#x was not found", c, name, s.Value)
				continue
			}
			if !f.Discovered() {
				t.Errorf("%s: %s was found from %v, not by discovery", c, name, f.Source)
			}
			next := ^uint64(0)
			for _, o := range syms {
				if o.Value > s.Value && o.Value < next {
					next = o.Value
				}
			}
			if end := f.Addr + f.Size; end < s.Value+s.Size || end > next {
				t.Errorf("%s: %s is [%#x, %#x), want it to end in [%#x, %#x]", c, name, f.Addr, end, s.Value+s.Size, next)
			}
			if g := p.Graph(f); g == nil || !g.Instrumentable() {
				t.Errorf("%s: %s is not instrumentable: %v %s", c, name, g.Reason, g.Detail)
			}
		}
		// No procedure starts strictly inside a function or its
		// cold part.
		for _, s := range syms {
			for _, f := range p.Funcs {
				if f.Addr > s.Value && f.Addr < s.Value+s.Size {
					t.Errorf("%s: procedure %s (%v) starts inside %s [%#x, %#x)", c, f.Name, f.Source, s.Name, s.Value, s.Value+s.Size)
				}
			}
		}
		if cold, ok := byName["classify.cold"]; ok {
			f := p.FuncAt(byName["classify"].Value)
			if f == nil || len(f.Parts) != 1 || f.Parts[0].Addr != cold.Value {
				t.Errorf("%s: classify.cold at %#x is not classify's fragment", c, cold.Value)
			}
		}
	}
}
