package rewriter_test

// Processes made by code the program does not instrument (issue 29):
// daemon(), posix_spawn(), system(), and vfork followed by exec.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestSpawn runs testdata/spawn.c every way it makes a process, in each
// process configuration and mode. Each process writes its own profile
// (the exec'd child is the instrumented program too); their sum must be
// callgrind's counts, summed over its processes (callgrind, like blpp,
// keeps nothing of a vfork child that execs). The daemon's parent leaves
// inside daemon() through _exit: it writes its profile before the call.
// In context mode each runs in continuous mode too (decision 94): a
// vfork child shares the live file's mapping, which it must leave alone.
func TestSpawn(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "spawn.c", c)
			inst := map[string]string{}
			for _, m := range procModes {
				inst[m.name] = rewriteWith(t, orig, filepath.Join(dir, "spawn-"+m.name+".blpp"), m.opts)
			}
			for _, how := range []string{"daemon", "posix_spawn", "system", "vfork"} {
				args := []string{how}
				want := runProc(t, orig, args)
				if want.code != 0 {
					t.Fatalf("spawn %s %s: the original misbehaves: %s", how, c, want)
				}
				cg := callgrindOf(t, "spawn "+how+" "+c.String(), orig, args, want)
				for _, run := range []struct{ mode, suffix string }{{"context", ""}, {"flow-only", ""}, {"context", "%c"}} {
					m := procModes[0]
					if run.mode != m.name {
						m = procModes[1]
					}
					what := "spawn " + how + " " + c.String() + " " + m.name + run.suffix
					profDir, err := os.MkdirTemp(dir, "prof")
					if err != nil {
						t.Fatal(err)
					}
					got := runProc(t, inst[m.name], args, "BLPP_PROFILE="+filepath.Join(profDir, "prof.%p"+run.suffix))
					sameBehaviour(t, what, want, got)
					// The daemon's child may still be writing its profile
					// when its stdout closes.
					var names []string
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						if names = dirNames(t, profDir); len(names) == 2 || time.Now().After(deadline) {
							break
						}
					}
					if len(names) != 2 {
						t.Fatalf("%s: profiles %q, want two (one per process)", what, names)
					}
					var profs []*cct.Profile
					for _, n := range names {
						p, err := cct.ReadFile(filepath.Join(profDir, n))
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						if p.Flags&^cct.FlagExec != m.flags {
							t.Errorf("%s: %s has flags %v", what, n, p.Flags)
						}
						profs = append(profs, p)
					}
					merged, err := cct.Merge(profs...)
					if err != nil {
						t.Fatalf("%s: merge: %v", what, err)
					}
					own := []string{"work", "child_work", "setup", "main"}
					compareCounts(t, what, inst[m.name], merged, cg, countCheck{own: own, ownOnly: c.Static})
				}
			}
		})
	}
}
