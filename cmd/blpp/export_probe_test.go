package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestExportPGOProbes: a binary built with clang -fpseudo-probe-for-profiling
// gets a probe-based sample profile that llvm-profdata reads as one (CFG
// checksums), and clang, reading it for the same source with the same
// flag, gives classify's branch the 5/95 weights it ran with.
func TestExportPGOProbes(t *testing.T) {
	clang := fixture.RequireTool(t, "clang-16", "clang-16")
	profdata := fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
	dir := t.TempDir()
	src := filepath.Join(dir, "pgo.c")
	if err := os.WriteFile(src, []byte(pgoSource), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-g", "-fpseudo-probe-for-profiling"}
	exe := filepath.Join(dir, "pgo")
	if out, err := exec.Command(clang, append(flags, src, "-o", exe)...).CombinedOutput(); err != nil {
		t.Fatalf("clang-16: %v\n%s", err, out)
	}
	inst, prof, stdout := profiled(t, dir, exe)
	if stdout != "2600\n" {
		t.Fatalf("instrumented pgo printed %q, want 2600", stdout)
	}
	sample := filepath.Join(dir, "pgo.probes.txt")
	mustBlpp(t, "export", prof, "--binary", inst, "--format", "llvm-sample", "-o", sample)
	text, _ := os.ReadFile(sample)
	if !regexp.MustCompile(`(?m)^classify:[0-9]+:2000$`).Match(text) || !strings.Contains(string(text), "!CFGChecksum: ") {
		t.Errorf("no classify:TOTAL:2000 header or no checksums in\n%s", text)
	}
	show, err := exec.Command(profdata, "show", "--sample", sample).CombinedOutput()
	if err != nil || !regexp.MustCompile(`Function: classify: CFG checksum [0-9]+`).Match(show) {
		t.Fatalf("llvm-profdata-16 show --sample: %v\n%s\nprofile:\n%s", err, show, text)
	}
	ll := filepath.Join(dir, "pgo.ll")
	out, err := exec.Command(clang, append(flags, "-fprofile-sample-use="+sample, "-emit-llvm", "-S", src, "-o", ll)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("clang-16 -fprofile-sample-use: %v\n%s", err, out)
	}
	ir, _ := os.ReadFile(ll)
	taken, fall := classifyWeights(t, string(ir))
	// x % 20 == 0 holds for 100 of 2000 calls.
	if share := float64(taken) / float64(taken+fall); share < 0.04 || share > 0.06 {
		t.Errorf("classify's branch weights %d/%d (taken share %.3f), want 5/95", taken, fall, share)
	}
}
