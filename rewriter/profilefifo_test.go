package rewriter_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestProfileIntoFIFO: a profile whose name is not a regular file (a
// FIFO here; /dev/null in everyday use) is written into it, not renamed
// over it, which as root would replace /dev/null for the whole machine.
// The reader gets a whole, valid profile and the FIFO stays a FIFO.
func TestProfileIntoFIFO(t *testing.T) {
	dir := t.TempDir()
	_, inst := rewriteTo(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}, dir)
	fifo := filepath.Join(dir, "profile.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	cmd := exec.Command(inst)
	cmd.Env = append(os.Environ(), "BLPP_PROFILE="+fifo, "BLPP_QUIET=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", inst, err, out)
	}
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a FIFO after the run: %v, %v", fifo, fi.Mode(), err)
	}
	data := <-got
	p, err := cct.Parse(data)
	if err != nil {
		t.Fatalf("the profile read from the FIFO (%d bytes): %v", len(data), err)
	}
	if len(p.Threads) == 0 {
		t.Error("the profile read from the FIFO has no thread")
	}
}
