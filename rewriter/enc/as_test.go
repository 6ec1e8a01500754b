package enc

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// This file checks every template byte for byte against GNU as. All cases
// go into one .s file (one as run): case i is preceded by the symbol c<i>,
// and the bytes between c<i> and c<i+1> in the object's .text must equal
// what the template emitted.
//
// GNU as picks the shortest encoding; the templates always use 32-bit
// fields. The long forms are forced with
//   - the {disp32} pseudo-prefix for memory displacements and branches;
//   - immediates written as (Z+v) where Z is a symbol defined only at the
//     end of the file: the value is unknown when as chooses the encoding,
//     so it takes the imm32 form, and the fixup resolves to v at the end
//     without leaving a relocation.
// add $imm32, %rax is the one form as never emits with ModRM (it uses the
// accumulator opcode 48 05); the template follows as there.
// Branch targets are labels in the same section (start0, mid0, end0) or
// start0±d, which as resolves itself; the buffer is finished at asBase, so
// the absolute target asBase+d corresponds to start0+d.

const asBase = 0x400000

var reg32Names = [...]string{
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
	"r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d",
}

var (
	asDisps = []int32{0, 1, -1, 8, -8, 127, 128, -128, -129, 0x1234, 0x7fffffff, -0x80000000}
	asImms  = []int32{0, 1, -1, 127, 128, -128, -129, 0x7fff, 0x12345678, 0x7fffffff, -0x80000000}
)

type asCase struct {
	asm  string
	emit func(b *Buf)
}

type asTarget struct {
	t   Target
	asm string
}

// imm is an immediate operand as cannot shorten.
func imm(v int32) string { return fmt.Sprintf("$(Z%+d)", v) }

func asCases(targets []asTarget) []asCase {
	var cs []asCase
	add := func(asm string, emit func(b *Buf)) { cs = append(cs, asCase{asm, emit}) }
	allRegs := make([]Reg, 16)
	for i := range allRegs {
		allRegs[i] = Reg(i)
	}

	for _, d := range asDisps {
		for _, v := range asImms {
			add(fmt.Sprintf("addq %s, %%gs:%d", imm(v), d), func(b *Buf) { b.AddGS64Imm(d, v) })
			add(fmt.Sprintf("movq %s, %%gs:%d", imm(v), d), func(b *Buf) { b.MovGS64Imm(d, v) })
			add(fmt.Sprintf("cmpq %s, %%gs:%d", imm(v), d), func(b *Buf) { b.CmpGS64Imm(d, v) })
		}
		for _, r := range allRegs {
			if r != RSP {
				add(fmt.Sprintf("incq %%gs:%d(,%%%s,8)", d, r), func(b *Buf) { b.IncGSIndexed(d, r) })
				add(fmt.Sprintf("decq %%gs:%d(,%%%s,8)", d, r), func(b *Buf) { b.DecGSIndexed(d, r) })
				s := allRegs[(int(r)+3)%len(allRegs)]
				add(fmt.Sprintf("cmp %%%s, %%gs:%d(,%%%s,1)", s, d, r), func(b *Buf) { b.CmpGSIdxReg(r, d, s) })
				add(fmt.Sprintf("mov %%gs:%d(,%%%s,1), %%%s", d, r, s), func(b *Buf) { b.MovRegFromGSIdx(s, r, d) })
				for _, v := range asImms {
					add(fmt.Sprintf("cmpq %s, %%gs:%d(,%%%s,1)", imm(v), d, r), func(b *Buf) { b.CmpGSIdxImm32(r, d, v) })
				}
			}
			add(fmt.Sprintf("mov %%gs:%d, %%%s", d, r), func(b *Buf) { b.MovRegFromGS(r, d) })
			add(fmt.Sprintf("mov %%%s, %%gs:%d", r, d), func(b *Buf) { b.MovGSFromReg(d, r) })
			add(fmt.Sprintf("xchg %%%s, %%gs:%d", r, d), func(b *Buf) { b.XchgGSReg(d, r) })
		}
		add(fmt.Sprintf("{disp32} lea %d(%%rsp), %%rsp", d), func(b *Buf) { b.LeaRSP(d) })
		for _, r := range allRegs {
			add(fmt.Sprintf("lea %d(%%%s), %%%s", d, r, r), func(b *Buf) { b.LeaRegSelf(r, d) })
			if d == 0 {
				for _, src := range allRegs {
					add(fmt.Sprintf("mov %%%s, %%%s", src, r), func(b *Buf) { b.MovRegFromReg(r, src) })
				}
			}
			for _, base := range []Reg{RAX, RCX, RSP, RBP, R12, R13, R11} {
				add(fmt.Sprintf("mov %%%s, %d(%%%s)", r, d, base), func(b *Buf) { b.MovMemFromReg(base, d, r) })
				add(fmt.Sprintf("mov %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.MovRegFromMem(r, base, d) })
				add(fmt.Sprintf("jmp *%d(%%%s)", d, base), func(b *Buf) { b.JmpMem(base, d) })
				add(fmt.Sprintf("cmp %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.CmpRegMem(r, base, d) })
			}
			add(fmt.Sprintf("incq %d(%%%s)", d, r), func(b *Buf) { b.IncMem(r, d) })
			add(fmt.Sprintf("cmpq $(Z+0x12345678), %d(%%%s)", d, r), func(b *Buf) { b.CmpMemImm32(r, d, 0x12345678) })
			add(fmt.Sprintf("cmpq $(Z-129), %d(%%%s)", d, r), func(b *Buf) { b.CmpMemImm32(r, d, -129) })
			add(fmt.Sprintf("movq $(Z+0x12345678), %d(%%%s)", d, r), func(b *Buf) { b.MovMemImm32(r, d, 0x12345678) })
			add(fmt.Sprintf("movq $(Z-129), %d(%%%s)", d, r), func(b *Buf) { b.MovMemImm32(r, d, -129) })
		}
	}
	for _, r := range allRegs {
		add("push %"+r.String(), func(b *Buf) { b.Push(r) })
		add("pop %"+r.String(), func(b *Buf) { b.Pop(r) })
		for _, v := range []uint64{0, 1, 0x7f, 0xffffffff, 0x8000000000000000, 0xffffffffffffffff, 0x123456789abcdef0} {
			add(fmt.Sprintf("movabsq $%#x, %%%s", v, r), func(b *Buf) { b.MovImm64(r, v) })
		}
		for _, v := range []uint32{0, 1, 0x7f, 0x80, 0x80000000, 0xffffffff} {
			add(fmt.Sprintf("movl $%#x, %%%s", v, reg32Names[r]), func(b *Buf) { b.MovImm32(r, v) })
		}
		for _, v := range []int32{0, 1, 0x7fffffff, -1, -128, -0x80000000, -49230115} {
			if v >= 0 {
				add(fmt.Sprintf("movl $%d, %%%s", v, reg32Names[r]), func(b *Buf) { b.MovRegImm(r, v) })
			} else {
				add(fmt.Sprintf("movq $%d, %%%s", v, r), func(b *Buf) { b.MovRegImm(r, v) })
			}
		}
		for _, v := range asImms {
			add(fmt.Sprintf("addq %s, %%%s", imm(v), r), func(b *Buf) { b.AddRegImm32(r, v) })
			add(fmt.Sprintf("cmpq %s, %%%s", imm(v), r), func(b *Buf) { b.CmpRegImm32(r, v) })
		}
	}
	for _, r := range allRegs {
		add("test %"+r.String()+", %"+r.String(), func(b *Buf) { b.TestRegReg(r) })
		for _, d := range asDisps {
			s := allRegs[(int(r)+5)%len(allRegs)]
			add(fmt.Sprintf("{disp32} lea %d(%%%s), %%%s", d, s, r), func(b *Buf) { b.LeaRegDisp32(r, s, d) })
		}
		for i, base := range allRegs {
			d := asDisps[(int(r)+i)%len(asDisps)]
			add(fmt.Sprintf("imul %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.ImulRegMem(r, base, d) })
		}
		for _, n := range []uint8{2, 32, 62, 63} {
			add(fmt.Sprintf("shr $%d, %%%s", n, r), func(b *Buf) { b.ShrRegImm(r, n) })
		}
		for _, n := range []uint8{2, 18, 31} {
			add(fmt.Sprintf("shr $%d, %%%s", n, reg32Names[r]), func(b *Buf) { b.ShrReg32Imm(r, n) })
		}
		for _, v := range []int8{-16, 0, 1, 127, -128} {
			add(fmt.Sprintf("and $%d, %%%s", v, reg32Names[r]), func(b *Buf) { b.AndReg32Imm8(r, v) })
		}
		for _, s := range allRegs {
			for _, v := range []uint32{0x9e3779b1, 0x80, 0x7fffffff} {
				add(fmt.Sprintf("imul $%#x, %%%s, %%%s", v, reg32Names[s], reg32Names[r]),
					func(b *Buf) { b.ImulReg32Imm32(r, s, v) })
			}
		}
	}
	for _, r := range allRegs {
		add(fmt.Sprintf("jmp *%%%s", r), func(b *Buf) { b.JmpReg(r) })
	}
	add("pushfq", (*Buf).Pushfq)
	// Immediates that do not fit 8 bits, so as picks the imm32 form too.
	for _, v := range []int32{0x12345678, -0x12345678, 128, -129} {
		add(fmt.Sprintf("pushq $%d", v), func(b *Buf) { b.PushImm32(v) })
	}
	add("popfq", (*Buf).Popfq)
	add("lahf", (*Buf).Lahf)
	add("sahf", (*Buf).Sahf)
	add("seto %al", (*Buf).SetoAL)
	add("ret", (*Buf).Ret)
	add("int3", (*Buf).Int3)
	add("endbr64", (*Buf).Endbr64)
	for _, v := range []int8{0, 1, 0x7f, -1, -128} {
		add(fmt.Sprintf("add $%d, %%al", v), func(b *Buf) { b.AddALImm8(v) })
	}
	i := 0
	for _, base := range allRegs {
		for _, index := range allRegs {
			if index == RSP {
				continue
			}
			d, v := asDisps[i%len(asDisps)], asImms[i%len(asImms)]
			i++
			dst := allRegs[(i*7)%len(allRegs)]
			add(fmt.Sprintf("{disp32} mov %d(%%%s,%%%s,8), %%%s", d, base, index, dst),
				func(b *Buf) { b.MovRegFromMemIdx8(dst, base, index, d) })
			add(fmt.Sprintf("{disp32} add %d(%%%s,%%%s,8), %%%s", d, base, index, dst),
				func(b *Buf) { b.AddRegFromMemIdx8(dst, base, index, d) })
			add(fmt.Sprintf("{disp32} lea %d(%%%s,%%%s,1), %%%s", d, base, index, dst),
				func(b *Buf) { b.LeaRegBaseIndexDisp32(dst, base, index, d) })
			if index == base || base == RSP && index == RAX {
				add(fmt.Sprintf("{disp32} mov %d(%%%s), %%%s", d, base, dst),
					func(b *Buf) { b.MovRegFromMemDisp32(dst, base, d) })
			}
			add(fmt.Sprintf("lea (%%%s,%%%s,1), %%%s", base, index, dst),
				func(b *Buf) { b.LeaRegBaseIndex(dst, base, index) })
			add(fmt.Sprintf("{disp32} lock incq %d(%%%s,%%%s,8)", d, base, index),
				func(b *Buf) { b.LockIncMem(base, index, d) })
			add(fmt.Sprintf("{disp32} incq %d(%%%s,%%%s,8)", d, base, index),
				func(b *Buf) { b.IncMemIndexed(base, index, d) })
			add(fmt.Sprintf("{disp32} decq %d(%%%s,%%%s,8)", d, base, index),
				func(b *Buf) { b.DecMemIndexed(base, index, d) })
			add(fmt.Sprintf("{disp32} incq %d(%%%s,%%%s)", d, base, index),
				func(b *Buf) { b.IncMemIdx(base, index, d) })
			r := allRegs[i%len(allRegs)]
			add(fmt.Sprintf("{disp32} cmp %%%s, %d(%%%s,%%%s)", r, d, base, index),
				func(b *Buf) { b.CmpMemIdxReg(base, index, d, r) })
			add(fmt.Sprintf("{disp32} lock addq %s, %d(%%%s,%%%s,8)", imm(v), d, base, index),
				func(b *Buf) { b.LockAddMemImm(base, index, d, v) })
		}
	}
	for _, d := range asDisps {
		for _, v := range asImms {
			add(fmt.Sprintf("{disp32} lock addq %s, %d(%%r13,%%r12,8)", imm(v), d),
				func(b *Buf) { b.LockAddMemImm(R13, R12, d, v) })
		}
	}
	for n := 1; n <= 30; n++ {
		add(fmt.Sprintf(".nops %d, 9", n), func(b *Buf) { b.Nop(n) })
	}
	for n := 1; n <= 64; n++ {
		asm := fmt.Sprintf(".nops %d, 9", n)
		if n > 9 {
			asm = fmt.Sprintf("jmp 1f; .nops %d, 9; 1:", n-2)
		}
		add(asm, func(b *Buf) { b.PadJump(n) })
	}
	for _, tg := range targets {
		add("call "+tg.asm, func(b *Buf) { b.CallRel32(tg.t) })
		add("{disp32} jmp "+tg.asm, func(b *Buf) { b.JmpRel32(tg.t) })
		for c := Cond(0); c < 16; c++ {
			add(fmt.Sprintf("{disp32} j%s %s", c, tg.asm), func(b *Buf) { b.JccRel32(c, tg.t) })
		}
		add("{disp32} xbegin "+tg.asm, func(b *Buf) { b.xbeginRel32(tg.t) })
		add("jmp *("+tg.asm+")(%rip)", func(b *Buf) { b.JmpRIPIndirect(tg.t) })
		for _, r := range allRegs {
			add(fmt.Sprintf("lea (%s)(%%rip), %%%s", tg.asm, r), func(b *Buf) { b.LeaRegRIP(r, tg.t) })
		}
	}
	return append(cs, asCasesRT(targets)...)
}

func TestTemplatesAgainstGNUAs(t *testing.T) {
	asPath := fixture.RequireTool(t, "as", "binutils")

	var b Buf
	start, mid, end := b.NewLabel(), b.NewLabel(), b.NewLabel()
	targets := []asTarget{
		{LabelTarget(start), "start0"},
		{LabelTarget(mid), "mid0"},
		{LabelTarget(end), "end0"},
	}
	for _, d := range []int64{-0x1000, -1, 0x10, 0x100000, 0x7ff00000, -0x7ff00000} {
		targets = append(targets, asTarget{AbsTarget(uint64(asBase + d)), fmt.Sprintf("start0%+#x", d)})
	}
	cases := asCases(targets)

	var src strings.Builder
	src.WriteString("\t.text\nstart0:\n")
	b.Bind(start)
	offs := make([]int, len(cases)+1)
	for i, c := range cases {
		if i == len(cases)/2 {
			src.WriteString("mid0:\n")
			b.Bind(mid)
		}
		fmt.Fprintf(&src, "c%d:\n\t%s\n", i, c.asm)
		offs[i] = b.Len()
		c.emit(&b)
	}
	offs[len(cases)] = b.Len()
	src.WriteString("end0:\n\t.set Z, 0\n")
	b.Bind(end)
	got, err := b.Finish(asBase)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	sFile, oFile := filepath.Join(dir, "cases.s"), filepath.Join(dir, "cases.o")
	if err := os.WriteFile(sFile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(asPath, "--64", "-o", oFile, sFile).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	text, syms := readObject(t, oFile)

	bad := 0
	for i, c := range cases {
		from, ok1 := syms[fmt.Sprintf("c%d", i)]
		to, ok2 := syms[fmt.Sprintf("c%d", i+1)]
		if i == len(cases)-1 {
			to, ok2 = syms["end0"]
		}
		if !ok1 || !ok2 || from > to || to > uint64(len(text)) {
			t.Fatalf("case %d: symbols c%d/c%d missing or out of order in the object", i, i, i+1)
		}
		want := text[from:to]
		mine := got[offs[i]:offs[i+1]]
		if uint64(offs[i]) != from || !bytes.Equal(mine, want) {
			t.Errorf("%s: got % x at %#x, as gives % x at %#x", c.asm, mine, offs[i], want, from)
			if bad++; bad > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	if !bytes.Equal(got, text) && bad == 0 {
		t.Errorf("buffer (%d bytes) differs from .text (%d bytes)", len(got), len(text))
	}
	t.Logf("%d cases, %d bytes, one as run", len(cases), len(got))
}

// readObject returns the .text bytes of a relocatable object and its
// symbols' values, refusing an object with relocations against .text (all
// targets must have been resolved by as).
func readObject(t *testing.T, path string) ([]byte, map[string]uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s := f.Section(".rela.text"); s != nil && s.Size > 0 {
		t.Fatalf("as left relocations in .text (%d bytes of .rela.text)", s.Size)
	}
	s := f.Section(".text")
	if s == nil {
		t.Fatal("no .text in the object")
	}
	text, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	symbols, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	syms := make(map[string]uint64, len(symbols))
	for _, s := range symbols {
		syms[s.Name] = s.Value
	}
	return text, syms
}
