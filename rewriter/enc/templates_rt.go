package enc

import "fmt"

// Templates for the sequences that read and write the runtime's records
// and shadow frames inline (entries, exits, backedges, dark-entry stubs).
//
// Their memory operands name fields of fixed C structures (runtime
// package layout.go), so the displacement width is part of the template:
// the D8 forms always write a disp8 (also for a field at offset 0, where
// GNU as would drop the displacement), the D32 forms always a disp32.
// The length of a sequence then does not depend on where a field lies.
// The tests write the same forms with GNU as's {disp8} and {disp32}
// pseudo-prefixes [Intel SDM Vol.2 Table 2-2].

// dispWidth selects how a based memory operand writes its displacement.
type dispWidth uint8

const (
	disp8 dispWidth = 1 + iota
	disp32
)

// basedW emits ModRM (and SIB for %rsp or %r12) and the displacement of
// disp(%base) in width w.
func (b *Buf) basedW(reg byte, base Reg, disp int32, w dispWidth) {
	mod := byte(1)
	if w == disp32 {
		mod = 2
	}
	b.emit(modrm(mod, reg, base.low()))
	if base.low() == 4 {
		b.emit(sib(0, 4, 4))
	}
	if w == disp32 {
		b.emit32(uint32(disp))
	} else {
		b.emit(byte(int8(disp)))
	}
}

// memW emits a REX.W instruction opcode with ModRM.reg = reg (a register
// number or an opcode extension, regHi its REX.R bit) on disp(%base).
func (b *Buf) memW(opcode, reg, regHi byte, base Reg, disp int32, w dispWidth) {
	b.emit(rex(true, regHi, 0, base.hi()), opcode)
	b.basedW(reg, base, disp, w)
}

// regMemW is memW with a register operand.
func (b *Buf) regMemW(op string, opcode byte, reg, base Reg, disp int32, w dispWidth) {
	if !b.checkRegs(op, base, reg) {
		return
	}
	b.memW(opcode, reg.low(), reg.hi(), base, disp, w)
}

// MovMemFromRegD8 emits mov %reg, disp8(%base) (REX.W 89 /r, mod=01).
func (b *Buf) MovMemFromRegD8(base Reg, disp int8, reg Reg) {
	b.regMemW("MovMemFromRegD8", 0x89, reg, base, int32(disp), disp8)
}

// MovRegFromMemD8 emits mov disp8(%base), %reg (REX.W 8b /r, mod=01).
func (b *Buf) MovRegFromMemD8(reg, base Reg, disp int8) {
	b.regMemW("MovRegFromMemD8", 0x8b, reg, base, int32(disp), disp8)
}

// MovRegFromMemD32 emits mov disp32(%base), %reg (REX.W 8b /r, mod=10):
// an index scaled into the displacement (a function's word of a table),
// whose length does not depend on the index.
func (b *Buf) MovRegFromMemD32(reg, base Reg, disp int32) {
	b.regMemW("MovRegFromMemD32", 0x8b, reg, base, disp, disp32)
}

// CmpMemRegD8 emits cmp %reg, disp8(%base) (REX.W 39 /r): the flags of
// mem - reg.
func (b *Buf) CmpMemRegD8(base Reg, disp int8, reg Reg) {
	b.regMemW("CmpMemRegD8", 0x39, reg, base, int32(disp), disp8)
}

// CmpRegMemD8 emits cmp disp8(%base), %reg (REX.W 3b /r): the flags of
// reg - mem.
func (b *Buf) CmpRegMemD8(reg, base Reg, disp int8) {
	b.regMemW("CmpRegMemD8", 0x3b, reg, base, int32(disp), disp8)
}

// SubRegMemD8 emits sub disp8(%base), %reg (REX.W 2b /r).
func (b *Buf) SubRegMemD8(reg, base Reg, disp int8) {
	b.regMemW("SubRegMemD8", 0x2b, reg, base, int32(disp), disp8)
}

// AddMemRegD8 emits add %reg, disp8(%base) (REX.W 01 /r).
func (b *Buf) AddMemRegD8(base Reg, disp int8, reg Reg) {
	b.regMemW("AddMemRegD8", 0x01, reg, base, int32(disp), disp8)
}

// LeaRegD8 emits lea disp8(%base), %dst (REX.W 8d /r, mod=01): dst =
// base + disp, flags untouched.
func (b *Buf) LeaRegD8(dst, base Reg, disp int8) {
	b.regMemW("LeaRegD8", 0x8d, dst, base, int32(disp), disp8)
}

// IncMemD8 emits incq disp8(%base) (REX.W ff /0, mod=01).
func (b *Buf) IncMemD8(base Reg, disp int8) {
	if !b.checkRegs("IncMemD8", base) {
		return
	}
	b.memW(0xff, 0, 0, base, int32(disp), disp8)
}

// IncMemD32 emits incq disp32(%base) (REX.W ff /0, mod=10).
func (b *Buf) IncMemD32(base Reg, disp int32) {
	if !b.checkRegs("IncMemD32", base) {
		return
	}
	b.memW(0xff, 0, 0, base, disp, disp32)
}

// DecMemD8 emits decq disp8(%base) (REX.W ff /1, mod=01): a thread's
// own word, so no lock prefix.
func (b *Buf) DecMemD8(base Reg, disp int8) {
	if !b.checkRegs("DecMemD8", base) {
		return
	}
	b.memW(0xff, 1, 0, base, int32(disp), disp8)
}

// CmpMemIdxImm8 emits cmpq $imm, disp32(%base,%index) (REX.W 83 /7 ib,
// scale 1; the immediate sign-extended).
func (b *Buf) CmpMemIdxImm8(base, index Reg, disp int32, imm int8) {
	if !b.checkIndex("CmpMemIdxImm8", base, index) {
		return
	}
	b.emit(rex(true, 0, index.hi(), base.hi()), 0x83)
	b.emit(modrm(2, 7, 4), sib(0, index.low(), base.low()))
	b.emit32(uint32(disp))
	b.emit(byte(imm))
}

// CmpxchgMemIdxReg emits cmpxchg %reg, disp32(%base,%index) (REX.W 0f
// b1 /r, scale 1) without a lock prefix: if mem equals %rax, mem = reg
// and ZF is set, else %rax = mem and ZF is clear. One instruction, so no
// signal handler on the thread lands between the compare and the store.
func (b *Buf) CmpxchgMemIdxReg(base, index Reg, disp int32, reg Reg) {
	if !b.checkIndex("CmpxchgMemIdxReg", base, index) || !b.checkRegs("CmpxchgMemIdxReg", reg) {
		return
	}
	b.emit(rex(true, reg.hi(), index.hi(), base.hi()), 0x0f, 0xb1)
	b.emit(modrm(2, reg.low(), 4), sib(0, index.low(), base.low()))
	b.emit32(uint32(disp))
}

// IncMem32D8 emits incl disp8(%base) (ff /0, mod=01; REX.B for r8-r15):
// a 32-bit counter of the thread's own, so no lock prefix.
func (b *Buf) IncMem32D8(base Reg, disp int8) {
	if !b.checkRegs("IncMem32D8", base) {
		return
	}
	b.mem32(0xff, 0, base, disp)
}

// CmpMem32Imm32D8 emits cmpl $imm32, disp8(%base) (81 /7, mod=01; REX.B
// for r8-r15), the 32-bit immediate even where 8 bits would do.
func (b *Buf) CmpMem32Imm32D8(base Reg, disp int8, imm int32) {
	if !b.checkRegs("CmpMem32Imm32D8", base) {
		return
	}
	b.mem32(0x81, 7, base, disp)
	b.emit32(uint32(imm))
}

// mem32 emits a 32-bit operand size opcode /ext on disp8(%base).
func (b *Buf) mem32(opcode, ext byte, base Reg, disp int8) {
	if base.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(opcode)
	b.basedW(ext, base, int32(disp), disp8)
}

// CmpMemImm32D8 emits cmpq $imm32, disp8(%base) (REX.W 81 /7, mod=01).
func (b *Buf) CmpMemImm32D8(base Reg, disp int8, imm int32) {
	if !b.checkRegs("CmpMemImm32D8", base) {
		return
	}
	b.memW(0x81, 7, 0, base, int32(disp), disp8)
	b.emit32(uint32(imm))
}

// MovMemImm32D8 emits movq $imm32, disp8(%base) (REX.W c7 /0, mod=01),
// the immediate sign-extended to 64 bits.
func (b *Buf) MovMemImm32D8(base Reg, disp int8, imm int32) {
	if !b.checkRegs("MovMemImm32D8", base) {
		return
	}
	b.memW(0xc7, 0, 0, base, int32(disp), disp8)
	b.emit32(uint32(imm))
}

// LeaRegIdxD8 emits lea disp8(%base,%index,scale), %dst (REX.W 8d /r
// with SIB, mod=01); scale is 1, 2, 4 or 8. %rsp cannot be an index.
func (b *Buf) LeaRegIdxD8(dst, base, index Reg, scale uint8, disp int8) {
	if !b.checkIndex("LeaRegIdxD8", base, index) || !b.checkRegs("LeaRegIdxD8", dst) {
		return
	}
	var ss byte
	switch scale {
	case 1:
	case 2:
		ss = 1
	case 4:
		ss = 2
	case 8:
		ss = 3
	default:
		b.fail("LeaRegIdxD8", "scale %d", scale)
		return
	}
	b.emit(rex(true, dst.hi(), index.hi(), base.hi()), 0x8d)
	b.emit(modrm(1, dst.low(), 4), sib(ss, index.low(), base.low()), byte(disp))
}

// gsRegOp emits prefix REX.W opcode /r with an absolute segment:disp32
// operand.
func (b *Buf) gsRegOp(op string, prefix, opcode byte, reg Reg, disp int32) {
	if !b.checkRegs(op, reg) {
		return
	}
	b.emit(prefix, rex(true, reg.hi(), 0, 0), opcode)
	b.gsAbs(reg.low(), disp)
}

// XaddGSReg emits xadd %reg, %gs:disp (65 REX.W 0f c1 /r, 10 bytes):
// mem += reg, reg = mem's old value, in one instruction, so that no
// signal handler on the thread lands between the read and the write (no
// lock prefix: other threads do not touch a thread block's fields).
func (b *Buf) XaddGSReg(disp int32, reg Reg) {
	if !b.checkRegs("XaddGSReg", reg) {
		return
	}
	b.emit(prefixGS, rex(true, reg.hi(), 0, 0), 0x0f, 0xc1)
	b.gsAbs(reg.low(), disp)
}

// CmpRegGS emits cmp %gs:disp, %reg (65 REX.W 3b /r, 9 bytes): the flags
// of reg - mem.
func (b *Buf) CmpRegGS(reg Reg, disp int32) { b.gsRegOp("CmpRegGS", prefixGS, 0x3b, reg, disp) }

// OrRegGS emits or %gs:disp, %reg (65 REX.W 0b /r, 9 bytes).
func (b *Buf) OrRegGS(reg Reg, disp int32) { b.gsRegOp("OrRegGS", prefixGS, 0x0b, reg, disp) }

// SubRegGS emits sub %gs:disp, %reg (65 REX.W 2b /r, 9 bytes).
func (b *Buf) SubRegGS(reg Reg, disp int32) { b.gsRegOp("SubRegGS", prefixGS, 0x2b, reg, disp) }

// AddRegGS emits add %gs:disp, %reg (65 REX.W 03 /r, 9 bytes).
func (b *Buf) AddRegGS(reg Reg, disp int32) { b.gsRegOp("AddRegGS", prefixGS, 0x03, reg, disp) }

// MovRegFromFS emits mov %fs:disp, %reg (64 REX.W 8b /r, 9 bytes):
// %fs:0 is the thread pointer, which points at itself [ELF TLS, x86-64
// variant II].
func (b *Buf) MovRegFromFS(reg Reg, disp int32) {
	b.gsRegOp("MovRegFromFS", prefixFS, 0x8b, reg, disp)
}

// regReg emits REX.W opcode /r with ModRM.reg = src, ModRM.rm = dst.
func (b *Buf) regReg(op string, opcode byte, dst, src Reg) {
	if !b.checkRegs(op, dst, src) {
		return
	}
	b.emit(rex(true, src.hi(), 0, dst.hi()), opcode, modrm(3, src.low(), dst.low()))
}

// CmpRegReg emits cmp %src, %dst (REX.W 39 /r, the form GNU as picks):
// the flags of dst - src.
func (b *Buf) CmpRegReg(dst, src Reg) { b.regReg("CmpRegReg", 0x39, dst, src) }

// OrRegReg emits or %src, %dst (REX.W 09 /r, the form GNU as picks).
func (b *Buf) OrRegReg(dst, src Reg) { b.regReg("OrRegReg", 0x09, dst, src) }

// TestReg32 emits test %reg32, %reg32 (85 /r): ZF says the low half is 0.
func (b *Buf) TestReg32(reg Reg) {
	if !b.checkRegs("TestReg32", reg) {
		return
	}
	if reg.hi() != 0 {
		b.emit(rex(false, reg.hi(), 0, reg.hi()))
	}
	b.emit(0x85, modrm(3, reg.low(), reg.low()))
}

// ShlRegImm emits shl $n, %reg (REX.W c1 /4 ib), n from 2 to 63 (GNU as
// writes a shift by 1 as d1 /4).
func (b *Buf) ShlRegImm(reg Reg, n uint8) {
	if !b.checkRegs("ShlRegImm", reg) {
		return
	}
	if n < 2 || n > 63 {
		b.fail("ShlRegImm", "shift count %d outside [2, 63]", n)
		return
	}
	b.emit(rex(true, 0, 0, reg.hi()), 0xc1, modrm(3, 4, reg.low()), n)
}

// CmpxchgMemRegD8 emits cmpxchg %reg, disp8(%base) (REX.W 0f b1 /r,
// mod=01), without a lock prefix: if mem equals %rax, mem = reg and ZF
// is set, else %rax = mem and ZF is clear. One instruction, so that no
// signal handler on the thread lands between the compare and the store
// (other threads do not touch a thread's records).
func (b *Buf) CmpxchgMemRegD8(base Reg, disp int8, reg Reg) {
	if !b.checkRegs("CmpxchgMemRegD8", base, reg) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, base.hi()), 0x0f, 0xb1)
	b.basedW(reg.low(), base, int32(disp), disp8)
}

// NotReg emits not %reg (REX.W f7 /2): every bit flipped, the flags
// untouched.
func (b *Buf) NotReg(reg Reg) {
	if !b.checkRegs("NotReg", reg) {
		return
	}
	b.emit(rex(true, 0, 0, reg.hi()), 0xf7, modrm(3, 2, reg.low()))
}

// Rdtsc emits rdtsc (0f 31): the time-stamp counter in %edx:%eax.
func (b *Buf) Rdtsc() { b.emit(0x0f, 0x31) }

// BsrRegReg emits bsr %src, %dst (REX.W 0f bd /r): the index of src's
// highest set bit into dst. dst is undefined when src is 0
// [Intel SDM Vol.2 BSR], so the caller makes sure it is not.
func (b *Buf) BsrRegReg(dst, src Reg) {
	if !b.checkRegs("BsrRegReg", dst, src) {
		return
	}
	b.emit(rex(true, dst.hi(), 0, src.hi()), 0x0f, 0xbd, modrm(3, dst.low(), src.low()))
}

// OrRegImm8 emits or $imm, %reg (REX.W 83 /1 ib, imm sign-extended).
func (b *Buf) OrRegImm8(reg Reg, imm int8) {
	if !b.checkRegs("OrRegImm8", reg) {
		return
	}
	b.emit(rex(true, 0, 0, reg.hi()), 0x83, modrm(3, 1, reg.low()), byte(imm))
}

// CmpRIPImm8 emits cmpq $imm8, t(%rip) (REX.W 83 /7 with mod=00 rm=101,
// 8 bytes): the displacement is counted from the end of the instruction,
// after the immediate.
func (b *Buf) CmpRIPImm8(t Target, imm int8) {
	if !b.checkTarget("CmpRIPImm8", t) {
		return
	}
	b.emit(rex(true, 0, 0, 0), 0x83, modrm(0, 7, 5))
	b.field(t, len(b.code)+5)
	b.emit(byte(imm))
}

// MovRegFromRIP emits mov t(%rip), %reg (REX.W 8b /r with mod=00 rm=101,
// 7 bytes).
func (b *Buf) MovRegFromRIP(reg Reg, t Target) {
	if !b.checkRegs("MovRegFromRIP", reg) || !b.checkTarget("MovRegFromRIP", t) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, 0), 0x8b, modrm(0, reg.low(), 5))
	b.rel32(t)
}

// Zeros reserves n zero bytes of data (GNU as's .zero n): the space of a
// table whose entries are written once the code is laid out.
func (b *Buf) Zeros(n int) {
	if n < 0 {
		b.fail("Zeros", "negative size %d", n)
		return
	}
	b.code = append(b.code, make([]byte, n)...)
}

// Ud2 emits ud2 (0f 0b): a trap that decoders know ends the flow.
func (b *Buf) Ud2() { b.emit(0x0f, 0x0b) }

// prefixFS selects the %fs segment.
const prefixFS = 0x64

// JmpRel32At returns the bytes of jmp rel32 (e9, 5 bytes) placed at from
// and going to to: the patch that sends an original entry to its
// instrumented copy. It fails when to is more than 2 GiB away.
func JmpRel32At(from, to uint64) ([]byte, error) {
	var b Buf
	b.JmpRel32(AbsTarget(to))
	return b.Finish(from)
}

// JmpRel8At returns the bytes of jmp rel8 (eb, 2 bytes) placed at from
// and going to to: the patch at a label with room for no more, which
// leads to a 5-byte jump nearby (decision 174). It fails when to is
// more than a byte's displacement away.
func JmpRel8At(from, to uint64) ([]byte, error) {
	d := int64(to) - int64(from+2)
	if d != int64(int8(d)) {
		return nil, fmt.Errorf("enc: JmpRel8At: %#x is %d bytes from the end of the jump at %#x", to, d, from)
	}
	var b Buf
	b.emit(0xeb, byte(int8(d)))
	return b.Finish(from)
}
