package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunPrintCommand: blpp run --print-command prints, instead of running
// the program, a shell command line that runs it as blpp run would (with
// its libraries instrumented: the profile names libc.so.6, through the
// auditor named in the environment), arguments quoted.
func TestRunPrintCommand(t *testing.T) {
	prog := fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	o := blpp("run", "--print-command", "--", prog, "it's", "a b")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	line := strings.TrimSpace(o.stdout)
	if !strings.Contains(line, "LD_AUDIT=") || !strings.Contains(line, `'it'\''s' 'a b'`) {
		t.Fatalf("command %q: want the auditor in the environment and the quoted arguments", line)
	}
	prof := filepath.Join(t.TempDir(), "p.out")
	sh := exec.Command("/bin/sh", "-c", line)
	sh.Env = append(os.Environ(), "BLPP_PROFILE="+prof)
	got, err := sh.CombinedOutput()
	want, werr := exec.Command(prog, "it's", "a b").CombinedOutput()
	if (err == nil) != (werr == nil) || string(got) != string(want) {
		t.Fatalf("printed command: %v %q, the program itself: %v %q", err, got, werr, want)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	libc := false
	for _, m := range p.Modules {
		libc = libc || filepath.Base(m.Path) == "libc.so.6"
	}
	if !libc {
		t.Errorf("profile modules %v: no libc.so.6", p.Modules)
	}
}

// TestRunPrintCommandFollows: the printed command follows execs as blpp
// run does (decision 167): a script that execs a program leaves, beside
// the script's shell's profile, one of the program's, named after the
// profile --profile gave; with --no-follow it leaves none.
func TestRunPrintCommandFollows(t *testing.T) {
	prog := fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	dir := t.TempDir()
	script := filepath.Join(dir, "wrap.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+prog+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, werr := exec.Command(prog, "x").CombinedOutput()
	for _, follow := range []bool{true, false} {
		prof := filepath.Join(t.TempDir(), "p.out")
		args := []string{"run", "--print-command", "--profile", prof}
		if !follow {
			args = append(args, "--no-follow")
		}
		o := blpp(append(args, "--", script, "x")...)
		if o.code != 0 {
			t.Fatalf("exit %d: %s", o.code, o.stderr)
		}
		sh := exec.Command("/bin/sh", "-c", strings.TrimSpace(o.stdout))
		sh.Env = append(os.Environ(), "BLPP_PROFILE="+prof)
		got, err := sh.CombinedOutput()
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Fatalf("printed command: %v %q, the program itself: %v %q", err, got, werr, want)
		}
		followed, err := filepath.Glob(prof + ".exec-*")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(prof); err != nil {
			t.Errorf("follow %v: the shell's profile: %v", follow, err)
		}
		if n := len(followed); follow && n != 1 || !follow && n != 0 {
			t.Errorf("follow %v: followed profiles %v", follow, followed)
			continue
		}
		if follow {
			p, err := cct.ReadFile(followed[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Modules) == 0 || filepath.Base(p.Modules[0].Path) != filepath.Base(prog) {
				t.Errorf("followed profile's modules %v: want %s first", p.Modules, filepath.Base(prog))
			}
		}
	}
}
