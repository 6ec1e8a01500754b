package cfg

import (
	"slices"

	"github.com/blpp/blpp/cfg/x86"
	"golang.org/x/arch/x86/x86asm"
)

// Computed gotos whose targets live in the program's data (decision
// 169). A direct-threaded interpreter keeps each instruction's handler
// address in the instruction itself: PHP's hybrid VM jumps through
// opline->handler (jmp *(%r15)), Ruby's through the word at the VM's
// program counter. The address was copied from a table of the
// function's labels (&&label in GNU C) when the code was compiled, so no
// slice of the jump reaches a table, and the procedure used to stay out
// whole: the interpreter's hottest function.
//
// In a PIE or shared object every code address stored in data carries
// an R_X86_64_RELATIVE relocation, so the labels whose addresses the
// program keeps are the relocations' values inside the procedure (its
// entries aside). GNU C allows a computed goto to reach only labels of
// its own function. A jump is taken for one when its frame is still set
// up (an indirect tail call has torn it down), its target is a word
// loaded from memory with no arithmetic on it (an offset added to a
// label's address, as OCaml's interpreter does, names targets no
// relocation gives), and the procedure has such labels. Then:
//
//   - every label is decoded as code, and gets an EdgeResume from the
//     entry block: a path starts there, and the rewriter puts a jump at
//     the label's original address to code that sets the path register
//     and goes on in the label's copy, so a jump to the original address
//     (the only kind the program's data holds) lands in the new code;
//   - the jump gets an EdgeGoto to Exit: a path ends there, without
//     ending the activation, and the jump itself is kept as it is.
//
// The pair stands for every edge from the jump to a label (thousands of
// jumps times thousands of labels in PHP's VM) in two edges per jump
// and label, as decision 134's shared path ends do for a table's
// replicated jumps; block and path counts stay exact, and the edge from
// a jump to its label is not counted (the next path's first block says
// where it went).

// relocTargets returns the values of the binary's R_X86_64_RELATIVE
// relocations that lie in executable sections, sorted.
func (b *Binary) relocTargets() addrSet {
	b.relTargetsOnce.Do(func() {
		var a []uint64
		for _, v := range b.relative {
			if s := b.section(v); s != nil && s.Exec {
				a = append(a, v)
			}
		}
		b.relTargets = newAddrSet(a)
	})
	return b.relTargets
}

// gotoLabels returns the addresses inside the procedure that relocated
// data points to, its entries aside, in address order.
func (bd *builder) gotoLabels() []uint64 {
	if bd.labels != nil {
		return bd.labels
	}
	bd.labels = []uint64{}
	set := bd.b.relocTargets()
	for _, r := range bd.ranges {
		i, _ := slices.BinarySearch(set, r.Addr)
		for ; i < len(set) && set[i] < r.End(); i++ {
			if a := set[i]; a != bd.f.Addr && !slices.Contains(bd.f.Entries, a) {
				bd.labels = append(bd.labels, a)
			}
		}
	}
	slices.Sort(bd.labels)
	return bd.labels
}

// computedGoto takes the indirect jump insts[i], whose frame is still
// set up and whose target the slice evaluated to v, for a computed goto
// when the procedure has labels and the target is a word loaded from
// memory (loadedTarget) or such a word added to one of the labels
// (labelOffset): the labels are queued for decoding (once), and the
// jump is marked.
func (bd *builder) computedGoto(s *slicer, i int, v sym) bool {
	labels := bd.gotoLabels()
	if len(labels) == 0 || !s.loadedTarget(i) && !bd.labelOffset(v) {
		return false
	}
	if bd.gotos == nil {
		bd.gotos = map[uint64]bool{}
	}
	bd.gotos[bd.insts[i].Addr] = true
	if !bd.labelsQueued {
		bd.labelsQueued = true
		for _, l := range labels {
			bd.setLeader(l)
			bd.work = append(bd.work, l)
		}
	}
	return true
}

// resumeEdges adds an EdgeResume from the entry block to each label a
// computed goto may reach. A label that is a case of one of the
// procedure's jump tables is left out: the table's copy already leads
// there. Each label needs room for the 5-byte jump at its original
// address (after an endbr64 there, decision 95) that no other label or
// entry shares.
func (bd *builder) resumeEdges(blockOf func(uint64) (BlockID, bool)) {
	g := bd.g
	if len(bd.gotos) == 0 || g.Reason != ReasonOK {
		return
	}
	cases := map[uint64]bool{}
	for _, jt := range bd.tables {
		for _, t := range jt.Targets {
			cases[t] = true
		}
	}
	var labels []uint64
	for _, l := range bd.labels {
		if !cases[l] {
			labels = append(labels, l)
		}
	}
	bd.resumed = labels
	bd.labelEdges(labels, EdgeResume, "the label a computed goto may reach", blockOf)
}

// labelEdges adds an edge of kind from the entry block to each of
// labels (what names them in a refusal), each with room for the jump
// at its original address that no entry or other label shares.
func (bd *builder) labelEdges(labels []uint64, kind EdgeKind, what string, blockOf func(uint64) (BlockID, bool)) {
	g := bd.g
	starts := append(append(append([]uint64{bd.f.Addr}, bd.f.Entries...), bd.resumed...), bd.receivers...)
	slices.Sort(starts)
	for _, l := range labels {
		if !bd.roomAt(l, starts) {
			g.fail(ReasonUnresolvedIndirectJump, l, "no room for a 5-byte jump at %s", what)
			return
		}
		to, ok := blockOf(l)
		if !ok {
			g.fail(ReasonBadDecode, l, "%s was not decoded", what)
			return
		}
		g.appendEdge(Edge{From: Entry, To: to, Kind: kind})
	}
}

// labelOffset reports whether the target v is a word loaded from memory
// plus the address of one of the procedure's labels. OCaml's bytecode
// interpreter threads its code so: each instruction holds its handler's
// address less the first handler's (computed at load time from a table
// of the labels in data, which carries the relocations), and every
// handler ends with goto *(Jumptbl_base + *pc++), the base taken by a
// rip-relative lea. The rewritten lea still yields the base's original
// address, so the sum is a label's original address, where the label's
// resume jump waits. A base that is not itself a relocated label (GCC's
// idiom of constant differences between labels, which no relocation
// names) leaves the jump unresolved. The offset may be any value the
// slice cannot follow (a call's result, as after OCaml's debugger
// hook), but it is added unscaled.
func (bd *builder) labelOffset(v sym) bool {
	var base uint64
	switch {
	case v.kind == symAdd && v.a.kind == symLoad && v.b.kind == symLinear && !v.b.hasVar:
		base = v.b.k
	case v.kind == symLinear && v.hasVar && v.scale == 1:
		// An offset the slice cannot follow: OCaml's debugger hook
		// returns the instruction it had replaced.
		base = v.k
	default:
		return false
	}
	_, found := slices.BinarySearch(bd.gotoLabels(), base)
	return found
}

// loadedTarget reports whether the indirect jump insts[i] goes to a word
// read from memory as it is: jmp *mem, or jmp *%r where every
// definition of %r that reaches the jump (through one join at most) is
// mov mem,%r, or, at a join where at least one is, a copy of another
// register (copies64). An address computed with arithmetic (a label's
// address plus an offset) is not.
func (s *slicer) loadedTarget(i int) bool {
	op := &s.bd.insts[i].Args[0]
	switch op.Kind {
	case x86.ArgMem:
		return true
	case x86.ArgReg:
	default:
		return false
	}
	fam := regFamily(op.Reg)
	d, j := s.findDefJoin(i, fam)
	if d >= 0 {
		return s.loads64(d, fam)
	}
	if j < 0 {
		return false
	}
	ps := s.preds(j)
	if len(ps) == 0 || len(ps) > 1<<10 {
		return false
	}
	loads := 0
	for _, p := range ps {
		in := &s.bd.insts[p]
		if !writesReg(in, fam) && !implicitWrites(in).Has(fam) {
			if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
				return false
			}
			if p = s.findDef(p, fam); p < 0 {
				return false
			}
		}
		switch {
		case s.loads64(p, fam):
			loads++
		case !copies64(&s.bd.insts[p], fam):
			return false
		}
	}
	return loads > 0
}

// copies64 reports whether in is mov %r2,%r with %r the 64-bit register
// of family fam and %r2 another 64-bit register. At a dispatch that
// gcc's tail merging shared between handlers, one handler may hand over
// an address it loaded long before (SWI-Prolog's VM keeps one in %rbx
// across calls); the other handlers' loads say what the jump is.
func copies64(in *x86.Info, fam int) bool {
	if in.Op != x86asm.MOV {
		return false
	}
	d, ok1 := in.Args[0].AsReg()
	r, ok2 := in.Args[1].AsReg()
	return ok1 && ok2 && d >= x86asm.RAX && d <= x86asm.R15 && regFamily(d) == fam && r >= x86asm.RAX && r <= x86asm.R15
}

// loads64 reports whether insts[d] is mov mem,%r with %r the 64-bit
// register of family fam.
func (s *slicer) loads64(d, fam int) bool {
	in := &s.bd.insts[d]
	if in.Op != x86asm.MOV || in.Args[1].Kind != x86.ArgMem {
		return false
	}
	r, ok := in.Args[0].AsReg()
	return ok && r >= x86asm.RAX && r <= x86asm.R15 && regFamily(r) == fam
}

// Receivers of __builtin_setjmp (decision 169). GCC's built-in setjmp,
// which Ruby's VM uses for every tag it pushes, is inline code: it
// stores the frame pointer, the address of a label of the function (the
// receiver) and %rsp into a buffer, and __builtin_longjmp, in another
// function, reloads them and jumps to the label's original address. No
// instruction of the function reaches the receiver; the label is named
// only by a lea. It gets an EdgeReceiver from the entry block and, like
// a computed goto's label, a jump at its original address, to code that
// does what a setjmp's second return does (decisions 24 and 112): the
// runtime unwinds the activations the longjmp left and starts a path at
// the receiver.

// receiverWindow bounds how far after a lea of the label its store is
// looked for.
const receiverWindow = 12

// findReceivers queues for decoding the receivers of the procedure's
// __builtin_setjmp: in a procedure that stores %rsp to memory, a label
// inside it whose address is stored, taken by a rip-relative lea (a PIE:
// the store follows in straight-line code) or as an immediate (mov
// $label,mem: gcc without PIE). It reports whether it queued any.
func (bd *builder) findReceivers() bool {
	storesSP := false
	for i := range bd.insts {
		in := &bd.insts[i]
		if in.Op == x86asm.MOV && in.Args[0].Kind == x86.ArgMem {
			if r, ok := in.Args[1].AsReg(); ok && r == x86asm.RSP {
				storesSP = true
				break
			}
		}
	}
	if !storesSP {
		return false
	}
	queued := false
	for i := range bd.insts {
		in := &bd.insts[i]
		var l uint64
		switch {
		case in.Op == x86asm.LEA && in.RIPRel:
			if bd.storedAfter(i) {
				l = in.RIPTarget
			}
		case in.Op == x86asm.MOV && in.Args[0].Kind == x86.ArgMem && in.Args[1].Kind == x86.ArgImm:
			if v := in.Args[1].Val; v > 0 && bd.memBytes(i) == 8 { // movq $imm32,mem
				l = uint64(v)
			}
		}
		if l == 0 || bd.rangeOf(l) < 0 || l == bd.f.Addr || slices.Contains(bd.f.Entries, l) || slices.Contains(bd.receivers, l) {
			continue
		}
		bd.receivers = append(bd.receivers, l)
		bd.setLeader(l)
		bd.work = append(bd.work, l)
		queued = true
	}
	return queued
}

// storedAfter reports whether the register the instruction insts[i]
// writes is stored to memory by one of the next receiverWindow
// instructions, in straight-line code, before anything writes it again.
func (bd *builder) storedAfter(i int) bool {
	dst, ok := bd.insts[i].Args[0].AsReg()
	if !ok || dst < x86asm.RAX || dst > x86asm.R15 {
		return false
	}
	fam := regFamily(dst)
	for k, j := 0, i; k < receiverWindow; k++ {
		next := bd.insts[j].Addr + uint64(bd.insts[j].Len)
		if j = bd.instAt(next); j < 0 {
			return false
		}
		n := &bd.insts[j]
		if n.Kind != x86.Other {
			return false
		}
		if n.Op == x86asm.MOV && n.Args[0].Kind == x86.ArgMem {
			if r, ok := n.Args[1].AsReg(); ok && r >= x86asm.RAX && r <= x86asm.R15 && regFamily(r) == fam {
				return true
			}
		}
		if writesReg(n, fam) {
			return false
		}
	}
	return false
}

// receiverEdges adds an EdgeReceiver from the entry block to each
// receiver, with the room check of resumeEdges.
func (bd *builder) receiverEdges(blockOf func(uint64) (BlockID, bool)) {
	g := bd.g
	if len(bd.receivers) == 0 || g.Reason != ReasonOK {
		return
	}
	bd.labelEdges(bd.receivers, EdgeReceiver, "the receiver of __builtin_setjmp", blockOf)
}

// roomAt reports whether the jump at label l's original address (after
// an endbr64 there) fits in l's range without reaching the next of
// starts (sorted: the entries and labels that get such jumps).
func (bd *builder) roomAt(l uint64, starts []uint64) bool {
	end := l + 5
	if i := bd.instAt(l); i >= 0 && bd.insts[i].Endbr {
		end += 4
	}
	i, _ := slices.BinarySearch(starts, l)
	for i < len(starts) && starts[i] == l {
		i++
	}
	return !(i < len(starts) && starts[i] < end) && bd.rangeOf(end-1) == bd.rangeOf(l)
}

// hasGotos reports whether the graph has a computed goto's edge.
func (g *Graph) hasGotos() bool {
	for _, ed := range g.Edges {
		if ed.Kind == EdgeGoto {
			return true
		}
	}
	return false
}
