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
	if !ok || bd.rangeOf(t) < 0 || bd.f.IsEntry(t) {
		return false // an entry is entered by a tail call, not a branch
	}
	bd.tables[in.Addr] = &JumpTable{Jump: in.Addr, Entries: 1, Const: true, Targets: []uint64{t}}
	bd.setLeader(t)
	bd.work = append(bd.work, t)
	return true
}
