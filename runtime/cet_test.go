package runtime_test

import (
	"bytes"
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/runtime"
	"github.com/blpp/blpp/runtime/internal/build"
)

// TestImageCET checks what keeping CET in rewritten programs needs of the
// committed runtime image (decision 95): IBT — the entry points the
// loader and libc reach by pointer (blpp_start as e_entry, blpp_fini,
// blpp_module_init) and every function whose address the runtime takes
// (its signal handlers, functions of the first module's runtime that
// later modules' copies jump to) start with endbr64; SHSTK — no call to
// the next instruction (call/pop) and no instruction that moves or writes
// the shadow stack, so every return goes back to where its call came
// from (the C code's indirect jumps are tail calls, and blpp_start's
// jump to the original entry is no return either).
func TestImageCET(t *testing.T) {
	f, err := elf.Open(filepath.Join(".", build.ImageName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[uint64]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			funcs[s.Value] = s.Name
		}
	}
	endbr := func(a uint64) bool {
		return a >= text.Addr && a-text.Addr+4 <= uint64(len(code)) && bytes.Equal(code[a-text.Addr:a-text.Addr+4], []byte{0xf3, 0x0f, 0x1e, 0xfa})
	}
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{runtime.SymStart, runtime.SymFini, runtime.SymModInit} {
		if !endbr(img.Symbols[s]) {
			t.Errorf("%s does not start with endbr64", s)
		}
	}
	taken, insts := 0, 0
	for off := 0; off < len(code); {
		a := text.Addr + uint64(off)
		in, err := x86.Decode(code[off:], a)
		if err != nil {
			t.Fatalf("%#x: %v", a, err)
		}
		insts++
		// blpp_sigreturn is the handlers' sa_restorer: the handler returns
		// to it (the kernel puts its address on the shadow stack too), no
		// jump or call goes there.
		if name, ok := funcs[in.RIPTarget]; ok && in.RIPTarget != 0 && in.Raw.Op.String() == "LEA" && name != "blpp_sigreturn" {
			taken++
			if !endbr(in.RIPTarget) {
				t.Errorf("%#x takes the address of %s, which does not start with endbr64", a, name)
			}
		}
		switch in.Op {
		case x86.INCSSPD, x86.INCSSPQ, x86.RSTORSSP, x86.SAVEPREVSSP, x86.SETSSBSY, x86.CLRSSBSY,
			x86.WRSSD, x86.WRSSQ, x86.WRUSSD, x86.WRUSSQ:
			t.Errorf("%#x: %s changes the shadow stack", a, x86.OpString(in.Op))
		}
		if in.Kind == x86.Call && in.Target == a+uint64(in.Len) {
			t.Errorf("%#x: a call to the next instruction", a)
		}
		off += in.Len
	}
	if taken == 0 || insts < 1000 {
		t.Errorf("%d instructions decoded, %d function addresses taken: the check saw nothing", insts, taken)
	}
	t.Logf("%d instructions, %d function addresses taken", insts, taken)
}
