package rewriter_test

// Processes made by code the program does not instrument (issue 29,
// decisions 94 and 101): daemon(), posix_spawn(), system(), and vfork
// followed by exec.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// spawnHows are the ways testdata/spawn.c makes a process; shares says
// which make one in the parent's memory (vfork, and the C library's
// posix_spawn, which system() uses: clone with CLONE_VM). Each process
// that runs the program writes a profile, but a vfork child that exits
// without an exec (vfork_exit) counts nowhere (decision 101): natively
// only its parent writes one; under valgrind, where vfork is a fork,
// both do.
var spawnHows = []struct {
	arg    string
	shares bool
	native int // profiles written natively
}{{"daemon", false, 2}, {"posix_spawn", true, 2}, {"system", true, 2}, {"vfork", true, 2}, {"vfork_exit", true, 1}}

// TestSpawn runs testdata/spawn.c every way it makes a process, in each
// process configuration and mode, rewritten as blpp rewrite does (the
// static binary's C library is instrumented with it). Each process writes
// its own profile (the exec'd child is the instrumented program too);
// their sum must be callgrind's counts of the program's own functions,
// summed over its processes (callgrind, like blpp, keeps nothing of a
// child that execs). The daemon's parent leaves inside daemon() through
// _exit: it writes its profile before the call. In context mode each
// runs in continuous mode too (decision 94): a vfork child shares the
// live file's mapping, which it must leave alone. Where the C library is
// instrumented, every function of it is compared too (spawnChecks).
func TestSpawn(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "spawn.c", c)
			setups := map[string]spawnSetup{}
			for _, m := range procModes {
				inst := rewriteWith(t, orig, filepath.Join(dir, "spawn-"+m.name+".blpp"), m.opts)
				setups[m.name] = spawnSetup{orig: orig, inst: inst, prog: inst, libc: c.Static}
			}
			spawnChecks(t, c.String(), orig, setups)
		})
	}
}

// TestSpawnWhole is TestSpawn as blpp run runs the program: every library
// it loads instrumented (decision 82), the C library's posix_spawn and
// system included. The child it starts from argv[0] is the executable's
// copy, run alone.
func TestSpawnWhole(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := procGccO2PIE
	orig := fixture.Build(t, "spawn.c", c)
	dir := t.TempDir()
	setups := map[string]spawnSetup{}
	for _, m := range procModes {
		setups[m.name] = wholeSetup(t, orig, filepath.Join(dir, m.name), m.opts)
	}
	spawnChecks(t, c.String()+" whole-process", orig, setups)
}

// spawnChecks runs spawn.c every way, in each mode's setup (context and
// flow-only, and context in continuous mode), and checks the profiles:
//
//   - natively, behaviour as the original's, one profile per process
//     that runs the program, flags as the mode's, and the program's own
//     functions exact against callgrind's counts of the original summed
//     over its processes;
//   - the same run under callgrind, each process's profile against
//     callgrind's counts of that process, every instrumented function
//     (sameRunEach): the C library's too where it is instrumented;
//   - where the child shares the parent's memory and runs instrumented
//     code there (vfork's; posix_spawn's where the C library is
//     instrumented), which valgrind never lets it do, the parent's
//     native profile against its native profile with that child made a
//     fork (nativeAsFork): exactly the same counts.
func spawnChecks(t *testing.T, config, orig string, setups map[string]spawnSetup) {
	for _, how := range spawnHows {
		args := []string{how.arg}
		want := runProc(t, orig, args)
		if want.code != 0 {
			t.Fatalf("spawn %s %s: the original misbehaves: %s", how.arg, config, want)
		}
		cg := callgrindOf(t, "spawn "+how.arg+" "+config, orig, args, want)
		for _, run := range []struct{ mode, suffix string }{{"context", ""}, {"flow-only", ""}, {"context", "%c"}} {
			m := procModes[0]
			if run.mode != m.name {
				m = procModes[1]
			}
			s := setups[m.name]
			what := "spawn " + how.arg + " " + config + " " + m.name + run.suffix
			profDir, err := os.MkdirTemp(t.TempDir(), "prof")
			if err != nil {
				t.Fatal(err)
			}
			got := runProc(t, s.prog, s.args(args), "BLPP_PROFILE="+filepath.Join(profDir, "prof.%p"+run.suffix))
			sameBehaviour(t, what, want, got)
			var profs []*cct.Profile
			for _, n := range profilesIn(t, what, profDir, how.native) {
				p, err := cct.ReadFile(filepath.Join(profDir, n))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if p.Flags&^cct.FlagExec != m.flags {
					t.Errorf("%s: %s has flags %v", what, n, p.Flags)
				}
				// A child that shares the parent's memory is moved off
				// its thread block and says so in its parent's profile:
				// vfork's always, posix_spawn's where the C library's
				// clone is called from instrumented code.
				wantVM := uint64(0)
				if pidOf(t, n) == got.pid && (strings.HasPrefix(how.arg, "vfork") || how.shares && s.libc) {
					wantVM = 1
				}
				if p.Stats["vm_children"] != wantVM {
					t.Errorf("%s: %s: stats vm_children = %d, want %d", what, n, p.Stats["vm_children"], wantVM)
				}
				// The one that exits without exec says so too.
				if wantExits := map[bool]uint64{true: wantVM}[how.arg == "vfork_exit"]; p.Stats["vm_exits"] != wantExits {
					t.Errorf("%s: %s: stats vm_exits = %d, want %d", what, n, p.Stats["vm_exits"], wantExits)
				}
				profs = append(profs, p)
			}
			merged, err := cct.Merge(profs...)
			if err != nil {
				t.Fatalf("%s: merge: %v", what, err)
			}
			if s.launcher {
				merged = corpus.ModuleProfile(merged, 0) // the executable's part
			}
			if how.arg == "vfork_exit" {
				// Callgrind, whose vfork is a fork, counts the child's
				// work in the child; blpp nowhere (decision 101): its
				// parent's counts are checked below, as forks and in
				// the same run.
				if n := funcTotals(t, s.inst, merged)["setup"]; n != 0 {
					t.Errorf("%s: setup has %d paths in the parent's profile; the child that ran it counts nowhere", what, n)
				}
			} else {
				own := []string{"work", "child_work", "setup", "main"}
				compareCounts(t, what, s.inst, merged, cg, countCheck{own: own, ownOnly: s.libc})
			}
			if run.suffix == "" {
				sameRunEach(t, what, s, args, want, 2)
			}
			if strings.HasPrefix(how.arg, "vfork") || how.shares && s.libc {
				nativeAsFork(t, what, s, args, want, run.suffix)
			}
		}
	}
}
