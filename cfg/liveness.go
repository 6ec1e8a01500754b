package cfg

import "github.com/blpp/blpp/cfg/x86"

// Flags liveness (DESIGN decision 5). A counter increment on an edge
// clobbers the status flags, so the rewriter must know, edge by edge,
// whether a flag value set before the edge may still be read after it.
// This is classic backward liveness [Aho et al., Dragon book §9.2.5] over
// the seven flags x86.Flags tracks, with each block summarised by the
// flags it reads before writing (Block.FlagsUse) and the flags it surely
// writes (Block.FlagsDef):
//
//	in(b)  = FlagsUse(b) | (out(b) &^ FlagsDef(b))
//	out(b) = ∪ over b's edges e of live(e)
//	live(e) = in(e.To), or, for an edge to Exit, the flags the code
//	          beyond the procedure may read (below).
//
// Leaving the procedure: by the SysV x86-64 ABI the status flags are not
// preserved across calls and DF is clear on entry to and return from
// every function [SysV x86-64 ABI §3.2.1, Figure 3.4], so no caller reads
// the flags a return leaves, and no callee reads the flags a tail call or
// a call to a no-return function passes it. A halting instruction (hlt,
// ud2, int3) is the block's own last instruction; whatever it exposes to a
// signal handler is in that block's FlagsUse, not on its edge. Any other
// kind of edge to Exit does not occur in a well-formed graph and is taken
// to keep every flag live.
//
// DF is one bit like the others here, as the brief asks: an increment
// (add) does not write DF, so a consumer that knows its instrumentation
// leaves DF alone may mask it out with FlagsLiveOn.

// exitFlags returns the flags live on an edge of kind k to Exit.
func exitFlags(k EdgeKind) x86.Flags {
	switch k {
	case EdgeReturn, EdgeTailCall, EdgeNoReturn, EdgeHalt:
		return 0
	}
	return x86.AllFlags
}

// FlagsLiveIn solves flags liveness and returns, for every block, the
// flags that may be read before being written on some path from the
// block's start. Blocks unreachable from Entry are solved too. The graph is
// not changed; see ComputeFlagsLiveness.
//
// The solver is a worklist iteration to the least fixed point, seeded in
// postorder of a DFS from Entry so that most blocks are visited after
// their successors. It keeps each block's live-out as well: when a
// block's live-in grows, the new bits are or-ed into its predecessors'
// live-outs and those predecessors are queued again. A live-in can only
// grow, by at most seven bits, so the work is O(n + 7·E) however wide the
// jump tables.
func (g *Graph) FlagsLiveIn() []x86.Flags {
	n := len(g.Blocks)
	in := make([]x86.Flags, n)
	if n == 0 {
		return in
	}
	out := make([]x86.Flags, n)
	for b := range g.Blocks {
		for _, e := range g.Succs(BlockID(b)) {
			if ed := &g.Edges[e]; ed.To < 0 {
				out[b] |= g.exitFlagsOf(ed.Kind)
			}
		}
	}
	// A FIFO ring of at most n blocks; queued marks membership.
	ring := make([]BlockID, 0, n)
	queued := make([]bool, n)
	t := g.dfs()
	for _, b := range t.post {
		ring = append(ring, b)
		queued[b] = true
	}
	t.release()
	for b := range g.Blocks {
		if !queued[b] {
			ring = append(ring, BlockID(b))
			queued[b] = true
		}
	}
	head, count := 0, n
	for count > 0 {
		b := ring[head]
		head++
		if head == n {
			head = 0
		}
		count--
		queued[b] = false

		blk := &g.Blocks[b]
		nin := blk.FlagsUse | out[b]&^blk.FlagsDef
		if nin == in[b] {
			continue
		}
		in[b] = nin
		for _, e := range g.Preds(BlockID(b)) {
			p := g.Edges[e].From
			if out[p]|nin == out[p] {
				continue
			}
			out[p] |= nin
			if !queued[p] {
				queued[p] = true
				tail := head + count
				if tail >= n {
					tail -= n
				}
				ring[tail] = p
				count++
			}
		}
	}
	return in
}

// liveOn returns the flags live on edge e given every block's live-in.
func (g *Graph) liveOn(in []x86.Flags, e EdgeID) x86.Flags {
	ed := &g.Edges[e]
	if ed.To < 0 {
		return g.exitFlagsOf(ed.Kind)
	}
	return in[ed.To]
}

// exitFlagsOf is exitFlags for g: a computed goto's edge (EdgeGoto) leads
// to the labels of its EdgeResume edges, and carries the flags live into
// any of them once ComputeFlagsLiveness has found them (decision 169);
// until then, every flag.
func (g *Graph) exitFlagsOf(k EdgeKind) x86.Flags {
	if k == EdgeGoto && g.gotoFlagsKnown {
		return g.gotoFlags
	}
	return exitFlags(k)
}

// FlagsLiveOn returns the flags that may be read, before being written,
// after control passes along edge e, given the result of FlagsLiveIn.
func (g *Graph) FlagsLiveOn(liveIn []x86.Flags, e EdgeID) x86.Flags {
	return g.liveOn(liveIn, e)
}

// ComputeFlagsLiveness sets Edge.FlagsLive on every edge: true when some
// flag, DF included, may be read after the edge before being written,
// and Graph.EntryFlags. It reads Block.FlagsUse and Block.FlagsDef, which
// must already be set.
func (g *Graph) ComputeFlagsLiveness() {
	if g.hasGotos() {
		// The least fixed point over the gotos too: start from no flag
		// live on them, and add what the labels read until that holds.
		g.gotoFlags, g.gotoFlagsKnown = 0, true
		for {
			in := g.FlagsLiveIn()
			var u x86.Flags
			for _, ed := range g.Edges {
				if ed.Kind == EdgeResume && len(in) > 0 {
					u |= in[ed.To]
				}
			}
			if u&^g.gotoFlags == 0 {
				break
			}
			g.gotoFlags |= u
		}
	}
	in := g.FlagsLiveIn()
	if len(in) > 0 {
		g.EntryFlags = in[Entry]
	}
	for e := range g.Edges {
		g.Edges[e].FlagsLive = g.liveOn(in, EdgeID(e)) != 0
	}
}

// checkEntryFlags leaves out a procedure that reads status flags its
// caller set (ReasonFlagsAtEntry): its entry instrumentation would
// change them. DF is not among them: the ABI keeps it clear at every
// call, and no instrumentation writes it. ComputeFlagsLiveness must have
// run.
func (g *Graph) checkEntryFlags() {
	if live := g.EntryFlags & x86.Status; live != 0 {
		g.fail(ReasonFlagsAtEntry, g.Func.Addr, "reads %v before writing it: the caller passes it", live)
	}
}
