package wholerun

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blpp/blpp/rewriter"
)

// TestCacheModule: a copy is made once however many goroutines ask for
// it, keeps its file name, names its original, and a different tag, mode
// or content gives another copy.
func TestCacheModule(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libx.so.1")
	if err := os.WriteFile(lib, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	var made atomic.Int32
	c := &Cache{Root: filepath.Join(dir, "cache"), Rewrite: func(in, out string, opts rewriter.Options) error {
		made.Add(1)
		b, err := os.ReadFile(in)
		if err != nil {
			return err
		}
		return os.WriteFile(out, append(b, " copy"...), 0o755)
	}}
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p, err := c.Module(lib, rewriter.Options{ModuleTag: 7}, "m")
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		}(i)
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Errorf("%d rewrites for one copy asked for 8 times at once, want 1", made.Load())
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("copies %s and %s of one object", paths[0], p)
		}
	}
	if filepath.Base(paths[0]) != "libx.so.1" {
		t.Errorf("copy %s: want the original's file name", paths[0])
	}
	if got := Origin(paths[0]); got != lib {
		t.Errorf("Origin(%s) = %q, want %q", paths[0], got, lib)
	}
	other := func(opts rewriter.Options, mode string) string {
		t.Helper()
		p, err := c.Module(lib, opts, mode)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := other(rewriter.Options{ModuleTag: 8}, "m"); p == paths[0] {
		t.Error("another tag gave the same copy")
	}
	if p := other(rewriter.Options{ModuleTag: 7}, "n"); p == paths[0] {
		t.Error("another mode gave the same copy")
	}
	if err := os.WriteFile(lib, []byte("second, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := other(rewriter.Options{ModuleTag: 7}, "m")
	if p == paths[0] {
		t.Error("changed content gave the old copy")
	}
	if b, _ := os.ReadFile(p); string(b) != "second, longer copy" {
		t.Errorf("copy holds %q", b)
	}
}

// TestStartLibs: the loader's list of a dynamic program names libc.
func TestStartLibs(t *testing.T) {
	prog := "/bin/true"
	loader, err := Interpreter(prog)
	if err != nil || loader == "" {
		t.Skipf("%s: no dynamic loader (%v)", prog, err)
	}
	libs, err := StartLibs(loader, prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if l.Name == "libc.so.6" && filepath.IsAbs(l.Path) {
			return
		}
	}
	t.Errorf("StartLibs(%s) = %v: no libc.so.6", prog, libs)
}

// TestContentSumStored: a library's content hash is kept under Root/sums
// for later runs (decision 132), used while the file is the same, and not
// once the file changes. A fresh Cache stands for a later run; the entry
// on disk is replaced by a sum no file has, to see where the answer came
// from.
func TestContentSumStored(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	lib := filepath.Join(dir, "libx.so")
	if err := os.WriteFile(lib, []byte("first contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte("first contents"))
	sum, err := (&Cache{Root: root}).contentSum(lib)
	if err != nil || !bytes.Equal(sum, want[:]) {
		t.Fatalf("first run: %x, %v; want %x", sum, err, want)
	}
	entries, err := os.ReadDir(filepath.Join(root, "sums"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("sums: %v entries, %v; want one", len(entries), err)
	}
	entry := filepath.Join(root, "sums", entries[0].Name())
	marker := bytes.Repeat([]byte{0xab}, sha256.Size)
	if err := os.WriteFile(entry, marker, 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := (&Cache{Root: root}).contentSum(lib); err != nil || !bytes.Equal(sum, marker) {
		t.Errorf("later run, file unchanged: %x, %v; want the stored %x", sum, err, marker)
	}
	// The same size and modification time, other bytes: the change time
	// tells.
	fi, err := os.Stat(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("other contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lib, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	want = sha256.Sum256([]byte("other contents"))
	if sum, err := (&Cache{Root: root}).contentSum(lib); err != nil || !bytes.Equal(sum, want[:]) {
		t.Errorf("later run, file rewritten: %x, %v; want %x", sum, err, want)
	}
	// A damaged entry is hashed again.
	for _, e := range mustReadDir(t, filepath.Join(root, "sums")) {
		if err := os.WriteFile(filepath.Join(root, "sums", e.Name()), []byte("short"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sum, err := (&Cache{Root: root}).contentSum(lib); err != nil || !bytes.Equal(sum, want[:]) {
		t.Errorf("damaged entry: %x, %v; want %x", sum, err, want)
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return es
}
