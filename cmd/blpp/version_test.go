package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// TestVersion: --version and the version verb name the Go toolchain and
// the formats blpp writes.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out, errb bytes.Buffer
		if st := run([]string{arg}, &out, &errb); st != 0 {
			t.Fatalf("blpp %s: status %d: %s", arg, st, errb.String())
		}
		s := out.String()
		for _, want := range []string{"blpp ", runtime.Version(), fmt.Sprintf("profile format %d, metadata format %d", cct.Version, meta.Version)} {
			if !strings.Contains(s, want) {
				t.Errorf("blpp %s: %q lacks %q", arg, s, want)
			}
		}
	}
}

// TestHelpCommand: blpp help CMD prints what blpp CMD --help prints,
// flags included, for every command.
func TestHelpCommand(t *testing.T) {
	for _, c := range commands {
		var a, b, e bytes.Buffer
		if st := run([]string{"help", c.name}, &a, &e); st != 0 {
			t.Fatalf("blpp help %s: status %d: %s", c.name, st, e.String())
		}
		if st := run([]string{c.name, "--help"}, &b, &e); st != 0 {
			t.Fatalf("blpp %s --help: status %d: %s", c.name, st, e.String())
		}
		if a.String() != b.String() || !strings.Contains(a.String(), "flags:") {
			t.Errorf("blpp help %s:\n%s\nblpp %s --help:\n%s", c.name, a.String(), c.name, b.String())
		}
	}
	var out, e bytes.Buffer
	if st := run([]string{"help", "nosuch"}, &out, &e); st != 2 || !strings.Contains(e.String(), "unknown command") {
		t.Errorf("blpp help nosuch: status %d, %q", st, e.String())
	}
}
