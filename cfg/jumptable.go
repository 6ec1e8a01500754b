package cfg

import (
	"encoding/binary"

	"blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Jump-table recovery. The target of an indirect jump is computed by a
// short backward slice over the decoded instructions into a small symbolic
// form, which is then matched against the two shapes compilers emit:
//
//	absolute: target = load8(T + idx*8)                 (non-PIC, and PIE tables
//	                                                      filled by R_X86_64_RELATIVE)
//	relative: target = B + sext(load4(T + idx*4))        (PIC; gcc and clang, B == T
//	                                                      in practice)
//
// The number of entries comes from the bounds check that guards the jump
// (cmp/sub $N then ja/jae, or jbe/jb into the table code). Every target
// must lie inside the procedure. The same slice classifies the indirect
// jumps that are not tables: a jump through a pointer loaded from a
// non-indexed address (a GOT slot, a struct field) or through an incoming
// register is an indirect tail call [BOLT, BinaryFunction::analyzeIndirectBranch
// makes the same distinction].

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
	varID  int // instruction index at which the opaque value was taken, <<4 | family
	scale  uint64
	size   int  // symLoad: bytes loaded
	signed bool // symLoad: sign-extended to 64 bits
	addr   *sym // symLoad: address
	a, b   *sym // symAdd
}

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
	bd      *builder
	endAt   map[uint64]int   // instruction ending at address
	targets map[uint64][]int // direct branches to address
	consts  map[int]constResult
}

func newSlicer(bd *builder) *slicer {
	s := &slicer{bd: bd, endAt: make(map[uint64]int, len(bd.insts)), targets: make(map[uint64][]int)}
	for i := range bd.insts {
		in := &bd.insts[i]
		s.endAt[in.Addr+uint64(in.Len)] = i
		if in.Kind == x86.Jmp || in.Kind == x86.Jcc {
			s.targets[in.Target] = append(s.targets[in.Target], i)
		}
	}
	return s
}

// prev returns the instruction executed before i, preferring the
// fall-through predecessor, and whether control arrived by a taken branch.
func (s *slicer) prev(i int) (int, bool) {
	a := s.bd.insts[i].Addr
	if p, ok := s.endAt[a]; ok {
		switch s.bd.insts[p].Kind {
		case x86.Other, x86.Syscall, x86.Jcc, x86.CallIndirect:
			return p, false
		case x86.Call:
			if !s.bd.callNoRet[s.bd.insts[p].Addr] {
				return p, false
			}
		}
	}
	if ts := s.targets[a]; len(ts) == 1 {
		return ts[0], true
	}
	return -1, false
}

const sliceLimit = 48

// findDef returns the nearest instruction before i that writes register
// family fam, or -1 (a call in between clobbers caller-saved registers).
func (s *slicer) findDef(i, fam int) int {
	for n := 0; n < sliceLimit; n++ {
		p, _ := s.prev(i)
		if p < 0 {
			return -1
		}
		in := &s.bd.insts[p]
		if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
			return -1
		}
		if writesReg(&in.Raw, fam) {
			return p
		}
		i = p
	}
	return -1
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
		if !writesReg(&in.Raw, fam) {
			continue
		}
		if in.Raw.Op == x86asm.POP && calleeSaved[fam] {
			continue // the epilogue restoring the caller's value
		}
		var c uint64
		switch in.Raw.Op {
		case x86asm.LEA:
			m, isMem := in.Raw.Args[1].(x86asm.Mem)
			if !isMem || m.Base != x86asm.RIP || m.Index != 0 {
				ok = false
			}
			c = in.Addr + uint64(in.Len) + uint64(m.Disp)
		case x86asm.MOV:
			imm, isImm := in.Raw.Args[1].(x86asm.Imm)
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
	d := s.findDef(i, fam)
	if d < 0 {
		if c, ok := s.uniqueConst(fam); ok {
			return linConst(c)
		}
		return sym{kind: symLinear, hasVar: true, varID: i<<4 | fam, scale: 1}
	}
	in := &s.bd.insts[d]
	raw := &in.Raw
	opaque := sym{kind: symLinear, hasVar: true, varID: d<<4 | fam, scale: 1}
	switch raw.Op {
	case x86asm.LEA:
		if m, ok := raw.Args[1].(x86asm.Mem); ok {
			return s.memAddr(d, m, depth+1)
		}
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVZX, x86asm.MOVSX:
		switch src := raw.Args[1].(type) {
		case x86asm.Imm:
			return linConst(uint64(int64(src)))
		case x86asm.Reg:
			if raw.Op == x86asm.MOV || raw.Op == x86asm.MOVSXD {
				// A copy (or a sign extension of a 32-bit index): the
				// value passes through.
				return s.evalReg(d, regFamily(src), depth+1)
			}
			return opaque
		case x86asm.Mem:
			addr := s.memAddr(d, src, depth+1)
			if addr.kind != symLinear {
				return sym{}
			}
			size := raw.MemBytes
			signed := raw.Op == x86asm.MOVSXD || raw.Op == x86asm.MOVSX
			if raw.Op == x86asm.MOV {
				if r, ok := raw.Args[0].(x86asm.Reg); ok && r >= x86asm.RAX && r <= x86asm.R15 {
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
			return sym{kind: symLoad, addr: &addr, size: size, signed: signed}
		}
	case x86asm.CDQE:
		v := s.evalReg(d, 0, depth+1)
		if v.kind == symLoad && v.size == 4 {
			v.signed = true
		}
		return v
	case x86asm.ADD:
		src := sym{}
		switch a := raw.Args[1].(type) {
		case x86asm.Reg:
			src = s.evalReg(d, regFamily(a), depth+1)
		case x86asm.Imm:
			src = linConst(uint64(int64(a)))
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
		if imm, ok := raw.Args[1].(x86asm.Imm); ok && imm < 8 {
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
	r := linConst(uint64(m.Disp))
	switch {
	case m.Base == x86asm.RIP:
		r.k += in.Addr + uint64(in.Len)
	case m.Base != 0:
		if m.Base == x86asm.RSP || m.Base == x86asm.RBP || m.Base == x86asm.ESP || m.Base == x86asm.EBP {
			// Stack slots: identify by displacement, with a marker the
			// caller recognises (k >= 1<<63 never occurs for code addresses).
			r.hasVar, r.varID, r.scale = true, 1<<30|int(m.Disp&0xffff), 1
			r.k = 1 << 63
		} else {
			fam := regFamily(m.Base)
			r = addLin(r, asVar(s.evalReg(i, fam, depth), i<<4|fam))
		}
	}
	if m.Index != 0 {
		fam := regFamily(m.Index)
		v := asVar(s.evalReg(i, fam, depth), i<<4|fam)
		v.k *= uint64(m.Scale)
		v.scale *= uint64(m.Scale)
		r = addLin(r, v)
	}
	return r
}

// resolveIndirect recovers the jump table of the indirect jump insts[i],
// or classifies it as an indirect tail call, or refuses the procedure.
func (bd *builder) resolveIndirect(s *slicer, i int) {
	in := &bd.insts[i]
	var v sym
	switch op := in.Raw.Args[0].(type) {
	case x86asm.Mem:
		addr := s.memAddr(i, op, 0)
		if addr.kind != symLinear {
			break
		}
		v = sym{kind: symLoad, addr: &addr, size: 8}
	case x86asm.Reg:
		v = s.evalReg(i, regFamily(op), 0)
	}
	var table, base uint64
	var entSize int
	relative := false
	switch {
	case v.kind == symLoad && v.size == 8 && v.addr.hasVar && v.addr.scale == 8 && v.addr.k < 1<<63:
		table, entSize = v.addr.k, 8
	case v.kind == symAdd && v.a.size == 4 && v.a.addr.hasVar && v.a.addr.scale == 4 && v.a.addr.k < 1<<63:
		table, entSize, relative, base = v.a.addr.k, 4, true, v.b.k
	case v.kind == symLoad && !v.addr.hasVar:
		// jmp *slot: through a GOT entry or a constant pointer.
		bd.indTail[in.Addr] = true
		return
	case v.kind == symLoad && v.addr.hasVar && v.addr.k >= 1<<63:
		// A pointer reloaded from a stack slot.
		bd.indTail[in.Addr] = true
		return
	case v.kind == symLinear && !v.hasVar:
		// A constant target: crt's deregister_tm_clones jumps to a weak
		// symbol's address, often 0 and then guarded. Leaving the
		// procedure either way.
		bd.indTail[in.Addr] = true
		return
	case v.kind == symLinear && v.hasVar && v.k == 0 && v.scale == 1:
		// An incoming register or a value loaded from a structure.
		bd.indTail[in.Addr] = true
		return
	case v.kind == symLoad && v.addr.hasVar && v.addr.scale == 1:
		// A load from a field of a pointer (jmp *0x18(%rax)): a virtual or
		// function-pointer tail call.
		bd.indTail[in.Addr] = true
		return
	default:
		bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump is not a recognised jump table")
		return
	}
	// An array of function pointers indexed by a masked or checked value
	// (ops[op & 3](a, b) as a tail call) looks like an absolute table whose
	// entries lie outside the procedure: an indirect tail call.
	if !relative {
		if p, ok := bd.b.Pointer(table); ok && bd.rangeOf(p) < 0 {
			bd.indTail[in.Addr] = true
			return
		}
	}
	n := s.bound(i)
	if n <= 0 || n > 1<<16 {
		// No bounds check: the compiler knew the index is in range
		// (__builtin_unreachable default, an enum switch). Take entries
		// while they point into the procedure, stopping at data other
		// code refers to (the next table) [as BOLT does for such tables].
		n = bd.scanTable(table, entSize, relative, base)
		if n == 0 {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table at %#x has no bounds check", table)
			return
		}
	}
	jt := &JumpTable{Jump: in.Addr, Table: table, Entries: n, EntrySize: entSize, Relative: relative, Base: base}
	for k := 0; k < n; k++ {
		t, ok := bd.tableTarget(table, k, entSize, relative, base)
		if !ok {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table entry %d at %#x is outside the file", k, table+uint64(k*entSize))
			return
		}
		if bd.rangeOf(t) < 0 {
			if bd.g.Reason == ReasonOK {
				bd.g.escape = t // perhaps a stripped .cold fragment
			}
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table entry %d targets %#x, outside the function", k, t)
			return
		}
		jt.Targets = append(jt.Targets, t)
	}
	bd.tables[in.Addr] = jt
	for _, t := range jt.Targets {
		bd.leaders[t] = true
		bd.work = append(bd.work, t)
	}
}

// bound finds the bounds check guarding the jump at insts[i]: the nearest
// unsigned conditional branch on the predecessor chain and the cmp or sub
// that set its flags. It returns the number of table entries, or 0.
func (s *slicer) bound(i int) int {
	cur := i
	for n := 0; n < sliceLimit; n++ {
		p, taken := s.prev(cur)
		if p < 0 {
			return 0
		}
		in := &s.bd.insts[p]
		if in.Kind == x86.Jcc {
			op := in.Raw.Op
			var outside bool // the table is reached when the condition is false
			switch op {
			case x86asm.JA, x86asm.JAE:
				outside = true
			case x86asm.JBE, x86asm.JB:
				outside = false
			default:
				cur = p
				continue
			}
			if outside == taken {
				return 0 // reached the table on the out-of-range side: not a guard
			}
			imm, ok := s.guardImm(p)
			if !ok {
				return 0
			}
			if op == x86asm.JA || op == x86asm.JBE {
				return int(imm) + 1
			}
			return int(imm)
		}
		cur = p
	}
	return 0
}

// guardImm finds the cmp $N or sub $N that set the flags for the branch
// at insts[j], skipping instructions that leave the flags alone.
func (s *slicer) guardImm(j int) (uint64, bool) {
	cur := j
	for n := 0; n < 8; n++ {
		p, _ := s.prev(cur)
		if p < 0 {
			return 0, false
		}
		in := &s.bd.insts[p]
		switch in.Raw.Op {
		case x86asm.CMP, x86asm.SUB:
			if imm, ok := in.Raw.Args[1].(x86asm.Imm); ok && imm >= 0 && imm < 1<<16 {
				return uint64(imm), true
			}
			return 0, false
		}
		if in.Writes != 0 || in.Kind != x86.Other {
			return 0, false
		}
		cur = p
	}
	return 0, false
}

// tableTarget reads entry k of a table, reporting false when it is outside
// the file.
func (bd *builder) tableTarget(table uint64, k, entSize int, relative bool, base uint64) (uint64, bool) {
	at := table + uint64(k*entSize)
	if relative {
		d := bd.b.Bytes(at, 4)
		if d == nil {
			return 0, false
		}
		return base + uint64(int64(int32(binary.LittleEndian.Uint32(d)))), true
	}
	return bd.b.Pointer(at)
}

// scanTable counts the leading entries of an unbounded table that point
// into the procedure, up to the next address the procedure's code refers
// to.
func (bd *builder) scanTable(table uint64, entSize int, relative bool, base uint64) int {
	refs := make(map[uint64]bool)
	for i := range bd.insts {
		if in := &bd.insts[i]; in.RIPRel {
			refs[in.RIPTarget] = true
		}
	}
	n := 0
	for ; n < 1<<12; n++ {
		at := table + uint64(n*entSize)
		if n > 0 && refs[at] {
			break
		}
		t, ok := bd.tableTarget(table, n, entSize, relative, base)
		if !ok || bd.rangeOf(t) < 0 {
			break
		}
	}
	return n
}
