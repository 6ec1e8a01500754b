package rewriter

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// recorder is a file that notes the ranges written to it.
type recorder struct {
	f      *os.File
	mu     sync.Mutex
	ranges [][2]int64
}

func (r *recorder) WriteAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.ranges = append(r.ranges, [2]int64{off, off + int64(len(p))})
	r.mu.Unlock()
	return r.f.WriteAt(p, off)
}

// covered is how many bytes of [lo, hi) the ranges cover, counted once
// per range.
func (r *recorder) covered(lo, hi int64) int64 {
	n := int64(0)
	for _, w := range r.ranges {
		n += max(0, min(hi, w[1])-max(lo, w[0]))
	}
	return n
}

// TestEarlyCodeWrite: RewriteTo writes the code segment while the rest
// of the file is made, once, where the layout puts it, and the file is
// Rewrite's: the layout's own write (Pieces.WriteTo) leaves the code
// out.
func TestEarlyCodeWrite(t *testing.T) {
	in, err := os.ReadFile("/bin/gzip")
	if err != nil {
		t.Skip("/bin/gzip missing (install the Debian package \"gzip\")")
	}
	want, _, err := Rewrite(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".blpp.text")
	if text == nil {
		t.Fatal("no .blpp.text")
	}
	lo, hi := int64(text.Offset), int64(text.Offset+text.Size)

	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	early := &recorder{f: f}
	opts := Options{early: newEarlyWrite(early)}
	out, _, err := rewriteRounds(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := opts.early.wait(); err != nil {
		t.Fatal(err)
	}
	if n := early.covered(lo, hi); n != hi-lo {
		t.Errorf("written while the file was made: %d bytes of the code's %d", n, hi-lo)
	}
	late := &recorder{f: f}
	if err := out.WriteTo(late, opts.early.spans...); err != nil {
		t.Fatal(err)
	}
	if n := late.covered(lo, hi); n != 0 {
		t.Errorf("the code written again: %d bytes", n)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the file written (%d bytes) is not Rewrite's (%d bytes)", len(got), len(want))
	}

	// RewriteTo itself.
	g, err := os.Create(filepath.Join(t.TempDir(), "out2"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, _, err := RewriteTo(g, in, Options{}); err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(g.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("RewriteTo's file (%d bytes) is not Rewrite's (%d bytes)", len(got), len(want))
	}
}
