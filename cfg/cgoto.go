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
// set up, for a computed goto when its target is a word loaded from
// memory (loadedTarget) and the procedure has labels: the labels are
// queued for decoding (once), and the jump is marked.
func (bd *builder) computedGoto(s *slicer, i int) bool {
	if !s.loadedTarget(i) {
		return false
	}
	labels := bd.gotoLabels()
	if len(labels) == 0 {
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
	if len(bd.gotos) == 0 {
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
	starts := append(append([]uint64{bd.f.Addr}, bd.f.Entries...), labels...)
	slices.Sort(starts)
	for _, l := range labels {
		to, ok := blockOf(l)
		if !ok {
			g.fail(ReasonBadDecode, l, "the label a computed goto may reach was not decoded")
			return
		}
		end := l + 5
		if code := bd.b.Code(l); len(code) >= 4 && isEndbr64(code) {
			end += 4
		}
		i, _ := slices.BinarySearch(starts, l)
		if i+1 < len(starts) && starts[i+1] < end || bd.rangeOf(end-1) != bd.rangeOf(l) {
			g.fail(ReasonUnresolvedIndirectJump, l, "no room for a 5-byte jump at the label a computed goto may reach")
			return
		}
		g.appendEdge(Edge{From: Entry, To: to, Kind: EdgeResume})
	}
}

// isEndbr64 reports whether code starts with endbr64 (f3 0f 1e fa).
func isEndbr64(code []byte) bool {
	return len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa
}

// loadedTarget reports whether the indirect jump insts[i] goes to a word
// read from memory as it is: jmp *mem, or jmp *%r where every
// definition of %r that reaches the jump (through one join at most) is
// mov mem,%r. An address computed with arithmetic (a label's address
// plus an offset) is not.
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
		if !s.loads64(p, fam) {
			return false
		}
	}
	return true
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
