package cfg

import (
	"math"
	"sync"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Constant registers: a forward data-flow over the decoded instructions of
// one procedure that finds, before each instruction, the general
// registers holding the same constant address on every path that reaches
// it. Jump-table recovery asks it for table bases that the compiler
// materialised once, in another block, often before calls
// (lea T(%rip),%r13; call f; ... movslq (%r13,%rax,4),%rax): a call
// clobbers only the caller-saved registers [SysV x86-64 ABI 3.2.1,
// "Registers"], so a callee-saved register keeps its constant across it.
//
// The lattice per register is: not reached yet, one constant, unknown. A
// value is a constant only when every instruction that defines it on a
// path from the entry loads that constant (lea disp(%rip), mov $imm, or a
// copy of such a register). The entry, landing pads and the targets of
// indirect jumps not resolved yet start with every register unknown.

type regVal struct {
	known bool // false: unknown (top)
	c     uint64
}

// regState is the value of the 16 general registers before an
// instruction; reached is false until some path arrives. Register f is
// a constant, c[f], when bit f of known is set (one state per decoded
// instruction: kept small). sp is %rsp less its value at the entry,
// when spKnown, and slots the frame's constant 8-byte slots
// (frameslots.go).
type regState struct {
	reached bool
	spKnown bool
	nslots  uint8
	known   uint16
	sp      int32
	c       [16]uint64
	slots   [nSlots]slotVal
}

func (s *regState) get(f int) regVal { return regVal{known: s.known&(1<<f) != 0, c: s.c[f]} }

func (s *regState) set(f int, v regVal) {
	if v.known {
		s.known |= 1 << f
		s.c[f] = v.c
	} else {
		s.known &^= 1 << f
		s.c[f] = 0
	}
}

func (s *regState) meet(o *regState) bool {
	if !o.reached {
		return false
	}
	if !s.reached {
		*s = *o
		return true
	}
	changed := s.meetSlots(o)
	for f := range s.c {
		if s.known&(1<<f) != 0 && (o.known&(1<<f) == 0 || o.c[f] != s.c[f]) {
			s.set(f, regVal{})
			changed = true
		}
	}
	return changed
}

// regScratch returns n zero register states, in the builder's scratch
// array (taken from regsPool and given back when the build ends): a
// slicer's states live only while the builder resolves jumps, and
// large procedures have hundreds of thousands of instructions.
func (bd *builder) regScratch(n int) []regState {
	if cap(bd.regs) < n {
		if buf, ok := regsPool.Get().(*[]regState); ok && cap(*buf) >= n {
			bd.regs = *buf
		} else {
			bd.regs = make([]regState, n)
		}
	}
	st := bd.regs[:n]
	clear(st)
	return st
}

// regsPool keeps the builders' register state arrays between builds.
var regsPool sync.Pool

// callerSaved marks the registers a call may change: all but rbx, rbp,
// rsp and r12-r15 [SysV x86-64 ABI 3.2.1].
var callerSaved = [16]bool{0: true, 1: true, 2: true, 6: true, 7: true, 8: true, 9: true, 10: true, 11: true}

// constRegs computes the states of every decoded instruction. Frame
// slots count below the lowest frame address the procedure takes
// (frameslots.go); that address needs %rsp's offsets, which the same
// data flow finds, so a procedure whose constants came from a slot at or
// above it is computed again with the slots there left out.
func (s *slicer) constRegs() []regState {
	if s.regs != nil {
		return s.regs
	}
	s.slotLimit, s.slotUsed = math.MaxInt64, math.MinInt64
	st := s.flowConsts()
	low := int64(math.MaxInt64)
	for i := range st {
		low = min(low, frameEscape(&s.bd.insts[i], &st[i]))
	}
	if s.slotUsed > low {
		s.slotLimit = low
		st = s.flowConsts()
	}
	s.regs = st
	return st
}

// flowConsts runs the data flow to its fixed point.
func (s *slicer) flowConsts() []regState {
	bd := s.bd
	st := bd.regScratch(len(bd.insts))
	var work []int
	enter := func(i int, from *regState) {
		if i >= 0 && st[i].meet(from) {
			work = append(work, i)
		}
	}
	unknown := regState{reached: true}
	entry := regState{reached: true, spKnown: true}
	enter(bd.instAt(bd.f.Addr), &entry)
	for a := range bd.leaders {
		if i := bd.instAt(a); i >= 0 && a != bd.f.Addr && !s.tableTarget[a] && s.branchesTo(a) == nil {
			// A landing pad, or a block only an unresolved jump reaches.
			enter(i, &unknown)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		in := &bd.insts[i]
		out := st[i]
		s.transfer(i, &out)
		next := bd.instAt(in.Addr + uint64(in.Len))
		switch in.Kind {
		case x86.Jcc:
			enter(bd.instAt(in.Target), &out)
			enter(next, &out)
		case x86.Jmp:
			enter(bd.instAt(in.Target), &out)
		case x86.JmpIndirect:
			if jt := bd.tables[in.Addr]; jt != nil {
				for _, t := range jt.Targets {
					enter(bd.instAt(t), &out)
				}
			}
		case x86.Ret, x86.Halt:
		case x86.Call:
			if !bd.callNoRet[in.Addr] {
				enter(next, &out)
			}
		default:
			enter(next, &out)
		}
	}
	return st
}

// transfer applies instruction i to the register state.
func (s *slicer) transfer(i int, st *regState) {
	in := &s.bd.insts[i]
	if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
		clob := callerSavedSet
		if in.Kind == x86.Call {
			clob = s.callClobbers(in.Target) // ipara.go
		}
		for f, c := range callerSaved {
			if c && clob.Has(f) {
				st.set(f, regVal{})
			}
		}
		// The return address and the callee's frame lie below %rsp.
		if st.spKnown {
			st.keepAbove(int64(st.sp))
		}
		return
	}
	loaded, loads := s.frameEffects(i, st)
	raw := in
	written, _ := writtenRegs(raw)
	written |= implicitWrites(in)
	for f := range st.c {
		if !written.Has(f) {
			continue
		}
		v := regVal{}
		if dst, ok := raw.Args[0].AsReg(); ok && dst >= x86asm.EAX && dst <= x86asm.R15L && raw.Op == x86asm.MOV {
			// A 32-bit write zeroes the upper half [Intel SDM Vol.1
			// 3.4.1.1]: mov $0,%eax is crt's weak-symbol address in a
			// non-PIE (register_tm_clones' guarded jmp *%rax).
			switch src := &raw.Args[1]; src.Kind {
			case x86.ArgImm:
				v = regVal{known: true, c: uint64(uint32(src.Val))}
			case x86.ArgReg:
				if sf := regFamily(src.Reg); sf >= 0 && st.get(sf).known {
					v = regVal{known: true, c: uint64(uint32(st.c[sf]))}
				}
			}
		}
		if dst, ok := raw.Args[0].AsReg(); ok && dst >= x86asm.RAX && dst <= x86asm.R15 {
			switch raw.Op {
			case x86asm.LEA:
				if m, ok := raw.Args[1].AsMem(); ok && m.Base == x86asm.RIP && m.Index == 0 && m.Segment == 0 {
					v = regVal{known: true, c: in.Addr + uint64(in.Len) + uint64(dispOf(m))}
				}
			case x86asm.MOV:
				switch src := &raw.Args[1]; src.Kind {
				case x86.ArgImm:
					v = regVal{known: true, c: uint64(src.Val)}
				case x86.ArgReg:
					if sf := regFamily(src.Reg); sf >= 0 && src.Reg >= x86asm.RAX && src.Reg <= x86asm.R15 {
						v = st.get(sf)
					}
				}
			}
		}
		if loads && (raw.Op == x86asm.POP || f == regFamily(raw.Args[0].Reg)) {
			v = loaded // mov slot,%reg or pop %reg
		}
		st.set(f, v)
	}
}

// constAt reports the constant register family fam holds just before
// instruction i, if it holds one on every path.
func (s *slicer) constAt(i, fam int) (uint64, bool) {
	if fam < 0 || fam >= 16 {
		return 0, false
	}
	st := s.constRegs()
	if i < 0 || i >= len(st) || !st[i].reached || !st[i].get(fam).known {
		return 0, false
	}
	return st[i].c[fam], true
}

// implicitWrites returns the general registers an instruction may write
// besides its first operand, which writesReg covers: string instructions,
// leave and enter (rbp), cpuid (rbx among others), and anything not
// decoded.
func implicitWrites(in *x86.Info) RegSet {
	const rax, rcx, rdx, rbx, rbp, rsi, rdi = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 5, 1 << 6, 1 << 7
	if !in.FromX86asm() {
		if in.Endbr {
			return 0 // x86asm has no op for endbr64; it writes nothing
		}
		return AllRegs
	}
	switch in.Op {
	case x86asm.LEAVE, x86asm.ENTER:
		return rbp
	case x86asm.CPUID:
		return rax | rbx | rcx | rdx
	case x86asm.RDTSC, x86asm.RDTSCP, x86asm.RDPMC, x86asm.XGETBV, x86asm.RDMSR, x86asm.CMPXCHG8B, x86asm.CMPXCHG16B:
		return rax | rcx | rdx
	case x86asm.LAHF, x86asm.XLATB:
		return rax
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ, x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ,
		x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ, x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ,
		x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ, x86asm.INSB, x86asm.INSW, x86asm.INSD,
		x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD:
		return rax | rcx | rsi | rdi
	}
	return 0
}
