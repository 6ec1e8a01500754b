package cfg

import (
	"cmp"
	"slices"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// The backward slice that jump-table recovery (jumptable.go) evaluates an
// indirect jump's target with. A symbolic value (sym) is linear (k +
// scale*var, over at most one opaque value), a load from a linear address,
// or a load plus a linear value. The slicer walks the unique predecessor
// chain of an instruction back to the definition of a register family,
// across joins whose incoming values agree, and evaluates definitions and
// memory operands into that form; valueRoot follows a table index back to
// the instruction that computed it, for the bounds checks.

type symKind uint8

const (
	symUnknown symKind = iota // cannot be expressed
	symLinear                 // k + scale*var (var optional)
	symLoad                   // load of size bytes from a linear address
	symAdd                    // a + b where a is a load and b linear
)

// sym is a symbolic value. A "var" is an opaque register value identified
// by where the slice stopped (the index of a switch, usually).
type sym struct {
	kind   symKind
	k      uint64
	hasVar bool
	varID  int // where the opaque value was taken: varBefore or varAfter
	scale  uint64
	size   int  // symLoad: bytes loaded
	signed bool // symLoad: sign-extended to 64 bits
	addr   *sym // symLoad: address
	at     int  // symLoad: index of the loading instruction
	a, b   *sym // symAdd
}

// varBefore names the value of register family fam just before
// instruction i, varAfter the value instruction i wrote to it. Stack slots
// use 1<<30 | displacement.
func varBefore(i, fam int) int { return i<<5 | fam }
func varAfter(i, fam int) int  { return i<<5 | 1<<4 | fam }

// varOf splits a variable name made by varBefore or varAfter.
func varOf(id int) (i, fam int, after bool) { return id >> 5, id & 15, id&16 != 0 }

func linConst(k uint64) sym { return sym{kind: symLinear, k: k} }

// addLin adds two linear values with at most one variable between them.
func addLin(x, y sym) sym {
	if x.kind != symLinear || y.kind != symLinear || x.hasVar && y.hasVar {
		return sym{}
	}
	r := sym{kind: symLinear, k: x.k + y.k}
	switch {
	case x.hasVar:
		r.hasVar, r.varID, r.scale = true, x.varID, x.scale
	case y.hasVar:
		r.hasVar, r.varID, r.scale = true, y.varID, y.scale
	}
	return r
}

// slicer walks backwards along the unique predecessor chain of a
// procedure's decoded instructions.
type slicer struct {
	bd *builder
	// clobbers memoizes callClobbers by call target (ipara.go).
	clobbers map[uint64]RegSet
	// branchTo and branchFrom are the procedure's direct jumps and
	// conditional branches as (target, instruction) pairs, sorted by
	// target, then instruction (branchesTo). A map of them was a third
	// of the slicers' set-up in a large library.
	branchTo    []uint64
	branchFrom  []int
	tableTarget map[uint64]bool // targets of the tables resolved so far
	consts      map[int]constResult
	regs        []regState // constRegs, computed on first use
	// slotLimit is the frame offset constant slots must lie below, and
	// slotUsed the highest slot end whose constant the data flow read
	// (frameslots.go).
	slotLimit, slotUsed int64
	refs                map[uint64]bool
}

func newSlicer(bd *builder) *slicer {
	s := &slicer{bd: bd, tableTarget: make(map[uint64]bool)}
	type branch struct {
		to uint64
		i  int
	}
	var bs []branch
	for i := range bd.insts {
		if in := &bd.insts[i]; in.Kind == x86.Jmp || in.Kind == x86.Jcc {
			bs = append(bs, branch{in.Target, i})
		}
	}
	// Sources in ascending order per target, as appending them in
	// instruction order gave.
	slices.SortFunc(bs, func(x, y branch) int {
		if x.to != y.to {
			return cmp.Compare(x.to, y.to)
		}
		return cmp.Compare(x.i, y.i)
	})
	s.branchTo, s.branchFrom = make([]uint64, len(bs)), make([]int, len(bs))
	for k, b := range bs {
		s.branchTo[k], s.branchFrom[k] = b.to, b.i
	}
	for _, jt := range bd.tables {
		for _, t := range jt.Targets {
			s.tableTarget[t] = true
		}
	}
	return s
}

// branchesTo returns the direct jumps and conditional branches to a,
// in instruction order (nil where there are none). The slice is shared.
func (s *slicer) branchesTo(a uint64) []int {
	lo, ok := slices.BinarySearch(s.branchTo, a)
	if !ok {
		return nil
	}
	hi := lo + 1
	for hi < len(s.branchTo) && s.branchTo[hi] == a {
		hi++
	}
	return s.branchFrom[lo:hi:hi]
}

// endAt returns the instruction that ends at a, and whether there is
// one: the one covering the byte before a, or, where a branch skips a
// lock prefix (builder.unlocked), the later of the two decodings that
// end there.
func (s *slicer) endAt(a uint64) (int, bool) {
	bd := s.bd
	ri := bd.rangeOf(a - 1)
	if ri < 0 {
		return 0, false
	}
	c := bd.cover[ri][a-1-bd.ranges[ri].Addr]
	if c == 0 {
		return 0, false
	}
	o := &bd.insts[c-1]
	if o.Addr+uint64(o.Len) != a {
		return 0, false
	}
	if u, ok := bd.unlocked[o.Addr+1]; ok && int(u) > int(c-1) {
		return int(u), true
	}
	return int(c - 1), true
}

// join reports whether control may reach the instruction at a from more
// than one place, so that a slice walking back from it along one
// predecessor would describe only some of the paths.
func (s *slicer) join(a uint64) bool {
	n := len(s.branchesTo(a))
	if s.tableTarget[a] || a == s.bd.f.Addr {
		n += 2
	}
	if p, ok := s.endAt(a); ok && n > 0 {
		switch s.bd.insts[p].Kind {
		case x86.Jmp, x86.JmpIndirect, x86.Ret, x86.Halt:
		default:
			n++
		}
	}
	if n == 0 && s.bd.leader(a) {
		return true // a landing pad
	}
	return n > 1
}

// prev returns the instruction executed before i, preferring the
// fall-through predecessor, and whether control arrived by a taken branch.
func (s *slicer) prev(i int) (int, bool) {
	a := s.bd.insts[i].Addr
	if p, ok := s.endAt(a); ok {
		switch s.bd.insts[p].Kind {
		case x86.Other, x86.Syscall, x86.Jcc, x86.CallIndirect:
			return p, false
		case x86.Call:
			if !s.bd.callNoRet[s.bd.insts[p].Addr] {
				return p, false
			}
		}
	}
	if ts := s.branchesTo(a); len(ts) == 1 {
		return ts[0], true
	}
	return -1, false
}

const sliceLimit = 48

// findDef returns the nearest instruction before i that writes register
// family fam, or -1: when a call clobbers it (a caller-saved register
// [SysV x86-64 ABI 3.2.1]) or the walk reaches a join, where the
// predecessor chain stops describing every path.
func (s *slicer) findDef(i, fam int) int {
	d, _ := s.findDefJoin(i, fam)
	return d
}

// findDefJoin is findDef that also returns, when the walk stopped at a
// join, the instruction there (else -1).
func (s *slicer) findDefJoin(i, fam int) (def, join int) {
	for n := 0; n < sliceLimit; n++ {
		if s.join(s.bd.insts[i].Addr) {
			return -1, i
		}
		p, _ := s.prev(i)
		if p < 0 {
			return -1, -1
		}
		in := &s.bd.insts[p]
		if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
			if callerSaved[fam] {
				return -1, -1
			}
			i = p
			continue
		}
		if writesReg(in, fam) || implicitWrites(in).Has(fam) {
			return p, -1
		}
		i = p
	}
	return -1, -1
}

// preds lists the instructions control reaches insts[x] from, when they
// are all known: the one falling into it and the direct branches to it.
// Table targets and landing pads give nil.
func (s *slicer) preds(x int) []int {
	a := s.bd.insts[x].Addr
	if s.tableTarget[a] || a == s.bd.f.Addr {
		return nil
	}
	ps := append([]int(nil), s.branchesTo(a)...)
	if p, ok := s.endAt(a); ok {
		switch s.bd.insts[p].Kind {
		case x86.Jmp, x86.JmpIndirect, x86.Ret, x86.Halt:
		case x86.Call:
			if !s.bd.callNoRet[s.bd.insts[p].Addr] {
				ps = append(ps, p)
			}
		default:
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil // a landing pad
	}
	return ps
}

// evalPreds gives, when the slice for register family fam before insts[i]
// stops at a join, its value at the end of each predecessor of the join
// (a dispatch jump shared by handlers that each load their own entry).
// It returns nil when there is no such join.
func (s *slicer) evalPreds(i, fam int) []sym {
	d, j := s.findDefJoin(i, fam)
	if d >= 0 || j < 0 {
		return nil
	}
	ps := s.preds(j)
	if ps == nil || len(ps) > 1<<10 {
		return nil
	}
	out := make([]sym, 0, len(ps))
	for _, p := range ps {
		in := &s.bd.insts[p]
		switch {
		case writesReg(in, fam) || implicitWrites(in).Has(fam):
			out = append(out, s.evalDef(p, fam, 0))
		case (in.Kind == x86.Call || in.Kind == x86.CallIndirect) && callerSaved[fam]:
			out = append(out, sym{})
		default:
			out = append(out, s.evalReg(p, fam, 0))
		}
	}
	return out
}

// calleeSaved marks rbx, rbp, r12-r15 [SysV x86-64 ABI 3.2.1].
var calleeSaved = [16]bool{3: true, 5: true, 12: true, 13: true, 14: true, 15: true}

// uniqueConst is the flow-insensitive fallback for a register whose
// definition the predecessor chain does not reach (a table base hoisted out
// of a loop into the prologue): when every instruction of the procedure
// that writes the register loads the same constant address (lea
// disp(%rip) or mov $imm), and no call can clobber it, the register holds
// that constant wherever the compiler uses it.
func (s *slicer) uniqueConst(fam int) (uint64, bool) {
	if s.consts == nil {
		s.consts = make(map[int]constResult)
	}
	if r, ok := s.consts[fam]; ok {
		return r.val, r.ok
	}
	var val uint64
	found, ok := false, true
	for i := range s.bd.insts {
		in := &s.bd.insts[i]
		if (in.Kind == x86.Call || in.Kind == x86.CallIndirect) && !calleeSaved[fam] {
			ok = false
			break
		}
		if !writesReg(in, fam) {
			if implicitWrites(in).Has(fam) {
				ok = false
				break
			}
			continue
		}
		if in.Op == x86asm.POP && calleeSaved[fam] {
			continue // the epilogue restoring the caller's value
		}
		var c uint64
		switch in.Op {
		case x86asm.LEA:
			m, isMem := in.Args[1].AsMem()
			if !isMem || m.Base != x86asm.RIP || m.Index != 0 {
				ok = false
			}
			c = in.Addr + uint64(in.Len) + uint64(dispOf(m))
		case x86asm.MOV:
			imm, isImm := in.Args[1].AsImm()
			if !isImm {
				ok = false
			}
			c = uint64(int64(imm))
		default:
			ok = false
		}
		if !ok || found && c != val {
			ok = false
			break
		}
		val, found = c, true
	}
	ok = ok && found
	s.consts[fam] = constResult{val, ok}
	return val, ok
}

type constResult struct {
	val uint64
	ok  bool
}

// evalReg gives the value of register family fam just before instruction i.
func (s *slicer) evalReg(i, fam, depth int) sym {
	if fam < 0 || depth > 8 {
		return sym{}
	}
	if c, ok := s.constAt(i, fam); ok {
		return linConst(c)
	}
	d := s.findDef(i, fam)
	if d < 0 {
		if c, ok := s.uniqueConst(fam); ok {
			return linConst(c)
		}
		return sym{kind: symLinear, hasVar: true, varID: varBefore(i, fam), scale: 1}
	}
	return s.evalDef(d, fam, depth)
}

// evalDef gives the value instruction d writes to register family fam.
func (s *slicer) evalDef(d, fam, depth int) sym {
	in := &s.bd.insts[d]
	raw := in
	opaque := sym{kind: symLinear, hasVar: true, varID: varAfter(d, fam), scale: 1}
	switch raw.Op {
	case x86asm.LEA:
		if m, ok := raw.Args[1].AsMem(); ok {
			if m.Base == x86asm.RIP {
				// A constant the data-flow did not confirm: another
				// path brings another value.
				return sym{}
			}
			if m.Base != 0 && m.Index != 0 && m.Scale == 1 && m.Disp == 0 && m.Segment == 0 {
				// An entry added to the table's base by lea (zstd:
				// movslq (%rbp,%rsi,4),%r9; lea (%r9,%rbp,1),%r12;
				// jmp *%r12), where add would change the flags.
				a, b := s.evalReg(d, regFamily(m.Base), depth+1), s.evalReg(d, regFamily(m.Index), depth+1)
				switch {
				case a.kind == symLoad && b.kind == symLinear && !b.hasVar:
					return sym{kind: symAdd, a: &a, b: &b}
				case b.kind == symLoad && a.kind == symLinear && !a.hasVar:
					return sym{kind: symAdd, a: &b, b: &a}
				}
			}
			return s.memAddr(d, m, depth+1)
		}
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVZX, x86asm.MOVSX:
		switch src := &raw.Args[1]; src.Kind {
		case x86.ArgImm:
			return sym{} // as for lea above
		case x86.ArgReg:
			if raw.Op == x86asm.MOV || raw.Op == x86asm.MOVSXD {
				// A copy (or a sign extension of a 32-bit index): the
				// value passes through.
				return s.evalReg(d, regFamily(src.Reg), depth+1)
			}
			return opaque
		case x86.ArgMem:
			addr := s.memAddr(d, src.Mem(), depth+1)
			if addr.kind != symLinear {
				return sym{}
			}
			size := s.bd.memBytes(d)
			signed := raw.Op == x86asm.MOVSXD || raw.Op == x86asm.MOVSX
			if raw.Op == x86asm.MOV {
				if r, ok := raw.Args[0].AsReg(); ok && r >= x86asm.RAX && r <= x86asm.R15 {
					size = 8
				} else {
					size = 4
				}
			}
			if addr.hasVar && addr.k >= 1<<63 {
				// A frame slot (disp off %rbp/%rsp with an opaque base) is
				// just a variable, like -O0's reload of the switch value.
				return opaque
			}
			return sym{kind: symLoad, addr: &addr, size: size, signed: signed, at: d}
		}
	case x86asm.CDQE:
		v := s.evalReg(d, 0, depth+1)
		if v.kind == symLoad && v.size == 4 {
			v.signed = true
		}
		return v
	case x86asm.ADD:
		src := sym{}
		switch a := &raw.Args[1]; a.Kind {
		case x86.ArgReg:
			src = s.evalReg(d, regFamily(a.Reg), depth+1)
		case x86.ArgImm:
			src = linConst(uint64(a.Val))
		default:
			return sym{}
		}
		dst := s.evalReg(d, fam, depth+1)
		switch {
		case dst.kind == symLinear && src.kind == symLinear:
			return addLin(dst, src)
		case dst.kind == symLoad && src.kind == symLinear && !src.hasVar:
			return sym{kind: symAdd, a: &dst, b: &src}
		case src.kind == symLoad && dst.kind == symLinear && !dst.hasVar:
			return sym{kind: symAdd, a: &src, b: &dst}
		}
		return sym{}
	case x86asm.SHL:
		if imm, ok := raw.Args[1].AsImm(); ok && imm < 8 {
			v := s.evalReg(d, fam, depth+1)
			if v.kind == symLinear && v.hasVar && v.k == 0 {
				v.scale <<= uint(imm)
				return v
			}
		}
		return sym{}
	}
	return opaque
}

// asVar turns a value that cannot take part in an address expression (a
// loaded value, say) into an opaque variable: its value is unknown, but it
// is one value, which is all an index needs to be.
func asVar(v sym, id int) sym {
	if v.kind == symLinear {
		return v
	}
	return sym{kind: symLinear, hasVar: true, varID: id, scale: 1}
}

// memAddr gives the symbolic address of memory operand m of instruction i.
func (s *slicer) memAddr(i int, m x86asm.Mem, depth int) sym {
	if m.Segment != 0 {
		return sym{}
	}
	in := &s.bd.insts[i]
	r := linConst(uint64(dispOf(m)))
	switch {
	case m.Base == x86asm.RIP:
		r.k += in.Addr + uint64(in.Len)
	case m.Base == x86asm.RBP || m.Base == x86asm.EBP:
		// %rbp is the frame pointer or a general register: a table base
		// when it holds a constant.
		if c, ok := s.constAt(i, regFamily(m.Base)); ok {
			r.k += c
			break
		}
		r.hasVar, r.varID, r.scale = true, 1<<30|int(m.Disp&0xffff), 1
		r.k = 1 << 63
	case m.Base != 0:
		if m.Base == x86asm.RSP || m.Base == x86asm.ESP {
			// Stack slots: identify by displacement, with a marker the
			// caller recognises (k >= 1<<63 never occurs for code addresses).
			r.hasVar, r.varID, r.scale = true, 1<<30|int(m.Disp&0xffff), 1
			r.k = 1 << 63
		} else {
			fam := regFamily(m.Base)
			r = addLin(r, asVar(s.evalReg(i, fam, depth), varBefore(i, fam)))
		}
	}
	if m.Index != 0 {
		// The index is the register as it is at the load, not what it
		// was computed from: a constant folded out of 32-bit arithmetic
		// (lea -0xd(%rdi),%eax) would wrap differently in 64 bits, and
		// bound and indexRange look at the register itself.
		// A constant there is a table base in the index position (gcc
		// -O0: mov (%rdx,%rax,1),%eax with %rax = T).
		fam := regFamily(m.Index)
		v := sym{kind: symLinear, hasVar: true, varID: varBefore(i, fam), scale: 1}
		if c, ok := s.constAt(i, fam); ok {
			v = linConst(c)
		}
		v.k *= uint64(m.Scale)
		v.scale *= uint64(m.Scale)
		r = addLin(r, v)
	}
	return r
}

// valueRoot follows a value (a variable named by varBefore or varAfter)
// back through register copies and zero or sign extensions to the
// instruction that computed it. It returns that instruction (-1 when the
// slice cannot tell), its destination family, the narrowest width the
// chain kept of it (bits), and the width the computing instruction itself
// left significant (32 for a 32-bit write, which zeroes the upper half
// [Intel SDM Vol.1 3.4.1.1]).
func (s *slicer) valueRoot(id int) (def, fam, kept, width int) {
	i, fam, after := varOf(id)
	if id >= 1<<30 || i >= len(s.bd.insts) {
		return -1, 0, 0, 0
	}
	kept = 64
	for n := 0; n < 8; n++ {
		d := i
		if !after {
			var j int
			d, j = s.findDefJoin(i, fam)
			if d < 0 && j >= 0 {
				// No definition before a join (or the entry): the value
				// is the one the register holds there, the same for
				// every chain that reaches this join without a write.
				return len(s.bd.insts) + j, fam, kept, 64
			}
			if d < 0 {
				return -1, 0, 0, 0
			}
		}
		after = false
		raw := &s.bd.insts[d]
		dst, _ := raw.Args[0].AsReg()
		if src, ok := raw.Args[1].AsReg(); ok && regFamily(src) >= 0 &&
			(raw.Op == x86asm.MOV || raw.Op == x86asm.MOVZX || raw.Op == x86asm.MOVSXD) {
			kept = min(kept, regBits(src), regBits(dst))
			i, fam = d, regFamily(src)
			continue
		}
		width = regBits(dst)
		if width < 32 {
			width = 64 // a partial write keeps the upper bits it found
		}
		return d, fam, kept, width
	}
	return -1, 0, 0, 0
}

// dispOf is m's displacement as the processor adds it: x86asm v0.32
// zero-extends a disp32 (lea -0x109(%rip) reads as +0xfffffef7), which
// the processor sign-extends to 64 bits [Intel SDM Vol.2 2.1.5, Table
// 2-2]. An operand with neither base nor index (a moffs address of up to
// 64 bits) keeps the decoded value.
func dispOf(m x86asm.Mem) int64 {
	if m.Base == 0 && m.Index == 0 {
		return m.Disp
	}
	return int64(int32(m.Disp))
}

// regBits is the width of a general register in bits.
func regBits(r x86asm.Reg) int {
	switch {
	case r >= x86asm.AL && r <= x86asm.R15B:
		return 8
	case r >= x86asm.AX && r <= x86asm.R15W:
		return 16
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return 32
	}
	return 64
}
