package runtime_test

import (
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartExitCalls counts system calls the runtime makes in a short
// run that sets no signal action of its own (decision 136): rt_sigaction
// once per managed signal when it starts (its entry set and the
// program's action read in one call) and once when it gives the actions
// back at exit, where a read and a write for each made twice as many;
// and one read of /proc/self/maps at exit, where the exit hook and the
// writer each read it for the same module; and the profile writer's
// buffers, small in a short run, unmapped at once, where each had a
// mapping of its own. And no copy of the executable's tables at its exit
// hook, which mapped memory for one just before it read /proc/self/maps
// (an arena chunk's mapping is followed by its madvise): an executable
// is never unloaded (decision 142).
func TestStartExitCalls(t *testing.T) {
	strace, err := osexec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed (Debian package strace)")
	}
	exe := harness(t, varNoPIE)
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	cmd := osexec.Command(strace, "-f", "-qq", "-e", "trace=rt_sigaction,open,openat,mmap,madvise,munmap", "-o", trace, exe, "basic")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+filepath.Join(dir, "prof"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	calls, maps, unmaps, copies := 0, 0, 0, 0
	sigs := map[string]bool{}
	prev := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"/proc/self/maps"`) {
			maps++
			if strings.Contains(prev, "mmap(") && strings.Contains(prev, "MAP_ANONYMOUS") {
				copies++
			}
		}
		prev = l
		if strings.Contains(l, "munmap(") && strings.Contains(l, ", 65536)") {
			unmaps++ // a writer's buffer that never grew
		}
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
	// A signal ignored at start (go test under nohup: SIGHUP) takes a
	// third call: the runtime puts SIG_IGN back after trying its own.
	ignored := 0
	for s := syscall.Signal(1); s < 32; s++ {
		if signal.Ignored(s) {
			ignored++
		}
	}
	if calls > 2*len(sigs)+ignored {
		t.Errorf("%d rt_sigaction calls for %d signals, want at most 2 each:\n%s", calls, len(sigs), b)
	}
	if maps > 1 {
		t.Errorf("/proc/self/maps opened %d times, want once:\n%s", maps, b)
	}
	if copies > 0 {
		t.Errorf("memory mapped for the executable's tables at its exit hook, want them left where they are:\n%s", b)
	}
	if unmaps > 0 {
		t.Errorf("%d buffers of 64 KiB unmapped one by one, want none (the writer's buffers start in one mapping):\n%s", unmaps, b)
	}
	readProfile(t, filepath.Join(dir, "prof"), exe, 0, 0)
}
