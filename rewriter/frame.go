package rewriter

import (
	"unsafe"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Pieces the entry, exit and backedge sequences share: the red zone, the
// shadow frame's field offsets, the path register's spills and swaps,
// flags saving, the runtime-ready and thread-owner checks, the
// out-of-line stub calls, and the call-site stores.

// redZone is stepped over before anything is pushed: code being
// instrumented may keep live data below %rsp [SysV x86-64 ABI 3.2.2].
const redZone = 128

// outsideCallStore emits, before an outside call of a closed function
// [decision 64], the stores of its path register and the call site into
// its own frame (ext_r, ext_site), through %rcx, which waits in the red
// zone meanwhile: nothing below %rsp is live at a call, whose return
// address and callee write there next, and a signal frame skips the red
// zone. Should the activation have no frame (the shadow stack is full),
// the stores go to the newest frame, whose ext words only closed frames
// read, and outsideCallLoad reads the register back from there all the
// same; the scratch block has a frame's room below its empty stack.
func (fg *funcGen) outsideCallStore(site int32) {
	b := fg.g.buf
	b.MovMemFromReg(enc.RSP, -8, enc.RCX)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	b.MovMemFromReg(enc.RCX, int32(frExtR), fg.preg)
	b.MovMemImm32(enc.RCX, int32(frExtSite), site)
	b.MovRegFromMem(enc.RCX, enc.RSP, -8)
}

// outsideCallLoad emits, after an outside call returns, the load of the
// path register from the frame, and clears the frame's call site so that
// the runtime does not take the activation for one still in that call.
// The flags are left alone (a call's return edge may carry live flags
// out of hand-written code).
func (fg *funcGen) outsideCallLoad() {
	b, x := fg.g.buf, fg.preg
	b.MovRegFromGS(x, runtime.OffSP)
	b.MovMemImm32(x, int32(frExtSite), 0)
	b.MovRegFromMem(x, x, int32(frExtR))
}

// spill stores the path register to Thread.R, where the runtime and
// callees expect it; reload takes it back. In a loop whose register
// holds a program value in Thread.R, and in a closed or quiet function
// (whose activations leave Thread.R as they found it, decisions 57 and
// 100), both swap the two.
func (fg *funcGen) spill() {
	switch {
	case fg.inLoop >= 0 && fg.loops[fg.inLoop].swap, fg.closed, fg.quiet():
		fg.g.buf.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	case fg.hasPreg:
		fg.g.buf.MovGSFromReg(fg.g.stubs.OffR, fg.preg)
	}
}

func (fg *funcGen) reload() {
	switch {
	case fg.inLoop >= 0 && fg.loops[fg.inLoop].swap, fg.closed, fg.quiet():
		fg.g.buf.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	case fg.hasPreg:
		fg.g.buf.MovRegFromGS(fg.preg, fg.g.stubs.OffR)
	}
}

// enterLoop moves the path register from Thread.R into the region's
// register, whose value goes to Thread.R when the program still needs
// it; leaveLoop undoes that. The call site goes to 0 on the way in: the
// loop calls nothing, and a runtime that finds this activation stopped
// inside it (a signal handler's longjmp) must not pair the value in
// Thread.R with the block of an earlier call.
func (fg *funcGen) enterLoop() {
	b := fg.g.buf
	if fg.loops[fg.inLoop].swap {
		b.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	} else {
		b.MovRegFromGS(fg.preg, fg.g.stubs.OffR)
	}
	b.MovGS64Imm(runtime.OffCallSite, 0)
}

func (fg *funcGen) leaveLoop() {
	b := fg.g.buf
	if fg.loops[fg.inLoop].swap {
		b.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	} else {
		b.MovGSFromReg(fg.g.stubs.OffR, fg.preg)
	}
}

// leaveHook emits the call that has the runtime write the profile because
// the process image may end next without its exit hooks (_exit, an exec:
// blpp_rt_leave) [decision 59]. Every register and the flags are kept,
// and the red zone is stepped over.
func (fg *funcGen) leaveHook(k cfg.LeaveKind) {
	b := fg.g.buf
	b.LeaRSP(-redZone)
	pushImm32(b, int32(k))
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Leave))
	b.LeaRSP(redZone + 8)
}

// syscallLeave emits, before the system call in at block id when it may
// end the process image, what a call there would store (its site and
// the path register, for the runtime to find where the activation
// stopped) and the hook [decision 59].
func (fg *funcGen) syscallLeave(in *x86.Info) {
	l, ok := fg.f.Graph.Leaves[in.Addr]
	if !ok || !l.Syscall {
		return
	}
	fg.storeCallSite(fg.leaveSite[in.Addr])
	fg.spill()
	fg.leaveHook(l.Kind)
	fg.reload()
}

// testReady emits cmpq $0, blpp_fast_slots(%rip); je slow: the runtime is
// not ready while the word is 0.
func (g *gen) testReady(slow enc.Label) {
	b := g.buf
	b.CmpRIPImm8(enc.AbsTarget(g.stubs.FastSlots), 0)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
}

// cmpOwnerRCX emits mov %fs:0, %rcx; cmp %gs:owner, %rcx: equal when %gs
// is this thread's own block.
func cmpOwnerRCX(b *enc.Buf) { cmpOwnerReg(b, enc.RCX) }

// cmpOwnerReg is cmpOwnerRCX with reg for %rcx.
func cmpOwnerReg(b *enc.Buf, reg enc.Reg) {
	b.MovRegFromFS(reg, 0)
	if faultInjection && fault("threads") {
		// Every thread takes the block it inherited for its own (the
		// runtime too: ConfigFlagFaultSharedThreads): new threads update
		// their creator's counters, and updates are lost between them.
		b.CmpRegReg(reg, reg)
		return
	}
	b.CmpRegGS(reg, runtime.OffOwner)
}

// gateRCX emits mov %fs:0, %rcx; cmp %gs:gate, %rcx; jne slow: the
// thread's gate is its owner's thread pointer only while %gs is this
// thread's own block, no stub is busy on it and its shadow stack has not
// overflowed, so one compare does what cmpOwnerRCX and gsBusyOrOverflow
// do together (decision 90). The threads fault compares the owner as
// cmpOwnerRCX plants it, and the other two words as before.
func gateRCX(b *enc.Buf, slow enc.Label) { gateReg(b, enc.RCX, slow) }

// gateReg is gateRCX with reg for %rcx.
func gateReg(b *enc.Buf, reg enc.Reg, slow enc.Label) {
	if faultInjection && fault("threads") {
		cmpOwnerReg(b, reg)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		gsBusyOrOverflow(b, reg, slow)
		return
	}
	b.MovRegFromFS(reg, 0)
	b.CmpRegGS(reg, runtime.OffGate)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
}

// Shadow-frame field offsets, relative to the end of the newest frame
// (Thread.SP points just past it).
var (
	frRSP    = int8(int(unsafe.Offsetof(runtime.Frame{}.RSP)) - runtime.FrameSize)
	frSavedR = int8(int(unsafe.Offsetof(runtime.Frame{}.SavedR)) - runtime.FrameSize)
	frFunc   = int8(int(unsafe.Offsetof(runtime.Frame{}.Func)) - runtime.FrameSize)
	frRecord = int8(int(unsafe.Offsetof(runtime.Frame{}.Record)) - runtime.FrameSize)
	frSite   = int8(int(unsafe.Offsetof(runtime.Frame{}.Site)) - runtime.FrameSize)
	// In images with slot counters: the caller's Thread.Cur and the
	// entry value of the function's path register (Func.PathReg).
	frSavedCur = int8(runtime.FrameSavedCurOff - runtime.FrameSize)
	// With metrics: the caller's accumulated value of the first metric.
	frSavedAcc = frSavedCur
	frSavedReg = int8(runtime.FrameSavedRegOff - runtime.FrameSize)
	// In a closed function's frame: the call site and path register of
	// its outside call in progress [decision 64].
	frExtSite = int8(runtime.FrameExtSiteOff - runtime.FrameSize)
	frExtR    = int8(runtime.FrameExtROff - runtime.FrameSize)
	// Thread fields of a pending tail call [decision 31].
	offTailSite = int32(unsafe.Offsetof(runtime.Thread{}.TailSite))
	offTailRSP  = int32(unsafe.Offsetof(runtime.Thread{}.TailRSP))
	// The first metric's start and accumulated value [DESIGN 8].
	offMStart = int32(unsafe.Offsetof(runtime.Thread{}.MStart))
	offMAcc   = int32(unsafe.Offsetof(runtime.Thread{}.MAcc))
)

// countsOff is where a record's counters begin, from the record, as
// rec_new allocates them (the slot counters of flow-only images are
// reached from %gs instead) [decision 47].
const countsOff = int32(runtime.RecordInlineCounts)

// coldStub queues the slow path of an inline sequence: pop the saved
// registers, spill the path register when spill says so, step over the
// red zone (the stubs find the activation's %rsp above it), call the stub
// with the pushed arguments, step back over the red zone and the
// arguments, and rejoin the inline code at done. The inline entries and
// exits themselves push without stepping over the red zone: nothing
// below %rsp is live when a function is entered, returns or jumps away
// (decision 90).
func (fg *funcGen) coldStub(slow, done enc.Label, saved []enc.Reg, spill bool, stub uint64, args ...int32) {
	b := fg.g.buf
	fg.addColdAt(slow, -int32(8*len(saved)), func() {
		for i := len(saved) - 1; i >= 0; i-- {
			b.Pop(saved[i])
		}
		fg.callStubCold(done, spill, stub, args)
	})
}

// storeCallSite emits movq $site, %gs:call_site. It runs inside an
// activation whose entry has run on this thread, and every entry leaves
// %gs at a thread block (its own, its creator's until the stub gives it
// one, or before the runtime is ready a scratch block: see early_gs), so
// no test of the ready word is needed [decision 40].
func (fg *funcGen) storeCallSite(site int32) {
	if faultInjection && fault("partial") {
		return
	}
	fg.g.buf.MovGS64Imm(fg.g.stubs.OffCallSite, site)
}

// gsBusyOrOverflow emits mov %gs:overflow, reg; or %gs:busy, reg; jne
// slow: one test for a shadow stack that is busy (a stub interrupted by
// a signal) or overflowing.
func gsBusyOrOverflow(b *enc.Buf, reg enc.Reg, slow enc.Label) {
	b.MovRegFromGS(reg, runtime.OffOverflow)
	b.OrRegGS(reg, runtime.OffBusy)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
}

// saveBelow stores regs below %rsp, the first at -8(%rsp), and
// restoreBelow loads them back. Nothing below %rsp is live at an entry
// (the call just wrote the return address over the caller's red zone),
// at a return or at a jump away [decision 90], and a signal frame skips
// the 128-byte red zone [SysV x86-64 ABI 3.2.2], so the values wait
// there while %rsp keeps the activation's entry value, which the
// sequences then compare with the shadow frame's and store as it is:
// no push, no pop, no lea to step over what was pushed (decision 100).
func saveBelow(b *enc.Buf, regs []enc.Reg) {
	for i, r := range regs {
		b.MovMemFromReg(enc.RSP, -8*int32(i+1), r)
	}
}

func restoreBelow(b *enc.Buf, regs []enc.Reg) {
	for i := len(regs) - 1; i >= 0; i-- {
		b.MovRegFromMem(regs[i], enc.RSP, -8*int32(i+1))
	}
}

// stubBelow queues the slow path of a sequence that saved regs below
// %rsp (saveBelow): load them back, spill the path register when spill
// says so, call stub with args after the red zone (coldStub's calling
// sequence), and rejoin the inline code at done.
func (fg *funcGen) stubBelow(slow, done enc.Label, saved []enc.Reg, spill bool, stub uint64, args ...int32) {
	b := fg.g.buf
	fg.addColdAt(slow, 0, func() {
		restoreBelow(b, saved)
		fg.callStubCold(done, spill, stub, args)
	})
}

// callStubCold is the end of a cold slow path once the entry's saved
// registers are back: spill the path register if asked, call stub with
// args pushed below the red zone, and jump back to done.
func (fg *funcGen) callStubCold(done enc.Label, spill bool, stub uint64, args []int32) {
	b := fg.g.buf
	if spill {
		fg.spill()
	}
	b.LeaRSP(-redZone)
	for _, a := range args {
		pushImm32(b, a)
	}
	b.CallRel32(enc.AbsTarget(stub))
	b.LeaRSP(redZone + int32(8*len(args)))
	b.JmpRel32(enc.LabelTarget(done))
}

// cmpNewestFrameRSP emits mov %gs:sp, %rcx; cmp %rsp, frame.rsp(%rcx):
// the flags of the newest frame's saved %rsp against %rsp, which is the
// activation's entry %rsp where registers are saved below it
// (saveBelow), for a jcc to follow.
func cmpNewestFrameRSP(b *enc.Buf) { cmpNewestFrameRSPIn(b, enc.RCX) }

// cmpNewestFrameRSPIn is cmpNewestFrameRSP with reg for %rcx.
func cmpNewestFrameRSPIn(b *enc.Buf, reg enc.Reg) {
	b.MovRegFromGS(reg, runtime.OffSP)
	b.CmpMemRegD8(reg, frRSP, enc.RSP)
}

// popFrame emits movq $-1, frame.rsp(end); addq $-FrameSize, %gs:sp:
// an exit's pop of the newest frame, whose end is in end, once
// everything is read from it. The pop itself is one instruction rather
// than a store through the frame's register (decision 110); a signal
// lands before or after it, as it did before or after the store of the
// older form. The flags are dead at an exit.
//
// The frame's %rsp is cleared first (decision 163): a slot above the
// shadow stack's top never holds an %rsp, only ~0 (cleared) or 0 (never
// used), so an entry that has reserved the slot but not yet written its
// %rsp shows a signal handler's entry a frame that is live, never a
// stale %rsp below the handler's that would read as a frame a longjmp
// left. A handler landing between the two instructions finds the frame
// live (~0 is above every %rsp) and pushes above it.
func popFrame(b *enc.Buf, end enc.Reg) {
	clearFrameRSP(b, end)
	b.AddGS64Imm(runtime.OffSP, -runtime.FrameSize)
}

// clearFrameRSP emits movq $-1, frame.rsp(end): the mark of a slot no
// activation holds (popFrame).
func clearFrameRSP(b *enc.Buf, end enc.Reg) { b.MovMemImm32D8(end, frRSP, -1) }

// saveFlags keeps the status flags in %rax (OF in %al, the others in
// %ah), which must be saved already; restoreFlags puts them back from
// %rax. Four one-uop instructions instead of pushfq/popfq, whose popfq
// costs some 20 cycles [Intel SDM Vol.2 LAHF, SAHF]. The instrumentation
// never changes DF, the only other flag liveness tracks [decision 11].
func saveFlags(b *enc.Buf) {
	b.SetoAL()
	b.Lahf()
}

func restoreFlags(b *enc.Buf) {
	b.AddALImm8(0x7f)
	b.Sahf()
}

// deadReg returns a general register that the code after edge e surely
// overwrites before reading it (register liveness, decision 43), if any.
func (fg *funcGen) deadReg(e cfg.EdgeID) (enc.Reg, bool) {
	return fg.deadRegFor(e, fg.preg, fg.hasPreg)
}

// deadRegs returns up to n general registers dead after edge e, never
// %rsp or the path register (which liveness sees as dead: the function
// never names it).
func (fg *funcGen) deadRegs(e cfg.EdgeID, n int) []enc.Reg {
	return fg.deadRegsFor(e, n, fg.preg, fg.hasPreg)
}

// forkChild emits, after a call to fork at call site site: when it
// returned 0 (the child), call the runtime to record the path prefixes of
// the activations live across the fork (blpp_rt_fork_child). The flags
// after a call are undefined [SysV x86-64 ABI 3.2.1]; the caller checks
// that the code after it does not read them.
func (fg *funcGen) forkChild(site int32) {
	fg.childCall(site, fg.g.stubs.ForkChild)
}

// childCall emits what forkChild and vforkChild share: when %eax is 0
// (the child's side of the call at site), call stub with the site and
// the function's id, the path register spilled for it.
func (fg *funcGen) childCall(site int32, stub uint64) {
	b := fg.g.buf
	parent := b.NewLabel()
	b.TestReg32(enc.RAX)
	b.JccRel32(enc.CondNE, enc.LabelTarget(parent))
	fg.spill()
	b.LeaRSP(-redZone)
	pushImm32(b, site)
	pushImm32(b, fg.gid)
	b.CallRel32(enc.AbsTarget(stub))
	b.LeaRSP(redZone + 16)
	b.Bind(parent)
}
