package runtime_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignalActionCalls counts the rt_sigaction system calls the runtime
// makes in a run that sets no action of its own: one per managed signal
// when it starts (its entry set and the program's action read in one
// call) and one when it gives the actions back at exit (decision 136).
// A read and a write for each, as before, is twice as many.
func TestSignalActionCalls(t *testing.T) {
	strace, err := osexec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed (Debian package strace)")
	}
	exe := harness(t, varNoPIE)
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	cmd := osexec.Command(strace, "-f", "-qq", "-e", "trace=rt_sigaction", "-o", trace, exe, "basic")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+filepath.Join(dir, "prof"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	sigs := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		i := strings.Index(l, "rt_sigaction(")
		if i < 0 {
			continue
		}
		calls++
		sig := l[i+len("rt_sigaction("):]
		if j := strings.IndexByte(sig, ','); j >= 0 {
			sig = sig[:j]
		}
		sigs[sig] = true
	}
	if len(sigs) < 7 {
		t.Fatalf("rt_sigaction for %d signals, want the 7 fatal ones and the dump signal:\n%s", len(sigs), b)
	}
	if calls > 2*len(sigs) {
		t.Errorf("%d rt_sigaction calls for %d signals, want at most 2 each:\n%s", calls, len(sigs), b)
	}
	readProfile(t, filepath.Join(dir, "prof"), exe, 0, 0)
}
