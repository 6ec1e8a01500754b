package rewriter_test

// End-to-end tests of the runtime's process-level hooks [DESIGN 10, 11]:
// threads (one profile for all of them), fork (each process writes its
// own profile), fatal signals (the profile is written and the program
// dies as it would have) and the dump signal (a running program writes a
// profile and goes on). Each builds a fixture from testdata/, rewrites it,
// runs the original and the rewritten binary, and where the run is
// deterministic compares block counts with callgrind's.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// Configurations of the process tests: the issue asks for gcc -O2 PIE and
// clang -O0 non-PIE everywhere, and a static gcc -O2 build where threads
// and fork meet the C library's own start-up code.
var (
	procGccO2PIE   = fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	procClangO0    = fixture.Config{CC: "clang", Opt: "-O0"}
	procGccO2Stat  = fixture.Config{CC: "gcc", Opt: "-O2", Static: true}
	procConfigs    = []fixture.Config{procGccO2PIE, procClangO0}
	procConfigsAll = []fixture.Config{procGccO2PIE, procClangO0, procGccO2Stat}
)

// procResult is how a process ended and what it printed.
type procResult struct {
	stdout, stderr []byte
	code           int            // exit status; -1 when killed by a signal
	sig            syscall.Signal // the signal that killed it, or 0
	pid            int
}

func (r procResult) String() string {
	if r.sig != 0 {
		return fmt.Sprintf("killed by %v\nstdout:\n%s\nstderr:\n%s", r.sig, r.stdout, r.stderr)
	}
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// status decodes the end of a process from cmd.Wait's error.
func status(t *testing.T, name string, err error) (code int, sig syscall.Signal) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, ws.Signal()
		}
		return ee.ExitCode(), 0
	}
	t.Fatalf("%s: %v", name, err)
	return 0, 0
}

// startProc starts prog with args and env added to the environment. A
// parallel test's fork may still hold a just-written executable open for
// writing (ETXTBSY): the start is retried, as the go command does.
func startProc(t *testing.T, prog string, args, env []string, stdout, stderr *bytes.Buffer) *exec.Cmd {
	t.Helper()
	for try := 0; ; try++ {
		cmd := exec.Command(prog, args...)
		cmd.Env = append(os.Environ(), env...)
		stdout.Reset()
		stderr.Reset()
		cmd.Stdout, cmd.Stderr = stdout, stderr
		err := cmd.Start()
		if err == nil {
			return cmd
		}
		if !errors.Is(err, syscall.ETXTBSY) || try >= 20 {
			t.Fatalf("%s: %v", prog, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runProc runs prog to the end.
func runProc(t *testing.T, prog string, args []string, env ...string) procResult {
	t.Helper()
	var o, e bytes.Buffer
	cmd := startProc(t, prog, args, env, &o, &e)
	code, sig := status(t, prog, cmd.Wait())
	return procResult{o.Bytes(), e.Bytes(), code, sig, cmd.Process.Pid}
}

// rewriteTo builds src in configuration c, rewrites it into dir and
// returns the original and the instrumented binary.
func rewriteTo(t *testing.T, src string, c fixture.Config, dir string) (orig, inst string) {
	t.Helper()
	orig = fixture.Build(t, src, c)
	return orig, rewriteBinary(t, orig, filepath.Join(dir, strings.TrimSuffix(src, ".c")+".blpp"))
}

// procModes are the instrumentation modes the process tests run in: the
// default (calling context) and flow-only, whose counters live in each
// thread block's slots (decision 42): per thread, and wiped in a fork
// child like the arena.
var procModes = []struct {
	name  string
	opts  rewriter.Options
	flags cct.Flags
}{
	{"context", rewriter.Options{}, 0},
	{"flow-only", rewriter.Options{NoContext: true}, cct.FlagFlowOnly},
}

// rewriteBinary rewrites the executable orig into inst.
func rewriteBinary(t *testing.T, orig, inst string) string {
	t.Helper()
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
	if err != nil {
		t.Fatalf("%s: rewrite: %v", orig, err)
	}
	if sum.Instrumented == 0 {
		t.Fatalf("%s: nothing instrumented", orig)
	}
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		t.Fatal(err)
	}
	return inst
}

// sameBehaviour requires the rewritten run to end like the original one:
// same exit status or same signal, same stdout and stderr.
func sameBehaviour(t *testing.T, what string, want, got procResult) {
	t.Helper()
	if got.code != want.code || got.sig != want.sig || !bytes.Equal(got.stdout, want.stdout) || !bytes.Equal(got.stderr, want.stderr) {
		t.Fatalf("%s: behaviour differs\noriginal: %s\nrewritten: %s", what, want, got)
	}
}

// countCheck says which functions compareCounts compares.
type countCheck struct {
	// own are the fixture's functions: each must be instrumented, have
	// no partial activation and be compared.
	own []string
	// ownOnly compares only own (a static binary, where the C library's
	// start-up code sees the rewriter's and valgrind's changes).
	ownOnly bool
	// exclude are functions whose counts are known not to match
	// callgrind's, with the reason.
	exclude map[string]string
	// retried maps a function to the number of faults one of its
	// instructions took and was retried after (loopsig.c): callgrind
	// then counts the head of that instruction's block once more per
	// fault, as if the block had started again, while the program (and
	// blpp) ran it once. Exactly one block of the function must be that
	// much below callgrind; every other block must match.
	retried map[string]uint64
	// ended maps a function to the number of times the process ended
	// in one of its blocks, at an exit_group system call: callgrind adds
	// up a block's instructions when control leaves it, so it does not
	// count that block's last run. Exactly one block of the function
	// must be that much above callgrind.
	ended map[string]uint64
	// abandoned maps a function to the number of its activations left
	// by a longjmp or a signal, each of which must have stopped at a
	// known call (a partial activation of known location).
	abandoned map[string]uint64
}

// compareCounts compares the block counts blpp derives from prof with
// callgrind's execution count of each block's first instruction in the
// original binary, exactly. Functions with partial activations of unknown
// location (the runtime does not yet record where they stopped) are not
// compared, except that none of check.own may have any.
func compareCounts(t *testing.T, what, inst string, prof *cct.Profile, cg *callgrind.Profile, check countCheck) *report.PathDoc {
	t.Helper()
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.MakePaths(inst, tab, prof)
	if err != nil {
		t.Fatalf("%s: report: %v", what, err)
	}
	own := map[string]bool{}
	for _, n := range check.own {
		own[n] = true
	}
	seen := map[string]bool{}
	for _, fn := range doc.Functions {
		seen[fn.Name] = true
		if _, ok := check.exclude[fn.Name]; ok {
			continue
		}
		if !own[fn.Name] && (check.ownOnly || !fn.Instrumented || fn.PartialUnknown > 0) {
			continue
		}
		if !fn.Instrumented {
			t.Errorf("%s: %s is not instrumented: %s", what, fn.Name, fn.Reason)
			continue
		}
		if fn.PartialUnknown > 0 {
			// Activations that stopped at a call are counted exactly (the
			// runtime records the call site); one stopped anywhere else
			// (at a fatal signal) is not.
			t.Errorf("%s: %s has %d partial activations of unknown location", what, fn.Name, fn.PartialUnknown)
			continue
		}
		faults, retried := check.retried[fn.Name]
		endRuns, ended := check.ended[fn.Name]
		for _, b := range fn.Blocks {
			addr, err := strconv.ParseUint(strings.TrimPrefix(b.Addr, "0x"), 16, 64)
			if err != nil {
				t.Fatalf("%s: %s: block address %q: %v", what, fn.Name, b.Addr, err)
			}
			want := cg.Exec[addr]
			if retried && b.Count+faults == want {
				retried = false // the one block callgrind counts again
				continue
			}
			if ended && b.Count == want+endRuns {
				ended = false // the block the process ended in
				continue
			}
			if b.Count != want {
				t.Errorf("%s: %s block %s: blpp %d, callgrind %d", what, fn.Name, b.Addr, b.Count, want)
			}
		}
		if retried {
			t.Errorf("%s: %s: no block counted %d below callgrind for its retried faults", what, fn.Name, faults)
		}
		if ended {
			t.Errorf("%s: %s: no block counted %d above callgrind where the process ended", what, fn.Name, endRuns)
		}
	}
	for _, fn := range doc.Functions {
		if n, ok := check.abandoned[fn.Name]; ok && (fn.Partial != n || fn.PartialUnknown != 0) {
			t.Errorf("%s: %s has %d partial activations (%d of unknown location), want %d, all known", what, fn.Name, fn.Partial, fn.PartialUnknown, n)
		}
	}
	for _, n := range check.own {
		if !seen[n] {
			t.Errorf("%s: function %s is not in the report", what, n)
		}
	}
	return doc
}

// pathTotal is the number of path executions in a profile, summed over
// every thread and record.
func pathTotal(p *cct.Profile) uint64 {
	var n uint64
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for _, pa := range r.Paths {
				n += pa.Count
			}
		}
	}
	return n
}

// funcTotals sums the path counts of each function, by name.
func funcTotals(t *testing.T, inst string, p *cct.Profile) map[string]uint64 {
	t.Helper()
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]uint64{}
	for fid, paths := range p.Flat() {
		if int(fid) >= len(tab.Funcs) {
			t.Fatalf("%s: profile names function %d of %d", inst, fid, len(tab.Funcs))
		}
		for _, pt := range paths {
			out[tab.Funcs[fid].Name] += pt.Count
		}
	}
	return out
}

// callgrindOf runs the original under callgrind and requires it to end as
// the native run did.
func callgrindOf(t *testing.T, what, orig string, args []string, native procResult) *callgrind.Profile {
	t.Helper()
	cg, err := callgrind.Run(orig, callgrind.Options{Args: args, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("%s: callgrind: %v", what, err)
	}
	if cg.Signal != native.sig || native.sig == 0 && cg.ExitCode != native.code || !bytes.Equal(cg.Stdout, native.stdout) {
		t.Fatalf("%s: the program ran differently under callgrind (exit %d, signal %v, stdout %q); natively %s",
			what, cg.ExitCode, cg.Signal, cg.Stdout, native)
	}
	return cg
}

// TestThreads runs a program with four threads. The runtime gives each
// thread its own block [DESIGN 4] and writes one profile at exit; the
// block counts summed over the threads equal callgrind's (one count per
// instruction over all threads, --separate-threads=no).
func TestThreads(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		for _, m := range procModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				what := "threads.c " + c.String() + " " + m.name
				dir := t.TempDir()
				orig := fixture.Build(t, "threads.c", c)
				inst := rewriteWith(t, orig, filepath.Join(dir, "threads.blpp"), m.opts)
				want := runProc(t, orig, nil)
				if want.code != 0 || !bytes.Contains(want.stdout, []byte("total: ")) {
					t.Fatalf("%s: the original misbehaves: %s", what, want)
				}
				profPath := filepath.Join(dir, "blpp.out")
				got := runProc(t, inst, nil, "BLPP_PROFILE="+profPath)
				sameBehaviour(t, what, want, got)
				prof, err := cct.ReadFile(profPath)
				if err != nil {
					t.Fatalf("%s: profile: %v", what, err)
				}
				if prof.Flags != m.flags {
					t.Errorf("%s: profile flags %v, want %v", what, prof.Flags, m.flags)
				}
				// main, the four workers and idle's thread each got a
				// thread block (idle's through the leaf stub in
				// flow-only images [decision 55]).
				if n := prof.Stats[cct.StatThreads]; n != 6 {
					t.Errorf("%s: stats %s = %d, want 6 (main, 4 workers, idle)", what, cct.StatThreads, n)
				}
				cg := callgrindOf(t, what, orig, nil, want)
				doc := compareCounts(t, what, inst, prof, cg, countCheck{
					own:     []string{"main", "worker", "mix", "classify", "step", "idle"},
					ownOnly: c.Static,
				})
				// Every worker ran: worker's activations are the threads.
				for _, fn := range doc.Functions {
					if fn.Name != "worker" {
						continue
					}
					for _, b := range fn.Blocks {
						if b.Addr == fn.Entry && b.Count != 4 {
							t.Errorf("%s: worker's entry block ran %d times, want 4", what, b.Count)
						}
					}
				}
			})
		}
	}
}

// TestFork runs a program that forks with BLPP_PROFILE=dir/prof.%p: each
// process writes its own profile, named by its pid; the child's holds only
// what the child did, and the two merged equal callgrind's counts (summed
// over the processes' files, each holding one process's own work).
func TestFork(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		for _, m := range procModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				fr := runForking(t, "fork.c", c, m.opts)
				what, orig, inst, want, parent, child := fr.what, fr.orig, fr.inst, fr.want, fr.parent, fr.child
				if !bytes.Contains(want.stdout, []byte("child: ")) {
					t.Fatalf("%s: the original misbehaves: %s", what, want)
				}
				if parent.Flags != m.flags || child.Flags != m.flags {
					t.Errorf("%s: flags %v (parent), %v (child); want %v", what, parent.Flags, child.Flags, m.flags)
				}
				if parent.Stats["fork_child"] != 0 || child.Stats["fork_child"] != 1 {
					t.Errorf("%s: stats fork_child = %d (parent), %d (child); want 0, 1", what, parent.Stats["fork_child"], child.Stats["fork_child"])
				}
				// Each process counts its own work only.
				pt, ct := funcTotals(t, inst, parent), funcTotals(t, inst, child)
				for _, fn := range []string{"work", "parent_work"} {
					if pt[fn] == 0 || ct[fn] != 0 {
						t.Errorf("%s: %s has %d paths in the parent's profile, %d in the child's; want some, none", what, fn, pt[fn], ct[fn])
					}
				}
				if pt["child_work"] != 0 || ct["child_work"] == 0 {
					t.Errorf("%s: child_work has %d paths in the parent's profile, %d in the child's; want none, some", what, pt["child_work"], ct["child_work"])
				}

				merged, err := cct.Merge(parent, child)
				if err != nil {
					t.Fatalf("%s: merge: %v", what, err)
				}
				cg := callgrindOf(t, what, orig, nil, want)
				compareCounts(t, what, inst, merged, cg, countCheck{
					own:     []string{"work", "child_work", "parent_work", "step"},
					ownOnly: c.Static,
				})
			})
		}
	}
}

// forkRun is a run of a fixture that forks once: the original's
// behaviour, and the rewritten program's two profiles.
type forkRun struct {
	what, orig, inst string
	want             procResult
	parent, child    *cct.Profile
}

// runForking builds src in configuration c, rewrites it with opts, runs
// both with BLPP_PROFILE=dir/prof.%p, requires the original to exit 0
// and the copy to behave the same, and reads the parent's and the
// child's profile.
func runForking(t *testing.T, src string, c fixture.Config, opts rewriter.Options) forkRun {
	t.Helper()
	r := forkRun{what: src + " " + c.String()}
	if opts.NoContext {
		r.what += " flow-only"
	}
	dir := t.TempDir()
	r.orig = fixture.Build(t, src, c)
	r.inst = rewriteWith(t, r.orig, filepath.Join(dir, strings.TrimSuffix(src, ".c")+".blpp"), opts)
	r.want = runProc(t, r.orig, nil)
	if r.want.code != 0 {
		t.Fatalf("%s: the original misbehaves: %s", r.what, r.want)
	}
	profDir := filepath.Join(dir, "prof")
	if err := os.Mkdir(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := runProc(t, r.inst, nil, "BLPP_PROFILE="+filepath.Join(profDir, "prof.%p"))
	sameBehaviour(t, r.what, r.want, got)
	r.parent, r.child = forkProfiles(t, r.what, profDir, "prof.", got.pid)
	return r
}

// TestForkDefaultName: without %p in BLPP_PROFILE the parent writes the
// name as given and a fork child appends ".<pid>" to it, so the child
// never overwrites its parent's profile.
func TestForkDefaultName(t *testing.T) {
	c := procGccO2PIE
	dir := t.TempDir()
	_, inst := rewriteTo(t, "fork.c", c, dir)
	profDir := filepath.Join(dir, "prof")
	if err := os.Mkdir(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := runProc(t, inst, nil, "BLPP_PROFILE="+filepath.Join(profDir, "prof"))
	if got.code != 0 {
		t.Fatalf("fork.c %s: %s", c, got)
	}
	names := dirNames(t, profDir)
	if len(names) != 2 || names[0] != "prof" || !regexp.MustCompile(`^prof\.[0-9]+$`).MatchString(names[1]) {
		t.Fatalf("fork.c %s: profile directory holds %q, want prof (the parent) and prof.<child pid>", c, names)
	}
	parent, err := cct.ReadFile(filepath.Join(profDir, "prof"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := cct.ReadFile(filepath.Join(profDir, names[1]))
	if err != nil {
		t.Fatal(err)
	}
	if parent.PID != uint64(got.pid) || fmt.Sprintf("prof.%d", child.PID) != names[1] {
		t.Errorf("fork.c %s: parent profile of pid %d (want %d), child profile %s of pid %d", c, parent.PID, got.pid, names[1], child.PID)
	}
}

// forkProfiles reads the two profiles of a fork run from dir, named
// prefix+pid, and tells the parent's (pid parentPID) from the child's.
// Nothing else may be left there (no temporary files).
func forkProfiles(t *testing.T, what, dir, prefix string, parentPID int) (parent, child *cct.Profile) {
	t.Helper()
	names := dirNames(t, dir)
	if len(names) != 2 {
		t.Fatalf("%s: %s holds %q; want two profiles, %s<pid> of parent and child", what, dir, names, prefix)
	}
	for _, n := range names {
		pid, err := strconv.Atoi(strings.TrimPrefix(n, prefix))
		if !strings.HasPrefix(n, prefix) || err != nil {
			t.Fatalf("%s: unexpected file %s in the profile directory", what, n)
		}
		p, err := cct.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if p.PID != uint64(pid) {
			t.Errorf("%s: %s holds the profile of pid %d", what, n, p.PID)
		}
		if pid == parentPID {
			parent = p
		} else {
			child = p
		}
	}
	if parent == nil || child == nil {
		t.Fatalf("%s: profiles %q: want one of the parent (pid %d) and one of the child", what, names, parentPID)
	}
	return parent, child
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestFatalSignals runs a program that dies by SIGSEGV (a store through
// NULL) or SIGABRT (abort), and one that calls exit(3) two calls deep.
// The rewritten program must die the same way, print the same before
// dying, and leave a valid profile, marked as written by the fatal-signal
// handler, with exact counts for the work finished before the death.
func TestFatalSignals(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	modes := []struct {
		arg  string
		sig  syscall.Signal
		code int
	}{
		{"segv", syscall.SIGSEGV, -1},
		{"abort", syscall.SIGABRT, -1},
		{"exit", 0, 3},
		{"deep", syscall.SIGSEGV, -1},
	}
	for _, c := range procConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig, inst := rewriteTo(t, "crash.c", c, dir)
			// Flow-only too, for the closed functions' frames [decision 57].
			flow := rewriteWith(t, orig, filepath.Join(dir, "crash.flow"), rewriter.Options{NoContext: true})
			for _, m := range modes {
				args := []string{m.arg}
				want := runProc(t, orig, args)
				if want.sig != m.sig || want.code != m.code {
					t.Fatalf("crash.c %s %s: the original ended with %s; want signal %v, exit %d", c, m.arg, want, m.sig, m.code)
				}
				var cg *callgrind.Profile
				for _, im := range []struct{ name, path string }{{"context", inst}, {"flow-only", flow}} {
					what := fmt.Sprintf("crash.c %s %s %s", c, m.arg, im.name)
					inst := im.path
					profPath := filepath.Join(dir, "prof."+m.arg+"."+im.name)
					got := runProc(t, inst, args, "BLPP_PROFILE="+profPath)
					sameBehaviour(t, what, want, got)
					prof, err := cct.ReadFile(profPath)
					if err != nil {
						t.Fatalf("%s: profile: %v", what, err)
					}
					if fatal := prof.Flags&cct.FlagFatalSignal != 0; fatal != (m.sig != 0) {
						t.Errorf("%s: profile flags %v; want fatal-signal exactly when a signal killed the program", what, prof.Flags)
					}
					if prof.PID != uint64(got.pid) {
						t.Errorf("%s: profile of pid %d, the process was %d", what, prof.PID, got.pid)
					}
					if names := dirNames(t, dir); slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, ".tmp.") }) {
						t.Errorf("%s: temporary profile left behind: %q", what, names)
					}
					if cg == nil {
						cg = callgrindOf(t, what, orig, args, want)
					}
					check := countCheck{own: []string{"work", "helper"}, ownOnly: c.Static}
					switch {
					case m.arg == "deep":
						// dive's seven activations stopped at their calls
						// (poke's is the newest: stopped anywhere).
						check.own = append(check.own, "dive")
						check.abandoned = map[string]uint64{"dive": 7, "die_by": 1}
					case im.name == "context":
						// (A call that does not return ends the caller's
						// path there: abort_now's and die_by's are whole.)
					case m.arg == "abort":
						// In a flow-only image die_by, abort_now and main
						// are closed functions that call out, whose calls
						// that do not return leave them in place, and
						// die_by's call to segv is a leaf call [decision
						// 64]: each stopped at a known call.
						check.abandoned = map[string]uint64{"die_by": 1, "abort_now": 1, "main": 1}
					default:
						check.abandoned = map[string]uint64{"die_by": 1, "main": 1}
					}
					if m.arg == "segv" {
						// segv is a one-path function, which counts its
						// path at its entry (decisions 55, 88): callgrind,
						// whose count of a block is made when control
						// leaves it, has it once less.
						check.ended = map[string]uint64{"segv": 1}
					}
					doc := compareCounts(t, what, inst, prof, cg, check)
					// main never reached a path end: the runtime recorded it
					// as a live activation.
					for _, fn := range doc.Functions {
						if fn.Name == "main" && fn.Partial != 1 {
							t.Errorf("%s: main has %d partial activations, want 1", what, fn.Partial)
						}
					}
				}
			}
		})
	}
}

// roundsRE matches longrun's one line of output; the number of rounds
// depends on timing.
var roundsRE = regexp.MustCompile(`^longrun: [0-9]+ rounds, `)

func normRounds(b []byte) string {
	return roundsRE.ReplaceAllString(string(b), "longrun: N rounds, ")
}

// TestDumpSignal runs a program that never exits by itself: SIGUSR2 makes
// the rewritten program write a profile and go on running; SIGTERM then
// ends it as it ends the original, whether the program catches SIGTERM
// (it returns from main: the exit hook writes the final profile) or not
// (the runtime's handler writes it and the program dies by SIGTERM).
func TestDumpSignal(t *testing.T) {
	for _, c := range procConfigs {
		for _, mode := range []string{"handle", "default"} {
			t.Run(c.String()+"/"+mode, func(t *testing.T) {
				t.Parallel()
				what := fmt.Sprintf("longrun.c %s %s", c, mode)
				dir := t.TempDir()
				orig, inst := rewriteTo(t, "longrun.c", c, dir)
				args := []string{mode}

				var catches []syscall.Signal
				if mode == "handle" {
					catches = []syscall.Signal{syscall.SIGTERM}
				}
				want := termAfter(t, orig, args, catches, 300*time.Millisecond)
				switch {
				case mode == "handle" && (want.code != 0 || want.sig != 0 || !bytes.Contains(want.stdout, []byte("stopped by SIGTERM"))):
					t.Fatalf("%s: the original did not stop cleanly: %s", what, want)
				case mode == "default" && want.sig != syscall.SIGTERM:
					t.Fatalf("%s: the original was not killed by SIGTERM: %s", what, want)
				}

				profPath := filepath.Join(dir, "blpp.out")
				var o, e bytes.Buffer
				cmd := startProc(t, inst, args, []string{"BLPP_PROFILE=" + profPath}, &o, &e)
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				stopped := false
				defer func() {
					if !stopped {
						cmd.Process.Kill()
						<-done
					}
				}()
				time.Sleep(300 * time.Millisecond)
				// The runtime installs its handlers before the program's
				// own code runs; on a loaded machine that may take a while.
				waitCaught(t, what, cmd.Process.Pid, syscall.SIGUSR2, syscall.SIGTERM)
				if err := cmd.Process.Signal(syscall.SIGUSR2); err != nil {
					t.Fatal(err)
				}
				dump := waitProfile(t, what, profPath, 5*time.Second)
				if dump.Flags&cct.FlagDumpSignal == 0 || dump.Flags&cct.FlagFatalSignal != 0 {
					t.Errorf("%s: dump profile flags %v, want dump-signal", what, dump.Flags)
				}
				dumpTotals := funcTotals(t, inst, dump)
				if dumpTotals["round_of_work"] == 0 || dumpTotals["tick"] == 0 {
					t.Errorf("%s: the dump counts no path of round_of_work or tick: %v", what, dumpTotals)
				}
				select {
				case err := <-done:
					stopped = true
					code, sig := status(t, inst, err)
					t.Fatalf("%s: the program ended after the dump signal (exit %d, signal %v)\nstdout:\n%s\nstderr:\n%s", what, code, sig, o.Bytes(), e.Bytes())
				case <-time.After(100 * time.Millisecond):
				}

				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				var err error
				select {
				case err = <-done:
					stopped = true
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: still running 10 s after SIGTERM", what)
				}
				code, sig := status(t, inst, err)
				got := procResult{o.Bytes(), e.Bytes(), code, sig, cmd.Process.Pid}
				if got.code != want.code || got.sig != want.sig || normRounds(got.stdout) != normRounds(want.stdout) || !bytes.Equal(got.stderr, want.stderr) {
					t.Fatalf("%s: behaviour differs\noriginal: %s\nrewritten: %s", what, want, got)
				}
				final, err := cct.ReadFile(profPath)
				if err != nil {
					t.Fatalf("%s: final profile: %v", what, err)
				}
				wantFlags := cct.Flags(0)
				if mode == "default" {
					wantFlags |= cct.FlagFatalSignal
				}
				if final.Flags != wantFlags {
					t.Errorf("%s: final profile flags %v, want %v", what, final.Flags, wantFlags)
				}
				finalTotals := funcTotals(t, inst, final)
				for fn, n := range dumpTotals {
					if finalTotals[fn] < n {
						t.Errorf("%s: %s has %d paths in the final profile, fewer than the %d of the dump", what, fn, finalTotals[fn], n)
					}
				}
				if pathTotal(final) <= pathTotal(dump) {
					t.Errorf("%s: the final profile counts %d paths, the dump before it %d", what, pathTotal(final), pathTotal(dump))
				}
			})
		}
	}
}

// termAfter runs prog, sends it SIGTERM after d, once it catches the
// signals in catches, and waits for it.
func termAfter(t *testing.T, prog string, args []string, catches []syscall.Signal, d time.Duration) procResult {
	t.Helper()
	var o, e bytes.Buffer
	cmd := startProc(t, prog, args, nil, &o, &e)
	time.Sleep(d)
	waitCaught(t, prog, cmd.Process.Pid, catches...)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, sig := status(t, prog, cmd.Wait())
	return procResult{o.Bytes(), e.Bytes(), code, sig, cmd.Process.Pid}
}

// waitProfile polls for the profile at path for up to d and reads it.
// The runtime writes a temporary file and renames it, so a profile that
// exists is complete.
func waitProfile(t *testing.T, what, path string, d time.Duration) *cct.Profile {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no profile at %s %v after the dump signal", what, path, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p, err := cct.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: dump profile: %v", what, err)
	}
	return p
}

// waitCaught waits up to 5 s until process pid has a handler for each of
// sigs, as the SigCgt mask of /proc/PID/status shows.
func waitCaught(t *testing.T, what string, pid int, sigs ...syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		caught := uint64(0)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
					caught, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				}
			}
		}
		all := true
		for _, s := range sigs {
			all = all && caught&(1<<(uint(s)-1)) != 0
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: pid %d does not catch %v after 5 s (SigCgt %#x)", what, pid, sigs, caught)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
