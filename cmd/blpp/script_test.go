package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScriptInterpreter(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text, interp, arg string
		script, err       bool
	}{
		{text: "#!/bin/sh\necho\n", interp: "/bin/sh", script: true},
		{text: "#! /usr/bin/awk -f\n", interp: "/usr/bin/awk", arg: "-f", script: true},
		{text: "#!/usr/bin/env  python3 -u \n", interp: "/usr/bin/env", arg: "python3 -u", script: true},
		{text: "#!/bin/sh\t-e\n", interp: "/bin/sh", arg: "-e", script: true},
		{text: "#!/bin/bash", interp: "/bin/bash", script: true},
		{text: "#!   \n", err: true},
		{text: "\x7fELF\x02\x01\x01", script: false},
		{text: "", script: false},
		{text: "#", script: false},
	} {
		p := filepath.Join(dir, "s")
		if err := os.WriteFile(p, []byte(c.text), 0o755); err != nil {
			t.Fatal(err)
		}
		interp, arg, ok, err := scriptInterpreter(p)
		if (err != nil) != c.err || ok != c.script || interp != c.interp || arg != c.arg {
			t.Errorf("%q: got (%q, %q, %v, %v), want (%q, %q, %v, error %v)", c.text, interp, arg, ok, err, c.interp, c.arg, c.script, c.err)
		}
	}
}

// TestFollowScript follows a script run by another script, and one that
// asks env for its interpreter, as execve and env would.
func TestFollowScript(t *testing.T) {
	dir := t.TempDir()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inner := write("inner", "#!"+sh+" -e\n")
	outer := write("outer", "#!"+inner+" opt\n")
	prog, argv, chain, err := followScript(outer, []string{"./outer", "a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{sh, "-e", inner, "opt", outer, "a", "b"}; prog != sh || !slices.Equal(argv, want) || !slices.Equal(chain, []string{inner, sh}) {
		t.Errorf("got %s %q via %q, want %s %q", prog, argv, chain, sh, want)
	}

	t.Setenv("PATH", filepath.Dir(sh))
	viaEnv := write("viaenv", "#!/usr/bin/env "+filepath.Base(sh)+"\n")
	prog, argv, _, err = followScript(viaEnv, []string{"viaenv"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Base(sh), viaEnv}; prog != sh || !slices.Equal(argv, want) {
		t.Errorf("env: got %s %q, want %s %q", prog, argv, sh, want)
	}

	loop := write("loop", "#!"+filepath.Join(dir, "loop")+"\n")
	if _, _, _, err := followScript(loop, []string{"loop"}); err == nil || !strings.Contains(err.Error(), "run one another") {
		t.Errorf("a script that runs itself: %v, want the depth error", err)
	}
	elf, _, chain, err := followScript(sh, []string{"sh"})
	if err != nil || elf != sh || chain != nil {
		t.Errorf("an ELF program: %s %q %v", elf, chain, err)
	}
}

// TestRunScript runs a bash script under blpp run: the interpreter is
// what runs and is profiled, the script behaves as it does alone, and
// the report says so. The script uses bash's test builtin, which leaves
// by longjmp to its own setjmp (decision 112): the profile must carry no
// warning of inexact counts.
func TestRunScript(t *testing.T) {
	bash, err := filepath.EvalSymlinks("/usr/bin/bash")
	if err != nil {
		t.Skip("no /usr/bin/bash (Debian package bash)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "check.sh")
	text := "#!" + bash + "\nfor a in x y \"$@\"; do\n  if [ \"$a\" = y ]; then echo \"$a is y\"; elif test -n \"$a\"; then echo \"$a\"; fi\ndone\necho oops >&2\nexit 3\n"
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	want := runProc(t, dir, nil, nil, script, "z")
	if want.code != 3 || want.stdout != "x\ny is y\nz\n" {
		t.Fatalf("the script itself: status %d, stdout %q", want.code, want.stdout)
	}
	got, _ := blppRun(t, dir, nil, []string{"--libs", "none"}, script, "z")
	sameBehaviour(t, "blpp run on a script", want, got)
	rep, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), "is a script: profiled its interpreter "+bash) {
		t.Errorf("the report does not say it profiled the interpreter:\n%s", rep)
	}
	if strings.Contains(string(rep), "warning") || !strings.Contains(string(rep), "path executions") {
		t.Errorf("the report:\n%s", rep)
	}
}
