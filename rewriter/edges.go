package rewriter

import (
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/pathnum"
	"github.com/blpp/blpp/rewriter/enc"
)

// Edges: where each edge of the original graph leads in the new code,
// and the chord increments (r += Inc) and path ends placed on it
// [Ball-Larus 96 §3.4; DESIGN 6], inline where the edge falls through
// and in a trampoline where it is a taken branch.

// needsCode reports whether edge e carries instrumentation.
func (fg *funcGen) needsCode(e cfg.EdgeID) bool {
	if fg.num.Kind[e] != pathnum.DAGEdge || fg.crossesLoop(e) {
		return true
	}
	return fg.num.Inc[e] != 0 || fg.f.Graph.Edges[e].To == cfg.Exit
}

// edgeCode emits the instrumentation of edge e [Ball-Larus 96 §4]:
// a backedge (or broken edge) ends the path (count[r+ExitInc]++) and starts
// the next (r = EntryInc); a DAG edge adds its chord increment; an edge to
// EXIT then ends the path (count[r]++) and pops the activation. An edge
// out of a loop region first puts the path register back in Thread.R,
// one into a region takes it out last [decision 56].
func (fg *funcGen) edgeCode(e cfg.EdgeID) {
	ed, saved := fg.f.Graph.Edges[e], fg.inLoop
	from, to := fg.loopAt(ed.From), fg.loopAt(ed.To)
	if from == to {
		fg.setLoop(from)
		fg.edgeInst(e)
	} else {
		pk := fg.beginKind(kindLoopRegister)
		if from >= 0 {
			fg.setLoop(from)
			fg.leaveLoop()
		}
		fg.setLoop(-1)
		fg.edgeInst(e)
		if to >= 0 {
			fg.setLoop(to)
			fg.enterLoop()
		}
		fg.endKind(pk)
	}
	fg.setLoop(saved)
	if ed.Kind == cfg.EdgeTailCall {
		// The activation has ended (its path counted, its frame
		// popped): a tail jump to _exit or an exec is hooked as a
		// call from its caller would be [decision 59].
		if k := fg.callLeave(fg.f.Graph.Blocks[ed.From].Last, ed.Target); k != 0 {
			pk := fg.beginKind(kindCallSite)
			fg.leaveHook(k)
			fg.endKind(pk)
		}
	}
}

// edgeInst is edgeCode's instrumentation of edge e, with the path
// register where the current loop region keeps it.
func (fg *funcGen) edgeInst(e cfg.EdgeID) {
	b, n, ed := fg.g.buf, fg.num, fg.f.Graph.Edges[e]
	pk := fg.beginKind(kindPathEnd)
	defer fg.endKind(pk)
	if n.Kind[e] != pathnum.DAGEdge {
		if ed.Kind == cfg.EdgeCallReturn && fg.f.Graph.BreaksPath(e) {
			// After setjmp: the runtime tells a first return from one
			// through longjmp by the call site.
			fg.spill()
			b.LeaRSP(-redZone)
			pushImm32(b, fg.lastSite)
			pushImm32(b, int32(n.EntryInc[e]))
			pushImm32(b, int32(n.ExitInc[e]))
			pushImm32(b, fg.gid)
			b.CallRel32(enc.AbsTarget(fg.g.stubs.SetjmpRet))
			b.LeaRSP(redZone + 32)
			fg.reload()
			return
		}
		fg.backedge(e, ed.FlagsLive)
		return
	}
	inc := n.Inc[e]
	if faultInjection && inc != 0 && fault("chord") {
		inc++
	}
	fg.beginKind(kindIncrement)
	if inc != 0 && fg.hasPreg {
		b.LeaRegSelf(fg.preg, int32(inc)) // no flags written
	} else if inc != 0 {
		if ed.FlagsLive {
			b.LeaRSP(-redZone)
			b.Push(enc.RAX)
			saveFlags(b)
			b.AddGS64Imm(fg.g.stubs.OffR, int32(inc))
			restoreFlags(b)
			b.Pop(enc.RAX)
			b.LeaRSP(redZone)
		} else {
			b.AddGS64Imm(fg.g.stubs.OffR, int32(inc))
		}
	}
	if ed.To == cfg.Exit {
		fg.beginKind(kindExit)
		if site, ok := fg.tailSite[e]; ok && !fg.g.mode.FlowOnly {
			if fg.g.mode.Metrics {
				fg.tailExitStub(site)
			} else {
				fg.exitInline(site)
			}
			return
		}
		if ed.Kind == cfg.EdgeReturn || ed.Kind == cfg.EdgeTailCall {
			fg.exitInline(0)
			return
		}
		fg.exitStub()
	}
}

// dest is where edge e leads in the new code (for edges to EXIT: the
// callee of a tail call).
func (fg *funcGen) dest(e cfg.EdgeID) enc.Target {
	if lc, ok := fg.copyBack[e]; ok {
		fg.entered[lc] = true
		return enc.LabelTarget(lc.label[lc.header])
	}
	ed := fg.f.Graph.Edges[e]
	if ed.To == cfg.Exit {
		if _, ok := fg.tailSite[e]; ok {
			if l, ok := fg.g.tailEntries[ed.Target]; ok {
				return enc.LabelTarget(l) // its TailRec waits for it
			}
		}
		return fg.g.target(ed.Target)
	}
	return enc.LabelTarget(fg.blocks[ed.To])
}

// via is the branch target for edge e: the destination itself when the
// edge carries no code, else an out-of-line trampoline that runs the
// edge's code and jumps on.
func (fg *funcGen) via(e cfg.EdgeID) enc.Target {
	if !fg.needsCode(e) {
		return fg.dest(e)
	}
	l := fg.g.buf.NewLabel()
	fg.tramps = append(fg.tramps, tramp{label: l, edge: e, to: fg.dest(e)})
	return enc.LabelTarget(l)
}

// dispatchKey is everything the code of a Dispatch edge's trampoline
// depends on (edgeCode): the target (which decides the live registers
// and flags, and where the trampoline jumps), the path end and restart,
// and the loop regions the edge leaves and enters.
type dispatchKey struct {
	to                cfg.BlockID
	exitInc, entryInc int64
	from, into        int
}

// dispatchVia is the trampoline of Dispatch edge e, shared with every
// other Dispatch edge whose code is the same (pathnum makes their path
// ends depend only on the target, decision 134), or the zero Target
// where e is not such an edge: via's own trampoline then.
func (fg *funcGen) dispatchVia(e cfg.EdgeID) enc.Target {
	ed := fg.f.Graph.Edges[e]
	if !ed.Dispatch || ed.To == cfg.Exit || !fg.num.Kind[e].Breaks() || fg.f.Graph.BreaksPath(e) {
		return enc.Target{}
	}
	if _, ok := fg.copyBack[e]; ok {
		return enc.Target{}
	}
	k := dispatchKey{to: ed.To, exitInc: fg.num.ExitInc[e], entryInc: fg.num.EntryInc[e], from: fg.loopAt(ed.From), into: fg.loopAt(ed.To)}
	if l, ok := fg.shared[k]; ok {
		return enc.LabelTarget(l)
	}
	t := fg.via(e)
	tr := &fg.tramps[len(fg.tramps)-1]
	tr.shared, tr.endbr = true, fg.g.cet.ibt
	if fg.shared == nil {
		fg.shared = map[dispatchKey]enc.Label{}
	}
	l, _ := t.Label()
	fg.shared[k] = l
	return t
}

// follow emits edge e inline after a block's last instruction: its code,
// then a jump to the destination unless that is the next block emitted.
func (fg *funcGen) follow(e cfg.EdgeID, next cfg.BlockID) {
	fg.edgeCode(e)
	ed := fg.f.Graph.Edges[e]
	_, toCopy := fg.copyBack[e] // a loop copy's header, never next
	if ed.To != cfg.Exit && ed.To == next && !toCopy {
		return // next is bound right after this block's code (emit)
	}
	if ed.To == cfg.Exit && ed.Kind != cfg.EdgeTailCall {
		return
	}
	pk := fg.beginKind(kindJump)
	fg.g.buf.JmpRel32(fg.dest(e))
	fg.endKind(pk)
}
