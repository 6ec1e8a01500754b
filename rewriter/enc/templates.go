package enc

// Encoding helpers [Intel SDM Vol.2 §2.1-2.2]. Every memory operand below
// uses a 32-bit displacement (ModRM.mod=10, or mod=00 with SIB base=101
// for an absolute %gs: address), every immediate is 32 bits, so lengths
// depend only on which registers need a REX prefix.

const (
	prefixGS   = 0x65
	prefixLock = 0xf0
)

// rex builds a REX prefix: W selects 64-bit operand size; r, x and bb
// extend ModRM.reg, SIB.index and ModRM.rm/SIB.base/opcode reg [Intel
// SDM Vol.2 §2.2.1].
func rex(w bool, r, x, bb byte) byte {
	v := byte(0x40) | r<<2 | x<<1 | bb
	if w {
		v |= 8
	}
	return v
}

func modrm(mod, reg, rm byte) byte { return mod<<6 | reg<<3 | rm }

func sib(scale, index, base byte) byte { return scale<<6 | index<<3 | base }

// gsAbs emits ModRM and SIB for an absolute %gs:disp32 operand with reg
// in ModRM.reg: mod=00 rm=100 and SIB with no index and base=101 means
// [disp32] without rip [Intel SDM Vol.2 Table 2-3, note 1]. mod=00 rm=101
// alone would be rip-relative in 64-bit mode.
func (b *Buf) gsAbs(reg byte, disp int32) {
	b.emit(modrm(0, reg, 4), sib(0, 4, 5))
	b.emit32(uint32(disp))
}

// AddGS64Imm emits addq $imm, %gs:disp (65 48 81 04 25 disp32 imm32, 13
// bytes): the per-thread path-register increment of DESIGN decision 4.
func (b *Buf) AddGS64Imm(disp, imm int32) { b.gsImm32(0x81, 0, disp, imm) }

// CmpGS64Imm emits cmpq $imm, %gs:disp (65 48 81 3c 25 disp32 imm32, 13
// bytes); imm is sign-extended to 64 bits.
func (b *Buf) CmpGS64Imm(disp, imm int32) { b.gsImm32(0x81, 7, disp, imm) }

// gsImm32 emits 65 REX.W opcode /ext with an absolute %gs:disp32 operand
// and a 32-bit immediate.
func (b *Buf) gsImm32(opcode, ext byte, disp, imm int32) {
	b.emit(prefixGS, rex(true, 0, 0, 0), opcode)
	b.gsAbs(ext, disp)
	b.emit32(uint32(imm))
}

// CmpRegImm32 emits cmp $imm, %reg (REX.W 81 /7 imm32, 7 bytes; for
// %rax the short REX.W 3d imm32, 6 bytes, as GNU as picks); imm is
// sign-extended to 64 bits.
func (b *Buf) CmpRegImm32(reg Reg, imm int32) {
	if !b.checkRegs("CmpRegImm32", reg) {
		return
	}
	if reg == RAX {
		b.emit(rex(true, 0, 0, 0), 0x3d)
	} else {
		b.emit(rex(true, 0, 0, reg.hi()), 0x81, modrm(3, 7, reg.low()))
	}
	b.emit32(uint32(imm))
}

// IncGSIndexed emits incq %gs:disp(,%index,8) (65 REX.W ff /0 with SIB
// base=101 and mod=00: no base register, disp32 [Intel SDM Vol.2 Table
// 2-3]; 9 bytes): a per-thread counter at a fixed %gs offset, indexed by
// a path number. %rsp cannot be an index.
func (b *Buf) IncGSIndexed(disp int32, index Reg) { b.gsIndexedFF("IncGSIndexed", 0, disp, index) }

// DecGSIndexed emits decq %gs:disp(,%index,8) (65 REX.W ff /1, as
// IncGSIndexed): an increment taken back.
func (b *Buf) DecGSIndexed(disp int32, index Reg) { b.gsIndexedFF("DecGSIndexed", 1, disp, index) }

// gsIndexedFF emits 65 REX.W ff /ext with the operand %gs:disp(,%index,8).
func (b *Buf) gsIndexedFF(op string, ext byte, disp int32, index Reg) {
	if !b.checkRegs(op, index) {
		return
	}
	if index == RSP {
		b.fail(op, "%%rsp cannot be an index")
		return
	}
	b.emit(prefixGS, rex(true, 0, index.hi(), 0), 0xff, modrm(0, ext, 4), sib(3, index.low(), 5))
	b.emit32(uint32(disp))
}

// MovGS64Imm emits movq $imm, %gs:disp (65 48 c7 04 25 disp32 imm32, 13
// bytes); imm is sign-extended to 64 bits.
func (b *Buf) MovGS64Imm(disp, imm int32) { b.gsImm32(0xc7, 0, disp, imm) }

// MovRegFromGS emits mov %gs:disp, %reg (9 bytes).
func (b *Buf) MovRegFromGS(reg Reg, disp int32) { b.gsRegOp("MovRegFromGS", prefixGS, 0x8b, reg, disp) }

// MovGSFromReg emits mov %reg, %gs:disp (9 bytes).
func (b *Buf) MovGSFromReg(disp int32, reg Reg) { b.gsRegOp("MovGSFromReg", prefixGS, 0x89, reg, disp) }

// XchgGSReg emits xchg %reg, %gs:disp (65 REX.W 87 /r, 9 bytes): one
// instruction, so no signal lands between the two halves of the swap. It
// leaves the flags alone; with a memory operand it is locked, so it costs
// a few nanoseconds.
func (b *Buf) XchgGSReg(disp int32, reg Reg) { b.gsRegOp("XchgGSReg", prefixGS, 0x87, reg, disp) }

// LeaRSP emits lea disp32(%rsp), %rsp (48 8d a4 24 disp32, 8 bytes). lea
// leaves the flags alone, which is why it, not sub/add, steps the stack
// pointer over the red zone [SysV x86-64 ABI 3.2.2].
func (b *Buf) LeaRSP(disp int32) {
	b.emit(rex(true, 0, 0, 0), 0x8d, modrm(2, RSP.low(), 4), sib(0, 4, RSP.low()))
	b.emit32(uint32(disp))
	b.moveSP(disp)
}

// Push emits push %reg (1 byte, 2 for r8-r15).
func (b *Buf) Push(reg Reg) {
	if b.opReg("Push", 0x50, reg) {
		b.moveSP(-8)
	}
}

// Pop emits pop %reg (1 byte, 2 for r8-r15).
func (b *Buf) Pop(reg Reg) {
	if b.opReg("Pop", 0x58, reg) {
		b.moveSP(8)
	}
}

// opReg emits a one-byte opcode with the register in its low three bits;
// push and pop default to 64-bit operands, so REX is only needed for B.
func (b *Buf) opReg(op string, opcode byte, reg Reg) bool {
	if !b.checkRegs(op, reg) {
		return false
	}
	if reg.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(opcode + reg.low())
	return true
}

// Pushfq emits pushfq (9c).
func (b *Buf) Pushfq() {
	b.emit(0x9c)
	b.moveSP(-8)
}

// Popfq emits popfq (9d).
func (b *Buf) Popfq() {
	b.emit(0x9d)
	b.moveSP(8)
}

// PushImm32 emits push $imm32 (68 imm32, 5 bytes), sign-extended to 64
// bits.
func (b *Buf) PushImm32(v int32) {
	b.emit(0x68)
	b.emit32(uint32(v))
	b.moveSP(-8)
}

// Lahf emits lahf (9f): SF, ZF, AF, PF, CF into %ah. Valid in 64-bit mode
// on every processor with LAHF-SAHF in CPUID 80000001h:ECX[0], which
// x86-64 Linux requires of its baseline.
func (b *Buf) Lahf() { b.emit(0x9f) }

// Sahf emits sahf (9e): %ah into SF, ZF, AF, PF, CF.
func (b *Buf) Sahf() { b.emit(0x9e) }

// SetoAL emits seto %al (0f 90 c0). With AddALImm8(0x7f) it saves and
// restores OF, which lahf/sahf do not cover.
func (b *Buf) SetoAL() { b.emit(0x0f, 0x90, modrm(3, 0, RAX.low())) }

// AddALImm8 emits add $imm, %al (04 ib). After seto %al, adding 0x7f
// overflows exactly when %al is 1, which puts OF back.
func (b *Buf) AddALImm8(imm int8) { b.emit(0x04, byte(imm)) }

// MovImm64 emits movabs $imm, %reg (REX.W b8+r imm64, 10 bytes).
func (b *Buf) MovImm64(reg Reg, imm uint64) {
	if !b.checkRegs("MovImm64", reg) {
		return
	}
	b.emit(rex(true, 0, 0, reg.hi()), 0xb8+reg.low())
	b.emit64(imm)
}

// MovImm32 emits mov $imm, %r32 (b8+r imm32, 5 bytes, 6 for r8d-r15d);
// writing the 32-bit register clears the upper half [Intel SDM Vol.1
// §3.4.1.1].
func (b *Buf) MovImm32(reg Reg, imm uint32) {
	if !b.checkRegs("MovImm32", reg) {
		return
	}
	if reg.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(0xb8 + reg.low())
	b.emit32(imm)
}

// scaled emits ModRM (mod=10, rm=100), SIB with scale 8 and disp32 for
// disp32(%base,%index,8). %rsp cannot be an index: SIB.index=100 means
// "none" [Intel SDM Vol.2 Table 2-3].
func (b *Buf) scaled(reg byte, base, index Reg, disp int32) {
	b.emit(modrm(2, reg, 4), sib(3, index.low(), base.low()))
	b.emit32(uint32(disp))
}

func (b *Buf) checkIndex(op string, base, index Reg) bool {
	if !b.checkRegs(op, base, index) {
		return false
	}
	if index == RSP {
		b.fail(op, "%%rsp cannot be an index register")
		return false
	}
	return true
}

// LockIncMem emits lock incq disp32(%base,%index,8) (f0 REX.W ff /0, 9
// bytes): a counter increment that is atomic across threads.
func (b *Buf) LockIncMem(base, index Reg, disp int32) {
	if !b.checkIndex("LockIncMem", base, index) {
		return
	}
	b.emit(prefixLock, rex(true, 0, index.hi(), base.hi()), 0xff)
	b.scaled(0, base, index, disp)
}

// LockAddMemImm emits lock addq $imm, disp32(%base,%index,8) (f0 REX.W 81
// /0 ... imm32, 13 bytes).
func (b *Buf) LockAddMemImm(base, index Reg, disp, imm int32) {
	if !b.checkIndex("LockAddMemImm", base, index) {
		return
	}
	b.emit(prefixLock, rex(true, 0, index.hi(), base.hi()), 0x81)
	b.scaled(0, base, index, disp)
	b.emit32(uint32(imm))
}

// AddRegImm32 emits add $imm, %reg with a sign-extended imm32: 7 bytes
// (REX.W 81 /0), and 6 for %rax, which has its own opcode (REX.W 05) that
// GNU as always picks.
func (b *Buf) AddRegImm32(reg Reg, imm int32) {
	if !b.checkRegs("AddRegImm32", reg) {
		return
	}
	if reg == RAX {
		b.emit(rex(true, 0, 0, 0), 0x05)
	} else {
		b.emit(rex(true, 0, 0, reg.hi()), 0x81, modrm(3, 0, reg.low()))
	}
	b.emit32(uint32(imm))
}

// LeaRegBaseIndex emits lea (%base,%index,1), %dst: dst = base + index,
// flags untouched (REX.W 8d /r with a SIB byte, 4 bytes). With %rbp or
// %r13 as base, whose mod=00 encoding means "no base, disp32", the form
// is mod=01 with a zero disp8, as GNU as writes it (5 bytes) [Intel SDM
// Vol.2 Table 2-3].
func (b *Buf) LeaRegBaseIndex(dst, base, index Reg) {
	if !b.checkIndex("LeaRegBaseIndex", base, index) || !b.checkRegs("LeaRegBaseIndex", dst) {
		return
	}
	b.emit(rex(true, dst.hi(), index.hi(), base.hi()), 0x8d)
	if base.low() == 5 {
		b.emit(modrm(1, dst.low(), 4), sib(0, index.low(), base.low()), 0)
		return
	}
	b.emit(modrm(0, dst.low(), 4), sib(0, index.low(), base.low()))
}

// MovRegFromMemIdx8 emits mov disp32(%base,%index,8), %dst (REX.W 8b
// /r with SIB, disp32 always: 8 bytes) and returns the offset of the
// displacement in the buffer, for a caller that fills it in later.
func (b *Buf) MovRegFromMemIdx8(dst, base, index Reg, disp int32) int {
	if !b.checkIndex("MovRegFromMemIdx8", base, index) || !b.checkRegs("MovRegFromMemIdx8", dst) {
		return b.Len()
	}
	b.emit(rex(true, dst.hi(), index.hi(), base.hi()), 0x8b)
	b.scaled(dst.low(), base, index, disp)
	return b.Len() - 4
}

// AddRegFromMemIdx8 emits add disp32(%base,%index,8), %dst (REX.W 03
// /r with SIB, disp32 always: 8 bytes; it writes the arithmetic flags)
// and returns the offset of the displacement in the buffer, for a caller
// that fills it in later.
func (b *Buf) AddRegFromMemIdx8(dst, base, index Reg, disp int32) int {
	if !b.checkIndex("AddRegFromMemIdx8", base, index) || !b.checkRegs("AddRegFromMemIdx8", dst) {
		return b.Len()
	}
	b.emit(rex(true, dst.hi(), index.hi(), base.hi()), 0x03)
	b.scaled(dst.low(), base, index, disp)
	return b.Len() - 4
}

// MovRegFromMemDisp32 emits mov disp32(%base), %dst (REX.W 8b /r,
// mod=10, disp32 always: 7 bytes, 8 with %rsp or %r12 as base) and
// returns the offset of the displacement in the buffer, for a caller
// that fills it in later.
func (b *Buf) MovRegFromMemDisp32(dst, base Reg, disp int32) int {
	if !b.checkRegs("MovRegFromMemDisp32", dst, base) {
		return b.Len()
	}
	b.emit(rex(true, dst.hi(), 0, base.hi()), 0x8b, modrm(2, dst.low(), base.low()))
	if base.low() == 4 {
		b.emit(sib(0, 4, 4))
	}
	b.emit32(uint32(disp))
	return b.Len() - 4
}

// LeaRegBaseIndexDisp32 emits lea disp32(%base,%index,1), %dst: dst =
// base + index + disp, flags untouched (REX.W 8d /r with SIB, disp32
// always: 8 bytes), and returns the offset of the displacement in the
// buffer.
func (b *Buf) LeaRegBaseIndexDisp32(dst, base, index Reg, disp int32) int {
	if !b.checkIndex("LeaRegBaseIndexDisp32", base, index) || !b.checkRegs("LeaRegBaseIndexDisp32", dst) {
		return b.Len()
	}
	b.emit(rex(true, dst.hi(), index.hi(), base.hi()), 0x8d, modrm(2, dst.low(), 4), sib(0, index.low(), base.low()))
	b.emit32(uint32(disp))
	return b.Len() - 4
}

// JmpReg emits jmp *%reg (ff /4, mod=11: 2 bytes, 3 with REX.B).
func (b *Buf) JmpReg(reg Reg) {
	if !b.checkRegs("JmpReg", reg) {
		return
	}
	if reg.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(0xff, modrm(3, 4, reg.low()))
}

// JmpMem emits jmp *disp(%base) (ff /4).
func (b *Buf) JmpMem(base Reg, disp int32) {
	if !b.checkRegs("JmpMem", base) {
		return
	}
	if base.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(0xff)
	b.based(4, base, disp)
}

// LeaRegRIP emits lea t(%rip), %reg (REX.W 8d /r with mod=00 rm=101, 7
// bytes).
func (b *Buf) LeaRegRIP(reg Reg, t Target) {
	if !b.checkRegs("LeaRegRIP", reg) || !b.checkTarget("LeaRegRIP", t) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, 0), 0x8d, modrm(0, reg.low(), 5))
	b.rel32(t)
}

// CallRel32 emits call rel32 (e8, 5 bytes).
func (b *Buf) CallRel32(t Target) { b.branch("CallRel32", t, 0xe8) }

// JmpRel32 emits jmp rel32 (e9, 5 bytes).
func (b *Buf) JmpRel32(t Target) { b.branch("JmpRel32", t, 0xe9) }

// JccRel32 emits j<cond> rel32 (0f 80+cc, 6 bytes).
func (b *Buf) JccRel32(c Cond, t Target) {
	if c >= 16 {
		b.fail("JccRel32", "condition %v", c)
		return
	}
	b.branch("JccRel32", t, 0x0f, 0x80+byte(c))
}

// xbeginRel32 emits xbegin rel32 (c7 f8, 6 bytes) [Intel SDM Vol.2
// XBEGIN]: the abort handler is t.
func (b *Buf) xbeginRel32(t Target) { b.branch("xbegin", t, 0xc7, 0xf8) }

// JmpRIPIndirect emits jmp *t(%rip) (ff 25 disp32, 6 bytes): a jump
// through the 8-byte pointer stored at t.
func (b *Buf) JmpRIPIndirect(slot Target) { b.branch("JmpRIPIndirect", slot, 0xff, modrm(0, 4, 5)) }

func (b *Buf) branch(op string, t Target, opcode ...byte) {
	if !b.checkTarget(op, t) {
		return
	}
	b.emit(opcode...)
	b.rel32(t)
}

// Ret emits ret (c3).
func (b *Buf) Ret() { b.emit(0xc3) }

// Int3 emits int3 (cc).
func (b *Buf) Int3() { b.emit(0xcc) }

// Endbr64 emits endbr64 (f3 0f 1e fa): the instruction an indirect jump
// or call must land on where indirect branch tracking (CET IBT) is on,
// and a no-op everywhere else [Intel SDM Vol.1 18.3 "Indirect Branch
// Tracking"].
func (b *Buf) Endbr64() { b.emit(0xf3, 0x0f, 0x1e, 0xfa) }

// IsEndbr64 reports whether code starts with the bytes Endbr64 emits.
func IsEndbr64(code []byte) bool {
	return len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa
}

// nops are the recommended multi-byte NOPs of 1 to 9 bytes [Intel SDM
// Vol.2 NOP, Table 4-12], which are also GNU as's for .nops.
var nops = [10][]byte{
	1: {0x90},
	2: {0x66, 0x90},
	3: {0x0f, 0x1f, 0x00},
	4: {0x0f, 0x1f, 0x40, 0x00},
	5: {0x0f, 0x1f, 0x44, 0x00, 0x00},
	6: {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	7: {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
	8: {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	9: {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
}

// Nop emits n bytes of no-ops: as many 9-byte NOPs as fit, then one NOP
// of the remaining length (what GNU as's .nops n, 9 produces).
func (b *Buf) Nop(n int) {
	if n < 0 {
		b.fail("Nop", "negative length %d", n)
		return
	}
	for ; n > 9; n -= 9 {
		b.emit(nops[9]...)
	}
	b.emit(nops[n]...)
}

// PadJump emits n bytes of padding that code falling into it crosses in
// one instruction: for more than one NOP's worth (n > 9), a short jmp
// over the rest, which is NOPs (GNU as's jmp 1f; .nops n-2, 9; 1:);
// else Nop(n). n is at most 64 (alignment to a 64-byte line).
func (b *Buf) PadJump(n int) {
	if n <= 9 {
		b.Nop(n)
		return
	}
	if n > 64 {
		b.fail("PadJump", "length %d over 64", n)
		return
	}
	b.emit(0xeb, byte(n-2))
	b.Nop(n - 2)
}

// There is no way to append raw bytes to a Buf from outside this
// package: every byte a caller emits comes from a template that
// as_test.go checks against GNU as (STYLE rule 11). Original
// instructions enter only through Relocate, which checks them against
// their decoding.

// based emits ModRM (and SIB for %rsp or %r12) and the shortest
// displacement for disp(%base), as GNU as picks it: none when disp is 0
// and base is not %rbp or %r13 (mod=00 with rm=101 means rip-relative),
// 8 bits when it fits, else 32 [Intel SDM Vol.2 Table 2-2].
func (b *Buf) based(reg byte, base Reg, disp int32) {
	var mod byte
	switch {
	case disp == 0 && base.low() != 5:
		mod = 0
	case disp >= -128 && disp <= 127:
		mod = 1
	default:
		mod = 2
	}
	b.emit(modrm(mod, reg, base.low()))
	if base.low() == 4 {
		b.emit(sib(0, 4, 4))
	}
	switch mod {
	case 1:
		b.emit(byte(int8(disp)))
	case 2:
		b.emit32(uint32(disp))
	}
}

// LeaRegSelf emits lea disp(%reg), %reg (REX.W 8d /r): reg += disp
// without touching the flags, the chord increment of a path register
// kept in a general register.
func (b *Buf) LeaRegSelf(reg Reg, disp int32) {
	if !b.checkRegs("LeaRegSelf", reg) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, reg.hi()), 0x8d)
	b.based(reg.low(), reg, disp)
}

// regMem emits a REX.W instruction with a register operand and a
// based memory operand (opcode /r).
func (b *Buf) regMem(op string, opcode byte, reg, base Reg, disp int32) {
	if !b.checkRegs(op, base, reg) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, base.hi()), opcode)
	b.based(reg.low(), base, disp)
}

// MovMemFromReg emits mov %reg, disp(%base) (REX.W 89 /r).
func (b *Buf) MovMemFromReg(base Reg, disp int32, reg Reg) {
	b.regMem("MovMemFromReg", 0x89, reg, base, disp)
}

// MovRegFromMem emits mov disp(%base), %reg (REX.W 8b /r).
func (b *Buf) MovRegFromMem(reg, base Reg, disp int32) {
	b.regMem("MovRegFromMem", 0x8b, reg, base, disp)
}

// MovRegFromReg emits mov %src, %dst (REX.W 89 /r, the form GNU as
// picks).
func (b *Buf) MovRegFromReg(dst, src Reg) {
	if !b.checkRegs("MovRegFromReg", dst, src) {
		return
	}
	b.emit(rex(true, src.hi(), 0, dst.hi()), 0x89, modrm(3, src.low(), dst.low()))
}

// MovRegImm emits the shortest move of the sign-extended imm into %reg
// that GNU as picks: mov $imm, %reg32 (b8+r, zero-extending) when imm is
// not negative, else movq $imm, %reg (REX.W c7 /0 imm32, sign-extending).
// Neither touches the flags.
func (b *Buf) MovRegImm(reg Reg, imm int32) {
	if imm >= 0 {
		b.MovImm32(reg, uint32(imm))
		return
	}
	if !b.checkRegs("MovRegImm", reg) {
		return
	}
	b.emit(rex(true, 0, 0, reg.hi()), 0xc7, modrm(3, 0, reg.low()))
	b.emit32(uint32(imm))
}

// TestRegReg emits test %reg, %reg (REX.W 85 /r): ZF says reg is 0.
func (b *Buf) TestRegReg(reg Reg) {
	if !b.checkRegs("TestRegReg", reg) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, reg.hi()), 0x85, modrm(3, reg.low(), reg.low()))
}

// CmpMemImm32 emits cmpq $imm, disp(%base) (REX.W 81 /7 imm32, the
// 32-bit immediate even where 8 bits would do, so the length does not
// depend on the value).
func (b *Buf) CmpMemImm32(base Reg, disp, imm int32) {
	b.memImm32("CmpMemImm32", 0x81, 7, base, disp, imm)
}

// MovMemImm32 emits movq $imm, disp(%base) (REX.W c7 /0 imm32, the
// immediate sign-extended to 64 bits).
func (b *Buf) MovMemImm32(base Reg, disp, imm int32) {
	b.memImm32("MovMemImm32", 0xc7, 0, base, disp, imm)
}

// memImm32 emits a REX.W opcode /ext instruction on disp(%base) with a
// 32-bit immediate.
func (b *Buf) memImm32(op string, opcode, ext byte, base Reg, disp, imm int32) {
	if !b.checkRegs(op, base) {
		return
	}
	b.emit(rex(true, 0, 0, base.hi()), opcode)
	b.based(ext, base, disp)
	b.emit32(uint32(imm))
}

// CmpRegMem emits cmp disp(%base), %reg (REX.W 3b /r): the flags of
// reg - mem.
func (b *Buf) CmpRegMem(reg, base Reg, disp int32) {
	b.regMem("CmpRegMem", 0x3b, reg, base, disp)
}

// IncMem emits incq disp(%base) (REX.W ff /0): a thread's own counter,
// so no lock prefix.
func (b *Buf) IncMem(base Reg, disp int32) {
	if !b.checkRegs("IncMem", base) {
		return
	}
	b.emit(rex(true, 0, 0, base.hi()), 0xff)
	b.based(0, base, disp)
}

// IncMemIndexed emits incq disp32(%base,%index,8) (REX.W ff /0, 8
// bytes): a thread's own counter, so no lock prefix.
func (b *Buf) IncMemIndexed(base, index Reg, disp int32) {
	if !b.checkIndex("IncMemIndexed", base, index) {
		return
	}
	b.emit(rex(true, 0, index.hi(), base.hi()), 0xff)
	b.scaled(0, base, index, disp)
}

// DecMemIndexed emits decq disp32(%base,%index,8) (REX.W ff /1, 8
// bytes): an IncMemIndexed taken back.
func (b *Buf) DecMemIndexed(base, index Reg, disp int32) {
	if !b.checkIndex("DecMemIndexed", base, index) {
		return
	}
	b.emit(rex(true, 0, index.hi(), base.hi()), 0xff)
	b.scaled(1, base, index, disp)
}

// ImulReg32Imm32 emits imul $imm, %src32, %dst32 (69 /r id): the low 32
// bits of src times imm, zero-extended into dst. GNU as picks this form
// for an immediate that does not fit 8 bits.
func (b *Buf) ImulReg32Imm32(dst, src Reg, imm uint32) {
	if !b.checkRegs("ImulReg32Imm32", dst, src) {
		return
	}
	if dst.hi() != 0 || src.hi() != 0 {
		b.emit(rex(false, dst.hi(), 0, src.hi()))
	}
	b.emit(0x69, modrm(3, dst.low(), src.low()))
	b.emit32(imm)
}

// ShrReg32Imm emits shr $n, %reg32 (c1 /5 ib), n from 2 to 31 (GNU as
// writes a shift by 1 as d1 /5).
func (b *Buf) ShrReg32Imm(reg Reg, n uint8) { b.shrImm("ShrReg32Imm", false, reg, n) }

// ShrRegImm emits shr $n, %reg (REX.W c1 /5 ib), n from 2 to 63.
func (b *Buf) ShrRegImm(reg Reg, n uint8) { b.shrImm("ShrRegImm", true, reg, n) }

// shrImm emits shr $n, %reg with 64-bit (w) or 32-bit operands.
func (b *Buf) shrImm(op string, w bool, reg Reg, n uint8) {
	max := uint8(31)
	if w {
		max = 63
	}
	if !b.checkRegs(op, reg) {
		return
	}
	if n < 2 || n > max {
		b.fail(op, "shift count %d outside [2, %d]", n, max)
		return
	}
	if w || reg.hi() != 0 {
		b.emit(rex(w, 0, 0, reg.hi()))
	}
	b.emit(0xc1, modrm(3, 5, reg.low()), n)
}

// AndReg32Imm8 emits and $imm, %reg32 (83 /4 ib, the immediate
// sign-extended): -16 clears the low four bits.
func (b *Buf) AndReg32Imm8(reg Reg, imm int8) {
	if !b.checkRegs("AndReg32Imm8", reg) {
		return
	}
	if reg.hi() != 0 {
		b.emit(rex(false, 0, 0, 1))
	}
	b.emit(0x83, modrm(3, 4, reg.low()), byte(imm))
}

// CmpMemIdxReg emits cmp %reg, disp32(%base,%index) (REX.W 39 /r, scale
// 1): the flags of mem - reg.
func (b *Buf) CmpMemIdxReg(base, index Reg, disp int32, reg Reg) {
	if !b.checkIndex("CmpMemIdxReg", base, index) || !b.checkRegs("CmpMemIdxReg", reg) {
		return
	}
	b.emit(rex(true, reg.hi(), index.hi(), base.hi()), 0x39)
	b.emit(modrm(2, reg.low(), 4), sib(0, index.low(), base.low()))
	b.emit32(uint32(disp))
}

// IncMemIdx emits incq disp32(%base,%index) (REX.W ff /0, scale 1): a
// thread's own counter, so no lock prefix.
func (b *Buf) IncMemIdx(base, index Reg, disp int32) {
	if !b.checkIndex("IncMemIdx", base, index) {
		return
	}
	b.emit(rex(true, 0, index.hi(), base.hi()), 0xff)
	b.emit(modrm(2, 0, 4), sib(0, index.low(), base.low()))
	b.emit32(uint32(disp))
}

// gsIdx emits ModRM and SIB for %gs:disp32(,%index,1) (mod=00, SIB
// base=101: no base register) with reg in ModRM.reg.
func (b *Buf) gsIdx(reg byte, index Reg, disp int32) {
	b.emit(modrm(0, reg, 4), sib(0, index.low(), 5))
	b.emit32(uint32(disp))
}

// CmpGSIdxReg emits cmp %reg, %gs:disp(,%index,1) (65 REX.W 39 /r): the
// flags of mem - reg, for a table at a fixed offset of the thread block.
func (b *Buf) CmpGSIdxReg(index Reg, disp int32, reg Reg) {
	if !b.checkIndex("CmpGSIdxReg", index, index) || !b.checkRegs("CmpGSIdxReg", reg) {
		return
	}
	b.emit(prefixGS, rex(true, reg.hi(), index.hi(), 0), 0x39)
	b.gsIdx(reg.low(), index, disp)
}

// CmpGSIdxImm32 emits cmpq $imm, %gs:disp(,%index,1) (65 REX.W 81 /7
// imm32).
func (b *Buf) CmpGSIdxImm32(index Reg, disp, imm int32) {
	if !b.checkIndex("CmpGSIdxImm32", index, index) {
		return
	}
	b.emit(prefixGS, rex(true, 0, index.hi(), 0), 0x81)
	b.gsIdx(7, index, disp)
	b.emit32(uint32(imm))
}

// MovRegFromGSIdx emits mov %gs:disp(,%index,1), %reg (65 REX.W 8b /r).
func (b *Buf) MovRegFromGSIdx(reg, index Reg, disp int32) {
	if !b.checkIndex("MovRegFromGSIdx", index, index) || !b.checkRegs("MovRegFromGSIdx", reg) {
		return
	}
	b.emit(prefixGS, rex(true, reg.hi(), index.hi(), 0), 0x8b)
	b.gsIdx(reg.low(), index, disp)
}

// LeaRegDisp32 emits lea disp32(%base), %dst (REX.W 8d /r, mod=10: the
// 32-bit displacement whatever its value).
func (b *Buf) LeaRegDisp32(dst, base Reg, disp int32) {
	if !b.checkRegs("LeaRegDisp32", dst, base) {
		return
	}
	b.emit(rex(true, dst.hi(), 0, base.hi()), 0x8d, modrm(2, dst.low(), base.low()))
	if base.low() == 4 {
		b.emit(sib(0, 4, 4))
	}
	b.emit32(uint32(disp))
}

// ImulRegMem emits imul disp(%base), %reg (REX.W 0f af /r): reg times
// the memory word, the low 64 bits of the product.
func (b *Buf) ImulRegMem(reg, base Reg, disp int32) {
	if !b.checkRegs("ImulRegMem", base, reg) {
		return
	}
	b.emit(rex(true, reg.hi(), 0, base.hi()), 0x0f, 0xaf)
	b.based(reg.low(), base, disp)
}
