package rewriter

import (
	"fmt"
	"slices"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// The function body: emit walks the blocks in address order, copies
// each instruction (relocating rip-relative operands and branches
// through enc), and hands each block's last instruction to terminator,
// which emits it with its out-edges: calls with their call sites,
// closed calls, jump-table jumps through the function's own table
// copies, returns and tail jumps with the exit sequences.

// patch is the 4-byte displacement of a load from a jump table's copy,
// filled after Finish, when the copy's address is known: table copy
// tab-1's address plus add, which must fit in a sign-extended 32 bits.
// (Fields that refer to labels or to fixed addresses are the Buf's own.)
type patch struct {
	at  int
	tab int
	add int64
}

// emit writes the function: entry prologue, blocks in order, trampolines.
func (fg *funcGen) emit() error {
	g, b, gr := fg.g, fg.g.buf, fg.f.Graph
	fg.entered = map[*loopCopy]bool{}
	fg.setLoop(-1)
	// Room for the unwind marks and copy records: about 1.2-1.35 and
	// 1.01 per original instruction.
	n := 0
	for i := range gr.Blocks {
		n += gr.Blocks[i].Insts
	}
	fg.marks = slices.Grow(fg.marks[:0], n+n/2+4)
	fg.copies = slices.Grow(fg.copies[:0], n+n/16+4)
	fg.sz, fg.rangeBase = sizer{at: b.Len()}, b.Len()
	pk := fg.beginKind(kindPadding)
	// Functions start at 16-byte boundaries. With a layout seed (blpp-bench
	// only), a pseudo-random multiple of 16 bytes comes first, so that
	// measurements can be taken over several layouts [decision 53].
	alignTo(b, 16, 15)
	if g.layoutSeed != 0 {
		b.Nop(16 * int(layoutPad(g.layoutSeed, fg.fid)))
	}
	fg.beginKind(kindEndbr)
	fg.start = b.Len()
	fg.rangeStart = fg.start - fg.rangeBase
	fg.mark(fg.f.Func.Addr, false)
	b.Bind(fg.entry)
	lead := fg.leadingEndbr()
	if lead {
		fg.mark(fg.f.Func.Addr, true)
		fg.copied(fg.f.Func.Addr)
		b.Endbr64() // the copy of the entry's own, moved here (decision 95)
		fg.mark(fg.f.Func.Addr, false)
	} else if fg.prefixEnd == 0 {
		g.endbrAt(fg.f.Func.Addr) // a moved entry's prefix copies it (decision 95)
	}
	fg.beginKind(kindEntry)
	if fg.prefixEnd != 0 {
		if err := fg.prefix(); err != nil {
			return err
		}
		b.Bind(fg.afterPrefix)
	}
	fg.shareEntry()
	fg.enterInline(false)
	for _, keep := range []bool{false, true} {
		if !fg.hasDirect[b2i(keep)] {
			continue
		}
		// The last of the direct variants runs on into the body; the
		// entries before it jump there [decision 100], but a shared
		// entry ends in its jump into the variant (decision 165).
		if keep || fg.sharedEnt == nil || !fg.sharedEnt.used {
			fg.beginKind(kindJump)
			b.JmpRel32(enc.LabelTarget(fg.blocks[cfg.Entry]))
		}
		fg.beginKind(kindEntry)
		b.Bind(fg.direct[b2i(keep)])
		fg.mark(fg.f.Func.Addr, false)
		b.SetSP(0)
		fg.enterDirect(keep)
	}
	fg.sharedEnt = nil // other entry points join other blocks
	if l, ok := g.tailEntries[fg.f.Func.Addr]; ok {
		// The tail variant, out of line, joins at block 0.
		fg.addCold(func() {
			b.Bind(l)
			fg.mark(fg.f.Func.Addr, false)
			b.SetSP(0)
			fg.enterInline(true)
			fg.beginKind(kindJump)
			b.JmpRel32(enc.LabelTarget(fg.blocks[cfg.Entry]))
		})
	}
	fg.landingPads()
	fg.otherEntries()
	fg.endKind(pk)
	// Loop headers and blocks reached only by jumps (an interpreter's
	// dispatch targets, the code after a loop) start a 64-byte line
	// [decision 53]. Instrumented blocks are longer than the original
	// ones, and when a hot loop's head or a jump target sat anywhere in
	// its line the copy's speed depended on where the code before it
	// happened to end: interp, flow-only, took 1.0x to 1.75x native over
	// eight function paddings with 16-byte alignment, and 1.0x to 1.15x
	// over four with this. The padding before a block reached only by jumps never
	// runs; before a loop header that is also fallen into it runs once
	// per entry into the loop (at most seven long nops).
	align := make([]bool, len(gr.Blocks))
	for _, l := range gr.Loops {
		if !l.Irreducible {
			align[l.Header] = true
		}
	}
	fallInto := make([]bool, len(gr.Blocks))
	for _, ed := range gr.Edges {
		if (ed.Kind == cfg.EdgeFallThrough || ed.Kind == cfg.EdgeCallReturn) && ed.To >= 0 {
			fallInto[ed.To] = true
		}
	}
	for id := range gr.Blocks {
		if !fallInto[id] && cfg.BlockID(id) != cfg.Entry {
			align[id] = true
		}
	}
	endbr := fg.tableBlocks()
	for id := range gr.Blocks {
		blk := &gr.Blocks[id]
		pk := fg.beginKind(kindPadding)
		switch {
		case align[id] && fallInto[id]:
			alignFallInto(b, 64, 63)
		case align[id]:
			alignTo(b, 64, 63)
		}
		fg.endKind(pk)
		fg.setLoop(fg.loopAt(cfg.BlockID(id)))
		b.Bind(fg.blocks[id])
		next := cfg.BlockID(id + 1)
		code := g.b.Code(blk.Addr)
		if uint64(len(code)) < blk.End-blk.Addr {
			return fmt.Errorf("block %#x: code not in file", blk.Addr)
		}
		if len(endbr) > 0 && endbr[id] && !enc.IsEndbr64(code) {
			// A jump table's entry leads here; where the block starts
			// with endbr64 its copy does (decision 95).
			fg.mark(blk.Addr, true)
			pk := fg.beginKind(kindEndbr)
			b.Endbr64()
			fg.endKind(pk)
		}
		// Code generation reads Info alone (no x86asm operands). The
		// instructions are decoded into two Infos in turn, the last one
		// kept for the terminator without a copy.
		var infos [3]x86.Info // infos[2] stays zero: no instruction
		last, k := &infos[2], 0
		a := blk.Addr
		if id == 0 && lead {
			a += 4 // the endbr64, copied at the entry
		}
		for a < blk.End {
			if n, err := fg.plainAt(a, code[a-blk.Addr:blk.End-blk.Addr]); err != nil {
				return err
			} else if n > 0 {
				a += uint64(n)
				continue
			}
			in := &infos[k]
			k ^= 1
			if err := fg.dec.DecodeInfoTo(in, code[a-blk.Addr:blk.End-blk.Addr], a); err != nil {
				return err
			}
			last = in
			fg.mark(a, true)
			if a+uint64(in.Len) < blk.End {
				fg.sizedSyscallLeave(in)
				if err := fg.copyOrSigaction(in, code[a-blk.Addr:]); err != nil {
					return err
				}
			}
			a += uint64(in.Len)
		}
		raw := code[last.Addr-blk.Addr:]
		fg.mark(last.Addr, true)
		if err := fg.terminator(cfg.BlockID(id), last, raw, next); err != nil {
			return err
		}
		if lc := fg.loopCopies[cfg.BlockID(id)]; lc != nil {
			fg.addCold(func() {
				pr := fg.setRegion(regionLoopCopy)
				fg.emitLoopCopy(lc)
				fg.setRegion(pr)
			})
		}
	}
	fg.setLoop(-1)
	fg.setRegion(regionTrampoline)
	for i := 0; i < len(fg.tramps); i++ {
		t := fg.tramps[i]
		b.Bind(t.label)
		if t.shared {
			fg.mark(gr.Blocks[gr.Edges[t.edge].To].Addr, false)
		} else {
			fg.mark(gr.Blocks[gr.Edges[t.edge].From].Last, false)
		}
		b.SetSP(0)
		if t.endbr {
			pk := fg.beginKind(kindEndbr)
			b.Endbr64() // a jump table's entry (decision 95)
			fg.endKind(pk)
		}
		fg.edgeCode(t.edge)
		pk := fg.beginKind(kindJump)
		b.JmpRel32(t.to)
		fg.endKind(pk)
	}
	fg.setRegion(regionCold)
	for i := 0; i < len(fg.cold); i++ {
		fg.emitCold(&fg.cold[i])
	}
	fg.setLoop(-1)
	fg.flushSize()
	fg.end = b.Len()
	if fg.coldErr != nil {
		return fg.coldErr
	}
	return b.Err()
}

// closedCall emits a closed function's call [decisions 57, 61, 64]. An
// inside call stores nothing: the callee keeps this activation's
// register (its entry value) and its return address names this site.
// A leaf call stores the site and the register in the thread's LeafSite
// and LeafR, and clears the site after. An outside call stores the
// register and the site in this activation's frame first and loads the
// register back after. A call that does not
// return leaves the activation as it is, for the runtime to find in that
// call, so its edge to Exit has no code; should it return after all, the
// original code after it runs. Calls to closed functions go to their
// internal entry.
func (fg *funcGen) closedCall(id cfg.BlockID, in *x86.Info, code []byte, next cfg.BlockID, site int32) error {
	b := fg.g.buf
	_, isNoRet := fg.succ(id, cfg.EdgeNoReturn)
	target := fg.g.target(in.Target)
	if callee, ok := fg.g.closedAt[in.Target]; ok && in.Kind == x86.Call {
		target = enc.LabelTarget(callee.internal)
	}
	inside := in.Kind == x86.Call && fg.insideCall(in.Target, isNoRet)
	leaf := in.Kind == x86.Call && fg.leafCall(in.Target, isNoRet)
	pk := fg.beginKind(kindCallSite)
	switch {
	case leaf:
		b.MovGS64Imm(runtime.OffLeafSite, site)
		b.MovGSFromReg(runtime.OffLeafR, fg.preg)
	case !inside:
		fg.outsideCallStore(site)
	}
	fg.endKind(pk)
	if err := fg.reloc(in, code, target); err != nil {
		return err
	}
	if leaf {
		pk := fg.beginKind(kindCallSite)
		b.MovGS64Imm(runtime.OffLeafSite, 0) // the register is still there
		fg.endKind(pk)
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
			fg.follow(e, next)
		}
		return nil
	}
	if isNoRet {
		pk := fg.beginKind(kindJump)
		b.JmpRel32(enc.AbsTarget(in.Addr + uint64(in.Len)))
		fg.endKind(pk)
		return nil
	}
	if inside {
		ret := b.NewLabel()
		b.Bind(ret)
		fg.g.siteRet = setIn(fg.g.siteRet, site, ret)
	} else {
		pk := fg.beginKind(kindCallSite)
		fg.outsideCallLoad()
		fg.endKind(pk)
	}
	if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
		fg.follow(e, next)
	}
	return nil
}

// plainAt copies the instruction at a, whose bytes start code, when it
// is not the block's last and moves byte for byte (x86.Plain) with no
// rewriting of its own (a jump table load), and returns its length; or
// returns 0 and copies nothing. Most of a procedure's instructions go
// this way, without the decoding the others take (copyInst does for
// them what it would have done for these).
func (fg *funcGen) plainAt(a uint64, code []byte) (int, error) {
	n := x86.Plain(code)
	if n == 0 || n >= len(code) {
		return 0, nil // not plain, or the block's terminator
	}
	if _, ok := fg.loadOf[a]; ok {
		return 0, nil
	}
	b := fg.g.buf
	fg.mark(a, true)
	at := b.Len()
	fg.copied(a)
	if err := enc.CopyPlain(b, code[:n]); err != nil {
		return 0, err
	}
	fg.copiedSize(at, n)
	return n, nil
}

// copyInst relocates a non-terminating instruction; one that reads a
// jump table's entry reads its jump's copy of the table instead.
func (fg *funcGen) copyInst(in *x86.Info, code []byte) error {
	fg.copied(in.Addr)
	defer fg.copiedSize(fg.g.buf.Len(), int(in.Len))
	if fg.copyThunkUse(in) {
		return nil // a use of a GOT slot that holds sigaction or its kin (thunk.go)
	}
	if t, ok := fg.loadOf[in.Addr]; ok {
		if t < 0 {
			return fmt.Errorf("%#x: one load of a jump table entry feeds several indirect jumps", in.Addr)
		}
		nt := &fg.g.tables[t]
		if bl, ok := nt.biasOf[in.Addr]; ok && nt.biased && bl.jump {
			return fg.biasedJump(t, bl)
		}
		if bl, ok := nt.biasOf[in.Addr]; ok && nt.biased && bl.add {
			// The load overwrites its base: the entry is added to it
			// (layout checked the flags are dead after it).
			at := fg.g.buf.AddRegFromMemIdx8(bl.dst, bl.base, bl.index, 0)
			fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: -int64(bl.baseAddr)})
			return nil
		}
		at, disp, err := fg.g.buf.CopyDisp32(in, code)
		if err != nil {
			return fmt.Errorf("jump table load: %w", err)
		}
		fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: int64(disp) - int64(nt.jt.Table)})
		if fg.g.pie && !nt.relative {
			// The entry is counted from the base register's value
			// [decision 72].
			bl, ok := nt.biasOf[in.Addr]
			if !nt.biased || !ok {
				return fmt.Errorf("%#x: absolute jump table in a PIE whose load cannot add its base", in.Addr)
			}
			fg.g.buf.LeaRegBaseIndex(bl.dst, bl.base, bl.dst)
		}
		return nil
	}
	return enc.Relocate(fg.g.buf, in, code, enc.Target{})
}

// biasedJump emits an indirect jump that reads entry of the absolute
// PIE table copy t itself [decision 72]: the entry goes to a register
// the program does not read after the jump, or else to one borrowed
// through the red zone (redZoneFree) (nor the instrumentation: the
// path and loop registers are kept out; the index register itself will
// do, the load reads it first), the base is added, and the jump
// goes through the register. A jump through a register that holds the
// entry's address (biasedLoad.selfRel) loads the copy's entry, which
// counts from its own address, and adds that address (decision 168).
func (fg *funcGen) biasedJump(t int, bl biasedLoad) error {
	gr := fg.f.Graph
	live := fg.liveIn
	if live == nil {
		live = gr.RegsLiveIn()
	}
	free := deadAfter(gr, live, fg.g.tables[t].jt.Jump) &^ (1<<bl.base | 1<<enc.RSP)
	if fg.hasPreg {
		free &^= 1 << fg.preg
	}
	if fg.fnHasPreg {
		free &^= 1 << fg.fnPreg
	}
	for _, l := range fg.loops {
		free &^= 1 << l.reg
	}
	b := fg.g.buf
	target := func(s enc.Reg) {
		at := b.MovRegFromMemIdx8(s, bl.base, bl.index, 0)
		fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: -int64(bl.baseAddr)})
		b.LeaRegBaseIndex(s, bl.base, s)
	}
	avoid := 1<<bl.base | 1<<bl.index
	if bl.selfRel {
		// Both displacements: the copy's entry, at the original one's
		// address plus the distance from the table to its copy.
		add := int64(bl.disp) - int64(fg.g.tables[t].jt.Table)
		target = func(s enc.Reg) {
			at := b.MovRegFromMemDisp32(s, bl.base, 0)
			fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: add})
			at = b.LeaRegBaseIndexDisp32(s, bl.base, s, 0)
			fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: add})
		}
		avoid = 1 << bl.base
	}
	if free == 0 {
		if !redZoneFree(fg.g.b, gr) {
			return fmt.Errorf("%#x: no register is free after the indirect jump that reads an absolute PIE table", fg.g.tables[t].jt.Jump)
		}
		// Borrow a register through the red zone: -8(%rsp) keeps its
		// value, -16(%rsp) receives the target.
		s := enc.RAX
		for avoid&(1<<s) != 0 {
			s++
		}
		b.MovMemFromReg(enc.RSP, -8, s)
		target(s)
		b.MovMemFromReg(enc.RSP, -16, s)
		b.MovRegFromMem(s, enc.RSP, -8)
		b.JmpMem(enc.RSP, -16)
		return nil
	}
	var dst enc.Reg
	for free&(1<<dst) == 0 {
		dst++
	}
	target(dst)
	b.JmpReg(dst)
	return nil
}

// terminator emits a block's last instruction with its out-edges.
func (fg *funcGen) terminator(id cfg.BlockID, in *x86.Info, code []byte, next cfg.BlockID) error {
	b, gr := fg.g.buf, fg.f.Graph
	// The entry block's EdgeEntry edges are taken by no instruction.
	var succs []cfg.EdgeID
	for _, e := range gr.Succs(id) {
		if k := gr.Edges[e].Kind; k != cfg.EdgeEntry && k != cfg.EdgeResume && k != cfg.EdgeReceiver {
			succs = append(succs, e)
		}
	}
	switch in.Kind {
	case x86.Call, x86.CallIndirect:
		// The call site, for the runtime to tell where this activation
		// stopped should it never come back (exit, longjmp, a fatal
		// signal in the callee): the callee's entry saves it.
		site, ok := fg.callSiteOf(in.Addr)
		if !ok {
			return fmt.Errorf("%#x: call without a planned call site", in.Addr)
		}
		fg.lastSite = site
		if fg.closed {
			return fg.closedCall(id, in, code, next, site)
		}
		pk := fg.beginKind(kindCallSite)
		fg.storeCallSite(site)
		if dc, ok := fg.directCallOf(in); ok {
			// Straight to the callee's direct entry; with keep, the
			// callee takes the register as this activation's r and
			// gives it back, or leaves it alone [decision 100].
			if !dc.keep {
				fg.spill()
			}
			fg.endKind(pk)
			if err := fg.reloc(in, code, enc.LabelTarget(dc.target)); err != nil {
				return err
			}
			if !dc.keep {
				pk := fg.beginKind(kindCallSite)
				fg.reload()
				fg.endKind(pk)
			}
			if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
				fg.follow(e, next)
			}
			return nil
		}
		fg.spill()
		if e, ok := fg.succ(id, cfg.EdgeNoReturn); ok {
			// A call that never returns ends the activation, unless an
			// exception it raises (__cxa_throw, _Unwind_Resume) lands
			// in this very function, or a longjmp to a setjmp of this
			// function comes back to it (bash's test builtin leaves
			// that way): then the landing pad or the setjmp's return
			// carries on with the activation, and its path so far is
			// recorded there as a partial path at this call [DESIGN 6,
			// decision 24]. Should the longjmp go to an older
			// activation, the runtime unwinds this one as any other it
			// abandons.
			if !fg.f.Graph.InTry(in.Addr) && !fg.setjmps {
				fg.edgeCode(e)
			}
			if k := fg.callLeave(in.Addr, in.Target); k != 0 {
				fg.leaveHook(k)
			}
			fg.endKind(pk)
			if err := fg.reloc(in, code, fg.g.target(in.Target)); err != nil {
				return err
			}
			// Should the callee return after all, continue in the
			// original code after the call.
			pk := fg.beginKind(kindJump)
			b.JmpRel32(enc.AbsTarget(in.Addr + uint64(in.Len)))
			fg.endKind(pk)
			return nil
		}
		if k := fg.callLeave(in.Addr, in.Target); k != 0 {
			fg.leaveHook(k) // an exec, which returns if it fails
		}
		fg.endKind(pk)
		if err := fg.reloc(in, code, fg.g.target(in.Target)); err != nil {
			return err
		}
		pk = fg.beginKind(kindCallSite)
		fg.reload() // the callee may have clobbered it; Thread.R is back
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok && fg.forkSites[in.Addr] && !gr.Edges[e].FlagsLive {
			fg.forkChild(site)
		}
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok && fg.vforkSites[in.Addr] && !gr.Edges[e].FlagsLive {
			fg.vforkChild(site)
		}
		fg.endKind(pk)
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
			fg.follow(e, next)
		}
		return nil
	case x86.Jcc:
		// The taken edge comes first (cfg's makeBlocks). The not-taken
		// side is a fall-through, or a tail call into the procedure that
		// follows (glibc's __memcpy_chk falls into __memcpy).
		var taken, fall cfg.EdgeID
		okT := len(succs) == 2 && (gr.Edges[succs[0]].Kind == cfg.EdgeBranch || gr.Edges[succs[0]].Kind == cfg.EdgeTailCall)
		okF := len(succs) == 2 && (gr.Edges[succs[1]].Kind == cfg.EdgeFallThrough || gr.Edges[succs[1]].Kind == cfg.EdgeTailCall)
		if okT && okF {
			taken, fall = succs[0], succs[1]
		}
		if !okT || !okF {
			return fmt.Errorf("%#x: conditional branch without both edges", in.Addr)
		}
		if err := fg.reloc(in, code, fg.via(taken)); err != nil {
			return err
		}
		fg.follow(fall, next)
		return nil
	case x86.Jmp:
		if len(succs) != 1 {
			return fmt.Errorf("%#x: jmp with %d edges", in.Addr, len(succs))
		}
		e := succs[0]
		fg.edgeCode(e)
		return fg.reloc(in, code, fg.dest(e))
	case x86.Ret, x86.Halt:
		if len(succs) == 1 {
			fg.edgeCode(succs[0])
		}
		return fg.reloc(in, code, enc.Target{})
	case x86.JmpIndirect:
		if e, ok := fg.succ(id, cfg.EdgeGoto); ok && len(succs) == 1 {
			// A computed goto: the path ends, the activation goes on,
			// and the jump reaches a label's original address, whose
			// jump leads to its resume code (decision 169).
			fg.edgeCode(e)
			return fg.copyInst(in, code)
		}
		if e, ok := fg.succ(id, cfg.EdgeTailCall); ok && len(succs) == 1 {
			fg.edgeCode(e)
			return fg.copyInst(in, code)
		}
		if e, ok := fg.succ(id, cfg.EdgeJumpTable); ok && len(succs) == 1 && fg.constJump(in.Addr) {
			// The register holds one address on every path: jump to
			// its new code directly (decision 98).
			fg.edgeCode(e)
			fg.copied(in.Addr)
			at := fg.g.buf.Len()
			fg.g.buf.JmpRel32(fg.dest(e))
			fg.copiedSize(at, int(in.Len))
			return nil
		}
		if err := fg.jumpTable(id, in); err != nil {
			return err
		}
		return fg.copyInst(in, code)
	default: // Other, Syscall
		fg.sizedSyscallLeave(in)
		if err := fg.copyOrSigaction(in, code); err != nil {
			return err
		}
		if len(succs) == 1 {
			fg.follow(succs[0], next)
		}
		return nil
	}
}

func (fg *funcGen) reloc(in *x86.Info, code []byte, t enc.Target) error {
	if !in.Kind.HasTarget() {
		return fg.copyInst(in, code)
	}
	fg.copied(in.Addr)
	at := fg.g.buf.Len()
	if err := enc.Relocate(fg.g.buf, in, code, t); err != nil {
		return err
	}
	fg.copiedSize(at, int(in.Len))
	if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
		// The compiler put endbr64 after a call to setjmp, vfork and
		// other functions that return twice: longjmp comes back by an
		// indirect jump (decision 95).
		fg.g.endbrAt(in.Addr + uint64(in.Len))
	}
	return nil
}

// jumpTable fills the copy of the table the indirect jump ending block
// id reads: each entry leads to the new code of its target block, through
// the edge's trampoline when the edge carries instrumentation. Every jump
// has a copy of its own, since the edges of each carry their own
// increments, even where replicated dispatch jumps share one table
// [decision 66]; but the path ends of Dispatch edges depend only on
// their targets, and the jumps share one trampoline per target (decision
// 134).
func (fg *funcGen) jumpTable(id cfg.BlockID, in *x86.Info) error {
	gr := fg.f.Graph
	t, ok := fg.tabOf[in.Addr]
	if !ok {
		return fmt.Errorf("%#x: indirect jump without a table", in.Addr)
	}
	nt := &fg.g.tables[t]
	if nt.done {
		return fmt.Errorf("%#x: jump table emitted twice", in.Addr)
	}
	nt.done = true
	via := map[uint64]enc.Label{}
	for _, e := range gr.Succs(id) {
		ed := gr.Edges[e]
		if ed.Kind != cfg.EdgeJumpTable {
			continue
		}
		t := fg.dispatchVia(e)
		if t == (enc.Target{}) {
			t = fg.via(e)
			if fg.needsCode(e) && fg.g.cet.ibt {
				fg.tramps[len(fg.tramps)-1].endbr = true // via made it
			}
		}
		tl, isLabel := t.Label()
		if !isLabel {
			return fmt.Errorf("%#x: table target outside the function", in.Addr)
		}
		via[gr.Blocks[ed.To].Addr] = tl
	}
	for k, a := range nt.jt.Targets {
		if nt.jt.IsDead(k) {
			// A case the compiler proved impossible: it stays aimed
			// at the end of the original body (decision 98).
			nt.targets = append(nt.targets, enc.AbsTarget(a))
			continue
		}
		tl, ok := via[a]
		if !ok {
			return fmt.Errorf("%#x: table entry %#x has no edge", in.Addr, a)
		}
		nt.targets = append(nt.targets, enc.LabelTarget(tl))
	}
	return nil
}

// constJump reports whether the indirect jump at a is a constant one
// (cfg.JumpTable.Const).
func (fg *funcGen) constJump(a uint64) bool {
	for i := range fg.f.Graph.Tables {
		if jt := &fg.f.Graph.Tables[i]; jt.Jump == a {
			return jt.Const
		}
	}
	return false
}

// tablesDone checks that every table copy of fg was filled: a copy its
// loads read but no jump filled would send them anywhere.
func (fg *funcGen) tablesDone() error {
	for j, t := range fg.tabOf {
		if !fg.g.tables[t].done {
			return fmt.Errorf("%#x: the indirect jump was not emitted, its table copy is empty", j)
		}
	}
	return nil
}

// sizedSyscallLeave is syscallLeave counted as a call's work.
func (fg *funcGen) sizedSyscallLeave(in *x86.Info) {
	pk := fg.beginKind(kindCallSite)
	fg.syscallLeave(in)
	fg.endKind(pk)
}
