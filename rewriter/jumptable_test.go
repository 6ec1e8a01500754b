package rewriter_test

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// dispatchFixtures are the jump-table fixtures of issue 23 and the
// functions whose jumps only the table analysis of decision 66 resolves:
// cgoto.c's replicated computed-goto dispatch (one table, a dozen jumps,
// no bounds check), switchcall.c's switches whose table base lives in a
// callee-saved register across calls.
var dispatchFixtures = []struct {
	src   string
	funcs []string
}{
	// cgoto.c's table holds absolute addresses, which a PIE relocates
	// at load time: its copy counts entries from the base register
	// (decision 72).
	{"cgoto.c", []string{"run"}},
	{"switchcall.c", []string{"tokens", "classify"}},
	// unguarded.c's switches have no bounds check (Lua's collector's
	// shape) or impossible cases inside their range, which clang aims
	// past the function's end (decision 98).
	{"unguarded.c", []string{"mark", "kind", "step", "color"}},
	// constjump.c's classify jumps through a register that holds one
	// label on one side of its range check (glibc's vfprintf); taken
	// for a tail call, its target ran uncounted.
	{"constjump.c", []string{"classify", "classify_back"}},
}

// dispatchConfigs are the stripped gcc and clang builds at -O2 and -O3,
// PIE and not.
func dispatchConfigs() []fixture.Config {
	var cs []fixture.Config
	for _, cc := range []string{"gcc", "clang"} {
		for _, opt := range []string{"-O2", "-O3"} {
			for _, pie := range []bool{true, false} {
				cs = append(cs, fixture.Config{CC: cc, Opt: opt, PIE: pie, Strip: true})
			}
		}
		// With CET every label and case starts with endbr64: the
		// handlers of cgoto.c are table targets that begin with it
		// (decision 98: it writes no register, so the table base stays
		// known across it).
		for _, pie := range []bool{true, false} {
			cs = append(cs, fixture.Config{CC: cc, Opt: "-O2", PIE: pie, Strip: true, Extra: []string{"-fcf-protection=full"}})
		}
	}
	return cs
}

// TestDispatchTables rewrites each dispatch fixture in every configuration,
// requires identical behaviour, the dispatch functions instrumented (a
// function left out fails the test), and every block count of every
// instrumented function equal to callgrind's.
func TestDispatchTables(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range dispatchConfigs() {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, fx := range dispatchFixtures {
				twin := c
				twin.Strip = false
				entries := funcAddrs(t, fixture.Build(t, fx.src, twin), fx.funcs...)
				checkExact(t, fx.src, c)
				_, inst := rewriteTo(t, fx.src, c, t.TempDir())
				tab, f, err := report.LoadMeta(inst)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
				for name, entry := range entries {
					found := false
					for _, mf := range tab.Funcs {
						if mf.Entry != entry {
							continue
						}
						found = true
						if !mf.Instrumented {
							t.Errorf("%s %s: %s (%#x) is not instrumented (%s)", fx.src, c, name, entry, mf.Reason)
						}
					}
					if !found {
						t.Errorf("%s %s: %s (%#x) is not in the metadata", fx.src, c, name, entry)
					}
				}
			}
		})
	}
}
