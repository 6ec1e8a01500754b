package wholerun

import (
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
