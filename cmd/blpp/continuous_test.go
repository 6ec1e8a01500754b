package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportLiveProfile: a program killed by SIGKILL in continuous mode
// (BLPP_PROFILE with %c, decision 94) leaves a profile that blpp report
// reads, saying that it is a live one and which threads were running
// what; blpp run --continuous runs a program so, and reports as ever.
func TestReportLiveProfile(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "livekill.c", gccO2PIE)
	inst := filepath.Join(dir, "livekill.blpp")
	if o := blpp("rewrite", exe, "-o", inst); o.code != 0 {
		t.Fatalf("rewrite: %s", o)
	}
	prof := filepath.Join(dir, "live")
	cmd := exec.Command(inst)
	cmd.Env = append(os.Environ(), "BLPP_PROFILE="+prof+"%c")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(prof); err == nil {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	o := blpp("report", prof, "--binary", inst, "--view", "flat")
	if o.code != 0 {
		t.Fatalf("report: %s", o)
	}
	for _, want := range []string{"blpp: note: a live profile (continuous mode)", "was live, with activations in flight (paths not counted): ", "worker"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("report's stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	if !strings.Contains(o.stdout, "many") {
		t.Errorf("report lacks the function many:\n%s", o.stdout)
	}

	// To its end under blpp run: the profile is the ordinary one.
	kept := filepath.Join(dir, "kept")
	if o := blpp("run", "--continuous", "--libs", "none", "--profile", kept, "-o", filepath.Join(dir, "report"), "--", exe, "one", "1000"); o.code != 0 {
		t.Fatalf("run --continuous: %s", o)
	}
	data, err := os.ReadFile(kept)
	if err != nil || !strings.HasPrefix(string(data), "BLPPPRF1") {
		t.Fatalf("run --continuous left %q (%v), want the profile", data[:min(8, len(data))], err)
	}
}
