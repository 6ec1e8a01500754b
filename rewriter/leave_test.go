package rewriter_test

// Ways out of a process image that skip the exit hook [decision 59]:
// _exit, _Exit and a bare exit_group system call write the final
// profile, an exec a snapshot of it, a vfork child nothing.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestLeave runs testdata/leave.c every way it leaves, in each process
// configuration and mode, and checks the profiles against callgrind.
func TestLeave(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "leave.c", c)
			inst := map[string]string{}
			for _, m := range procModes {
				inst[m.name] = rewriteWith(t, orig, filepath.Join(dir, "leave-"+m.name+".blpp"), m.opts)
			}
			// run runs mode m's copy with args, requires the original's
			// behaviour and returns the profiles it wrote, by name.
			run := func(what, mode string, args []string, want procResult) (procResult, []string, string) {
				t.Helper()
				profDir, err := os.MkdirTemp(dir, "prof")
				if err != nil {
					t.Fatal(err)
				}
				got := runProc(t, inst[mode], args, "BLPP_PROFILE="+filepath.Join(profDir, "prof.%p"))
				sameBehaviour(t, what, want, got)
				return got, dirNames(t, profDir), profDir
			}
			// only runs mode m's copy with args and returns the one
			// profile it must have written, its process's.
			only := func(what, mode string, args []string, want procResult) *cct.Profile {
				t.Helper()
				got, names, profDir := run(what, mode, args, want)
				if len(names) != 1 || names[0] != "prof."+strconv.Itoa(got.pid) {
					t.Fatalf("%s: profiles %q, want only prof.%d", what, names, got.pid)
				}
				p, err := cct.ReadFile(filepath.Join(profDir, names[0]))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return p
			}

			// original runs the original with args and requires it to
			// end with status code, printing marker.
			original := func(args []string, code int, marker string) procResult {
				t.Helper()
				want := runProc(t, orig, args)
				if want.code != code || !bytes.Contains(want.stdout, []byte(marker)) {
					t.Fatalf("leave %s %s: the original misbehaves: %s", strings.Join(args, " "), c, want)
				}
				return want
			}

			// The image ends at once: the profile is final and exact.
			for _, how := range []string{"_exit", "_Exit", "syscall"} {
				args := []string{how}
				want := original(args, 3, how+": ")
				cg := callgrindOf(t, "leave "+how+" "+c.String(), orig, args, want)
				abandoned := map[string]uint64{"main": 1}
				var ended map[string]uint64
				if how == "syscall" {
					abandoned["leave"] = 1 // stopped at its system call
					ended = map[string]uint64{"leave": 1}
				}
				for _, m := range procModes {
					what := "leave " + how + " " + c.String() + " " + m.name
					prof := only(what, m.name, args, want)
					if prof.Flags != m.flags {
						t.Errorf("%s: flags %v, want %v", what, prof.Flags, m.flags)
					}
					compareCounts(t, what, inst[m.name], prof, cg, countCheck{
						own: []string{"work"}, ownOnly: c.Static, abandoned: abandoned, ended: ended,
					})
				}
			}

			// A successful exec: a snapshot, flagged exec. callgrind
			// writes nothing at an exec, so its run execs a program
			// that does not exist, goes on in main and returns: work
			// (done before the exec) must match, and main must have
			// stopped at the exec call.
			{
				args := []string{"exec"}
				want := original(args, 0, "exec ")
				failArgs := []string{"exec", "/nonexistent/echo"}
				failed := runProc(t, orig, failArgs)
				cg := callgrindOf(t, "leave exec (failing) "+c.String(), orig, failArgs, failed)
				for _, m := range procModes {
					what := "leave exec " + c.String() + " " + m.name
					prof := only(what, m.name, args, want)
					if prof.Flags != m.flags|cct.FlagExec {
						t.Errorf("%s: flags %v, want %v", what, prof.Flags, m.flags|cct.FlagExec)
					}
					compareCounts(t, what, inst[m.name], prof, cg, countCheck{
						own: []string{"work"}, ownOnly: true, abandoned: map[string]uint64{"main": 1},
					})
				}
			}

			// A failed exec returns: the exit's profile replaces the
			// snapshot and counts everything.
			{
				args := []string{"exec-fails"}
				want := original(args, 0, "exec failed, then")
				cg := callgrindOf(t, "leave exec-fails "+c.String(), orig, args, want)
				for _, m := range procModes {
					what := "leave exec-fails " + c.String() + " " + m.name
					prof := only(what, m.name, args, want)
					if prof.Flags != m.flags {
						t.Errorf("%s: flags %v, want %v (the exit's profile)", what, prof.Flags, m.flags)
					}
					compareCounts(t, what, inst[m.name], prof, cg, countCheck{
						own: []string{"work", "main"}, ownOnly: c.Static,
					})
				}
			}

			// A fork child that leaves through _exit writes its own
			// profile; with the parent's it adds up to callgrind's.
			{
				args := []string{"fork"}
				want := original(args, 0, "child status 0")
				cg := callgrindOf(t, "leave fork "+c.String(), orig, args, want)
				for _, m := range procModes {
					what := "leave fork " + c.String() + " " + m.name
					got, _, profDir := run(what, m.name, args, want)
					parent, child := forkProfiles(t, what, profDir, "prof.", got.pid)
					if parent.Flags != m.flags || child.Flags != m.flags {
						t.Errorf("%s: flags %v (parent), %v (child); want %v", what, parent.Flags, child.Flags, m.flags)
					}
					merged, err := cct.Merge(parent, child)
					if err != nil {
						t.Fatalf("%s: merge: %v", what, err)
					}
					// The child's main ended its path at the _exit
					// call (a call that does not return), so no
					// activation is partial.
					compareCounts(t, what, inst[m.name], merged, cg, countCheck{
						own: []string{"work", "main"}, ownOnly: c.Static,
					})
				}
			}

			// A vfork child shares the parent's memory: its _exit must
			// write nothing (it would be the parent's profile, and the
			// parent's exit would then write none). Counts are not
			// compared: the child's instrumented code runs on the
			// parent's shadow stack and counters, so main's blocks
			// before the vfork count twice (a known limit, decision 59).
			{
				args := []string{"vfork"}
				want := original(args, 0, "child 7")
				for _, m := range procModes {
					what := "leave vfork " + c.String() + " " + m.name
					if prof := only(what, m.name, args, want); prof.Flags != m.flags {
						t.Errorf("%s: flags %v, want %v", what, prof.Flags, m.flags)
					}
				}
			}
		})
	}
}
