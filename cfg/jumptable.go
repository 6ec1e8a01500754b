package cfg

import (
	"encoding/binary"
	"slices"

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
// (cmp/sub $N then ja/jae, or jbe/jb into the table code), provided the
// compared value is the index the table is read with. Without a guard
// (computed goto, __builtin_unreachable defaults, enum switches) the extent
// comes from the index's value range (a zero-extended byte: 256 entries)
// and from what surrounds the table: the next address the procedure's code
// refers to, the end of the run of relocated slots in a PIE, the first
// entry that does not lead into the procedure. Every entry of a guarded
// table must lie inside the procedure. Table bases are constants the
// register data-flow of regconst.go proves, so they may be set in another
// block or before calls. The same slice classifies the indirect
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
	bd          *builder
	endAt       map[uint64]int   // instruction ending at address
	targets     map[uint64][]int // direct branches to address
	tableTarget map[uint64]bool  // targets of the tables resolved so far
	consts      map[int]constResult
	regs        []regState // constRegs, computed on first use
	refs        map[uint64]bool
}

func newSlicer(bd *builder) *slicer {
	s := &slicer{bd: bd, endAt: make(map[uint64]int, len(bd.insts)), targets: make(map[uint64][]int),
		tableTarget: make(map[uint64]bool)}
	for i := range bd.insts {
		in := &bd.insts[i]
		s.endAt[in.Addr+uint64(in.Len)] = i
		if in.Kind == x86.Jmp || in.Kind == x86.Jcc {
			s.targets[in.Target] = append(s.targets[in.Target], i)
		}
	}
	for _, jt := range bd.tables {
		for _, t := range jt.Targets {
			s.tableTarget[t] = true
		}
	}
	return s
}

// join reports whether control may reach the instruction at a from more
// than one place, so that a slice walking back from it along one
// predecessor would describe only some of the paths.
func (s *slicer) join(a uint64) bool {
	n := len(s.targets[a])
	if s.tableTarget[a] || a == s.bd.f.Addr {
		n += 2
	}
	if p, ok := s.endAt[a]; ok && n > 0 {
		switch s.bd.insts[p].Kind {
		case x86.Jmp, x86.JmpIndirect, x86.Ret, x86.Halt:
		default:
			n++
		}
	}
	if n == 0 && s.bd.leaders[a] {
		return true // a landing pad
	}
	return n > 1
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
		if writesReg(&in.Raw, fam) || implicitWrites(in).Has(fam) {
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
	ps := append([]int(nil), s.targets[a]...)
	if p, ok := s.endAt[a]; ok {
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
		case writesReg(&in.Raw, fam) || implicitWrites(in).Has(fam):
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
		if !writesReg(&in.Raw, fam) {
			if implicitWrites(in).Has(fam) {
				ok = false
				break
			}
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
	raw := &in.Raw
	opaque := sym{kind: symLinear, hasVar: true, varID: varAfter(d, fam), scale: 1}
	switch raw.Op {
	case x86asm.LEA:
		if m, ok := raw.Args[1].(x86asm.Mem); ok {
			if m.Base == x86asm.RIP {
				// A constant the data-flow did not confirm: another
				// path brings another value.
				return sym{}
			}
			return s.memAddr(d, m, depth+1)
		}
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVZX, x86asm.MOVSX:
		switch src := raw.Args[1].(type) {
		case x86asm.Imm:
			return sym{} // as for lea above
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
		v = sym{kind: symLoad, addr: &addr, size: 8, at: i}
	case x86asm.Reg:
		v = s.evalReg(i, regFamily(op), 0)
		if _, ok := tableShape(v); !ok {
			// Replicated dispatch may share one jump between handlers
			// that each load the entry: a table when every one of them
			// reads the same table.
			if vs := s.evalPreds(i, regFamily(op)); len(vs) > 0 {
				if sh, ok := tableShape(vs[0]); ok {
					same := true
					for _, w := range vs[1:] {
						wsh, ok := tableShape(w)
						same = same && ok && wsh.table == sh.table && wsh.base == sh.base && wsh.relative == sh.relative
					}
					if same {
						bd.resolveTable(s, i, vs)
						return
					}
				}
			}
		}
	}
	if _, ok := tableShape(v); ok {
		bd.resolveTable(s, i, []sym{v})
		return
	}
	// Not a table. The unwind rules tell a jump that leaves (the frame
	// torn down: the return address at the top of the stack, as at a
	// function's entry) from one that stays [DWARF5 6.4]; python's
	// PyObject_Call pops its registers and then jumps through a pointer
	// loaded from the object.
	if atTop, known := bd.b.returnAtTop(in.Addr); known {
		if atTop {
			bd.indTail[in.Addr] = true
		} else {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump is not a recognised jump table, and its frame is still set up")
		}
		return
	}
	// Without unwind rules, the shapes of the target decide.
	switch {
	case v.kind == symLoad && !v.addr.hasVar:
		// jmp *slot: through a GOT entry or a constant pointer.
	case v.kind == symLoad && v.addr.hasVar && v.addr.k >= 1<<63:
		// A pointer reloaded from a stack slot.
	case v.kind == symLinear && !v.hasVar:
		// A constant target: crt's deregister_tm_clones jumps to a weak
		// symbol's address, often 0 and then guarded. Leaving the
		// procedure either way.
	case v.kind == symLinear && v.hasVar && v.k == 0 && v.scale == 1:
		// An incoming register or a value loaded from a structure.
	case v.kind == symLoad && v.addr.hasVar && v.addr.scale == 1:
		// A load from a field of a pointer (jmp *0x18(%rax)): a virtual
		// or function-pointer tail call.
	default:
		bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump is not a recognised jump table")
		return
	}
	bd.indTail[in.Addr] = true
}

// recheckTables resolves every indirect jump again once the whole
// procedure is decoded. A table found early was resolved with the paths
// known then; code found later (through other tables) may join those
// paths with other register values, and the constants the data-flow
// proved must still hold. A jump that now resolves differently refuses
// the procedure.
func (bd *builder) recheckTables() {
	if bd.g.Reason != ReasonOK || len(bd.tables) == 0 {
		return
	}
	s := newSlicer(bd)
	for i := range bd.insts {
		in := &bd.insts[i]
		if in.Kind != x86.JmpIndirect {
			continue
		}
		old, wasTail := bd.tables[in.Addr], bd.indTail[in.Addr]
		delete(bd.indTail, in.Addr)
		work := len(bd.work)
		bd.resolveIndirect(s, i)
		bd.work = bd.work[:work]
		if bd.g.Reason != ReasonOK {
			return
		}
		now := bd.tables[in.Addr]
		same := wasTail == bd.indTail[in.Addr] && (old == nil) == (now == nil)
		if same && old != nil {
			// An unguarded table may end earlier now that more of the
			// code's references are known; its extra entries led into
			// the procedure and cost only unused edges. Keep it.
			same = old.Table == now.Table && old.Entries >= now.Entries && old.Guarded == now.Guarded &&
				slices.Equal(old.Targets[:now.Entries], now.Targets) && slices.Equal(old.Loads, now.Loads)
			bd.tables[in.Addr] = old
		}
		if !same {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump resolves differently once the whole function is decoded")
			return
		}
	}
}

// shape is what a jump target says about its table.
type shape struct {
	table, base uint64
	entSize     int
	relative    bool
	load        int // the instruction reading the entry
	idx         int // the variable naming the index at the load
}

// tableShape matches a jump target against the two table forms.
func tableShape(v sym) (shape, bool) {
	switch {
	case v.kind == symLoad && v.size == 8 && v.addr.hasVar && v.addr.scale == 8 && v.addr.k < 1<<63:
		return shape{table: v.addr.k, entSize: 8, load: v.at, idx: v.addr.varID}, true
	case v.kind == symAdd && v.a.size == 4 && v.a.addr.hasVar && v.a.addr.scale == 4 && v.a.addr.k < 1<<63:
		return shape{table: v.a.addr.k, base: v.b.k, entSize: 4, relative: true, load: v.a.at, idx: v.a.addr.varID}, true
	}
	return shape{}, false
}

// resolveTable records the table of the jump at insts[i], read by the
// loads of vs (one, or one per predecessor of a shared dispatch jump).
func (bd *builder) resolveTable(s *slicer, i int, vs []sym) {
	in := &bd.insts[i]
	sh, _ := tableShape(vs[0])
	table, base, entSize, relative := sh.table, sh.base, sh.entSize, sh.relative
	// An array of function pointers indexed by a masked or checked value
	// (ops[op & 3](a, b) as a tail call) looks like an absolute table whose
	// entries lie outside the procedure: an indirect tail call.
	if !relative {
		if p, ok := bd.b.Pointer(table); ok && bd.rangeOf(p) < 0 {
			bd.indTail[in.Addr] = true
			return
		}
	}
	jt := &JumpTable{Jump: in.Addr, Table: table, EntrySize: entSize, Relative: relative, Base: base}
	n := 0
	if len(vs) == 1 {
		n = s.bound(i, sh.idx)
	}
	if n > 0 && n <= 1<<16 {
		jt.Entries = n
		jt.Guarded = true
	} else {
		// No bounds check: the compiler knew the index is in range (a
		// computed goto, a __builtin_unreachable default, an enum
		// switch). The table ends where its index cannot reach or where
		// other data begins [as BOLT does for such tables].
		limit := 0
		for _, v := range vs {
			vsh, _ := tableShape(v)
			r := s.indexRange(vsh.idx)
			if r == 0 {
				limit = 0
				break
			}
			limit = max(limit, r)
		}
		jt.Entries = bd.extent(s, table, entSize, relative, base, limit)
		if jt.Entries == 0 {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table at %#x has no bounds check and no entry into the function", table)
			return
		}
	}
	for _, v := range vs {
		vsh, _ := tableShape(v)
		jt.Loads = append(jt.Loads, bd.insts[vsh.load].Addr)
	}
	for k := 0; k < jt.Entries; k++ {
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
		raw := &s.bd.insts[d].Raw
		dst, _ := raw.Args[0].(x86asm.Reg)
		if src, ok := raw.Args[1].(x86asm.Reg); ok && regFamily(src) >= 0 &&
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

// bound finds the bounds check guarding the jump at insts[i]: the nearest
// unsigned conditional branch on the predecessor chain and the cmp or sub
// that set its flags, which must test the value the table is indexed
// with (the variable idx). It returns the number of table entries, or 0.
func (s *slicer) bound(i, idx int) int {
	idef, ifam, ikept, iwidth := s.valueRoot(idx)
	if idef < 0 {
		return 0
	}
	cur := i
	for n := 0; n < sliceLimit; n++ {
		if s.join(s.bd.insts[cur].Addr) {
			return 0
		}
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
			imm, g, ok := s.guardImm(p)
			if !ok || !s.guards(g, idef, ifam, min(ikept, iwidth)) {
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

// guards reports whether the cmp or sub at insts[g] tests the index: the
// value instruction idef computed into family ifam, of which the index
// uses the low bits bits. A register compare must see the same
// computation and every bit the index uses; a compare of a frame slot
// (gcc -O0) or of a field must be of the memory the index was loaded
// from, with no store
// to memory in between.
func (s *slicer) guards(g, idef, ifam, bits int) bool {
	gi := &s.bd.insts[g].Raw
	switch a := gi.Args[0].(type) {
	case x86asm.Reg:
		gfam := regFamily(a)
		if gfam < 0 {
			return false
		}
		var gdef, gfamRoot, gkept int
		if gi.Op == x86asm.SUB {
			gdef, gfamRoot, gkept, _ = s.valueRoot(varAfter(g, gfam))
		} else {
			gdef, gfamRoot, gkept, _ = s.valueRoot(varBefore(g, gfam))
		}
		if gdef != idef || gfamRoot != ifam {
			return false
		}
		return bits <= min(gkept, regBits(a))
	case x86asm.Mem:
		if idef >= len(s.bd.insts) {
			return false
		}
		if gi.Op != x86asm.CMP || a.Segment != 0 || a.Base == x86asm.RIP {
			return false
		}
		ld := &s.bd.insts[idef].Raw
		src, ok := ld.Args[1].(x86asm.Mem)
		if ld.Op != x86asm.MOV || !ok || src != a || bits > 8*gi.MemBytes {
			return false
		}
		// Walk from the load back to the compare: no join, no store.
		cur := idef
		for n := 0; n < sliceLimit; n++ {
			if s.join(s.bd.insts[cur].Addr) {
				return false
			}
			p, _ := s.prev(cur)
			if p < 0 {
				return false
			}
			if p == g {
				return true
			}
			in := &s.bd.insts[p]
			if _, ok := in.Raw.Args[0].(x86asm.Mem); ok || in.Kind != x86.Other && in.Kind != x86.Jcc {
				return false // a store, perhaps to the slot
			}
			if a.Base != 0 && writesReg(&in.Raw, regFamily(a.Base)) || a.Index != 0 && writesReg(&in.Raw, regFamily(a.Index)) {
				return false
			}
			cur = p
		}
	}
	return false
}

// guardImm finds the cmp $N or sub $N that set the flags for the branch
// at insts[j], skipping instructions that leave the flags alone. It
// returns N and the instruction.
func (s *slicer) guardImm(j int) (uint64, int, bool) {
	cur := j
	for n := 0; n < 8; n++ {
		if s.join(s.bd.insts[cur].Addr) {
			return 0, 0, false
		}
		p, _ := s.prev(cur)
		if p < 0 {
			return 0, 0, false
		}
		in := &s.bd.insts[p]
		switch in.Raw.Op {
		case x86asm.CMP, x86asm.SUB:
			if imm, ok := in.Raw.Args[1].(x86asm.Imm); ok && imm >= 0 && imm < 1<<16 {
				return uint64(imm), p, true
			}
			return 0, 0, false
		}
		if in.Writes != 0 || in.Kind != x86.Other {
			return 0, 0, false
		}
		cur = p
	}
	return 0, 0, false
}

// indexRange bounds the index of an unguarded table from how it was
// computed: a zero-extended byte or word (movzbl, movzwl) has at most
// 256 or 65536 values, an and with a small mask at most mask+1. It
// returns 0 when nothing bounds it.
func (s *slicer) indexRange(idx int) int {
	def, _, kept, width := s.valueRoot(idx)
	if def < 0 {
		return 0
	}
	if raw := &s.bd.insts[def%len(s.bd.insts)].Raw; def < len(s.bd.insts) && raw.Op == x86asm.AND {
		if imm, ok := raw.Args[1].(x86asm.Imm); ok && imm >= 0 && imm < 1<<16 {
			return int(imm) + 1
		}
	}
	if bits := min(kept, width); bits <= 16 {
		return 1 << bits
	}
	return 0
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

// maxUnguarded caps the entries of a table nothing else bounds.
const maxUnguarded = 1 << 12

// extent counts the entries of a table without a bounds check: at most
// limit (the index's value range; 0 when unknown), ending before the next
// address any code refers to (another table, other data),
// before a slot a PIE does not relocate (absolute entries there are all
// R_X86_64_RELATIVE), and before the first entry that does not lead into
// the procedure, which is data past the table's end.
func (bd *builder) extent(s *slicer, table uint64, entSize int, relative bool, base uint64, limit int) int {
	if s.refs == nil {
		s.refs = make(map[uint64]bool)
		for i := range bd.insts {
			in := &bd.insts[i]
			if in.RIPRel {
				s.refs[in.RIPTarget] = true
			}
			for _, a := range in.Raw.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Disp > 0 {
					s.refs[uint64(m.Disp)] = true
				}
			}
		}
	}
	if limit <= 0 || limit > maxUnguarded {
		limit = maxUnguarded
	}
	pie := bd.b.Kind != KindExec
	n := 0
	for ; n < limit; n++ {
		at := table + uint64(n*entSize)
		if n > 0 && (s.refs[at] || bd.b.referenced(at)) {
			break
		}
		if !relative && pie && !bd.b.IsRelocated(at) {
			break
		}
		t, ok := bd.tableTarget(table, n, entSize, relative, base)
		if !ok || bd.rangeOf(t) < 0 {
			break
		}
	}
	return n
}
