package rewriter

import (
	"math/bits"
	"sort"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/pathnum"
	"github.com/blpp/blpp/rewriter/enc"
)

// Planning of loops: the loop regions that keep the path register in a
// general register of their own (planLoopRegs, decision 56) and the
// one-cycle loops whose later iterations run in a second copy that
// counts at its head (planLoopCopies, decisions 58 and 63).

// loopCopy is a loop whose body is one cycle of blocks, and its second
// copy [decision 58]: top counts the path that ended at the backedge
// just taken (the counter at counter, from %gs or from the record),
// label holds each block's copy (the header's is where the first copy's
// backedge goes), val the path register's value at each block's start
// in the copy, next the cycle's edge out of each block.
type loopCopy struct {
	header  cfg.BlockID
	back    cfg.EdgeID
	blocks  []cfg.BlockID // in address order: the order of the copy
	next    map[cfg.BlockID]cfg.EdgeID
	val     map[cfg.BlockID]int64
	label   map[cfg.BlockID]enc.Label
	counter int32
	top     enc.Label
	// rec is a register dead at the header when the path counts in the
	// activation's record (no slot counters): top loads the record
	// into it.
	rec    enc.Reg
	record bool
	// partial: the loop has blocks off the copy's cycle.
	partial bool
}

// loopReg is a loop region with a path register of its own [decision 56].
type loopReg struct {
	reg enc.Reg
	// swap: the register holds a value the program still needs, which
	// waits in Thread.R while the loop runs; otherwise it is dead on
	// every way out of the loop and Thread.R keeps a stale path value.
	swap bool
}

// loopRegs are the registers a loop region may take, in order of
// preference. %rax is left out because the flags-saving sequences use it;
// %rsp cannot be an index.
var loopRegs = []enc.Reg{enc.R11, enc.R10, enc.R9, enc.R8, enc.RSI, enc.RDI, enc.RDX, enc.RCX,
	enc.RBX, enc.RBP, enc.R12, enc.R13, enc.R14, enc.R15}

// planLoopRegs gives loops of a function whose path register lives in
// Thread.R, in a frequency-only image, a general register of their own
// [decision 56]: inside the loop the path register is that register, so
// chord increments are one lea and backedges count in the register
// (regBackedge, recordBackedgeIn) or spill it around the memory form, and
// Thread.R is touched only on the edges into and out of the loop. A loop
// qualifies when it is natural, does not hold the function's entry, and
// its blocks call nothing, leave the function nowhere, jump through no
// table, and are entered from outside by plain branches and fall-throughs
// only; its register is one no instruction of the loop names. Outer loops
// are tried first (fewer crossings); a loop that does not qualify leaves
// its inner loops to be tried.
func (fp *funcPlan) planLoopRegs() {
	if fp.fnHasPreg || fp.liveIn == nil || fp.g.mode.Metrics {
		return
	}
	gr := fp.f.Graph
	fp.loopOf = make([]int, len(gr.Blocks))
	for i := range fp.loopOf {
		fp.loopOf[i] = -1
	}
	callBlock := make([]bool, len(gr.Blocks))
	for _, c := range gr.Calls {
		callBlock[c.Block] = true
	}
	taken := make([]bool, len(gr.Loops))
	for i, l := range gr.Loops {
		if l.Parent >= 0 && taken[l.Parent] {
			taken[i] = true // inside a region already
			continue
		}
		if l.Irreducible {
			continue
		}
		in := make(map[cfg.BlockID]bool, len(l.Blocks))
		for _, id := range l.Blocks {
			in[id] = true
		}
		ok := true
		var named, live cfg.RegSet // live: on some way out of the loop
		for _, id := range l.Blocks {
			blk := &gr.Blocks[id]
			named |= blk.Named
			if id == cfg.Entry || callBlock[id] {
				ok = false
			}
			for _, e := range gr.Succs(id) {
				ed := &gr.Edges[e]
				if ed.Kind != cfg.EdgeFallThrough && ed.Kind != cfg.EdgeBranch || ed.To < 0 {
					ok = false
				} else if !in[ed.To] {
					live |= fp.liveIn[ed.To]
				}
			}
			for _, e := range gr.Preds(id) {
				ed := &gr.Edges[e]
				if !in[ed.From] && ed.Kind != cfg.EdgeFallThrough && ed.Kind != cfg.EdgeBranch {
					ok = false
				}
			}
		}
		if !ok {
			continue
		}
		var pick loopReg
		found := false
		for _, r := range loopRegs {
			if named.Has(int(r)) || !fp.loopBackedgesIn(l.Blocks, in, r) {
				continue
			}
			if !live.Has(int(r)) && fp.g.loopRegs != LoopRegsSwap {
				pick, found = loopReg{reg: r}, true
				break
			}
			if !found {
				pick, found = loopReg{reg: r, swap: true}, true
			}
		}
		if !found {
			continue
		}
		taken[i] = true
		for _, id := range l.Blocks {
			fp.loopOf[id] = len(fp.loops)
		}
		fp.loops = append(fp.loops, pick)
	}
}

// loopBackedgesIn reports whether every path-ending edge inside the loop
// (blocks, in) can count with loop register r and without spilling it:
// always in a slot function (regBackedge); in a record function when the
// edge's flags are dead and enough other registers are (recordBackedgeIn),
// since the spilling form would run a locked xchg twice per iteration of
// a swapping loop.
func (fp *funcPlan) loopBackedgesIn(blocks []cfg.BlockID, in map[cfg.BlockID]bool, r enc.Reg) bool {
	if fp.slot != 0 {
		return true
	}
	gr := fp.f.Graph
	need := 1
	if fp.hashInline() {
		need++
	}
	for _, id := range blocks {
		for _, e := range gr.Succs(id) {
			ed := &gr.Edges[e]
			if fp.num.Kind[e] == pathnum.DAGEdge || ed.To < 0 || !in[ed.To] {
				continue
			}
			if ed.FlagsLive {
				return false
			}
			dead := ^fp.liveIn[ed.To] &^ (1<<enc.RSP | 1<<r)
			if bits.OnesCount16(uint16(dead)) < need {
				return false
			}
		}
	}
	return true
}

// loopCopyMax bounds the code of a loop given a second copy
// [decision 58].
const loopCopyMax = 256

// planLoopCopies finds the loops whose later iterations run in a copy
// that counts at its head [decisions 58, 63], in a frequency-only image:
// in a natural loop, a cycle of blocks from the header round to a
// backedge on which the flags are dead (likelyCycle: the one the
// compiler laid out as likely, where there are several), at most
// loopCopyMax bytes, whose blocks end in a conditional or direct jump or
// fall through, and whose every other edge (out of the loop, to another
// of its blocks, another backedge) does not break a path; the function
// counts in slot counters, or densely in its records with a register
// dead at the header to load the record into. Every iteration in the
// copy starts with the path register (wherever it lives) at the
// backedge's EntryInc and follows the cycle, so the register's value at
// each block is a constant, and each iteration that branches back ends
// the same path: its count needs no path register, no bound and no
// stub, and the copy's cycle needs no chord increments. An edge off the
// cycle sets the register to its value there and runs the first copy's
// code for the edge (copyExit).
func (fp *funcPlan) planLoopCopies() {
	if fp.g.mode.Metrics || fp.slot == 0 && fp.hashed() {
		return
	}
	gr, n := fp.f.Graph, fp.num
	for _, l := range gr.Loops {
		if l.Irreducible {
			continue
		}
		cycle, back := fp.likelyCycle(l)
		if cycle == nil {
			continue
		}
		lc := &loopCopy{header: l.Header, back: back, next: map[cfg.BlockID]cfg.EdgeID{}, val: map[cfg.BlockID]int64{}, label: map[cfg.BlockID]enc.Label{}}
		ok, size, v := true, uint64(0), n.EntryInc[back]
		for b := l.Header; ok; {
			if _, seen := lc.next[b]; seen {
				ok = false
				break
			}
			e, on := cycle[b]
			if !on || !fp.copyable(b) {
				ok = false
				break
			}
			lc.val[b] = v
			size += gr.Blocks[b].End - gr.Blocks[b].Addr
			for _, x := range gr.Succs(b) {
				ed := gr.Edges[x]
				if ed.Kind != cfg.EdgeBranch && ed.Kind != cfg.EdgeFallThrough || ed.To < 0 {
					ok = false
				} else if x != e && gr.BreaksPath(x) {
					ok = false // a way out of the copy the first copy must take
				}
			}
			lc.next[b] = e
			if !ok || e == back {
				break
			}
			v += n.Inc[e] // a DAG edge within one region (likelyCycle)
			b = gr.Edges[e].To
		}
		if !ok || size > loopCopyMax {
			continue
		}
		p := lc.val[gr.Edges[back].From] + n.ExitInc[back]
		if p < 0 || uint64(p) >= n.NumPaths {
			continue
		}
		r, has := fp.regionReg(fp.loopAt(l.Header))
		rec, recOK := fp.deadRegFor(back, r, has)
		if fp.slot == 0 && !recOK {
			continue
		}
		for id := range lc.next {
			lc.blocks = append(lc.blocks, id)
		}
		lc.partial = len(lc.blocks) < len(l.Blocks)
		sort.Slice(lc.blocks, func(i, j int) bool { return gr.Blocks[lc.blocks[i]].Addr < gr.Blocks[lc.blocks[j]].Addr })
		fp.newCopies = append(fp.newCopies, lc) // labelled by labelLoopCopies
		lc.counter = fp.slot + 8 + 8*int32(p)
		if fp.slot == 0 {
			lc.record, lc.rec, lc.counter = true, rec, countsOff+8+8*int32(p)
		}
		if fp.loopCopies == nil {
			fp.loopCopies, fp.copyBack = map[cfg.BlockID]*loopCopy{}, map[cfg.EdgeID]*loopCopy{}
		}
		fp.loopCopies[l.Header], fp.copyBack[back] = lc, lc
		// The loop's other backedges restart the path where back does
		// or elsewhere: the first lead into the copy too, once they have
		// counted their path, from either copy.
		for _, e := range l.Backedges {
			if e != back && n.EntryInc[e] == n.EntryInc[back] {
				fp.copyBack[e] = lc
			}
		}
	}
}

// labelLoopCopies makes the labels of the loop copies planLoopCopies
// made, in the order it made them, each copy's blocks in address order
// and then its top: the order planLoopCopies made them in when it ran on
// one goroutine, so the image's labels do not depend on the workers.
func (fp *funcPlan) labelLoopCopies() {
	b := fp.g.buf
	for _, lc := range fp.newCopies {
		for _, id := range lc.blocks {
			lc.label[id] = b.NewLabel()
		}
		lc.top = b.NewLabel()
	}
	fp.newCopies = nil
}

// likelyCycle picks, in natural loop l, a cycle from the header round
// to one of its backedges that a copy can count at its head: through
// DAG edges between blocks of l that no inner loop holds and that stay
// in one loop region, ending in a backedge on which the flags are dead
// and that does not break a path. Where there is a choice it takes the
// way the compiler laid out as likely, by the rule static predictors
// use: a backward branch is taken, a forward one is not (the
// fall-through). It returns the edge each of the cycle's blocks takes,
// and the backedge; nil when there is no such cycle.
func (fp *funcPlan) likelyCycle(l cfg.Loop) (map[cfg.BlockID]cfg.EdgeID, cfg.EdgeID) {
	gr, n := fp.f.Graph, fp.num
	own := map[cfg.BlockID]bool{}
	for _, b := range l.Blocks {
		if gr.Blocks[b].LoopDepth == l.Depth {
			own[b] = true
		}
	}
	usable := func(e cfg.EdgeID) bool {
		ed := gr.Edges[e]
		return ed.To >= 0 && own[ed.From] && own[ed.To] &&
			(ed.Kind == cfg.EdgeBranch || ed.Kind == cfg.EdgeFallThrough) &&
			n.Kind[e] == pathnum.DAGEdge && !fp.crossesLoop(e)
	}
	// dist: blocks from each block to a latch, breadth first backwards
	// from all of them (which blocks reach one); closing is the backedge
	// each latch takes.
	dist, closing := map[cfg.BlockID]int{}, map[cfg.BlockID]cfg.EdgeID{}
	var queue []cfg.BlockID
	for _, e := range l.Backedges {
		ed := gr.Edges[e]
		if _, dup := dist[ed.From]; dup || ed.To != l.Header || !own[ed.From] || n.Kind[e] == pathnum.DAGEdge || gr.BreaksPath(e) || ed.FlagsLive {
			continue
		}
		dist[ed.From], closing[ed.From] = 0, e
		queue = append(queue, ed.From)
	}
	for ; len(queue) > 0; queue = queue[1:] {
		b := queue[0]
		for _, e := range gr.Preds(b) {
			if from := gr.Edges[e].From; usable(e) {
				if _, seen := dist[from]; !seen {
					dist[from] = dist[b] + 1
					queue = append(queue, from)
				}
			}
		}
	}
	if _, ok := dist[l.Header]; !ok {
		return nil, 0
	}
	cycle := map[cfg.BlockID]cfg.EdgeID{}
	for b := l.Header; ; {
		if dist[b] == 0 {
			cycle[b] = closing[b]
			return cycle, closing[b]
		}
		// DAG edges only, so the walk ends, at a latch.
		best, rank := cfg.EdgeID(0), 3
		for _, e := range gr.Succs(b) {
			ed := gr.Edges[e]
			if _, ok := dist[ed.To]; !ok || !usable(e) {
				continue
			}
			r := 2 // a forward branch
			if ed.Kind == cfg.EdgeFallThrough {
				r = 1
			} else if gr.Blocks[ed.To].Addr <= gr.Blocks[b].Addr {
				r = 0 // a backward branch
			}
			if r < rank {
				best, rank = e, r
			}
		}
		if rank == 3 {
			return nil, 0
		}
		cycle[b] = best
		b = gr.Edges[best].To
	}
}

// copyable reports whether block id ends in a conditional or direct
// jump or falls through, with its code in the file, and has no system
// call to hook: what emitLoopCopy can copy.
func (fp *funcPlan) copyable(id cfg.BlockID) bool {
	for _, l := range fp.f.Graph.Leaves {
		if l.Syscall && l.Block == id {
			return false // its hook needs the register's value [decision 59]
		}
	}
	blk := &fp.f.Graph.Blocks[id]
	code := fp.g.b.Code(blk.Last)
	if blk.Last < blk.Addr || blk.Last >= blk.End || uint64(len(code)) < blk.End-blk.Last {
		return false
	}
	var in x86.Info
	// The shared table's answer (the functions are planned on every
	// worker, without a Decoder of their own).
	err := x86.DecodeInfoTo(&in, code[:blk.End-blk.Last], blk.Last)
	return err == nil && (in.Kind == x86.Jcc || in.Kind == x86.Jmp || in.Kind == x86.Other)
}
