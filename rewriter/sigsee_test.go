package rewriter_test

// The runtime keeps the fatal signals' actions without the program
// seeing it (decision 94).

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
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
