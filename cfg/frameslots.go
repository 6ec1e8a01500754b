package cfg

import (
	"math"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Constant frame slots: the constant data flow of regconst.go also follows
// %rsp, as an offset from its value at the procedure's entry, and the
// 8-byte stack slots that hold a constant. A procedure short of registers
// spills its jump table's base once and reloads it before every dispatch
// (CPython 3.12's _PyEval_EvalFrameDefault: lea opcode_targets(%rip),%rdi;
// mov %rdi,0x18(%rsp); ... mov 0x18(%rsp),%rdi; mov (%rdi,%rax,8),%rax;
// jmp *%rax, after every call that clobbered %rdi), and the dispatch loops
// are the hottest code of the interpreters that do it.
//
// A slot is the procedure's own when nothing but %rsp-relative code can
// reach it. The compiler gives a spilled value a slot outside every C
// object, and code reaches a C object in the frame through an address
// the procedure computed (lea d(%rsp),%reg) or through an index
// (mov %rcx,0x10(%rsp,%rdx,8)): objects extend upwards from there. So a
// slot counts only below every frame address the procedure takes, a
// store through an index forgets the slots above its displacement, and
// no slot counts when %rsp itself is copied (a frame pointer reaches both
// ways) or a frame address is computed with an index. Stores through
// other registers are taken not to alias such a slot. What this misses
// is code reaching below the address it took, which C leaves undefined
// but for a step back from a member to its structure: a table's address
// kept in a structure's field, read back for a dispatch after code
// stepped back into it from a later member. Compilers spill to slots
// outside every object, and the dispatch loops this is for (CPython's,
// their regular-expression engine's) keep the address in a spill slot
// or in a scalar whose address is never taken. A call
// leaves the slots above %rsp alone; a signal handler may write below the
// 128-byte red zone [SysV x86-64 ABI 3.2.2], so slots there are dropped.

// nSlots is how many constant slots a state keeps (one per instruction:
// kept small); a store to a further one forgets the oldest.
const nSlots = 4

// redZone is the area below %rsp that signal delivery leaves alone.
const redZone = 128

// slotVal is a constant 8-byte slot at frame offset off (its address less
// the entry's %rsp).
type slotVal struct {
	off int32
	c   uint64
}

// slot returns the constant at frame offset off, if one is known there.
func (s *regState) slot(off int32) (uint64, bool) {
	for _, v := range s.slots[:s.nslots] {
		if v.off == off {
			return v.c, true
		}
	}
	return 0, false
}

// keep keeps the slots for which ok holds.
func (s *regState) keep(ok func(slotVal) bool) {
	n := uint8(0)
	for _, v := range s.slots[:s.nslots] {
		if ok(v) {
			s.slots[n] = v
			n++
		}
	}
	s.nslots = n
}

// kill forgets the slots overlapping [off, off+size).
func (s *regState) kill(off int32, size int) {
	s.keep(func(v slotVal) bool { return int64(v.off)+8 <= int64(off) || int64(v.off) >= int64(off)+int64(size) })
}

// keepAbove forgets the slots below frame offset lo.
func (s *regState) keepAbove(lo int64) {
	s.keep(func(v slotVal) bool { return int64(v.off) >= lo })
}

// keepBelow forgets the slots that reach above frame offset hi.
func (s *regState) keepBelow(hi int64) {
	s.keep(func(v slotVal) bool { return int64(v.off)+8 <= hi })
}

// store records an 8-byte store of v at frame offset off.
func (s *regState) store(off int32, v regVal) {
	s.kill(off, 8)
	if !v.known {
		return
	}
	if s.nslots == nSlots {
		copy(s.slots[:], s.slots[1:])
		s.nslots--
	}
	s.slots[s.nslots] = slotVal{off, v.c}
	s.nslots++
}

// loseSP makes %rsp unknown, and with it every slot.
func (s *regState) loseSP() {
	s.spKnown, s.sp, s.nslots = false, 0, 0
}

// moveSP adds d to %rsp's offset, dropping the slots a signal may now
// overwrite.
func (s *regState) moveSP(d int64) {
	if !s.spKnown {
		return
	}
	sp := int64(s.sp) + d
	if sp < math.MinInt32/2 || sp > math.MaxInt32/2 {
		s.loseSP()
		return
	}
	s.sp = int32(sp)
	s.keepAbove(sp - redZone)
}

// meetSlots is the slot part of meet: %rsp where both agree, the slots
// both hold with one value.
func (s *regState) meetSlots(o *regState) bool {
	if !s.spKnown {
		return false
	}
	if !o.spKnown || o.sp != s.sp {
		s.loseSP()
		return true
	}
	n := uint8(0)
	for _, v := range s.slots[:s.nslots] {
		if c, ok := o.slot(v.off); ok && c == v.c {
			s.slots[n] = v
			n++
		}
	}
	changed := n != s.nslots
	s.nslots = n
	return changed
}

func isSP(r x86asm.Reg) bool { return regFamily(r) == 4 }

// frameMem reports whether operand a addresses the frame through %rsp
// alone (no segment, no index).
func frameMem(a *x86.Arg) bool {
	return a.Kind == x86.ArgMem && a.Segment == 0 && isSP(a.Base) && a.Index == 0
}

// writesMemArg reports whether in writes its first operand when that is
// memory: all but compares, tests and hints do.
func writesMemArg(in *x86.Info) bool {
	switch in.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.BT, x86asm.NOP, x86asm.PUSH, x86asm.JMP, x86asm.CALL,
		x86asm.PREFETCHNTA, x86asm.PREFETCHT0, x86asm.PREFETCHT1, x86asm.PREFETCHT2, x86asm.PREFETCHW:
		return false
	}
	return true
}

// frameEffects applies what instruction i does to %rsp and the frame
// slots, given the register state before it (st) and the value it loads
// from a slot into its destination register, if any, returned for
// transfer to write. It runs before transfer's register updates, which
// read the same state.
func (s *slicer) frameEffects(i int, st *regState) (loaded regVal, loads bool) {
	in := &s.bd.insts[i]
	if !in.FromX86asm() {
		if !in.Endbr {
			st.loseSP()
		}
		return regVal{}, false
	}
	a0 := &in.Args[0]
	switch in.Op {
	case x86asm.PUSH:
		v := regVal{}
		switch a0.Kind {
		case x86.ArgReg:
			if f := regFamily(a0.Reg); f >= 0 && a0.Reg >= x86asm.RAX && a0.Reg <= x86asm.R15 && f != 4 {
				v = st.get(f)
			}
		case x86.ArgImm:
			v = regVal{known: true, c: uint64(a0.Val)}
		}
		if st.spKnown {
			st.sp -= 8
			s.storeSlot(st, st.sp, v)
		}
		return regVal{}, false
	case x86asm.POP:
		if !st.spKnown {
			return regVal{}, false
		}
		c, ok := s.loadSlot(st, st.sp)
		st.moveSP(8)
		if a0.Kind == x86.ArgMem {
			st.loseSP() // pop to memory: rare, and perhaps into the frame
			return regVal{}, false
		}
		if isSP(a0.Reg) {
			st.loseSP()
		}
		return regVal{known: ok, c: c}, a0.Reg >= x86asm.RAX && a0.Reg <= x86asm.R15
	case x86asm.ENTER, x86asm.LEAVE:
		st.loseSP()
		return regVal{}, false
	}
	// %rsp as the destination: an adjustment by a constant, or lost.
	if r, ok := a0.AsReg(); ok && isSP(r) {
		switch in.Op {
		case x86asm.CMP, x86asm.TEST:
		case x86asm.SUB, x86asm.ADD:
			if imm, ok := in.Args[1].AsImm(); ok && r == x86asm.RSP {
				if in.Op == x86asm.SUB {
					imm = -imm
				}
				st.moveSP(int64(imm))
			} else {
				st.loseSP()
			}
		case x86asm.LEA:
			if m := &in.Args[1]; frameMem(m) && r == x86asm.RSP {
				st.moveSP(int64(int32(m.Val)))
			} else {
				st.loseSP()
			}
		default:
			st.loseSP()
		}
		return regVal{}, false
	}
	if !st.spKnown {
		return regVal{}, false
	}
	// Stores into the frame.
	for j := range in.Args {
		a := &in.Args[j]
		if a.Kind != x86.ArgMem || a.Segment != 0 || !isSP(a.Base) {
			continue
		}
		if in.Op == x86asm.LEA || j > 0 && in.Op != x86asm.XCHG && in.Op != x86asm.XADD || j == 0 && !writesMemArg(in) {
			continue // a read, or an address
		}
		off := int64(st.sp) + int64(int32(a.Val))
		if a.Index != 0 {
			// An element of an array in the frame: above its
			// displacement, as for a frame address taken by lea.
			st.keepBelow(off)
			continue
		}
		v, size := regVal{}, 0
		if in.Op == x86asm.MOV && j == 0 {
			switch src := &in.Args[1]; src.Kind {
			case x86.ArgReg:
				if f := regFamily(src.Reg); f >= 0 && src.Reg >= x86asm.RAX && src.Reg <= x86asm.R15 {
					v, size = st.get(f), 8
					if f == 4 {
						v = regVal{}
					}
				}
			case x86.ArgImm:
				if size = s.bd.memBytes(i); size == 8 {
					v = regVal{known: true, c: uint64(src.Val)}
				}
			}
		}
		if size == 0 {
			size = s.bd.memBytes(i)
		}
		switch {
		case size == 8:
			s.storeSlot(st, int32(off), v)
		case size > 0:
			st.kill(int32(off), size)
		default:
			st.nslots = 0
		}
	}
	// A load of a slot.
	if in.Op == x86asm.MOV {
		if r, ok := a0.AsReg(); ok && r >= x86asm.RAX && r <= x86asm.R15 && frameMem(&in.Args[1]) {
			c, ok := s.loadSlot(st, int32(int64(st.sp)+int64(int32(in.Args[1].Val))))
			return regVal{known: ok, c: c}, true
		}
	}
	return regVal{}, false
}

// storeSlot records a store at frame offset off, tracked only below the
// procedure's frame addresses (slotLimit).
func (s *slicer) storeSlot(st *regState, off int32, v regVal) {
	if int64(off)+8 > s.slotLimit {
		v = regVal{}
	}
	st.store(off, v)
}

// loadSlot reads the constant at frame offset off and notes the highest
// slot whose constant the data flow used.
func (s *slicer) loadSlot(st *regState, off int32) (uint64, bool) {
	c, ok := st.slot(off)
	if ok {
		s.slotUsed = max(s.slotUsed, int64(off)+8)
	}
	return c, ok
}

// frameEscape returns the lowest frame offset instruction i, with state
// st before it, lets code other than %rsp-relative operands reach:
// the address a lea takes of the frame; the lowest
// possible when it copies or reads %rsp otherwise or indexes the frame
// in an address it computes. math.MaxInt64 when it takes none.
func frameEscape(in *x86.Info, st *regState) int64 {
	low := int64(math.MaxInt64)
	if !st.reached {
		return low
	}
	if !in.FromX86asm() {
		return low // no operands, and frameEffects lost %rsp
	}
	if in.Op == x86asm.ENTER {
		return math.MinInt64
	}
	for j := range in.Args {
		a := &in.Args[j]
		switch {
		case a.Kind == x86.ArgReg && isSP(a.Reg):
			if j == 0 {
				switch in.Op {
				case x86asm.SUB, x86asm.ADD, x86asm.LEA, x86asm.MOV, x86asm.AND, x86asm.CMP, x86asm.TEST, x86asm.POP:
					continue // adjusted or compared: frameEffects follows it
				}
			}
			return math.MinInt64
		case in.Op == x86asm.LEA && a.Kind == x86.ArgMem && isSP(a.Base):
			if r, ok := in.Args[0].AsReg(); ok && isSP(r) && a.Index == 0 {
				continue
			}
			if a.Index != 0 || !st.spKnown {
				return math.MinInt64
			}
			low = min(low, int64(st.sp)+int64(int32(a.Val)))
		}
	}
	return low
}
