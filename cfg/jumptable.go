package cfg

import (
	"encoding/binary"
	"slices"

	"github.com/blpp/blpp/cfg/x86"

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

// resolveIndirect recovers the jump table of the indirect jump insts[i],
// or classifies it as an indirect tail call, or refuses the procedure.
func (bd *builder) resolveIndirect(s *slicer, i int) {
	in := &bd.insts[i]
	var v sym
	switch op := &in.Args[0]; op.Kind {
	case x86.ArgMem:
		addr := s.memAddr(i, op.Mem(), 0)
		if addr.kind != symLinear {
			break
		}
		v = sym{kind: symLoad, addr: &addr, size: 8, at: i}
	case x86.ArgReg:
		v = s.evalReg(i, regFamily(op.Reg), 0)
		if _, ok := s.tableAt(v); !ok {
			// Replicated dispatch may share one jump between handlers
			// that each load the entry: a table when every one of them
			// reads the same table.
			if vs := s.evalPreds(i, regFamily(op.Reg)); len(vs) > 0 {
				if sh, ok := s.tableAt(vs[0]); ok {
					same := true
					for _, w := range vs[1:] {
						wsh, ok := s.tableAt(w)
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
	if _, ok := s.tableAt(v); ok {
		bd.resolveTable(s, i, []sym{v})
		return
	}
	if bd.constJump(s, i) || bd.constSlotJump(i, v) {
		return
	}
	// An address inside the procedure plus a scaled index is a jump to
	// one of its own code slots, not a tail call, even where its frame is
	// gone: libffi's ffi_call_unix64 moves its return address, runs the
	// callee on another stack and jumps to one of its 8-byte return
	// handlers (decision 121). No table to copy: unresolved.
	if v.kind == symLinear && v.hasVar && v.scale > 1 && bd.rangeOf(v.k) >= 0 {
		bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump to %#x plus a scaled index, code slots inside the function", v.k)
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
		} else if !bd.computedGoto(s, i, v) {
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
		old, wasTail, wasGoto := bd.tables[in.Addr], bd.indTail[in.Addr], bd.gotos[in.Addr]
		delete(bd.indTail, in.Addr)
		delete(bd.gotos, in.Addr)
		work := len(bd.work)
		bd.resolveIndirect(s, i)
		bd.work = bd.work[:work]
		if bd.g.Reason != ReasonOK {
			return
		}
		now := bd.tables[in.Addr]
		same := wasTail == bd.indTail[in.Addr] && wasGoto == bd.gotos[in.Addr] && (old == nil) == (now == nil)
		if same && old != nil {
			// An unguarded table may end earlier now that more of the
			// code's references are known; its extra entries led into
			// the procedure and cost only unused edges. Keep it. So
			// may a guarded one whose guard no longer dominates the
			// jump (code found later joins in between): the table is
			// now bounded as every unguarded one is (decision 98).
			// A dispatch jump that handlers share may have more of
			// them now, each loading from the same table (emacs's
			// exec_byte_code: a third load found through a later
			// table); the copy must re-aim every load (decision 170).
			same = old.Table == now.Table && old.Entries >= now.Entries && (old.Guarded == now.Guarded || !now.Guarded) &&
				slices.Equal(old.Targets[:now.Entries], now.Targets) && subsetOf(old.Loads, now.Loads)
			old.Loads = now.Loads
			bd.tables[in.Addr] = old
		}
		if !same {
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "indirect jump resolves differently once the whole function is decoded")
			return
		}
	}
}

// subsetOf reports whether every element of a is in b.
func subsetOf(a, b []uint64) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// shape is what a jump target says about its table.
type shape struct {
	table, base uint64
	entSize     int
	relative    bool
	load        int // the instruction reading the entry
	idx         int // the variable naming the index at the load
	// byteIndex: the index is the entry's byte offset, a multiple of 8
	// (jmp *T(%rdi) after and $0x38,%edi: gcc, without PIE, for a
	// switch over masked bits). Its bound counts bytes.
	byteIndex bool
}

// tableShape matches a jump target against the two table forms.
func tableShape(v sym) (shape, bool) {
	switch {
	case v.kind == symLoad && v.size == 8 && v.addr.hasVar && v.addr.scale == 8 && v.addr.k < 1<<63:
		return shape{table: v.addr.k, entSize: 8, load: v.at, idx: v.addr.varID}, true
	case v.kind == symAdd && v.a.size == 4 && v.a.addr.hasVar && v.a.addr.scale == 4 && v.a.addr.k < 1<<63:
		return shape{table: v.a.addr.k, base: v.b.k, entSize: 4, relative: true, load: v.a.at, idx: v.a.addr.varID}, true
	case v.kind == symLoad && v.size == 8 && v.addr.hasVar && v.addr.scale == 1 && v.addr.k < 1<<63:
		return shape{table: v.addr.k, entSize: 8, load: v.at, idx: v.addr.varID, byteIndex: true}, true
	}
	return shape{}, false
}

// tableAt is tableShape where the slicer can tell a table from a field
// of a pointer: a byte-offset index (shape.byteIndex) is an entry's
// offset only where an and with a multiple of 8 made it, the table is in
// read-only data, and the binary is not position-independent (whose
// tables are never read so: they would need absolute addresses in its
// text). jmp *0x18(%rax), a virtual tail call, is not a table.
func (s *slicer) tableAt(v sym) (shape, bool) {
	sh, ok := tableShape(v)
	if !ok || !sh.byteIndex {
		return sh, ok
	}
	if s.bd.b.Kind != KindExec {
		return sh, false
	}
	if sec := s.bd.b.section(sh.table); sec == nil || sec.Exec || sec.Write {
		return sh, false
	}
	def, _, _, _ := s.valueRoot(sh.idx)
	if def < 0 || def >= len(s.bd.insts) {
		return sh, false
	}
	raw := &s.bd.insts[def]
	imm, ok := raw.Args[1].AsImm()
	return sh, raw.Op == x86asm.AND && ok && imm > 0 && imm < 1<<16 && imm&7 == 0
}

// entries turns a bound on the index of a table of shape sh into a
// number of entries.
func (sh shape) entries(n int) int {
	if sh.byteIndex && n > 0 {
		return (n + 7) / 8
	}
	return n
}

// resolveTable records the table of the jump at insts[i], read by the
// loads of vs (one, or one per predecessor of a shared dispatch jump).
func (bd *builder) resolveTable(s *slicer, i int, vs []sym) {
	in := &bd.insts[i]
	sh, _ := tableShape(vs[0])
	table, base, entSize, relative := sh.table, sh.base, sh.entSize, sh.relative
	// An array of function pointers indexed by a masked or checked value
	// (ops[op & 3](a, b) as a tail call) looks like an absolute table whose
	// entries lie outside the procedure: an indirect tail call. Not where
	// the unwind rules say the frame is still set up: a switch whose
	// case 0 is in the unnamed .cold fragment (gcc_unreachable, in
	// hundreds of cc1's switches) is the procedure's own table, and
	// taken for a tail call its cases ran uncounted (decision 121).
	// Nor where another entry leads into the procedure's own code: a
	// frameless switch's case 0 in its .cold fragment (cc1plus's
	// leaf functions of that shape; decision 175).
	if !relative {
		if atTop, known := bd.b.returnAtTop(in.Addr); known && !atTop {
			// a table of this procedure: resolved below
		} else if p, ok := bd.b.Pointer(table); ok && bd.rangeOf(p) < 0 && !bd.leadsInside(s, i, vs, sh) {
			bd.indTail[in.Addr] = true
			return
		}
	}
	jt := &JumpTable{Jump: in.Addr, Table: table, EntrySize: entSize, Relative: relative, Base: base}
	n := 0
	if len(vs) == 1 {
		n = sh.entries(s.bound(i, sh.idx))
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
			r := vsh.entries(s.indexRange(vsh.idx))
			if r == 0 {
				limit = 0
				break
			}
			limit = max(limit, r)
		}
		jt.Entries = bd.extent(s, table, entSize, relative, base, limit)
		if jt.Entries < 0 {
			// Perhaps the entry leads into a stripped .cold fragment
			// of this function (php's zval_get_string_func): an
			// escape, which joinFragments joins, and the table then
			// goes on inside the joined procedure.
			for k := 0; k < maxUnguarded; k++ {
				t, ok := bd.tableTarget(table, k, entSize, relative, base)
				if !ok {
					break
				}
				if bd.rangeOf(t) < 0 && !bd.deadTarget(t) {
					bd.g.escape, bd.g.escapeTable = t, true
					bd.g.fail(ReasonEscapingJump, in.Addr, "jump table entry %d targets %#x, outside the function, and the table goes on", k, t)
					return
				}
			}
			bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table at %#x has no bounds check and an entry outside the function before entries inside it: its size is unknown", table)
			return
		}
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
			bd.g.fail(ReasonEscapingJump, in.Addr, "jump table entry %d at %#x is outside the file", k, table+uint64(k*entSize))
			return
		}
		if bd.rangeOf(t) < 0 {
			if bd.deadTarget(t) {
				jt.Dead = append(jt.Dead, k)
				jt.Targets = append(jt.Targets, t)
				continue
			}
			if bd.g.Reason == ReasonOK {
				bd.g.escape, bd.g.escapeTable = t, true // perhaps a stripped .cold fragment
				if !relative && entSize == 8 {
					for e := 0; e < jt.Entries; e++ {
						if u, ok := bd.tableTarget(table, e, entSize, relative, base); ok && u == t {
							bd.g.escapeWords++
						}
					}
				}
			}
			// An escaping jump: joinFragments joins the fragment.
			bd.g.fail(ReasonEscapingJump, in.Addr, "jump table entry %d targets %#x, outside the function", k, t)
			return
		}
		jt.Targets = append(jt.Targets, t)
	}
	if len(jt.Dead) == jt.Entries {
		bd.g.fail(ReasonUnresolvedIndirectJump, in.Addr, "jump table at %#x has no entry into the function", table)
		return
	}
	bd.tables[in.Addr] = jt
	for k, t := range jt.Targets {
		if !jt.IsDead(k) {
			bd.setLeader(t)
			bd.work = append(bd.work, t)
		}
	}
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
			op := in.Op
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
	gi := &s.bd.insts[g]
	switch ga := &gi.Args[0]; ga.Kind {
	case x86.ArgReg:
		a := ga.Reg
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
	case x86.ArgMem:
		a := ga.Mem()
		if idef >= len(s.bd.insts) {
			return false
		}
		if gi.Op != x86asm.CMP || a.Segment != 0 || a.Base == x86asm.RIP {
			return false
		}
		ld := &s.bd.insts[idef]
		src, ok := ld.Args[1].AsMem()
		if ld.Op != x86asm.MOV || !ok || src != a || bits > 8*s.bd.memBytes(g) {
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
			if _, ok := in.Args[0].AsMem(); ok || in.Kind != x86.Other && in.Kind != x86.Jcc {
				return false // a store, perhaps to the slot
			}
			if a.Base != 0 && writesReg(in, regFamily(a.Base)) || a.Index != 0 && writesReg(in, regFamily(a.Index)) {
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
		switch in.Op {
		case x86asm.CMP, x86asm.SUB:
			if imm, ok := in.Args[1].AsImm(); ok && imm >= 0 && imm < 1<<16 {
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
	if raw := &s.bd.insts[def%len(s.bd.insts)]; def < len(s.bd.insts) && raw.Op == x86asm.AND {
		if imm, ok := raw.Args[1].AsImm(); ok && imm >= 0 && imm < 1<<16 {
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

// leadsInside reports whether an entry of the absolute table of shape sh
// (the jump at insts[i], read by the loads of vs) leads into the
// procedure away from its entries: an array of function pointers holds
// entries only. It reads the entries the index's bound allows, or,
// without one, up to the first word that is not an address in code.
func (bd *builder) leadsInside(s *slicer, i int, vs []sym, sh shape) bool {
	n := 0
	if len(vs) == 1 {
		n = sh.entries(s.bound(i, sh.idx))
	}
	if n <= 0 || n > maxUnguarded {
		n = maxUnguarded
	}
	for k := 0; k < n; k++ {
		t, ok := bd.tableTarget(sh.table, k, 8, false, 0)
		if !ok || !bd.b.IsCode(t) {
			return false
		}
		if bd.rangeOf(t) >= 0 && !bd.f.IsEntry(t) {
			return true
		}
	}
	return false
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
			for j := range in.Args {
				if a := &in.Args[j]; a.Kind == x86.ArgMem && a.Base == 0 && a.Index == 0 && a.Val > 0 {
					s.refs[uint64(a.Val)] = true
				}
			}
		}
	}
	if limit <= 0 || limit > maxUnguarded {
		limit = maxUnguarded
	}
	pie := bd.b.Kind != KindExec
	live := 0 // entries up to the last one into the function
	for n := 0; n < limit; n++ {
		at := table + uint64(n*entSize)
		if n > 0 && (s.refs[at] || bd.b.referenced(at)) {
			break
		}
		if !relative && pie && !bd.b.IsRelocated(at) {
			break
		}
		t, ok := bd.tableTarget(table, n, entSize, relative, base)
		if ok && bd.rangeOf(t) < 0 && bd.deadTarget(t) {
			// An impossible case: the table goes on (decision 98).
			// Dead entries after the last live one are left out of the
			// copy; nothing reads them.
			continue
		}
		if !ok || bd.rangeOf(t) < 0 {
			// An entry outside the function ends the table, unless the
			// table plainly goes on after it: clang points the entries
			// of __builtin_unreachable cases at the padding after the
			// function. Copying only the entries before it would send
			// the later cases to the original code (or past the copy):
			// the function cannot be instrumented (-1).
			if n+1 < limit && bd.tableGoesOn(s, table, entSize, relative, base, n+1) {
				return -1
			}
			break
		}
		live = n + 1
	}
	return live
}

// tableGoesOn says whether entry k of an unguarded table looks like one
// more entry of it: not the start of other referenced data, covered by a
// relocation where the table's entries need one, and targeting the
// function or its end (a dead entry, decision 98).
func (bd *builder) tableGoesOn(s *slicer, table uint64, entSize int, relative bool, base uint64, k int) bool {
	at := table + uint64(k*entSize)
	if s.refs[at] || bd.b.referenced(at) {
		return false
	}
	if !relative && bd.b.Kind != KindExec && !bd.b.IsRelocated(at) {
		return false
	}
	t, ok := bd.tableTarget(table, k, entSize, relative, base)
	return ok && (bd.rangeOf(t) >= 0 || bd.deadTarget(t))
}
