package rewriter

import (
	"math/bits"

	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Function entries: the inline entry that finds the callee's record and
// pushes its shadow frame (enterInline), the one-register entries of
// lean, trivial and closed functions (enterLean, enterTrivial,
// enterInternal), and their slow paths through the runtime's stub.

// enterInline starts an activation without calling the runtime, in the
// form the function's plan calls for: a frameless one-path leaf counts
// and leaves (enterTrivial, enterFrameless); a lean function (flow-only,
// with slot counters) pushes a frame without a record (enterLean,
// enterSlotMem); every other function finds its record and pushes its
// frame (enterFramed) [DESIGN 7]. Anything unusual takes the stub: a
// thread without its own block yet (%gs still points at its creator's:
// the owner is another thread pointer), a busy or overflowing shadow
// stack, a newest frame that is not a caller's (left by a longjmp: it
// must be unwound first), a tail mark not at this entry's %rsp (tail
// variant only), a context seen for the first time, a record a fork
// child has not remade. Flags are dead at a function's entry [SysV x86-64
// ABI 3.2.1]. With tail, it emits the tail variant that direct tail
// jumps reach; scratch registers dead at the entry are used without
// saving (pushedAtEntry).
func (fg *funcGen) enterInline(tail bool) {
	g, b := fg.g, fg.g.buf
	switch {
	case g.mode.Metrics && !g.mode.TSCOnly:
		b.LeaRSP(-redZone)
		pushImm32(b, fg.gid)
		b.CallRel32(enc.AbsTarget(g.stubs.Enter))
		b.LeaRSP(redZone + 8)
	case fg.trivial():
		fg.enterTrivial()
	case fg.frameless():
		fg.enterFrameless(tail, false)
	case fg.lean() && fg.hasPreg:
		fg.enterLean(false, false)
	case fg.lean():
		fg.enterSlotMem()
	default:
		fg.enterFramed(tail, false, false)
	}
}

// enterDirect emits a direct variant of the entry, which only direct
// calls from instrumented code reach (planDirect, decision 100): the
// entry without the ready and gate tests, and with keep, for callers
// that keep their path register (directCall.keep), taking the caller's r
// from it.
func (fg *funcGen) enterDirect(keep bool) {
	switch {
	case fg.frameless():
		fg.enterFrameless(false, true)
	case fg.lean():
		fg.enterLean(true, keep)
	default:
		fg.enterFramed(false, true, keep)
	}
}

// enterSlotMem is the entry of a lean function whose path register is
// Thread.R [decision 51]: the checks of enterFramed, the record's
// existence tested by its calls word in the slots, the frame {entry
// %rsp, the caller's r, fid, the caller's call site and Cur}, and r = 0.
func (fg *funcGen) enterSlotMem() {
	g, b := fg.g, fg.g.buf
	slow, done := b.NewLabel(), b.NewLabel()
	regs := fg.pushedAtEntry([]enc.Reg{enc.RAX, enc.RCX})
	fg.entryChecks(regs, slow)
	// The newest frame must be a caller's; below an empty shadow stack
	// the sentinel's %rsp is above every entry's [decision 65].
	cmpNewestFrameRSP(b)
	b.JccRel32(enc.CondBE, enc.LabelTarget(slow))
	b.LeaRegD8(enc.RAX, enc.RCX, runtime.FrameSize)
	b.CmpRegGS(enc.RAX, runtime.OffSPLimit)
	b.JccRel32(enc.CondA, enc.LabelTarget(slow))
	// The record's calls, once it exists (the stub's first entry made
	// it and counted there).
	fg.countSlotCall(slow, 0)
	// Reserve the frame at %rcx, then fill it (its %rsp first: until
	// then the slot reads as live, decision 163).
	b.LeaRegD8(enc.RAX, enc.RCX, runtime.FrameSize)
	b.MovGSFromReg(runtime.OffSP, enc.RAX)
	b.MovMemFromRegD8(enc.RCX, frRSP+runtime.FrameSize, enc.RSP) // frame.rsp
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	b.MovMemFromRegD8(enc.RCX, frSavedR+runtime.FrameSize, enc.RAX) // frame.saved_r
	b.MovMemImm32D8(enc.RCX, frFunc+runtime.FrameSize, fg.gid)      // frame.func
	b.MovRegFromGS(enc.RAX, runtime.OffCallSite)
	b.MovMemFromRegD8(enc.RCX, frSite+runtime.FrameSize, enc.RAX) // frame.site
	b.MovRegFromGS(enc.RAX, runtime.OffCur)
	b.MovMemFromRegD8(enc.RCX, frSavedCur+runtime.FrameSize, enc.RAX) // frame.saved_cur
	b.MovGS64Imm(runtime.OffCur, fg.curValue())
	b.MovGS64Imm(g.stubs.OffR, 0)
	b.MovGS64Imm(runtime.OffCallSite, 0)
	restoreBelow(b, regs)
	b.Bind(done)
	fg.stubBelow(slow, done, regs, false, g.stubs.Enter, fg.gid)
}

// enterLean is the inline entry of a lean function with a path register
// [decisions 51, 54]: the checks and the frame of enterSlotMem with one
// scratch register. The path register is saved in the frame first and
// then serves as the second one, since the entry sets it to 0 anyway.
// The frame's register is one dead at the entry (entryScratch), else
// %rcx, which waits below %rsp (saveBelow), so %rsp is the entry %rsp
// throughout. Every slow path leaves before anything is changed, so the
// register can be scratch in the checks. A closed function [decision 57] saves
// its return address in the frame's site instead of Thread's state.
func (fg *funcGen) enterLean(direct, keep bool) {
	g, b, x := fg.g, fg.g.buf, fg.preg
	slow, done, first := b.NewLabel(), b.NewLabel(), b.NewLabel()
	f, saved := fg.entryScratch()
	saveBelow(b, saved)
	if !direct {
		fg.g.testReady(slow)
		gateReg(b, f, slow)
	}
	// The newest frame must be a caller's: its %rsp above this entry's.
	// Below an empty shadow stack lies a sentinel frame whose %rsp is
	// above every entry's [decision 65].
	cmpNewestFrameRSPIn(b, f)
	b.JccRel32(enc.CondBE, enc.LabelTarget(slow))
	if fg.closed && !direct {
		// The internal entry comes next, so that calls from closed
		// functions, most of a closed function's, run straight on.
		b.JmpRel32(enc.LabelTarget(first))
		fg.enterInternal(f, saved)
	}
	b.Bind(first)
	b.AddRegImm32(f, runtime.FrameSize) // flags are dead at an entry
	b.CmpRegGS(f, runtime.OffSPLimit)
	b.JccRel32(enc.CondA, enc.LabelTarget(slow))
	fg.countSlotCall(slow, 0) // once the record exists
	// Reserve the frame (f is its end), then fill it, its %rsp first
	// (decision 163).
	b.MovGSFromReg(runtime.OffSP, f)
	b.MovMemFromRegD8(f, frRSP, enc.RSP)
	b.MovMemFromRegD8(f, frSavedReg, x)
	b.MovMemImm32D8(f, frFunc, fg.gid) // frame.func
	if fg.closed {
		// The return address names the caller's call site when the
		// caller is closed too [decision 57].
		b.MovRegFromMem(x, enc.RSP, 0)
		b.MovMemFromRegD8(f, frSite, x)
		if fg.callsOut {
			b.MovMemImm32D8(f, frExtSite, 0) // in no outside call
		}
	} else { // a closed activation leaves the rest alone
		if !keep {
			b.MovRegFromGS(x, g.stubs.OffR)
		} // else the register is the caller's r
		b.MovMemFromRegD8(f, frSavedR, x)
		b.MovRegFromGS(x, runtime.OffCallSite)
		b.MovMemFromRegD8(f, frSite, x)
		b.MovRegFromGS(x, runtime.OffCur)
		b.MovMemFromRegD8(f, frSavedCur, x)
		b.MovGS64Imm(runtime.OffCur, fg.curValue())
		b.MovGS64Imm(runtime.OffCallSite, 0)
	}
	restoreBelow(b, saved)
	b.Bind(done)
	b.MovImm32(x, 0) // the stub saved the register in the frame too (Func.PathReg)
	// A direct caller of a function that is not closed kept its r in
	// the register (directCall.keep): Thread.R gets it for the stub.
	fg.stubBelow(slow, done, saved, keep, g.stubs.Enter, fg.gid)
}

// enterInternal is the start of a closed function's internal entry
// [decision 61], which every call from a closed function takes: it loads
// the shadow stack's top and runs on into enterLean after the checks that
// only the first activation on a thread's way into closed code needs. Its
// caller is a closed activation running its own code, and so:
//   - the runtime is ready and %gs is this thread's own block, or the
//     shared scratch block whose empty shadow stack fails the limit test
//     below (the caller's entry either passed those checks or called
//     the entry stub, which leaves %gs at one of the two);
//   - the newest frame is the caller's, or the caller has none because
//     the shadow stack is full (which the limit test sees too): a closed
//     activation's callees all return by ret and pop their frames, and
//     nothing can jump back into a closed activation (it holds no
//     landing pad and calls no setjmp), so there is nothing to unwind;
//   - a busy stub on this thread is one a signal handler interrupted,
//     and the caller runs inside that handler above everything the stub
//     works on, as the stub's own push would.
//
// The flags are dead at an entry, and so is the red zone slot of the
// register f that enterLean works with (the call just wrote the return
// address over the caller's), which is saved as enterLean saves it.
func (fg *funcGen) enterInternal(f enc.Reg, saved []enc.Reg) {
	b := fg.g.buf
	b.Bind(fg.internal)
	saveBelow(b, saved)
	b.MovRegFromGS(f, runtime.OffSP)
}

// entryScratch is the register a one-register entry works with: the
// first of %rcx, %rax and %rdx that is dead at the entry, which needs no
// saving (pushedAtEntry), else %rcx, saved (decision 110).
func (fg *funcGen) entryScratch() (enc.Reg, []enc.Reg) {
	for _, r := range []enc.Reg{enc.RCX, enc.RAX, enc.RDX} {
		if len(fg.pushedAtEntry([]enc.Reg{r})) == 0 {
			return r, nil
		}
	}
	return enc.RCX, []enc.Reg{enc.RCX}
}

// countSlotCall emits addq $1, %gs:slot; js on: the call of a function
// with slot counters counts in its calls word, whose sign bit the runtime
// sets once the thread has the function's record (root, decision 104),
// so one add both counts and tests [decision 51]. Without the bit the
// add is taken back out of line, before slow: a signal handler that
// lands in between adds and takes its own back too, and the stub counts
// the call itself; every change of the word is one instruction, so none
// is lost. The flags are dead at an entry.
func (fg *funcGen) countSlotCall(slow enc.Label, sp int32) {
	b := fg.g.buf
	undo := b.NewLabel()
	b.AddGS64Imm(fg.slot, 1)
	b.JccRel32(enc.CondNS, enc.LabelTarget(undo))
	fg.addColdAt(undo, sp, func() {
		b.AddGS64Imm(fg.slot, -1)
		b.JmpRel32(enc.LabelTarget(slow))
	})
}

// enterTrivial is the whole instrumentation of a trivial function
// [decision 55]: count its call and its one path in the slots, in the
// thread's own block, once its record exists; else the leaf stub does
// both. An activation that calls nothing can only be left early by a
// signal (fatal, or a handler that jumps out), so counting its path at
// the entry rather than the exit differs from the framed form only
// there: such an activation counts as a whole path instead of a partial
// one of unknown end. The owner test works with a register dead at the
// entry (entryScratch), else with %rcx pushed without a red-zone step
// (nothing below %rsp is live at an entry); pop leaves the test's flags.
func (fg *funcGen) enterTrivial() {
	g, b := fg.g, fg.g.buf
	slow, done := b.NewLabel(), b.NewLabel()
	fg.g.testReady(slow)
	r, saved := fg.entryScratch()
	for _, s := range saved {
		b.Push(s)
	}
	cmpOwnerReg(b, r)
	for _, s := range saved {
		b.Pop(s)
	}
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	fg.countSlotCall(slow, 0)  // its calls, once its record exists
	b.AddGS64Imm(fg.slot+8, 1) // its path
	b.Bind(done)
	fg.stubBelow(slow, done, nil, false, g.stubs.Leaf, fg.gid)
}

// enterFrameless is the whole instrumentation of a frameless function
// (decision 88): decision 55's trivial function where there are no slot
// counters, in context mode and in flow-only libraries. Its record is
// found as enterInline finds it (the caller's record and call site, or
// the thread's flat table), its call, its node's count and its one path
// are counted there at once, and nothing else of the thread changes: no
// shadow frame, no path register, nothing at its exit, and Thread.Record
// and CallSite stay the caller's, as its exit would have restored them.
// Anything unusual takes the leaf stub, which does the same in C: a
// thread without its own block yet, a busy stub, a newest frame that is
// not a caller's (a longjmp left it), a tail mark not at this entry's
// %rsp (tail variant), a context seen for the first time.
func (fg *funcGen) enterFrameless(tail, direct bool) {
	g, b := fg.g, fg.g.buf
	slow, done := b.NewLabel(), b.NewLabel()
	p, q, regs := fg.framelessRegs()
	saveBelow(b, regs)
	if !direct { // planDirect says why a direct variant needs neither
		g.testReady(slow)
		gateReg(b, p, slow)
	}
	if g.mode.FlowOnly {
		fg.loadFlatInto(p, slow)
		b.MovRegFromMemD32(q, p, 8*fg.fid)
		b.TestRegReg(q)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	} else {
		// The newest frame must be a caller's, so that Thread.Record
		// is the caller's record (the sentinel below an empty shadow
		// stack passes).
		cmpNewestFrameRSPIn(b, p)
		b.JccRel32(enc.CondBE, enc.LabelTarget(slow))
		fg.loadParent(p, q, tail, slow)
		fg.childNodeIn(p, q, slow, 0)
		b.MovRegFromMemD8(q, p, runtime.NodeRecOff)
	}
	// A node is linked only with its record, and a record only with its
	// counters (child, rec_new): its one path's counter is dense.
	if !g.mode.FlowOnly {
		b.IncMemD8(p, runtime.NodeCountOff)
	}
	b.IncMemD32(q, countsOff)   // the record's calls
	b.IncMemD32(q, countsOff+8) // its path 0
	if tail {
		b.MovGS64Imm(runtime.OffTailRec, 0) // consumed
	}
	restoreBelow(b, regs)
	b.Bind(done)
	fg.stubBelow(slow, done, regs, false, g.stubs.Leaf, fg.gid)
}

// framelessRegs picks enterFrameless's two registers from %rax, %rdx and
// %rcx, those dead at the entry first (pushedAtEntry), and returns those
// of them it must save (decision 119). p serves the checks before it
// holds the parent record and then the node; q holds the call site, the
// list's head word and then the record. The checks need no third
// register: the gate's thread pointer and the newest frame are dead
// once compared.
func (fg *funcGen) framelessRegs() (p, q enc.Reg, saved []enc.Reg) {
	cands := []enc.Reg{enc.RAX, enc.RDX, enc.RCX}
	live := fg.pushedAtEntry(cands)
	var use []enc.Reg
	for _, r := range cands {
		if !slicesContains(live, r) {
			use = append(use, r)
		}
	}
	for _, r := range cands {
		if slicesContains(live, r) {
			use = append(use, r)
		}
	}
	p, q = use[0], use[1]
	return p, q, fg.pushedAtEntry([]enc.Reg{p, q})
}

// entryChecks starts an inline entry: it saves regs below %rsp
// (saveBelow: nothing below %rsp is live at an entry) and goes to slow
// unless the runtime is ready, %gs is this thread's own block, and no
// stub is busy on it and its shadow stack has not overflowed. Before the
// runtime is ready %gs may not point at a block at all: code a library
// constructor calls back into runs before the entry point. The ready
// word is 0 until then, so it is tested before any %gs access.
func (fg *funcGen) entryChecks(regs []enc.Reg, slow enc.Label) {
	b := fg.g.buf
	saveBelow(b, regs)
	fg.g.testReady(slow)
	gateRCX(b, slow)
}

// loadParent loads the parent record into p and the call site into q,
// and goes to slow without a tail parent. An ordinary entry takes the
// caller's (Thread.Record, CallSite). A tail variant, which only direct
// tail jumps with a tail site reach, takes the jumping activation's
// (TailRec, TailSite) when it is at the jump's %rsp (TailRSP) [decision
// 31]; the entry clears TailRec once it commits, and the stub handles
// every other case. So no ordinary entry tests TailRec (decision 90).
// %rsp is the entry %rsp (saveBelow).
func (fg *funcGen) loadParent(p, q enc.Reg, tail bool, slow enc.Label) {
	b := fg.g.buf
	if tail {
		b.CmpRegGS(enc.RSP, offTailRSP)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.MovRegFromGS(p, runtime.OffTailRec)
		b.MovRegFromGS(q, offTailSite)
		b.TestRegReg(p)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	} else { // never 0 (childNodeIn)
		b.MovRegFromGS(p, runtime.OffRecord)
		b.MovRegFromGS(q, runtime.OffCallSite)
	}
}

// pushedAtEntry returns the registers of regs that an inline entry must
// save before using them: those live where the entry leads (decision
// 90). A register that every path from the entry block overwrites
// before reading it (cfg.RegsLiveIn, which takes calls and returns to
// read every register) holds nothing the function or its caller can
// still see, so the entry may use it unsaved. The liveness at block 0
// is not the liveness after a moved entry's prefix (decision 67), which
// runs first, so such an entry saves all of them.
func (fg *funcGen) pushedAtEntry(regs []enc.Reg) []enc.Reg {
	if fg.liveIn == nil || (fg.entryBlock == 0 && fg.prefixEnd != 0) {
		return regs
	}
	live := fg.liveIn[fg.entryBlock]
	var out []enc.Reg
	for _, r := range regs {
		if live.Has(int(r)) {
			out = append(out, r)
		}
	}
	return out
}

// childNodeIn finds this function's node in the call-site list of the
// parent record in p for the call site in q, and leaves it in p: the
// list's first node, or the call cache's (callCacheLookup); anything
// else goes to slow. q is clobbered; sp is the stack depth, from the
// activation's %rsp, that the out-of-line look-up runs at. p is never 0
// where it comes from Thread.Record (decision 104): an activation, or a
// thread, without a record has the runtime's zero_record there, whose
// site range is empty, so the range test sends it to slow (a wiped
// record in a fork child has none either). Nor is a list's head word 0:
// an empty list holds the runtime's zero_node, whose function is none,
// so a miss there goes the call cache's way to slow.
func (fg *funcGen) childNodeIn(p, q enc.Reg, slow enc.Label, sp int32) {
	b := fg.g.buf
	b.SubRegMemD8(q, p, runtime.RecordFirstSiteOff)
	b.CmpRegMemD8(q, p, runtime.RecordNSitesOff)
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.MovRegFromMemD8(p, p, runtime.RecordKidsOff)
	b.LeaRegIdxD8(q, p, q, 8, 8) // the list's head word
	b.MovRegFromMem(p, q, 0)     // its first node, or the runtime's zero_node
	b.CmpMemImm32D8(p, runtime.NodeFuncOff, fg.gid)
	found := b.NewLabel()
	b.JccRel32(enc.CondNE, enc.LabelTarget(fg.callCacheLookup(p, q, found, slow, sp)))
	b.Bind(found)
}

// callCacheLookup queues, for a context-mode entry whose call-site list
// (head word at q) starts with another function's node, a look-up of
// this function's node in the thread's call cache [decision 49]:
// lea fid(q),p; imul $HashMul,p32,p32; shr; and $-32,p32; then the
// entry at %gs:CallCacheOffset(,p) must hold list q and a node of this
// function, which goes to p and back to found; a miss goes to slow (the stub
// walks the list and fills the entry). It returns the label to jump to.
// sp is the stack depth the out-of-line code runs at.
func (fg *funcGen) callCacheLookup(p, q enc.Reg, found, slow enc.Label, sp int32) enc.Label {
	g, b := fg.g, fg.g.buf
	if !g.callCache() {
		return slow
	}
	miss := b.NewLabel()
	fg.addColdAt(miss, sp, func() {
		b.LeaRegDisp32(p, q, fg.gid)
		b.ImulReg32Imm32(p, p, runtime.HashMul)
		b.ShrReg32Imm(p, uint8(32-runtime.CallCacheBits-bits.TrailingZeros(runtime.CallCacheEntry)))
		b.AndReg32Imm8(p, -runtime.CallCacheEntry)
		b.CmpGSIdxReg(p, runtime.CallCacheOffset, q)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.MovRegFromGSIdx(p, p, runtime.CallCacheOffset+16)
		// The node must be this function's: the entry may be
		// another function's of the same list (its fid word is not
		// compared: the node's says the same, decision 119), or a
		// signal handler's stub may have filled it for another pair
		// between the check and the load. A filled entry's node is
		// never 0 (cache_fill publishes the list word last).
		b.CmpMemImm32D8(p, runtime.NodeFuncOff, fg.gid)
		b.JccRel32(enc.CondE, enc.LabelTarget(found))
		b.JmpRel32(enc.LabelTarget(slow))
	})
	return miss
}

// loadFlatInto loads into reg the thread's array of flat records of the
// module, indexed by local function id, and goes to slow when there is
// none: the executable's is %gs:Flat; a library's (tag != 0) hangs
// under %gs:FlatMods, one array per tag [decision 81].
func (fg *funcGen) loadFlatInto(reg enc.Reg, slow enc.Label) {
	g, b := fg.g, fg.g.buf
	if g.tag == 0 {
		b.MovRegFromGS(reg, runtime.OffFlat)
	} else {
		b.MovRegFromGS(reg, runtime.OffFlatMods)
		b.TestRegReg(reg)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		b.MovRegFromMemD32(reg, reg, 8*int32(g.tag))
	}
	b.TestRegReg(reg)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
}
