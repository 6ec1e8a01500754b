package cfg

import (
	"encoding/binary"
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
	for _, a := range bd.offsetLabels() {
		if a != bd.f.Addr && !slices.Contains(bd.f.Entries, a) {
			bd.labels = append(bd.labels, a)
		}
	}
	slices.Sort(bd.labels)
	bd.labels = slices.Compact(bd.labels)
	// A label that is one int3 with the next label right after (LuaJIT's
	// handler for the instructions it never dispatches) has no room for
	// a jump: its original breakpoint stays and traps as before.
	kept := bd.labels[:0]
	for i, l := range bd.labels {
		if c := bd.b.Code(l); i+1 < len(bd.labels) && bd.labels[i+1] == l+1 && len(c) > 0 && c[0] == 0xcc {
			continue
		}
		kept = append(kept, l)
	}
	bd.labels = kept
	return bd.labels
}

// minOffsetTable is the fewest distinct entries of an offset table
// (offsetLabels).
const minOffsetTable = 8

// offsetLabels returns the labels of a procedure whose program builds
// its dispatch table at run time from offsets: LuaJIT's interpreter, a
// block of hand-written assembly, jumps through a table in its state
// that lj_dispatch_init fills with the start of the block plus each
// entry of lj_bc_ofs, a table of 16-bit offsets in read-only data. No
// relocation names those targets. A start of one of the procedure's
// ranges that some instruction of the program refers to (lea of the
// block's start) is a base; read-only data that some instruction refers
// to is a table of that base when its 16- or 32-bit entries in a row,
// with minOffsetTable distinct values at least, each added to the base,
// start an instruction of the procedure's linear decoding, and at least
// half of those values one no instruction falls into (a handler starts
// after the last one's dispatch jump). Each such sum, up to the first
// entry that does not start an instruction, is a label; so is every
// address in the procedure that the program refers to (LuaJIT's hooks,
// which it stores in the same table), once a table is found. In a
// procedure of 1 MB, where any 16-bit value lands inside, random data
// passes with a chance near 10^-7 (a start one time in four, one in ten
// of those after a jump); runs of zeros, which name the base alone, do
// not count (PHP's execute_ex met false tables of both kinds).
func (bd *builder) offsetLabels() []uint64 {
	refs := bd.b.sweepRefs().set
	var bases []uint64
	for _, r := range bd.ranges {
		if refs.has(r.Addr) {
			bases = append(bases, r.Addr)
		}
	}
	if len(bases) == 0 {
		return nil
	}
	// starts: 1 for an instruction, 2 for one no instruction falls
	// into (after a jump, a return or a trap, or a range's first).
	starts := map[uint64]uint8{}
	d := x86.NewDecoder()
	var in x86.Info
	var taken []uint64
	for _, r := range bd.ranges {
		code := bd.b.Code(r.Addr)
		if uint64(len(code)) < r.Size {
			return nil
		}
		orphan := true
		for off := uint64(0); off < r.Size; {
			starts[r.Addr+off] = 1
			if orphan {
				starts[r.Addr+off] = 2
			}
			if d.DecodeInfoTo(&in, code[off:r.Size], r.Addr+off) != nil {
				return nil // not all code: no labels from guesses
			}
			k := in.Kind
			orphan = k == x86.Jmp || k == x86.JmpIndirect || k == x86.Ret || k == x86.Halt
			off += uint64(in.Len)
		}
		i, _ := slices.BinarySearch(refs, r.Addr)
		for ; i < len(refs) && refs[i] < r.End(); i++ {
			taken = append(taken, refs[i])
		}
	}
	entry := func(t uint64, k, size int) (uint64, bool) {
		e := bd.b.Bytes(t+uint64(k*size), size)
		if e == nil {
			return 0, false
		}
		if size == 2 {
			return uint64(binary.LittleEndian.Uint16(e)), true
		}
		return uint64(binary.LittleEndian.Uint32(e)), true
	}
	var labels []uint64
	seen := map[uint64]bool{}
	for _, t := range refs {
		if s := bd.b.section(t); s == nil || s.Exec || s.Write {
			continue
		}
		for _, size := range []int{2, 4} {
			for _, base := range bases {
				// Most data fails at its first entry: no map then.
				if v, ok := entry(t, 0, size); !ok || starts[base+v] == 0 {
					continue
				}
				n, orphans := 0, 0
				clear(seen)
				for v, ok := entry(t, 0, size); ok && starts[base+v] > 0; v, ok = entry(t, n, size) {
					n++
					if !seen[v] {
						seen[v] = true
						if starts[base+v] == 2 {
							orphans++
						}
					}
				}
				// Distinct entries: zeros fill tables of anything.
				if len(seen) < minOffsetTable || 2*orphans < len(seen) {
					continue
				}
				for k := 0; k < n; k++ {
					v, _ := entry(t, k, size)
					labels = append(labels, base+v)
				}
			}
		}
	}
	if len(labels) == 0 {
		return nil
	}
	bd.offsetDispatch = true
	return append(labels, taken...)
}

// computedGoto takes the indirect jump insts[i], whose frame is still
// set up and whose target the slice evaluated to v, for a computed goto
// when the procedure has labels and the target is a word loaded from
// memory (loadedTarget) or such a word added to one of the labels
// (labelOffset): the labels are queued for decoding (once), and the
// jump is marked.
func (bd *builder) computedGoto(s *slicer, i int, v sym) bool {
	labels := bd.gotoLabels()
	if len(labels) == 0 || !s.loadedTarget(i) && !bd.labelOffset(v) && !bd.offsetDispatch {
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
	g.offsetDispatch = bd.offsetDispatch
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
// at its original address that no entry or other label shares: 5 bytes,
// or 2 for a short jump to an island (islands) where the next label
// comes sooner, as between some of LuaJIT's handlers.
func (bd *builder) labelEdges(labels []uint64, kind EdgeKind, what string, blockOf func(uint64) (BlockID, bool)) {
	g := bd.g
	starts := append(append(append([]uint64{bd.f.Addr}, bd.f.Entries...), bd.resumed...), bd.receivers...)
	slices.Sort(starts)
	var short []uint64
	for _, l := range labels {
		if !bd.roomAt(l, starts, 5) {
			if kind != EdgeResume || !bd.roomAt(l, starts, 2) {
				g.fail(ReasonUnresolvedIndirectJump, l, "no room for a 5-byte jump at %s", what)
				return
			}
			short = append(short, l)
		}
		to, ok := blockOf(l)
		if !ok {
			g.fail(ReasonBadDecode, l, "%s was not decoded", what)
			return
		}
		g.appendEdge(Edge{From: Entry, To: to, Kind: kind})
	}
	if len(short) > 0 && !bd.islands(short, starts) {
		g.fail(ReasonUnresolvedIndirectJump, short[0], "no room for a 5-byte jump at %s, nor an island a short jump away", what)
	}
}

// islands finds each of the labels in short an island (Graph.Islands):
// 5 bytes of the procedure's original code within a short jump's reach
// of the jump at the label, outside the bytes every start (an entry or
// label, sorted) uses for its jump and outside the other islands. The
// original code of an instrumented procedure runs only at its starts,
// so any other bytes of it are free.
func (bd *builder) islands(short, starts []uint64) bool {
	type span struct{ from, to uint64 }
	var used []span
	for _, s := range starts {
		n := uint64(5)
		if slices.Contains(short, s) {
			n = 2
		}
		if i := bd.instAt(s); i >= 0 && bd.insts[i].Endbr {
			n += 4
		}
		used = append(used, span{s, s + n})
	}
	free := func(a uint64) bool {
		if r := bd.rangeOf(a); r < 0 || r != bd.rangeOf(a+4) {
			return false
		}
		for _, u := range used {
			if a < u.to && u.from < a+5 {
				return false
			}
		}
		return true
	}
	bd.g.Islands = map[uint64]uint64{}
	for _, l := range short {
		at := l
		if i := bd.instAt(l); i >= 0 && bd.insts[i].Endbr {
			at += 4
		}
		next := at + 2 // a short jump's displacement counts from here
		found := false
		for d := int64(-128); d <= 127 && !found; d++ {
			a := uint64(int64(next) + d)
			if free(a) {
				bd.g.Islands[l] = a
				used = append(used, span{a, a + 5})
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
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

// roomAt reports whether an n-byte jump at label l's original address
// (after an endbr64 there) fits in l's range without reaching the next
// of starts (sorted: the entries and labels that get such jumps).
func (bd *builder) roomAt(l uint64, starts []uint64, n uint64) bool {
	end := l + n
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
