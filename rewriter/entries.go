package rewriter

import (
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/enc"
)

// The other entries of a procedure joined from several that share code
// (cfg.Function.Entries, decision 85). Each is redirected like the
// entry: a 5-byte jump at its original address to code that starts an
// activation exactly as the entry does (enterInline), then sets the path
// register to the value of the pseudo edge ENTRY→w of its EdgeEntry and
// jumps to its block's copy. Calls from instrumented code go straight
// to that code (gen.entries).

// otherEntry is one such entry of a function's copy.
type otherEntry struct {
	addr  uint64
	edge  cfg.EdgeID
	label enc.Label
	// island is where a label with room for a short jump only has its
	// jump to the resume code (cfg.Graph.Islands); 0 for none.
	island uint64
}

// planEntries labels the function's other entries and makes them
// targets of calls and jumps.
func (fp *funcPlan) planEntries() {
	gr := fp.f.Graph
	for i, ed := range gr.Edges {
		if ed.Kind == cfg.EdgeResume || ed.Kind == cfg.EdgeReceiver {
			a := gr.Blocks[ed.To].Addr
			fp.resumes = append(fp.resumes, otherEntry{addr: a, edge: cfg.EdgeID(i), label: fp.g.buf.NewLabel(), island: gr.Islands[a]})
			continue
		}
		if ed.Kind != cfg.EdgeEntry {
			continue
		}
		x := otherEntry{addr: gr.Blocks[ed.To].Addr, edge: cfg.EdgeID(i), label: fp.g.buf.NewLabel()}
		fp.others = append(fp.others, x)
		fp.g.entries[x.addr] = x.label
	}
}

// otherEntries queues the code of the other entries, out of line, and
// that of the labels computed gotos reach (resume).
func (fg *funcGen) otherEntries() {
	for _, x := range fg.resumes {
		fg.addCold(func() { fg.resume(x) })
	}
	for _, x := range fg.others {
		fg.addCold(func() { fg.otherEntry(x, x.label, false) })
		if l, ok := fg.g.tailEntries[x.addr]; ok {
			fg.addCold(func() { fg.otherEntry(x, l, true) })
		}
	}
}

// otherEntry emits other entry x at label l: the entry code (its tail
// variant with tail), the path register's start value, and a jump to the
// entry's block.
func (fg *funcGen) otherEntry(x otherEntry, l enc.Label, tail bool) {
	b := fg.g.buf
	b.Bind(l)
	fg.mark(x.addr, false)
	b.SetSP(0)
	if !tail {
		fg.g.endbrAt(x.addr) // decision 95; a tail variant is reached by direct jumps only
	}
	fg.entryBlock = fg.f.Graph.Edges[x.edge].To
	fg.enterInline(tail)
	fg.entryBlock = 0
	fg.startPath(x.edge)
}

// startPath sets the path register to EntryInc of the path-breaking edge
// e, flags untouched, and jumps to e's block.
func (fg *funcGen) startPath(e cfg.EdgeID) {
	b := fg.g.buf
	v := int32(fg.num.EntryInc[e])
	if fg.hasPreg {
		b.MovRegImm(fg.preg, v) // sign-extended
	} else {
		b.MovGS64Imm(fg.g.stubs.OffR, v)
	}
	b.JmpRel32(enc.LabelTarget(fg.blocks[fg.f.Graph.Edges[e].To]))
}

// resume emits the code a computed goto reaches through the jump at
// label x's original address (decision 169): the activation goes on, so
// only the path register starts again, at the value of the pseudo edge
// ENTRY→w of the label's EdgeResume, and control goes on in the label's
// block. The unwind rules are the label's.
func (fg *funcGen) resume(x otherEntry) {
	b := fg.g.buf
	b.Bind(x.label)
	fg.mark(x.addr, false)
	b.SetSP(0)
	if fg.f.Graph.Edges[x.edge].Kind == cfg.EdgeReceiver {
		fg.nonLocalArrival(int32(fg.num.EntryInc[x.edge]), fg.blocks[fg.f.Graph.Edges[x.edge].To])
		return
	}
	fg.startPath(x.edge)
}
