package rewriter_test

// The runtime keeps the fatal signals' actions without the program
// seeing it (decision 94).

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestSignalsUnseen runs testdata/sigsee.c, which prints the actions of
// the signals the runtime keeps as sigaction reads them, installs a
// SIGSEGV handler and crashes into it, every way the handler can end.
// The rewritten program must print the same (SIG_DFL where the original
// sees it, its own handler read back, the handler's mask), die the same
// way, and write its profile, flagged fatal-signal when a signal killed
// it, with the counts of the work and the handler exact. In a static
// binary the C library's own rt_sigaction system call goes to the
// runtime; elsewhere its sigaction and signal do.
func TestSignalsUnseen(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	hows := []struct {
		arg  string
		sig  syscall.Signal
		code int
	}{
		{"dfl", syscall.SIGSEGV, -1},
		{"resethand", syscall.SIGSEGV, -1},
		{"exit", 0, 5},
		{"abort", syscall.SIGABRT, -1},
		{"ignore", syscall.SIGSEGV, -1},
	}
	for _, c := range procConfigsAll {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "sigsee.c", c)
			inst := map[string]string{}
			for _, m := range procModes {
				inst[m.name] = rewriteWith(t, orig, filepath.Join(dir, "sigsee-"+m.name+".blpp"), m.opts)
			}
			for _, h := range hows {
				args := []string{h.arg}
				want := runProc(t, orig, args)
				if want.sig != h.sig || want.code != h.code {
					t.Fatalf("sigsee %s %s: the original ended with %s", h.arg, c, want)
				}
				var cg *callgrind.Profile
				for _, m := range procModes {
					what := fmt.Sprintf("sigsee %s %s %s", h.arg, c, m.name)
					profPath := filepath.Join(dir, "prof."+h.arg+"."+m.name)
					got := runProc(t, inst[m.name], args, "BLPP_PROFILE="+profPath)
					sameBehaviour(t, what, want, got)
					prof, err := cct.ReadFile(profPath)
					if err != nil {
						t.Fatalf("%s: profile: %v", what, err)
					}
					if fatal := prof.Flags&cct.FlagFatalSignal != 0; fatal != (h.sig != 0) {
						t.Errorf("%s: profile flags %v; want fatal-signal exactly when a signal killed the program", what, prof.Flags)
					}
					if cg == nil {
						cg = callgrindOf(t, what, orig, args, want)
					}
					compareCounts(t, what, inst[m.name], prof, cg, countCheck{own: []string{"work", "show"}, ownOnly: c.Static})
				}
			}
		})
	}
}

// TestSignalsThroughPointers runs testdata/sigptr.c, which sets and reads
// the actions of the signals the runtime keeps through pointers to
// sigaction and signal taken at run time, and with direct calls, in
// builds where those reach the C library through the PLT (the pointer a
// GOT load in PIE, the PLT stub in a non-PIE executable) and through the
// GOT (-fno-plt), in a static binary (the C library's own system call),
// and as blpp run runs it, every library instrumented (decision 101). The
// program must read what it reads without blpp (SIG_DFL at the start,
// then its own actions), its SIGSEGV handler must run, and the counts of
// its work must be exact.
func TestSignalsThroughPointers(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	configs := []fixture.Config{procGccO2PIE, {CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-fno-plt"}}, procClangO0, procGccO2Stat}
	for i, c := range configs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "sigptr.c", c)
			setups := map[string]spawnSetup{}
			for _, m := range procModes {
				inst := rewriteWith(t, orig, filepath.Join(dir, "sigptr-"+m.name+".blpp"), m.opts)
				setups[m.name] = spawnSetup{orig: orig, inst: inst, prog: inst}
				if i == 0 {
					setups[m.name+" whole-process"] = wholeSetup(t, orig, filepath.Join(dir, m.name), m.opts)
				}
			}
			for _, arg := range []string{"pointers", "direct"} {
				args := []string{arg}
				want := runProc(t, orig, args)
				if want.code != 5 || !bytes.Contains(want.stdout, []byte("start: Segmentation fault: SIG_DFL\n")) || !bytes.HasSuffix(want.stdout, []byte("handler: SIGSEGV\n")) {
					t.Fatalf("sigptr %s %s: the original misbehaves: %s", arg, c, want)
				}
				cg := callgrindOf(t, "sigptr "+arg+" "+c.String(), orig, args, want)
				for name, s := range setups {
					m := procModes[0]
					if !strings.HasPrefix(name, m.name) {
						m = procModes[1]
					}
					what := fmt.Sprintf("sigptr %s %s %s", arg, c, name)
					profPath := filepath.Join(dir, "prof."+arg+"."+strings.ReplaceAll(name, " ", "-"))
					got := runProc(t, s.prog, s.args(args), "BLPP_PROFILE="+profPath)
					sameBehaviour(t, what, want, got)
					prof, err := cct.ReadFile(profPath)
					if err != nil {
						t.Fatalf("%s: profile: %v", what, err)
					}
					if prof.Flags&^cct.FlagFlowOnly != 0 {
						t.Errorf("%s: profile flags %v, want those of an exit", what, prof.Flags)
					}
					if s.launcher {
						prof = corpus.ModuleProfile(prof, 0)
					}
					check := countCheck{own: []string{"work", "show", "name"}, ownOnly: c.Static}
					if !cg.Folded && !c.Static && c.PIE {
						// Callgrind files .init at run-time addresses,
						// and without a call into .plt (-fno-plt) the
						// load bias that places it is not known.
						check.exclude = map[string]string{"_init": "not placed by callgrind"}
					}
					compareCounts(t, what, s.inst, prof, cg, check)
				}
			}
		})
	}
}
