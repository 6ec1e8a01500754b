package rewriter_test

import (
	"bytes"
	"debug/elf"
	"testing"

	"blpp/cfg"
	"blpp/internal/testsupport/fixture"
)

// TestSigreturnKept: the C library's signal return trampoline
// (__restore_rt), which the kernel returns into from every signal handler
// and which unwinders and debuggers recognise by its bytes, keeps them in
// an instrumented binary (a static one: its glibc is linked in, as
// libc.so.6's is when blpp instruments it).
func TestSigreturnKept(t *testing.T) {
	dir := t.TempDir()
	orig, inst := rewriteTo(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", Static: true}, dir)
	restore := func(path string) []byte {
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range syms {
			if s.Name != "__restore_rt" {
				continue
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value+9 <= p.Vaddr+p.Filesz {
					b := make([]byte, 9)
					if _, err := p.ReadAt(b, int64(s.Value-p.Vaddr)); err != nil {
						t.Fatal(err)
					}
					return b
				}
			}
		}
		t.Fatalf("%s: no __restore_rt", path)
		return nil
	}
	want, got := restore(orig), restore(inst)
	if !cfg.IsSigreturnTrampoline(want) {
		t.Fatalf("the original's __restore_rt is % x, not the trampoline", want)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("instrumented __restore_rt is % x, want % x", got, want)
	}
}
