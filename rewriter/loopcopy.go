package rewriter

import (
	"fmt"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Emission of loop copies [decision 58]: the second copy of a
// one-cycle loop, which counts its path once per iteration at its head
// (planned by planLoopCopies).

// emitLoopCopy writes the second copy of a one-cycle loop [decision 58].
// The first copy's backedge counts its path as any backedge does, sets
// the path register to EntryInc and jumps to the header's copy; the
// copy's backedge goes to top, which counts the path that edge ended
// (flags are dead there) and falls into the header's copy. The cycle's
// edges carry no code in the copy; an edge out of the loop sets the
// path register to its value at that block, then runs the first copy's
// code for the edge.
func (fg *funcGen) emitLoopCopy(lc *loopCopy) {
	b, gr := fg.g.buf, fg.f.Graph
	type exit struct {
		label enc.Label
		from  cfg.BlockID
		edge  cfg.EdgeID
	}
	var exits []exit
	fail := func(err error) {
		if fg.coldErr == nil {
			fg.coldErr = err
		}
	}
	if !fg.entered[lc] {
		fail(fmt.Errorf("%#x: loop copy: the first copy's backedge does not lead to it", gr.Blocks[lc.header].Addr))
		return
	}
	// to is where cycle edge e leads in the copy.
	to := func(e cfg.EdgeID) enc.Label {
		if e == lc.back {
			return lc.top
		}
		return lc.label[gr.Edges[e].To]
	}
	pk := fg.beginKind(kindPadding)
	alignTo(b, 64, 63)
	fg.endKind(pk)
	for i, id := range lc.blocks {
		blk := &gr.Blocks[id]
		if id == lc.header {
			fg.mark(blk.Addr, false)
			b.SetSP(0)
			b.Bind(lc.top)
			pk := fg.beginKind(kindPathEnd)
			fg.countCopy(lc)
			fg.endKind(pk)
		}
		b.Bind(lc.label[id])
		code := fg.g.b.Code(blk.Addr)
		var last x86.Info
		for a := blk.Addr; a < blk.End; {
			var in x86.Info // code generation reads Info alone
			if err := fg.dec.DecodeInfoTo(&in, code[a-blk.Addr:blk.End-blk.Addr], a); err != nil {
				fail(err)
				return
			}
			fg.mark(a, true)
			if a+uint64(in.Len) < blk.End || in.Kind == x86.Other {
				if err := fg.copyInst(&in, code[a-blk.Addr:]); err != nil {
					fail(err)
					return
				}
			}
			last = in
			a += uint64(in.Len)
		}
		// next is the label bound right after this block's code.
		var next enc.Label
		hasNext := i+1 < len(lc.blocks)
		if hasNext {
			next = lc.label[lc.blocks[i+1]]
			if lc.blocks[i+1] == lc.header {
				next = lc.top
			}
		}
		cyc := lc.next[id]
		var out cfg.EdgeID
		hasOut := false
		for _, e := range gr.Succs(id) {
			if e != cyc {
				out, hasOut = e, true
			}
		}
		raw := code[last.Addr-blk.Addr:]
		switch last.Kind {
		case x86.Jcc:
			if gr.Edges[cyc].Kind == cfg.EdgeBranch {
				if err := fg.reloc(&last, raw, enc.LabelTarget(to(cyc))); err != nil {
					fail(err)
					return
				}
				fg.copyExit(lc, id, out) // the fall-through leaves
				continue
			}
			l := b.NewLabel()
			exits = append(exits, exit{l, id, out})
			if err := fg.reloc(&last, raw, enc.LabelTarget(l)); err != nil {
				fail(err)
				return
			}
		case x86.Other:
			if hasOut {
				fail(fmt.Errorf("%#x: loop copy: a fall-through block with two edges", last.Addr))
				return
			}
		}
		if !hasNext || next != to(cyc) {
			if last.Kind == x86.Jmp {
				fg.copied(last.Addr) // the block's jmp, re-aimed
			}
			pk := fg.beginKind(kindJump)
			b.JmpRel32(enc.LabelTarget(to(cyc)))
			fg.endKind(pk)
		} else if last.Kind == x86.Jmp {
			fg.joined(last.Addr) // the jmp is left out: it would jump to the next instruction
		}
	}
	for _, x := range exits {
		b.Bind(x.label)
		fg.mark(gr.Blocks[x.from].Last, false)
		b.SetSP(0)
		fg.copyExit(lc, x.from, x.edge)
	}
}

// countCopy is the head of a loop copy: count the path its backedge
// ended.
func (fg *funcGen) countCopy(lc *loopCopy) {
	b := fg.g.buf
	if faultInjection && fault("pathend") {
		return
	}
	if !lc.record {
		b.AddGS64Imm(lc.counter, 1)
		return
	}
	// The record form checks what recordBackedgeIn does: this
	// activation's record, with P among its dense counters. The slow
	// path counts through the stub and goes on to the header. The copy
	// does not keep the path register up to date (it holds EntryInc), so
	// the slow path first gives it its value at the backedge's block:
	// the stub's r + ExitInc is then P (decision 99: a cold record's
	// path ends all take it).
	slow, counted := b.NewLabel(), b.NewLabel()
	p := (lc.counter - countsOff - 8) / 8
	b.MovRegFromGS(lc.rec, runtime.OffRecord)
	fg.ownRecord(lc.rec, slow)
	b.CmpMemImm32(lc.rec, runtime.RecordDenseNOff, p)
	b.JccRel32(enc.CondBE, enc.LabelTarget(fg.coldCopyPathEnd(lc.rec, p, slow, counted)))
	b.IncMem(lc.rec, lc.counter)
	b.Bind(counted)
	v := int32(lc.val[fg.f.Graph.Edges[lc.back].From])
	fg.addColdAt(slow, 0, func() {
		if fg.hasPreg {
			b.MovRegImm(fg.preg, v) // sign-extended; flags untouched
		} else {
			b.MovGS64Imm(fg.g.stubs.OffR, v)
		}
		fg.spill()
		b.LeaRSP(-redZone)
		fg.backedgeStub(lc.back)
		fg.reload()
		b.JmpRel32(enc.LabelTarget(lc.label[lc.header]))
	})
}

// copyExit leaves a loop copy by edge e from block id: the path
// register gets the value it has there in the first copy, then e's code
// runs as in the first copy.
func (fg *funcGen) copyExit(lc *loopCopy, id cfg.BlockID, e cfg.EdgeID) {
	b, v := fg.g.buf, int32(lc.val[id])
	pk := fg.beginKind(kindIncrement)
	if fg.hasPreg {
		b.MovRegImm(fg.preg, v) // sign-extended; flags untouched
	} else {
		b.MovGS64Imm(fg.g.stubs.OffR, v)
	}
	fg.endKind(pk)
	fg.follow(e, cfg.BlockID(len(fg.f.Graph.Blocks)))
}
