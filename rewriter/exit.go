package rewriter

import (
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Function exits: the path end at a return or tail jump, which counts
// the path and pops the shadow frame inline (exitInline, exitLean) or
// through the runtime's stubs (exitStub, tailExitStub).

// exitLean is the inline exit of a lean function with a path register
// that is not a tail jump to an instrumented function [decision 54]: the
// checks of exitOwn, with %rcx as the only saved register (below %rsp:
// saveBelow) and the path register as scratch once its path is counted.
// Neither the frame's function nor Cur is compared: a frame whose %rsp
// is this activation's entry %rsp can only be this activation's
// (exitOwn), and a lean activation with a frame counts in its slots,
// where its entry counted its call (decision 100). A closed function
// [decision 57] leaves Cur alone and restores only its register, with
// no other scratch register (exitClosed).
func (fg *funcGen) exitLean() {
	g, b, x := fg.g, fg.g.buf, fg.preg
	if fg.closed {
		fg.exitClosed()
		return
	}
	slow, done := b.NewLabel(), b.NewLabel()
	rcx := []enc.Reg{enc.RCX}
	saveBelow(b, rcx)
	// No frame is this activation's when the stack is empty: the
	// sentinel below it has an %rsp no entry has [decision 65].
	cmpNewestFrameRSP(b)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.CmpRegImm32(x, int32(fg.num.NumPaths))
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.IncGSIndexed(fg.slot+8, x)
	if !fg.closed {
		b.MovRegFromMemD8(x, enc.RCX, frSavedCur)
		b.MovGSFromReg(runtime.OffCur, x)
		b.MovRegFromMemD8(x, enc.RCX, frSavedR)
		b.MovGSFromReg(g.stubs.OffR, x)
		b.MovRegFromMemD8(x, enc.RCX, frSite)
		b.MovGSFromReg(runtime.OffCallSite, x)
	}
	b.MovRegFromMemD8(x, enc.RCX, frSavedReg) // the register's entry value
	popFrame(b, enc.RCX)
	restoreBelow(b, rcx)
	b.Bind(done)
	// A closed exit leaves its register for the stub to find in its
	// save area: Thread.R is not its own.
	fg.stubBelow(slow, done, rcx, !fg.closed, g.stubs.Exit, fg.gid)
}

// exitClosed is exitLean for a closed function (decision 110), whose
// exit restores nothing but its register: it counts the path in the
// slots first, and then, with the path register as the only scratch
// register, compares the newest frame's %rsp and takes the register's
// entry value from it, so %rcx need not be saved. The slots are in every
// block %gs can point at (regBackedge), so the count is safe before the
// frame is known to be this activation's; when it is not, the count is
// taken back (the path waits below %rsp meanwhile, where nothing is live
// at an exit) before the stub, as the slow path of countSlotCall does
// for a call, and the stub finds the register as exitLean left it.
func (fg *funcGen) exitClosed() {
	g, b, x := fg.g, fg.g.buf, fg.preg
	slow, undo, done := b.NewLabel(), b.NewLabel(), b.NewLabel()
	b.CmpRegImm32(x, int32(fg.num.NumPaths))
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.IncGSIndexed(fg.slot+8, x)
	b.MovMemFromReg(enc.RSP, -8, x)
	b.MovRegFromGS(x, runtime.OffSP)
	b.CmpMemRegD8(x, frRSP, enc.RSP)
	b.JccRel32(enc.CondNE, enc.LabelTarget(undo))
	// x is the frame's end until it takes the register's entry value:
	// the frame's %rsp is cleared first, then popped (popFrame).
	clearFrameRSP(b, x)
	b.MovRegFromMemD8(x, x, frSavedReg) // the register's entry value
	b.AddGS64Imm(runtime.OffSP, -runtime.FrameSize)
	b.Bind(done)
	fg.addColdAt(undo, 0, func() {
		b.MovRegFromMem(x, enc.RSP, -8)
		b.DecGSIndexed(fg.slot+8, x)
		b.JmpRel32(enc.LabelTarget(slow))
	})
	fg.stubBelow(slow, done, nil, false, g.stubs.Exit, fg.gid)
}

// exitStub ends the path at an exit through the runtime's stub.
func (fg *funcGen) exitStub() {
	b := fg.g.buf
	fg.spill() // the stub also puts the register's entry value back
	b.LeaRSP(-redZone)
	pushImm32(b, fg.gid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Exit))
	b.LeaRSP(redZone + 8)
}

// tailExitStub ends the path before a direct tail jump to an
// instrumented function through the runtime, which makes the callee's
// activation a child of this one at the jump's call site.
func (fg *funcGen) tailExitStub(site int32) {
	b := fg.g.buf
	b.LeaRSP(-redZone)
	pushImm32(b, site)
	pushImm32(b, fg.gid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.TailExit))
	b.LeaRSP(redZone + 16)
}

// exitInline ends the path at a return or tail call inline, where %rsp is
// back at its value at entry: count[r]++, then pop the shadow frame (the
// caller's r, record and call site come back), in the form the plan
// calls for: nothing for a frameless function, exitLean for a lean one,
// exitOwn where the paths count in the record, and the form below for
// what is left: a lean function's tail jump or Thread.R path register,
// and the time-stamp counter's exits. Anything unusual (a frame that is
// not this activation's, left by a longjmp; an overflowed or busy shadow
// stack; no record; a path the dense array does not hold) takes the
// stub, which unwinds and checks.
// Counters belong to the thread, so no lock prefix. Flags are dead at a
// return and a tail call [SysV x86-64 ABI 3.2.1], so they are not saved.
// No test of the ready word: see storeCallSite. A non-zero tailSite is a
// direct tail jump to an instrumented function from that call site: the
// activation's record, the site and the entry %rsp are left in TailRec,
// TailSite and TailRSP for the callee's entry [decision 31], as
// blpp_rt_exit does (TailRec last, so that a signal handler's entry in
// between never pairs it with a stale TailRSP).
func (fg *funcGen) exitInline(tailSite int32) {
	g, b := fg.g, fg.g.buf
	tsc := g.mode.TSCOnly
	if g.mode.Metrics && !tsc {
		fg.exitStub()
		return
	}
	if fg.trivial() || fg.frameless() {
		return // counted at the entry
	}
	if fg.lean() && fg.hasPreg && tailSite == 0 {
		fg.exitLean()
		return
	}
	if fg.slot == 0 && !tsc {
		fg.exitOwn(tailSite)
		return
	}
	slow, done := b.NewLabel(), b.NewLabel()
	// The inline code counts from the path register; only the stub needs
	// it in Thread.R (the cold path spills it).
	// A function with slot counters needs no record, so no %rdx; the
	// time-stamp counter needs one more (rdtsc writes %rax and %rdx).
	// What is left for this form: a lean function's tail jump to an
	// instrumented function, or its exit when its path register is
	// Thread.R; and with the time-stamp counter alone, every exit.
	saved := []enc.Reg{enc.RAX, enc.RCX, enc.RDX}
	switch {
	case fg.slot != 0 && tailSite == 0:
		saved = saved[:2]
	case tsc:
		saved = append(saved, enc.RSI)
	}
	entryRSP := uint32(8 * len(saved)) // this activation's %rsp at entry, from %rsp
	for _, r := range saved {
		b.Push(r)
	}
	gsBusyOrOverflow(b, enc.RCX, slow)
	// An empty shadow stack has no frame to pop: the sentinel below it
	// has an %rsp no entry has [decision 65].
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	// lea entryRSP(%rsp), %rax: this activation's %rsp at entry
	b.LeaRegDisp32(enc.RAX, enc.RSP, int32(entryRSP))
	b.CmpMemRegD8(enc.RCX, frRSP, enc.RAX)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.CmpMemImm32D8(enc.RCX, frFunc, fg.gid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	idx := enc.RAX
	switch {
	case fg.hasPreg && fg.slot != 0:
		idx = fg.preg
	case fg.hasPreg:
		b.MovRegFromReg(enc.RAX, fg.preg)
	default:
		b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	}
	if fg.slot != 0 {
		// The running record is this function's, with its counters in
		// the slots, exactly when Cur says so [decision 42].
		b.CmpGS64Imm(runtime.OffCur, fg.curValue())
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.CmpRegImm32(idx, int32(fg.num.NumPaths))
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	} else {
		b.MovRegFromGS(enc.RDX, runtime.OffRecord)
		b.TestRegReg(enc.RDX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		b.CmpRegMemD8(enc.RAX, enc.RDX, runtime.RecordDenseNOff)
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	}
	if tailSite != 0 {
		b.MovGS64Imm(offTailSite, tailSite)
		b.LeaRegDisp32(enc.RCX, enc.RSP, int32(entryRSP)) // entry rsp
		b.MovGSFromReg(offTailRSP, enc.RCX)
		b.MovGSFromReg(runtime.OffTailRec, enc.RDX)
		b.MovRegFromGS(enc.RCX, runtime.OffSP)
	}
	if fg.slot != 0 {
		b.IncGSIndexed(fg.slot+8, idx)
		if fg.hasPreg {
			b.MovRegFromMem(fg.preg, enc.RCX, int32(frSavedReg)) // the register's entry value
		}
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedCur)
		b.MovGSFromReg(runtime.OffCur, enc.RAX)
	} else {
		// As at backedges: the path's {count, tsc sum} (and latency
		// words); then mstart = now and the caller gets its macc back
		// from the frame.
		b.LeaRegDisp32(enc.RSI, enc.RDX, countsOff)
		fg.countTSC(enc.RSI)
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedAcc) // frame.saved_acc[0]
		b.MovGSFromReg(offMAcc, enc.RAX)
	}
	b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedR)
	b.MovGSFromReg(g.stubs.OffR, enc.RAX)
	b.MovRegFromMemD8(enc.RAX, enc.RCX, frSite)
	b.MovGSFromReg(runtime.OffCallSite, enc.RAX)
	if !fg.lean() {
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frRecord)
		b.MovGSFromReg(runtime.OffRecord, enc.RAX)
	}
	popFrame(b, enc.RCX)
	for i := len(saved) - 1; i >= 0; i-- {
		b.Pop(saved[i])
	}
	b.Bind(done)
	if tailSite != 0 {
		fg.coldStub(slow, done, saved, true, g.stubs.TailExit, tailSite, fg.gid)
		return
	}
	fg.coldStub(slow, done, saved, true, g.stubs.Exit, fg.gid)
}

// exitOwn is the inline exit of a function whose paths count in its
// record (context mode, flow-only functions without slot counters),
// decision 100. It saves %rcx, and %rax when the path register is
// Thread.R, and uses the path register as the second scratch register
// once the path is counted (the frame gives back its entry value last),
// as exitLean does; a hashed function's probe takes %rdx as well. The
// saved registers wait below %rsp (saveBelow).
//
// The record is Thread.Record, where the function's backedges count
// too (decision 119; decision 100 read a copy the entry left in its
// frame): while its own frame is the newest, Thread.Record is the
// activation's record, since every callee gives it back at its exit
// (inline or restore_open), a frameless, dark or lean callee leaves it
// alone, and the runtime changes it only with the activation's frame
// (the entry stub, fork_reset) or to the record's hot twin (promote),
// where the stub would count anyway. It is never 0: an activation
// without a record has the runtime's zero record there, whose dense
// array holds nothing. So the path is counted first and the frame
// compared after, with %rcx free again: when the newest frame is not
// this activation's, the count is taken back (Thread.Record is the same
// word again: a signal handler in between gives it back) before the
// stub, as exitClosed does. Only the newest frame's %rsp is compared:
// every entry unwinds the frames at or below its own %rsp first (the
// stub) or finds none (inline), and a tail exit pops its frame before
// its callee's entry pushes one at the same %rsp, so a frame with this
// activation's entry %rsp is its own; an activation without a frame (an
// overflowed shadow stack) finds an older one there, whose %rsp is
// higher, and goes to the stub, which counts the overflow down. A busy
// stub means that a signal handler interrupted it, and the handler's
// activations push and pop their frames above everything it works on.
// A hashed function's exit and a tail exit compare the frame first, as
// before (the probe and the tail mark are not taken back).
func (fg *funcGen) exitOwn(tailSite int32) {
	g, b := fg.g, fg.g.buf
	slow, done := b.NewLabel(), b.NewLabel()
	saved := []enc.Reg{enc.RCX}
	x := fg.preg
	if !fg.hasPreg {
		x = enc.RAX
		saved = append(saved, x)
	}
	hash := fg.hashInline()
	if hash {
		saved = append(saved, enc.RDX) // the probe's index
	}
	saveBelow(b, saved)
	if !fg.hasPreg {
		b.MovRegFromGS(x, g.stubs.OffR)
	}
	// A cold record's table (coldPathEnd) takes the path id's scratch
	// register below those saved.
	t := []below{{coldScratch(enc.RCX, x), -8 * int32(len(saved)+1)}}
	if !hash && tailSite == 0 {
		undo, checked := b.NewLabel(), b.NewLabel()
		b.MovRegFromGS(enc.RCX, runtime.OffRecord)
		b.CmpRegMemD8(x, enc.RCX, runtime.RecordDenseNOff)
		// Out of line, the frame is compared first: a count in the
		// table is not taken back.
		cold := fg.coldPathEnd(enc.RCX, x, slow, checked, 0, t, false, func() {
			cmpNewestFrameRSP(b)
			b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
			b.MovRegFromGS(enc.RCX, runtime.OffRecord)
		}, func() { b.MovRegFromGS(enc.RCX, runtime.OffSP) })
		b.JccRel32(enc.CondAE, enc.LabelTarget(cold))
		b.IncMemIndexed(enc.RCX, x, countsOff+8)
		cmpNewestFrameRSP(b)
		b.JccRel32(enc.CondNE, enc.LabelTarget(undo))
		b.Bind(checked)
		fg.addColdAt(undo, 0, func() {
			b.MovRegFromGS(enc.RCX, runtime.OffRecord)
			b.DecMemIndexed(enc.RCX, x, countsOff+8)
			b.JmpRel32(enc.LabelTarget(slow))
		})
	} else {
		cmpNewestFrameRSP(b)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.MovRegFromGS(enc.RCX, runtime.OffRecord)
		if hash {
			// Counted here when found; nothing below can fail.
			fg.hashCount(enc.RCX, enc.RCX, x, enc.RDX, slow, 0, true)
			if tailSite != 0 {
				b.MovRegFromGS(enc.RCX, runtime.OffRecord)
			}
		} else {
			counted := b.NewLabel()
			b.CmpRegMemD8(x, enc.RCX, runtime.RecordDenseNOff)
			b.JccRel32(enc.CondAE, enc.LabelTarget(fg.coldPathEnd(enc.RCX, x, slow, counted, 0, t, false, nil, nil)))
			b.IncMemIndexed(enc.RCX, x, countsOff+8)
			b.Bind(counted) // %rcx is Thread.Record either way
		}
		if tailSite != 0 {
			// TailRec last: a signal handler's entry in between never
			// pairs it with a stale TailRSP [decision 31].
			b.MovGS64Imm(offTailSite, tailSite)
			b.MovGSFromReg(offTailRSP, enc.RSP) // the entry %rsp
			b.MovGSFromReg(runtime.OffTailRec, enc.RCX)
		}
		b.MovRegFromGS(enc.RCX, runtime.OffSP)
	}
	if g.slots() {
		b.MovRegFromMemD8(x, enc.RCX, frSavedCur)
		b.MovGSFromReg(runtime.OffCur, x)
	}
	if !fg.quiet() { // else neither changed since the entry
		b.MovRegFromMemD8(x, enc.RCX, frSavedR)
		b.MovGSFromReg(g.stubs.OffR, x)
		b.MovRegFromMemD8(x, enc.RCX, frSite)
		b.MovGSFromReg(runtime.OffCallSite, x)
	}
	b.MovRegFromMemD8(x, enc.RCX, frRecord)
	b.MovGSFromReg(runtime.OffRecord, x)
	if fg.hasPreg {
		b.MovRegFromMemD8(x, enc.RCX, frSavedReg) // the register's entry value
	}
	popFrame(b, enc.RCX)
	restoreBelow(b, saved)
	b.Bind(done)
	if tailSite != 0 {
		fg.stubBelow(slow, done, saved, true, g.stubs.TailExit, tailSite, fg.gid)
		return
	}
	fg.stubBelow(slow, done, saved, true, g.stubs.Exit, fg.gid)
}
