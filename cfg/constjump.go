package cfg

import "golang.org/x/arch/x86/x86asm"

// constJump recognises an indirect jump through a register that holds
// the same address inside the procedure on every path that reaches it
// (the forward data-flow of regconst.go proves it, from lea disp(%rip)
// or mov $imm): glibc's vfprintf loads the label of its unknown-format
// case before a range check whose failing side jumps through the
// register. Such a jump is a direct jump in disguise; it becomes a
// one-entry JumpTable with Const set, whose copy jumps to the target's
// new code (decision 98). The register keeps the original address,
// which is what the original has in it at the target too.
func (bd *builder) constJump(s *slicer, i int) bool {
	in := &bd.insts[i]
	r, ok := in.Args[0].AsReg()
	if !ok || r < x86asm.RAX || r > x86asm.R15 {
		return false
	}
	t, ok := s.constAt(i, regFamily(r))
	return ok && bd.constTarget(in.Addr, t)
}

// constTarget makes the jump at addr a one-entry Const table to t when t
// is inside the procedure and not one of its entries (an entry is
// entered by a tail call, not a branch).
func (bd *builder) constTarget(addr, t uint64) bool {
	if bd.rangeOf(t) < 0 || bd.f.IsEntry(t) {
		return false
	}
	bd.tables[addr] = &JumpTable{Jump: addr, Entries: 1, Const: true, Targets: []uint64{t}}
	bd.setLeader(t)
	bd.work = append(bd.work, t)
	return true
}

// constSlotJump recognises an indirect jump through a fixed word of
// read-only data that holds an address inside the procedure: gcc, where
// it knows a switch's index on one path, jumps through that case's entry
// of the jump table without indexing it (cc1plus's grokdeclarator:
// jmp *0x1ba2fd0, one entry of a table in .rodata). v is the value the
// jump takes, a load from a constant address, as the jump's own memory
// operand or as what its register was loaded with. The word cannot
// change (its section is neither writable nor a GOT), so the jump is
// direct: a one-entry Const table, as constJump makes. The register form
// keeps the original address, as there.
func (bd *builder) constSlotJump(i int, v sym) bool {
	if v.kind != symLoad || v.size != 8 || v.addr == nil || v.addr.kind != symLinear || v.addr.hasVar {
		return false
	}
	s := bd.b.section(v.addr.k)
	if s == nil || s.Write || s.Exec {
		return false
	}
	if _, isSlot := bd.b.slotSym[v.addr.k]; isSlot {
		return false
	}
	t, ok := bd.b.Pointer(v.addr.k)
	return ok && bd.constTarget(bd.insts[i].Addr, t)
}
