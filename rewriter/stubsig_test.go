package rewriter_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// stubsigFuncs are stubsig.c's functions in the order of its counts.
var stubsigFuncs = []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
	"l0", "l1", "l2", "l3", "wide", "huge"}

// TestStubSignals runs stubsig.c, whose 50-microsecond SIGALRM handler
// calls instrumented functions while the main loop keeps the runtime
// making records, nodes and hot twins of cold records (decision 99: no
// signals are blocked there). Signal timing differs from run to run, so
// the oracle is the program's own count of each function's activations:
// the profile must hold as many calls and, the functions having no loops,
// as many path executions, and the reader must accept it (one record per
// calling context, parents first), with no return that missed its frame.
func TestStubSignals(t *testing.T) {
	eachStubsig(t, nil)
}

// TestStepSignals runs stubsig.c single-stepped (its argument: 40 rounds
// with the trap flag set), so that its SIGTRAP handler walks a chain of
// instrumented calls after every instruction of the main loop: inside
// every inline entry and exit and the runtime's stubs, at each point
// once per round. What TestStubSignals finds by chance, one run in
// several, this finds every time (decision 163: a frame reserved but
// not yet given its %rsp, after a first handler had left its own there,
// was unwound as if a longjmp had left it).
func TestStepSignals(t *testing.T) {
	eachStubsig(t, []string{"40"})
}

// eachStubsig runs stubsig.c with args in each process configuration and
// mode and checks its profile against the program's own counts.
func eachStubsig(t *testing.T, args []string) {
	for _, c := range procConfigs {
		for _, m := range procModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				what := "stubsig.c " + c.String() + " " + m.name + " " + strings.Join(args, " ")
				dir := t.TempDir()
				orig := fixture.Build(t, "stubsig.c", c)
				inst := rewriteWith(t, orig, filepath.Join(dir, "stubsig.blpp"), m.opts)
				want := runProc(t, orig, args)
				if want.code != 0 {
					t.Fatalf("%s: the original misbehaves: %s", what, want)
				}
				profPath := filepath.Join(dir, "blpp.out")
				got := runProc(t, inst, args, "BLPP_PROFILE="+profPath)
				if got.code != 0 || got.sig != 0 {
					t.Fatalf("%s: the rewritten program failed: %s", what, got)
				}
				counts := stubsigCounts(t, what, got.stdout)
				if !bytes.Contains(got.stderr, []byte("handled ")) || bytes.Contains(got.stderr, []byte("handled 0\n")) {
					t.Fatalf("%s: the handler never ran: %s", what, got)
				}
				prof, err := cct.ReadFile(profPath)
				if err != nil {
					t.Fatalf("%s: profile: %v", what, err)
				}
				paths := funcTotals(t, inst, prof)
				calls, instr := funcCalls(t, inst, prof)
				for i, fn := range stubsigFuncs {
					if !instr[fn] {
						paths[fn] = counts[i] // a6 and a7 in gcc -O2 (indirect tail jumps): their entries only
					}
					if calls[fn] != counts[i] || paths[fn] != counts[i] {
						t.Errorf("%s: %s: %d calls and %d path executions in the profile, the program counted %d activations",
							what, fn, calls[fn], paths[fn], counts[i])
					}
				}
				nothingLost(t, what, prof)
			})
		}
	}
}

// nothingLost requires the runtime's statistics of lost or misplaced
// counts to be 0: no record or count dropped, no path counted without
// its record or out of range, no return that missed its frame.
func nothingLost(t *testing.T, what string, prof *cct.Profile) {
	t.Helper()
	for _, k := range []string{"dropped_records", "dropped_counts", "no_record", "bad_paths", "exit_mismatch"} {
		if prof.Stats[k] != 0 {
			t.Errorf("%s: stats %s = %d, want 0", what, k, prof.Stats[k])
		}
	}
}

// stubsigCounts parses stubsig.c's output: a line "i count" per function.
func stubsigCounts(t *testing.T, what string, out []byte) []uint64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(stubsigFuncs) {
		t.Fatalf("%s: %d lines of output, want %d:\n%s", what, len(lines), len(stubsigFuncs), out)
	}
	counts := make([]uint64, len(lines))
	for i, l := range lines {
		var k int
		var n uint64
		if _, err := fmt.Sscanf(l, "%d %d", &k, &n); err != nil || k != i || n == 0 {
			t.Fatalf("%s: output line %q", what, l)
		}
		counts[i] = n
	}
	return counts
}

// funcCalls sums the calls of each function's records, by name, and
// says which functions are instrumented.
func funcCalls(t *testing.T, inst string, p *cct.Profile) (map[string]uint64, map[string]bool) {
	t.Helper()
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, instr := map[string]uint64{}, map[string]bool{}
	for _, fn := range tab.Funcs {
		instr[fn.Name] = fn.Instrumented
	}
	for _, th := range p.Threads {
		for _, r := range th.Records {
			if int(r.Func) >= len(tab.Funcs) {
				t.Fatalf("%s: profile names function %d of %d", inst, r.Func, len(tab.Funcs))
			}
			out[tab.Funcs[r.Func].Name] += r.Calls
		}
	}
	return out, instr
}

// TestStepMix runs stepmix.c single-stepped ("1"; "0" runs it plain): a SIGTRAP handler
// with instrumented calls and a loop of its own after every instruction
// of loops, a tail call, recursion, qsort's callbacks, a jump table,
// mutual recursion and a longjmp out of a recursion. The handler's code
// never calls the work's, so every work function's block counts must
// equal callgrind's of the plain run (valgrind does not single-step),
// and the behaviour must be the plain run's.
func TestStepMix(t *testing.T) {
	eachStepped(t, "stepmix.c", procConfigs, countCheck{
		own:     []string{"work", "leaf", "loopy", "rec", "tailer", "even", "odd", "pick", "cmp", "deep", "jumper"},
		ownOnly: true, // none with a partial activation of unknown location
	})
}

// TestStepThrow runs stepthrow.cpp single-stepped in two threads at once:
// a SIGTRAP handler with calls and a loop of its own after every
// instruction of C++ throws through instrumented frames with cleanups,
// the C++ runtime's unwinder and the landing pads included. Behaviour
// and the block counts of every function the handler does not touch must
// be the plain run's (callgrind's).
func TestStepThrow(t *testing.T) {
	eachStepped(t, filepath.Join("cxx", "stepthrow.cpp"), []fixture.Config{cxxConfigs[1], cxxConfigs[2]}, countCheck{
		own: []string{"thrower", "middle", "catcher"},
		exclude: map[string]string{
			"main":       "it branches on its argument",
			"work":       "it branches on its argument",
			"trap_flag":  "called when stepping only",
			"probe_loop": "the handler's",
			"probe_leaf": "the handler's",
			"on_trap":    "the handler",
		},
	})
}

// eachStepped builds src (a program that runs its work single-stepped
// with argument 1, plainly with 0, and whose SIGTRAP handler calls
// probe_loop) in each configuration, rewrites it in each mode and runs
// it stepped: it must behave as the plain original does, lose no count,
// and match callgrind's counts of the plain run as check says.
func eachStepped(t *testing.T, src string, configs []fixture.Config, check countCheck) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range configs {
		for _, m := range procModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				what := src + " " + c.String() + " " + m.name
				dir := t.TempDir()
				orig := fixture.Build(t, src, c)
				inst := rewriteWith(t, orig, filepath.Join(dir, "stepped.blpp"), m.opts)
				want := runProc(t, orig, []string{"0"})
				if want.code != 0 {
					t.Fatalf("%s: the original misbehaves: %s", what, want)
				}
				profPath := filepath.Join(dir, "blpp.out")
				got := runProc(t, inst, []string{"1"}, "BLPP_PROFILE="+profPath)
				sameBehaviour(t, what, want, got)
				prof, err := cct.ReadFile(profPath)
				if err != nil {
					t.Fatalf("%s: profile: %v", what, err)
				}
				nothingLost(t, what, prof)
				cg := callgrindOf(t, what, orig, []string{"0"}, want)
				compareCounts(t, what, inst, prof, cg, check)
				if calls, _ := funcCalls(t, inst, prof); calls["probe_loop"] == 0 {
					t.Errorf("%s: the handler's code never ran", what)
				}
			})
		}
	}
}
