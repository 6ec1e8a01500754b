package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunExitLate (decision 164): in a whole-process run the exit
// profile is written once, at the leave hook of the instrumented C
// library's _exit, and holds what ran after the last DT_FINI (exitlate.c's
// cookie stream, flushed by the C library's exit clean-up). Before, the
// last DT_FINI wrote a profile that the leave hook's then replaced: every
// exit wrote the profile twice. With "abort" the flush raises SIGABRT
// after the last DT_FINI: the fatal-signal handler, still installed,
// writes the profile, with the flush in it; before, the handlers were
// gone by then and the profile was the DT_FINI's, without it. With
// "pipe" the flush writes to a pipe whose reader has gone: SIGPIPE, left
// at its default by the program, must still leave the profile, which it
// did not once the DT_FINI no longer wrote. With "midpipe" main itself
// gets SIGPIPE (prog | head -1): no profile at all before SIGPIPE was
// one of the runtime's fatal signals.
func TestRunExitLate(t *testing.T) {
	strace := fixture.RequireTool(t, "strace", "strace")
	exe := fixture.Build(t, "exitlate.c", gccO2PIE)
	for _, arg := range []string{"", "abort", "pipe", "midpipe"} {
		name := arg
		if name == "" {
			name = "exit"
		}
		t.Run(name, func(t *testing.T) {
			var args []string
			if arg != "" {
				args = []string{arg}
			}
			want := runProc(t, "", nil, nil, exe, args...)
			if arg == "midpipe" {
				if want.code != 128+13 || strings.Contains(want.stdout, "late") {
					t.Fatalf("the fixture itself: status %d, stdout %q", want.code, want.stdout)
				}
			} else if !strings.Contains(want.stdout, "late\nlate\n") {
				t.Fatalf("the fixture itself: status %d, stdout %q", want.code, want.stdout)
			}
			dir := t.TempDir()
			prof := filepath.Join(dir, "blpp.prof")
			run := append([]string{"run", "--profile", prof, "-o", filepath.Join(dir, "report.txt"), "--", exe}, args...)
			runProc(t, dir, nil, nil, selfBlpp(t), run...) // fills the cache
			os.Remove(prof)
			trace := filepath.Join(dir, "trace")
			got := runProc(t, dir, nil, nil, strace, append([]string{"-f", "-qq", "-e", "trace=rename,renameat,renameat2", "-o", trace, selfBlpp(t)}, run...)...)
			sameBehaviour(t, "blpp run exitlate "+arg, want, got)
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "rename") && strings.Contains(l, `"`+prof+`"`) {
					writes++
				}
			}
			if writes != 1 {
				t.Errorf("the profile was written %d times, want once:\n%s", writes, b)
			}
			d := processModel(t, prof).PathDoc()
			mod := filepath.Base(exe)
			lateCalls := uint64(1)
			if arg == "midpipe" {
				lateCalls = 0
			}
			if _, calls := entryCalls(d, mod, "late_write"); calls != lateCalls {
				t.Errorf("late_write, called from the C library's exit after the last DT_FINI: %d calls in the profile, want %d", calls, lateCalls)
			}
			if _, calls := entryCalls(d, mod, "main"); calls != 1 {
				t.Errorf("main: %d calls, want 1", calls)
			}
		})
	}
}

// TestRunNoProfile: a program that SIGKILL ends writes no profile, and
// blpp run says so and why, with the program's status, rather than that
// a file the user never named is missing.
func TestRunNoProfile(t *testing.T) {
	dir := t.TempDir()
	got := runProc(t, dir, nil, nil, selfBlpp(t), "run", "--libs", "none", "--", "/bin/sh", "-c", "kill -9 $$")
	if got.code != 128+9 {
		t.Errorf("status %d, want 137 (the program's)", got.code)
	}
	want := "blpp run: /bin/sh wrote no profile (killed by SIGKILL, which no process can catch; --continuous"
	if !strings.Contains(got.stderr, want) || strings.Contains(got.stderr, "no such file") {
		t.Errorf("stderr %q, want it to say %q", got.stderr, want)
	}
}

// TestRunNewFatalSignals: each signal decisions 164 and 166 added to
// the fatal ones, sent by the program to itself with its action left at
// the default, leaves a profile flagged as a fatal signal's, and the
// program ends by that signal as it does without blpp (dash, the
// instrumented executable, runs `kill -SIG $$`). A real-time signal,
// which the runtime leaves to the program, ends it with the original's
// status and a message that says why there is no profile.
func TestRunNewFatalSignals(t *testing.T) {
	sh := "/bin/dash"
	if _, err := os.Stat(sh); err != nil {
		fixture.Missing(t, "/bin/dash not found (install the Debian package \"dash\")")
	}
	t.Run("realtime", func(t *testing.T) {
		const sig = 40 // SIGRTMIN+6 for the C library, whose SIGRTMIN is 34
		script := fmt.Sprintf("echo before; kill -%d $$; echo after", sig)
		dir := t.TempDir()
		got := runProc(t, dir, nil, nil, selfBlpp(t), "run", "--libs", "none", "--profile", filepath.Join(dir, "blpp.prof"), "--", sh, "-c", script)
		want := "blpp run: /bin/dash wrote no profile (killed by the real-time signal 40, which blpp leaves to the program"
		if got.code != 128+sig || got.stdout != "before\n" || !strings.Contains(got.stderr, want) {
			t.Errorf("status %d, stdout %q, stderr %q; want %d, \"before\\n\", %q", got.code, got.stdout, clip(got.stderr), 128+sig, want)
		}
	})
	for _, sig := range []syscall.Signal{
		syscall.SIGPIPE, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGXCPU, syscall.SIGXFSZ, // decision 164
		syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGUSR1, syscall.SIGALRM, syscall.SIGSTKFLT, // decision 166
		syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGIO, syscall.SIGPWR,
	} {
		t.Run(fmt.Sprintf("signal%d", int(sig)), func(t *testing.T) {
			if signal.Ignored(sig) {
				// An ignored signal stays ignored in the programs this
				// test starts (go test under nohup): nothing dies of it.
				t.Skipf("signal %d is ignored in this process (nohup?)", int(sig))
			}
			script := fmt.Sprintf("ulimit -c 0; echo before; kill -%d $$; echo after", int(sig))
			want := runProc(t, "", nil, nil, sh, "-c", script)
			if want.code != 128+int(sig) || want.stdout != "before\n" {
				t.Fatalf("dash itself: status %d, stdout %q", want.code, want.stdout)
			}
			dir := t.TempDir()
			prof := filepath.Join(dir, "blpp.prof")
			got := runProc(t, dir, nil, nil, selfBlpp(t), "run", "--libs", "none", "--profile", prof, "-o", filepath.Join(dir, "report.txt"), "--", sh, "-c", script)
			if got.code != want.code || got.stdout != want.stdout {
				t.Errorf("status %d, stdout %q; the original's %d, %q (stderr %q)", got.code, got.stdout, want.code, want.stdout, clip(got.stderr))
			}
			p, err := cct.ReadFile(prof)
			if err != nil {
				t.Fatalf("no profile: %v", err)
			}
			if p.Flags&cct.FlagFatalSignal == 0 {
				t.Errorf("profile flags %v, want the fatal signal's", p.Flags)
			}
			// The run's report and blpp report say how the profile ended.
			const note = "a fatal signal ended the program: the profile counts what ran until then"
			if rep, err := os.ReadFile(filepath.Join(dir, "report.txt")); err != nil || !strings.Contains(string(rep), "blpp run: "+sh+": "+note) {
				t.Errorf("run's report (%v) lacks the note %q:\n%s", err, note, clip(string(rep)))
			}
			if r := runProc(t, dir, nil, nil, selfBlpp(t), "report", prof); r.code != 0 || !strings.Contains(r.stderr, "blpp: note: "+note) {
				t.Errorf("blpp report: status %d, stderr %q; want the note %q", r.code, clip(r.stderr), note)
			}
		})
	}
}

// TestRunExecNote: a program that replaces itself by exec (dash -c
// 'exec prog', what a wrapper script's interpreter does) leaves a profile
// of itself up to the exec, and blpp run says so; a run without an exec
// says nothing of it.
func TestRunExecNote(t *testing.T) {
	sh := "/bin/dash"
	if _, err := os.Stat(sh); err != nil {
		fixture.Missing(t, "/bin/dash not found (install the Debian package \"dash\")")
	}
	const note = "blpp run: /bin/dash: the program replaced itself with another program (exec): the profile counts it up to the exec;"
	for _, c := range []struct {
		script string
		exec   bool
	}{{"echo before; exec /bin/echo after", true}, {"echo before; /bin/echo after", false}} {
		dir := t.TempDir()
		got := runProc(t, dir, nil, nil, selfBlpp(t), "run", "--libs", "none", "--profile", filepath.Join(dir, "blpp.prof"), "--", sh, "-c", c.script)
		if got.code != 0 || got.stdout != "before\nafter\n" {
			t.Errorf("%q: status %d, stdout %q (stderr %q)", c.script, got.code, got.stdout, clip(got.stderr))
		}
		if strings.Contains(got.stderr, note) != c.exec {
			t.Errorf("%q: stderr %q; want the exec note: %v", c.script, clip(got.stderr), c.exec)
		}
	}
}
