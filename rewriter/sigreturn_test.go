package rewriter_test

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
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
		addr, ok := fixture.FuncAddrs(t, path)["__restore_rt"]
		if !ok {
			t.Fatalf("%s: no __restore_rt", path)
		}
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+9 <= p.Vaddr+p.Filesz {
				b := make([]byte, 9)
				if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("%s: __restore_rt at %#x is in no loaded segment", path, addr)
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

// TestSigreturnKeptStripped: in a stripped C library (Debian's
// libc.so.6) the procedure that holds __restore_rt is the one its FDE
// bounds, which glibc starts one byte early, on a nop, for unwinders that
// look up the return address minus one. Its entry jump would overwrite
// the trampoline's first four bytes, and every signal handler of a
// whole-process run would return into them: it must stay out.
func TestSigreturnKeptStripped(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("%s: %v", libc, err)
	}
	b, err := cfg.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Analyze(b, cfg.Options{})
	held := 0
	for i, f := range p.Funcs {
		if !cfg.HoldsSigreturn(b.Code(f.Addr)) {
			continue
		}
		held++
		if g := p.Graphs[i]; g != nil && g.Reason != cfg.ReasonSigreturn {
			t.Errorf("%s at %#x holds the signal return trampoline but is %v", f.Name, f.Addr, g.Reason)
		}
	}
	if held == 0 {
		t.Fatalf("%s: no procedure holds the signal return trampoline", libc)
	}
}
