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
