package runtime_test

// The harness runs (harness_test.go builds the harness and models what
// it counts): plain runs, registers, the shadow stack's overflow, threads
// that come and go, signals, longjmp, exits, fork and dumps.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
)

func TestBasic(t *testing.T) {
	for _, v := range []variant{varNoPIE, varPIE, varStatic} {
		t.Run(v.name, func(t *testing.T) {
			exe, prof, r := run(t, v, "basic")
			wantExit(t, r, 0)
			if r.stderr != "" {
				t.Errorf("stderr: %q", r.stderr)
			}
			p := readProfile(t, prof, exe, r.pid, 0)
			m := newModel()
			m.basic(100)
			if v.static {
				m.ifunc()
				if !strings.Contains(r.stdout, "ifunc tp differs") {
					t.Errorf("the resolver did not run before TLS setup: %q", r.stdout)
				}
			}
			m.stats["threads"] = 1
			m.check(t, p)
			if _, err := os.Stat(prof + ".tmp." + fmt.Sprint(r.pid)); err == nil {
				t.Error("temporary file left behind")
			}
		})
	}
}

// regsModel is what run_regs counts: four rounds of enter, backedge
// (r 0 + k 1) and exit (r = restart 0) under F_REGS, and as many with an
// id beyond the table (entry, backedge and exit are bad_funcs).
func regsModel() *model {
	m := newModel()
	for k := 0; k < 4; k++ {
		m.enter(fRegs)
		m.count(fRegs, 1)
		m.count(fRegs, 0)
	}
	m.stats["bad_funcs"] = 12
	return m
}

func TestRegisters(t *testing.T) {
	for _, v := range []variant{varNoPIE, varPIE} {
		t.Run(v.name, func(t *testing.T) {
			if r := regsModel().expect(t, v, 0, "regs"); r.stdout != "regs ok\n" {
				t.Errorf("register check:\n%s", r.stdout)
			}
		})
	}
}

// TestRegistersNewThread checks the stubs on a thread's first calls,
// which map its block and switch %gs.
func TestRegistersNewThread(t *testing.T) {
	m := regsModel()
	m.stats["threads"] = 2
	if r := m.expect(t, varNoPIE, 0, "regs-thread"); r.stdout != "regs ok\n" {
		t.Errorf("register check:\n%s", r.stdout)
	}
}

// TestShadowOverflow runs rec(100) with room for 64 shadow frames: the 37
// activations beyond are counted, but their callers' registers are lost
// (rec(1..37) end on path 2 instead of 3).
func TestShadowOverflow(t *testing.T) {
	m := newModel()
	for i := 0; i <= 100; i++ {
		m.enter(fRec)
	}
	m.count(fRec, 0)
	for i := 1; i <= 37; i++ {
		m.count(fRec, 2)
	}
	for i := 38; i <= 100; i++ {
		m.count(fRec, 3)
	}
	m.f(2)
	m.stats["shadow_overflow"] = 37
	m.expect(t, varSmallShadow, 0, "overflow")
}

// The harness's ENTER, EXIT and BACKEDGE always call the stubs' C halves,
// so the STATS stub_entries, stub_exits and stub_backedges of a run are
// the program's own numbers: its entries, exits and backedges. Each
// thread keeps them in its own block and the writer sums the blocks
// (decision 152); the runs where blocks come and go check the sums:
// threads (TestThreads), threads that end and whose blocks are taken
// again (TestDeadThreads), a signal handler that interrupts the stubs
// (TestSignalHandlers), and fork children, which count only their own
// (TestFork, TestForkThread).

// wantStubStats sets m's stub statistics from its model: every entry and
// every path end took a stub; backedges of the path ends were backedges.
func wantStubStats(m *model, backedges uint64) {
	var entries, ends uint64
	for _, n := range m.calls {
		entries += n
	}
	for _, p := range m.paths {
		for _, n := range p {
			ends += n
		}
	}
	m.stats["stub_entries"] = entries
	m.stats["stub_exits"] = ends - backedges
	m.stats["stub_backedges"] = backedges
}

// TestDeadThreads runs ten threads one after the other; nine leave
// through pthread_exit with F_WORKER live. The C library gives a new
// thread the TCB of a dead one, and the runtime then reuses its block,
// recording the activation it left as a partial.
func TestDeadThreads(t *testing.T) {
	exe, prof, r := run(t, varNoPIE, "dead-threads")
	wantExit(t, r, 0)
	p := readProfile(t, prof, exe, r.pid, 0)
	blocks := p.Stats["threads"]
	if blocks < 2 || blocks > 10 {
		t.Fatalf("%d thread blocks for the main thread and 10 sequential threads: no reuse", blocks)
	}
	m := newModel()
	for i := 0; i < 10; i++ {
		m.enter(fWorker)
	}
	m.count(fWorker, 1)
	// Every reuse records the previous owner's live activation.
	m.partials[partial{fWorker, 1}] = 11 - blocks
	m.stats["threads"] = blocks
	wantStubStats(m, 0)
	m.check(t, p)
}

// TestSignalHandlers runs instrumented code in a signal handler that
// interrupts instrumented code (and the stubs) every 50µs.
func TestSignalHandlers(t *testing.T) {
	const n = 2000000
	exe, prof, r := run(t, varNoPIE, "signals", fmt.Sprint(n))
	wantExit(t, r, 0)
	var handled int
	if _, err := fmt.Sscanf(r.stdout, "handled %d", &handled); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if handled == 0 {
		t.Error("no signal was handled")
	}
	t.Logf("%d signals handled during %d calls", handled, n)
	m := newModel()
	for i := 0; i < n; i++ {
		m.f(i)
		if i%64 == 0 {
			m.rec(2)
		}
	}
	for i := 0; i < handled; i++ {
		m.f(1)
	}
	wantStubStats(m, 0)
	m.check(t, readProfile(t, prof, exe, r.pid, 0))
}

func TestThreads(t *testing.T) {
	for _, v := range []variant{varNoPIE, varStatic} {
		t.Run(v.name, func(t *testing.T) {
			m := newModel()
			m.f(0)
			for th := 0; th < 4; th++ {
				m.enter(fWorker)
				for i := 0; i < 20000; i++ {
					m.f(i + th)
					m.big(uint64(i) * 7919 % (1 << 40))
					if i%1000 == 0 {
						m.rec(3)
					}
				}
				m.count(fWorker, 1)
			}
			if v.static {
				m.ifunc()
			}
			m.stats["threads"] = 5
			wantStubStats(m, 0)
			if r := m.expect(t, v, 0, "threads"); !strings.Contains(r.stdout, "distinct blocks") {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestLongjmp(t *testing.T) {
	m := newModel()
	for i := 0; i < 3; i++ {
		m.enter(fA)
		m.enter(fB)
		m.enter(fC)
		m.enter(fD)
		m.count(fA, 1) // A's register is back to its value at the call of B
		m.partials[partial{fD, 5}]++
		m.partials[partial{fC, 3}]++
		m.partials[partial{fB, 2}]++
	}
	m.f(1)
	m.stats["unwound_frames"] = 9
	m.expect(t, varNoPIE, 0, "longjmp")
}

func TestExitInside(t *testing.T) {
	m := newModel()
	m.f(3)
	m.enter(fMain)
	m.enter(fG)
	m.partials[partial{fG, 1}] = 1
	m.partials[partial{fMain, 2}] = 1
	m.expect(t, varPIE, 3, "exit-inside")
}

func TestFatalSignals(t *testing.T) {
	for _, tc := range []struct {
		mode string
		sig  syscall.Signal
		v    variant
	}{
		{"segv", syscall.SIGSEGV, varNoPIE},
		{"segv", syscall.SIGSEGV, varStatic},
		{"abort", syscall.SIGABRT, varPIE},
	} {
		t.Run(tc.mode+"-"+tc.v.name, func(t *testing.T) {
			exe, prof, r := run(t, tc.v, tc.mode)
			wantSignal(t, r, tc.sig)
			m := newModel()
			m.fRange(0, 10)
			m.enter(fCrash)
			m.partials[partial{fCrash, 1}] = 1
			if tc.v.static {
				m.ifunc()
			}
			m.check(t, readProfile(t, prof, exe, r.pid, cct.FlagFatalSignal))
		})
	}
}

func TestSigterm(t *testing.T) {
	exe := harness(t, varNoPIE)
	cmd, prof, _ := startReady(t, exe, "sigterm")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	wantSignal(t, result{status: ws}, syscall.SIGTERM)
	p := readProfile(t, prof, exe, cmd.ProcessState.Pid(), cct.FlagFatalSignal)
	calls, paths := fCounts(p)
	// The signal may land inside f, before its exit.
	if paths != calls && paths+1 != calls {
		t.Errorf("f: %d activations, %d paths", calls, paths)
	}
	if calls == 0 {
		t.Error("no counts for f")
	}
}

// startReady starts the harness in mode in a new directory, BLPP_PROFILE
// naming the file "prof" there, and returns once it has said "ready"
// (and a little more, so that it is counting): the caller signals it and
// waits for it. The rest of its output is on stdout.
func startReady(t *testing.T, exe, mode string) (cmd *osexec.Cmd, prof string, stdout *bufio.Reader) {
	t.Helper()
	dir := t.TempDir()
	prof = filepath.Join(dir, "prof")
	cmd = osexec.Command(exe, mode)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+prof)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout = bufio.NewReader(pipe)
	if line, err := stdout.ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("read ready: %q %v", line, err)
	}
	time.Sleep(20 * time.Millisecond)
	return cmd, prof, stdout
}

// fCounts returns the activations and path runs of f in the first
// thread of p.
func fCounts(p *cct.Profile) (calls, paths uint64) {
	for _, rec := range p.Threads[0].Records {
		if rec.Func == fBasic {
			calls = rec.Calls
			for _, path := range rec.Paths {
				paths += path.Count
			}
		}
	}
	return calls, paths
}

// childPID returns the pid the harness's fork child printed.
func childPID(t *testing.T, r result) int {
	t.Helper()
	var child int
	if _, err := fmt.Sscanf(r.stdout, "child %d", &child); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	return child
}

func TestFork(t *testing.T) {
	exe := harness(t, varNoPIE)
	for _, tc := range []struct{ name, profile string }{
		{"default-name", ""},
		{"pid-name", "prof.%p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var env []string
			if tc.profile != "" {
				env = append(env, "BLPP_PROFILE="+tc.profile)
			}
			r := runHarness(t, exe, dir, env, "fork")
			wantExit(t, r, 0)
			child := childPID(t, r)
			parentName, childName := filepath.Join(dir, "blpp.out"), filepath.Join(dir, fmt.Sprintf("blpp.out.%d", child))
			if tc.profile != "" {
				parentName = filepath.Join(dir, fmt.Sprintf("prof.%d", r.pid))
				childName = filepath.Join(dir, fmt.Sprintf("prof.%d", child))
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("files %v, want the parent's and the child's profiles", names)
			}
			pm := newModel()
			pm.fRange(0, 10)
			for i := 0; i < 7; i++ {
				pm.f(1)
			}
			wantStubStats(pm, 0)
			pm.check(t, readProfile(t, parentName, exe, r.pid, 0))
			cm := newModel()
			cm.fRange(100, 105)
			cm.loop(3)
			cm.stats["fork_child"] = 1
			cm.stats["threads"] = 1
			wantStubStats(cm, 3) // the loop's three backedges; the parent's counts are not the child's
			cm.check(t, readProfile(t, childName, exe, child, 0))
		})
	}
}

// TestForkThread checks a fork child whose first counts come from a new
// thread: the reset must still keep only the child's counts.
func TestForkThread(t *testing.T) {
	exe := harness(t, varNoPIE)
	dir := t.TempDir()
	r := runHarness(t, exe, dir, []string{"BLPP_PROFILE=prof.%p"}, "fork-thread")
	wantExit(t, r, 0)
	child := childPID(t, r)
	pm := newModel()
	pm.fRange(0, 10)
	wantStubStats(pm, 0)
	pm.check(t, readProfile(t, filepath.Join(dir, fmt.Sprintf("prof.%d", r.pid)), exe, r.pid, 0))
	cm := newModel()
	cm.fRange(100, 105)
	cm.stats["fork_child"] = 1
	cm.stats["threads"] = 2
	wantStubStats(cm, 0)
	cm.check(t, readProfile(t, filepath.Join(dir, fmt.Sprintf("prof.%d", child)), exe, child, 0))
}

func TestDumpSelf(t *testing.T) {
	exe, prof, r := run(t, varPIE, "dump-self")
	wantExit(t, r, 0)
	dm := newModel()
	dm.fRange(0, 10)
	dm.stats["dumps"] = 0
	dm.check(t, readProfile(t, prof+".dump", exe, r.pid, cct.FlagDumpSignal))
	for i := 0; i < 5; i++ {
		dm.f(2)
	}
	dm.stats["dumps"] = 1
	dm.check(t, readProfile(t, prof, exe, r.pid, 0))
}

func TestDumpLoop(t *testing.T) {
	exe := harness(t, varNoPIE)
	cmd, prof, br := startReady(t, exe, "dump-loop")
	var out bytes.Buffer
	if err := cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	out.ReadFrom(br)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	var total uint64
	if _, err := fmt.Sscanf(out.String(), "total %d", &total); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	d := readProfile(t, prof+".dump", exe, cmd.ProcessState.Pid(), cct.FlagDumpSignal)
	f := readProfile(t, prof, exe, cmd.ProcessState.Pid(), 0)
	dc, dp := fCounts(d)
	if dc == 0 || dc > total || (dp != dc && dp+1 != dc) {
		t.Errorf("dump: %d activations, %d paths, of %d", dc, dp, total)
	}
	fc, fp := fCounts(f)
	if fc != total || fp != total {
		t.Errorf("final: %d activations, %d paths, want %d", fc, fp, total)
	}
}

func TestProfileName(t *testing.T) {
	exe := harness(t, varNoPIE)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("chdir", func(t *testing.T) {
		// The default name, in the starting directory even though the
		// program moved to /.
		dir := t.TempDir()
		r := runHarness(t, exe, dir, nil, "chdir")
		wantExit(t, r, 0)
		m := newModel()
		m.basic(8)
		m.check(t, readProfile(t, filepath.Join(dir, "blpp.out"), exe, r.pid, 0))
	})
	t.Run("expand", func(t *testing.T) {
		dir := t.TempDir()
		r := runHarness(t, exe, dir, []string{"BLPP_PROFILE=out-%h-%p-%%.prof"}, "longjmp")
		wantExit(t, r, 0)
		name := filepath.Join(dir, fmt.Sprintf("out-%s-%d-%%.prof", host, r.pid))
		readProfile(t, name, exe, r.pid, 0)
	})
	t.Run("unwritable", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "no-such-dir", "prof")
		r := runHarness(t, exe, dir, []string{"BLPP_PROFILE=" + bad}, "longjmp")
		wantExit(t, r, 0)
		if !strings.HasPrefix(r.stderr, "blpp: cannot create "+bad+".tmp.") {
			t.Errorf("stderr %q, want a message", r.stderr)
		}
		r = runHarness(t, exe, dir, []string{"BLPP_PROFILE=" + bad, "BLPP_QUIET=1"}, "longjmp")
		wantExit(t, r, 0)
		if r.stderr != "" {
			t.Errorf("BLPP_QUIET=1, stderr %q", r.stderr)
		}
	})
}
