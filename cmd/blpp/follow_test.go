package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// followedFiles lists the profiles of the execs blpp run followed, whose
// program wrote one, beside the run's profile prof.
func followedFiles(t *testing.T, prof string) []string {
	t.Helper()
	m, err := filepath.Glob(prof + ".exec-*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 0 && !strings.HasSuffix(f, ".json") {
			out = append(out, f)
		}
	}
	return out
}

// followRun is blppRun for the exec-following tests: the first run, which
// fills the rewrite cache, keeps its profiles apart.
func followRun(t *testing.T, dir string, flags []string, prog string, args ...string) (procResult, string) {
	t.Helper()
	run := func(prof string) procResult {
		a := append([]string{"run", "--profile", prof, "-o", filepath.Join(dir, "report.txt")}, flags...)
		return runProc(t, dir, nil, nil, selfBlpp(t), append(append(a, "--", prog), args...)...)
	}
	run(filepath.Join(dir, "warm.prof"))
	prof := filepath.Join(dir, "blpp.prof")
	return run(prof), prof
}

// TestRunFollowExec (decision 167): under blpp run, a program that a
// shell execs (dash's exec, and a fork and exec per command) runs
// instrumented, with its own argv, environment, output and status, and
// writes its own profile, whose block counts equal callgrind's of the
// program run by itself; the signals it starts with ignored and blocked
// are the ones the exec'ing process had. An exec the kernel would refuse or that a shell
// runs itself (no #!, ENOEXEC) goes to the kernel as it is; --no-follow
// follows nothing.
func TestRunFollowExec(t *testing.T) {
	sh := "/bin/dash"
	if _, err := os.Stat(sh); err != nil {
		fixture.Missing(t, "/bin/dash not found (install the Debian package \"dash\")")
	}
	exe := fixture.Build(t, "execee.c", fixture.Config{Opt: "-O2", PIE: true})
	dir := t.TempDir()
	script := filepath.Join(dir, "plain")
	if err := os.WriteFile(script, []byte("echo from-a-script-without-a-shebang\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, cmd string
		flags     []string
		followed  int
	}{
		{"exec", "exec " + exe + " a 'b c'", nil, 1},
		{"fork_exec", exe + " one; " + exe + " two three", nil, 2},
		{"no_follow", "exec " + exe + " a", []string{"--no-follow"}, 0},
		// The C library uninstrumented: dash's own call of execve.
		{"libs_none", "exec " + exe + " a", []string{"--libs", "none"}, 1},
		{"libs_none_fork", exe + " a; " + exe + " b", []string{"--libs", "none"}, 2},
		{"continuous", "exec " + exe + " a", []string{"--continuous"}, 1},
		// dash runs a file without #! that the kernel refuses
		// (ENOEXEC) as /bin/sh FILE: that exec is followed.
		{"enoexec", script + "; exec " + exe, nil, 2},
		{"missing", "exec " + filepath.Join(dir, "nothing-here"), nil, 0},
		// Ignored and blocked signals survive the exec through blpp:
		// the shell's traps, and the program's own mask and SIG_IGN
		// before it execs itself (its execv, the C library's).
		{"signals", "trap '' PIPE TERM USR1; exec " + exe + " reexec x", nil, 2},
		// /proc/self/exe is the program's own file, not blpp's.
		{"proc_self_exe", "exec " + exe + " self y", nil, 2},
		// A program blpp does not instrument (this test, built by Go)
		// runs as it is; blpp run says so after its report. (A command
		// name: TestMain answers it instead of running the tests.)
		{"refused", "exec " + selfBlpp(t) + " rewrite-module --help", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			want := runProc(t, d, nil, nil, sh, "-c", c.cmd)
			got, prof := followRun(t, d, c.flags, sh, "-c", c.cmd)
			if got.code != want.code || got.stdout != want.stdout {
				t.Fatalf("blpp run: status %d, stdout %q; the program alone: status %d, stdout %q (stderr %q)", got.code, got.stdout, want.code, want.stdout, clip(got.stderr))
			}
			if !strings.Contains(got.stderr, want.stderr) {
				t.Errorf("stderr %q does not hold the program's own %q", clip(got.stderr), want.stderr)
			}
			files := followedFiles(t, prof)
			if len(files) != c.followed {
				t.Fatalf("%d followed profiles %q, want %d (stderr %q)", len(files), files, c.followed, clip(got.stderr))
			}
			if c.followed > 0 && !strings.Contains(got.stderr, "blpp run: followed the exec of "+exe) {
				t.Errorf("stderr does not name the followed program: %q", clip(got.stderr))
			}
			if refused := "blpp run: an exec ran uninstrumented: " + selfBlpp(t) + ": "; strings.Contains(got.stderr, refused) != (c.name == "refused") {
				t.Errorf("stderr %q; want %q in it: %v", clip(got.stderr), refused, c.name == "refused")
			}
		})
	}
	// A static program, which runs without the auditor: its own execv
	// (the C library inside it) is followed; it sees blpp's two entries,
	// as it does under blpp run, one of each.
	t.Run("static", func(t *testing.T) {
		st := fixture.Build(t, "execee.c", fixture.Config{Opt: "-O2", Static: true})
		d := t.TempDir()
		want := runProc(t, d, nil, nil, st, "reexec", "z")
		got, prof := followRun(t, d, nil, st, "reexec", "z")
		var lines []string
		for _, l := range strings.SplitAfter(got.stdout, "\n") {
			switch {
			case strings.HasPrefix(l, "BLPP_PROFILE "+prof+".exec-"):
				lines = append(lines, "BLPP_PROFILE (unset)\n")
			case strings.HasPrefix(l, "BLPP_FOLLOW /"):
				lines = append(lines, "BLPP_FOLLOW (unset)\n")
			default:
				lines = append(lines, l)
			}
		}
		if got.code != want.code || strings.Join(lines, "") != want.stdout {
			t.Fatalf("blpp run: status %d, stdout %q; the program alone: status %d, stdout %q", got.code, got.stdout, want.code, want.stdout)
		}
		if files := followedFiles(t, prof); len(files) != 1 {
			t.Errorf("followed profiles %q, want 1", files)
		}
	})
	// Without --profile: a line per program, and the program the shell
	// ended as reported in full.
	t.Run("summary", func(t *testing.T) {
		d := t.TempDir()
		for _, c := range []struct {
			cmd, line string
			report    bool
		}{
			{"exec " + exe + " a", "blpp run: followed 1 exec: " + exe + " (--profile", true},
			{exe + " a; " + exe + " b", "blpp run: followed 2 execs: " + exe + " (2 times) (--profile", false},
		} {
			runProc(t, d, nil, nil, selfBlpp(t), "run", "--", sh, "-c", c.cmd)
			got := runProc(t, d, nil, nil, selfBlpp(t), "run", "--", sh, "-c", c.cmd)
			if got.code != 3 || !strings.Contains(got.stderr, c.line) {
				t.Errorf("%q: status %d, stderr lacks %q: %q", c.cmd, got.code, c.line, clip(got.stderr))
			}
			head := "blpp run: the program it exec'd, " + exe
			if strings.Contains(got.stderr, head) != c.report || c.report && !strings.Contains(got.stderr, "work path") {
				t.Errorf("%q: the followed program's report (%q with its work function) shown: %v, want %v: %q", c.cmd, head, !c.report, c.report, clip(got.stderr))
			}
		}
	})
	t.Run("callgrind", func(t *testing.T) {
		fixture.RequireTool(t, "valgrind", "valgrind")
		d := t.TempDir()
		args := []string{"a", "b c"}
		_, prof := followRun(t, d, nil, sh, "-c", "exec "+exe+" a 'b c'")
		files := followedFiles(t, prof)
		if len(files) != 1 {
			t.Fatalf("followed profiles %q, want 1", files)
		}
		doc := processModel(t, files[0]).PathDoc()
		cg, err := callgrind.Run(exe, callgrind.Options{Args: args, OutDir: filepath.Join(d, "callgrind"), Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		name := ""
		for _, m := range doc.Modules {
			if m.Executable {
				name = m.Name
			}
		}
		funcs, blocks, diffs := blockDiffs(doc, name, false, cg)
		if funcs == 0 || len(diffs) > 0 {
			t.Errorf("%s: %d functions, %d blocks compared; differ from callgrind's: %s", name, funcs, blocks, strings.Join(diffs, "; "))
		}
	})
}
