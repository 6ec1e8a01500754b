package rewriter

import (
	"cmp"
	"slices"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// The framed entry of a function whose paths count in its record
// (context mode, flow-only functions without slot counters), decision
// 100, and its direct variant, which direct calls from instrumented
// functions with the same path register reach.

// framedRegs are the registers enterFramed works with: f holds the
// shadow stack's top, q the call site, p the records and nodes. p is the
// path register when there is one: its value goes into the frame first
// (saved_reg), so it is free until the entry sets it to 0. saved are
// those of them the entry must save (below %rsp: saveBelow). Where q
// would have to be saved, q is f (decision 119): the frame is full
// before the look-up, which in context mode then takes the call site
// into f (one load more, a save and a restore less).
type framedRegs struct {
	f, q, p enc.Reg
	saved   []enc.Reg
}

// reuse reports whether the look-up's q is the frame's register f.
func (r framedRegs) reuse() bool { return r.q == r.f }

// framedRegsFor picks f and q (and p without a path register) from %rax,
// %rcx and %rdx, those dead at the entry first (pushedAtEntry). With the
// time-stamp counter the frame's top stays in %rcx and %rax and %rdx are
// both free for rdtsc at the end (q is %rdx, %rax is saved too).
func (fg *funcGen) framedRegsFor(tsc bool) framedRegs {
	cands := []enc.Reg{enc.RAX, enc.RCX, enc.RDX}
	if tsc {
		cands = []enc.Reg{enc.RCX, enc.RDX, enc.RAX}
	} else {
		live := fg.pushedAtEntry(cands)
		var dead, busy []enc.Reg
		for _, r := range cands {
			if slicesContains(live, r) {
				busy = append(busy, r)
			} else {
				dead = append(dead, r)
			}
		}
		cands = append(dead, busy...)
	}
	need := 2
	if !fg.hasPreg || tsc {
		need = 3
	}
	use := cands[:need]
	r := framedRegs{f: use[0], q: use[1], p: fg.preg, saved: fg.pushedAtEntry(use)}
	if !fg.hasPreg {
		r.p = use[2]
	}
	// Without the time-stamp counter and slot counters f is free once
	// the frame is full (images with slots save Thread.Cur through q,
	// the counter's progress goes into the frame); a flow-only look-up
	// needs no q at all.
	if g := fg.g; !tsc && !g.slots() && len(fg.pushedAtEntry([]enc.Reg{use[need-1]})) > 0 {
		use = use[:need-1]
		r = framedRegs{f: use[0], q: use[0], p: fg.preg, saved: fg.pushedAtEntry(use)}
		if !fg.hasPreg {
			r.p = use[1]
		}
	}
	return r
}

func slicesContains(s []enc.Reg, r enc.Reg) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}

// enterFramed starts an activation of a function without slot counters
// inline (decision 100): it finds the callee's record (context mode: in
// the caller's record's node list for the call site in %gs:CallSite, or
// the call cache; flow-only: the thread's flat table), counts the call,
// pushes the shadow frame {entry %rsp, the caller's r, fid, the caller's
// record, the caller's call site, the register's entry value, the own
// record} and starts a path (r = 0, no call site yet) [DESIGN 7]. The
// frame is reserved right after the checks that need no record, and the
// caller's state goes into it at once, so a signal handler that runs
// instrumented code in between pushes above a frame whose %rsp, function
// and caller are known; the path register's value goes there first and
// the register then serves as scratch, so only two registers need saving
// (none where they are dead), below %rsp, so that %rsp stays the entry
// %rsp throughout (saveBelow). A look-up that fails gives the frame back
// and takes the stub, as does everything enterInline sends there.
//
// The direct variants (direct) are reached only by direct calls from
// instrumented code (planDirect): they test neither the ready word nor
// the gate. With keep the caller's path register is this function's, and
// the caller has not spilled it: its value is the caller's r, which goes
// to saved_r too, and this function's exits give it back (the caller
// does not reload it).
func (fg *funcGen) enterFramed(tail, direct, keep bool) {
	g, b := fg.g, fg.g.buf
	tsc := g.mode.TSCOnly
	slow0, slow1, done := b.NewLabel(), b.NewLabel(), b.NewLabel()
	r := fg.framedRegsFor(tsc)
	f, q, p := r.f, r.q, r.p
	se := fg.sharedEnt
	if se != nil && !tail && !keep {
		slow0, done = se.slow0, se.done
	} else {
		se = nil
	}
	saveBelow(b, r.saved)
	if !direct { // planDirect says why a direct variant needs neither
		g.testReady(slow0)
		gateReg(b, f, slow0)
		if se != nil {
			// The rest is the direct variant's, which the tests were
			// all that set apart (decision 165).
			b.JmpRel32(enc.LabelTarget(se.after))
			se.used = true
			return
		}
	}
	if se != nil {
		b.Bind(se.after)
	}
	// The newest frame must be a caller's, above this entry's %rsp (the
	// saved registers wait below it); below an empty shadow stack the
	// sentinel's %rsp is above every entry's [decision 65].
	b.MovRegFromGS(f, runtime.OffSP)
	b.CmpMemRegD8(f, frRSP, enc.RSP)
	b.JccRel32(enc.CondBE, enc.LabelTarget(slow0))
	b.AddRegImm32(f, runtime.FrameSize)
	b.CmpRegGS(f, runtime.OffSPLimit)
	b.JccRel32(enc.CondA, enc.LabelTarget(slow0))
	// Reserve the frame (f is its end), then fill what is known, its
	// %rsp first. A signal handler's entry that lands in between reads
	// the slot's %rsp as ~0 or 0, a live frame (decision 163): every pop
	// clears it.
	b.MovGSFromReg(runtime.OffSP, f)
	b.MovMemFromRegD8(f, frRSP, enc.RSP)
	if tail {
		// Only the jump that left the mark reaches a tail variant;
		// anything else about the mark is the stub's [decision 90].
		b.CmpRegGS(enc.RSP, offTailRSP)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow1))
	}
	b.MovMemImm32D8(f, frFunc, fg.gid)
	if fg.hasPreg {
		b.MovMemFromRegD8(f, frSavedReg, p)
	}
	if !keep {
		b.MovRegFromGS(p, g.stubs.OffR)
	} // else the register is the caller's r
	b.MovMemFromRegD8(f, frSavedR, p)
	if r.reuse() {
		// The site goes through p; f takes it once the frame is full.
		b.MovRegFromGS(p, runtime.OffCallSite)
		b.MovMemFromRegD8(f, frSite, p)
	} else {
		b.MovRegFromGS(q, runtime.OffCallSite)
		b.MovMemFromRegD8(f, frSite, q)
	}
	b.MovRegFromGS(p, runtime.OffRecord)
	b.MovMemFromRegD8(f, frRecord, p)
	// The record, into p.
	if g.mode.FlowOnly {
		fg.loadFlatInto(p, slow1)
		b.MovRegFromMemD32(p, p, 8*fg.fid)
		b.TestRegReg(p)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow1))
		// A linked record always has its counters (rec_new).
	} else {
		if tail {
			b.MovRegFromGS(p, runtime.OffTailRec)
			b.MovRegFromGS(q, offTailSite)
			b.TestRegReg(p)
			b.JccRel32(enc.CondE, enc.LabelTarget(slow1))
		} else if r.reuse() {
			b.MovRegFromGS(q, runtime.OffCallSite)
		} // Thread.Record is never 0 (childNodeIn)
		fg.childNodeIn(p, q, slow1, 0)
		// A node is linked only with its record, and a record only
		// with its counters (child, rec_new); in a fork child the
		// parent record is wiped too (nsites 0 took the slow path).
		b.IncMemD8(p, runtime.NodeCountOff)
		b.MovRegFromMemD8(p, p, runtime.NodeRecOff)
	}
	b.IncMemD32(p, countsOff)            // the record's calls
	b.MovGSFromReg(runtime.OffRecord, p) // where its exits count (exitOwn)
	if !fg.quiet() {
		b.MovGS64Imm(runtime.OffCallSite, 0)
	}
	if !fg.hasPreg {
		b.MovGS64Imm(g.stubs.OffR, 0) // else the register is the path register (set below)
	}
	if g.slots() {
		// A flow-only image with slot counters keeps Thread.Cur: this
		// function has none (0), its caller's comes back at the exit.
		b.MovRegFromGS(q, runtime.OffCur)
		b.MovMemFromRegD8(f, frSavedCur, q)
		b.MovGS64Imm(runtime.OffCur, 0)
	}
	if tail {
		b.MovGS64Imm(runtime.OffTailRec, 0) // consumed
	}
	if tsc {
		// The caller's path so far, macc + (now - mstart), waits in the
		// frame (saved_acc[0]) for the exit; the callee starts from
		// nothing at now, as blpp_rt_enter does [DESIGN 8]. f is %rcx.
		fg.tscProgress()
		b.MovMemFromRegD8(f, frSavedAcc, enc.RDX)
		b.MovGSFromReg(offMStart, enc.RAX)
		b.MovGS64Imm(offMAcc, 0)
	}
	restoreBelow(b, r.saved)
	b.Bind(done)
	if fg.hasPreg {
		// The stub saved the register in the frame too (Func.PathReg).
		b.MovImm32(p, 0) // mov, not xor: flags untouched
	}
	// After the frame was reserved: the register's entry value back and
	// the frame given back; then as before it, where a direct caller's r
	// goes to Thread.R for the stub (the caller did not spill it).
	fg.addColdAt(slow1, 0, func() {
		if r.reuse() {
			b.MovRegFromGS(f, runtime.OffSP) // the frame this entry reserved
		}
		if fg.hasPreg {
			b.MovRegFromMemD8(p, f, frSavedReg)
		}
		clearFrameRSP(b, f) // a pop (popFrame)
		b.AddRegImm32(f, -runtime.FrameSize)
		b.MovGSFromReg(runtime.OffSP, f)
		b.JmpRel32(enc.LabelTarget(slow0))
	})
	fg.addColdAt(slow0, 0, func() {
		restoreBelow(b, r.saved)
		if keep {
			b.MovGSFromReg(g.stubs.OffR, p) // the caller's r, for the stub
		}
		b.LeaRSP(-redZone)
		pushImm32(b, fg.gid)
		b.CallRel32(enc.AbsTarget(g.stubs.Enter))
		b.LeaRSP(redZone + 8)
		if fg.quiet() {
			fg.unquiet()
		}
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// sharedEntry joins a framed function's ordinary entry to its direct
// variant for callers that spill their path register (decision 165): the
// two are the same but for the ordinary entry's ready and gate tests,
// which it makes, with the same registers saved below %rsp, before it
// jumps to after, in the variant, past its own saving; a test that fails
// takes the variant's slow path (slow0), which goes on at its done.
// Context mode's framed entries were two copies of some 200 bytes.
// used says the ordinary entry did jump into the variant: only an
// enterFramed entry does (not a trivial, frameless, lean or stub one),
// and only with the variant for callers that spill their register.
type sharedEntry struct {
	after, slow0, done enc.Label
	used               bool
}

// shareEntry offers fg's primary entry the join to its direct variant
// [0], when fg has one (enterFramed takes it where it can); other entry
// points join other blocks and never see it (emit clears it).
func (fg *funcGen) shareEntry() {
	if !fg.hasDirect[0] {
		return
	}
	b := fg.g.buf
	fg.sharedEnt = &sharedEntry{after: b.NewLabel(), slow0: b.NewLabel(), done: b.NewLabel()}
}

// unquiet gives Thread.R and CallSite back to the caller after the
// entry stub started an activation of a quiet function, which set both
// (its exit will not restore them): from the frame the stub pushed, when
// the newest frame is that one; without a frame (an overflowed shadow
// stack) the caller's r is lost anyway, as the stub's exit makes it.
// %rcx is saved below %rsp meanwhile; the flags are dead at an entry.
func (fg *funcGen) unquiet() {
	b, rcx := fg.g.buf, []enc.Reg{enc.RCX}
	skip := b.NewLabel()
	saveBelow(b, rcx)
	cmpNewestFrameRSP(b)
	b.JccRel32(enc.CondNE, enc.LabelTarget(skip))
	b.MovRegFromMemD8(enc.RCX, enc.RCX, frSavedR)
	b.MovGSFromReg(fg.g.stubs.OffR, enc.RCX)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	b.MovRegFromMemD8(enc.RCX, enc.RCX, frSite)
	b.MovGSFromReg(runtime.OffCallSite, enc.RCX)
	b.Bind(skip)
	restoreBelow(b, rcx)
}

// directCall is how a direct call from instrumented code reaches its
// instrumented callee (decision 100): at target, a direct variant of
// its entry that skips the ready and gate tests, or its entry; and with
// keep, without spilling the caller's path register before it or
// reloading it after: the callee gives it back, and takes the caller's r
// from it where it saves one.
type directCall struct {
	target enc.Label
	keep   bool
}

// planDirect decides the direct calls (directCall) and gives the
// callees that need one a direct variant of their entry. Every
// activation starts with an entry, so code that makes a direct call runs
// with the runtime ready and %gs at the thread's own block, or at the
// scratch block, whose empty shadow stack fails every limit test; a busy
// stub on the thread is one a signal handler interrupted, and the
// handler's code runs above everything the stub works on; and while the
// shadow stack has overflowed it is full, which the limit test sees too.
// So a direct variant tests neither the ready word nor the gate, as a
// closed function's internal entry does not [decision 61]. It still
// compares the newest frame's %rsp: a longjmp may have left frames.
func (g *gen) planDirect() {
	if g.mode.Metrics && !g.mode.TSCOnly {
		return
	}
	// What each function is to its callers, and the targets of its tail
	// jumps (0: an indirect one), on every worker: both read its graph.
	const (
		none = iota
		leaf
		keeper
		plainer
	)
	kind := make([]uint8, len(g.funcs))
	tails := make([][]uint64, len(g.funcs))
	par.Each(len(g.funcs), g.workers, func(i int) {
		fg := g.funcs[i]
		switch {
		case fg.frameless() || fg.trivial():
			kind[i] = leaf
		case fg.fnHasPreg && fg.prefixEnd == 0:
			kind[i] = keeper
			for _, ed := range fg.f.Graph.Edges {
				if ed.Kind == cfg.EdgeTailCall {
					tails[i] = append(tails[i], ed.Target)
				}
			}
		case !fg.lean() && fg.prefixEnd == 0:
			// Framed with its path register in Thread.R: a direct
			// variant without the checks, its callers spilling as
			// before (decision 110).
			kind[i] = plainer
		}
	})
	keepers, leaves := map[uint64]*funcPlan{}, map[uint64]*funcPlan{}
	plain := map[uint64]*funcPlan{}
	tailsOf := map[*funcPlan][]uint64{}
	for i, fg := range g.funcs {
		switch kind[i] {
		case leaf:
			leaves[fg.f.Func.Addr] = fg.funcPlan
		case keeper:
			keepers[fg.f.Func.Addr] = fg.funcPlan
			if len(tails[i]) > 0 {
				tailsOf[fg.funcPlan] = tails[i]
			}
		case plainer:
			plain[fg.f.Func.Addr] = fg.funcPlan
		}
	}
	// A tail jump hands the register to the function it reaches, whose
	// own exits then give it back, or whose code leaves it alone. A
	// keeper dropped may drop those that tail-jump to it (tailers): only
	// they are looked at again (libLLVM's chains of tail jumps made
	// rounds over every keeper's edges cost half a second).
	tailers := map[uint64][]*funcPlan{}
	var work []*funcPlan
	for _, fg := range g.funcs {
		fp := fg.funcPlan
		if keepers[fp.f.Func.Addr] != fp {
			continue
		}
		for _, t := range tailsOf[fp] {
			if t != 0 {
				tailers[t] = append(tailers[t], fp)
			}
		}
		work = append(work, fp)
	}
	for len(work) > 0 {
		fp := work[len(work)-1]
		work = work[:len(work)-1]
		a := fp.f.Func.Addr
		if keepers[a] != fp || fp.keepsTail(tailsOf[fp], keepers, leaves) {
			continue
		}
		delete(keepers, a)
		work = append(work, tailers[a]...)
	}
	// Each function's calls are decided on every worker (the maps are
	// read only), and the callees' variants made here, in order.
	pend := make([][]pendingDirect, len(g.funcs))
	par.Each(len(g.funcs), g.workers, func(i int) {
		fg := g.funcs[i]
		if fg.closed {
			return // its calls are closed calls [decisions 57, 64]
		}
		for _, c := range fg.f.Graph.Calls {
			if !fg.plainCall(c) {
				continue
			}
			if pd, ok := fg.directCallTo(c.Target, keepers, leaves, plain); ok {
				pd.at = c.Addr
				pend[i] = append(pend[i], pd)
			}
		}
	})
	for i, fg := range g.funcs {
		if len(pend[i]) == 0 {
			continue
		}
		ds := make([]directCallAt, len(pend[i]))
		for j, pd := range pend[i] {
			dc := directCall{keep: pd.keep}
			if pd.callee == nil {
				dc.target = g.entries[pd.target]
			} else {
				dc.target = pd.callee.directLabel(pd.variant)
			}
			ds[j] = directCallAt{at: pd.at, dc: dc}
		}
		slices.SortFunc(ds, func(a, b directCallAt) int { return cmp.Compare(a.at, b.at) })
		fg.directs = ds
	}
}

// pendingDirect is planDirect's decision on one call, before the
// callee's variant is made: callee's direct variant (keep or not) or,
// with no callee, the ordinary entry of target.
type pendingDirect struct {
	at, target uint64
	callee     *funcPlan
	variant    bool
	keep       bool
}

// directCallAt is a direct call (directCall) by the address of its call
// instruction: funcPlan.directs, in address order.
type directCallAt struct {
	at uint64
	dc directCall
}

// plainCall reports whether fp's call c is a direct call that returns,
// without hooks after it (fork, vfork) or before it (a call that may end
// the process image).
func (fp *funcPlan) plainCall(c cfg.CallSite) bool {
	if c.Target == 0 || c.NoReturn || c.ReturnsTwice || c.Forks || c.Vforks {
		return false
	}
	_, leaves := fp.f.Graph.Leaves[c.Addr]
	return !leaves
}

// directCallTo decides fp's direct call to target, making the callee's
// direct variant where it takes one:
//   - a callee that counts in its record or its slots (enterFramed,
//     enterLean) and keeps fp's path register (keepers: the same register,
//     given back by every way back to fp) takes fp's r from the register,
//     so fp keeps it; with another register, or none, fp spills as before;
//   - a closed callee leaves Thread.R and CallSite alone [decision 57],
//     where the runtime finds fp's r: fp spills as before;
//   - a frameless or trivial callee never saves or touches the register
//     unless its code names it, and the runtime never reads fp's r while
//     it runs (fp is the newest activation and stops at no known place
//     but its call site); a trivial one's entry tests its thread block,
//     which a direct variant could not, so it keeps its entry;
//   - a framed callee whose path register is Thread.R (plain) takes a
//     direct variant too, and fp spills as before.
//
// Calls are never inside a loop region, so fp's register at a call is
// its path register.
func (fp *funcPlan) directCallTo(target uint64, keepers, leaves, plain map[uint64]*funcPlan) (pendingDirect, bool) {
	if callee, ok := leaves[target]; ok {
		keep := !fp.fnHasPreg || !callee.f.Graph.Named.Has(int(fp.fnPreg))
		if callee.trivial() {
			return pendingDirect{target: target, keep: keep}, keep
		}
		return pendingDirect{callee: callee, keep: keep}, true
	}
	if callee, ok := plain[target]; ok {
		return pendingDirect{callee: callee}, true
	}
	callee, ok := keepers[target]
	switch {
	case !ok:
		return pendingDirect{}, false
	case !callee.closed && fp.fnHasPreg && callee.fnPreg == fp.fnPreg:
		return pendingDirect{callee: callee, variant: true, keep: true}, true
	}
	return pendingDirect{callee: callee}, true
}

// directLabel is fp's direct entry variant for callers that keep their
// path register or not, made on first use.
func (fp *funcPlan) directLabel(keep bool) enc.Label {
	i := b2i(keep)
	if !fp.hasDirect[i] {
		fp.hasDirect[i], fp.direct[i] = true, fp.g.buf.NewLabel()
	}
	return fp.direct[i]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keepsTail reports whether each of fp's tail jumps (to tails: 0 for an
// indirect one) leaves its path register as its exit restored it until
// control returns to fp's caller: a direct jump to a keeper with the same
// register (whose entry saves the register and whose exits restore it),
// or to a frameless or trivial function that never names it (leaves). An
// indirect tail jump, or one to code that is not instrumented, could
// overwrite it.
func (fp *funcPlan) keepsTail(tails []uint64, keepers, leaves map[uint64]*funcPlan) bool {
	for _, t := range tails {
		if c, ok := keepers[t]; ok && t != 0 && c.fnPreg == fp.fnPreg {
			continue
		}
		if l, ok := leaves[t]; ok && t != 0 && !l.f.Graph.Named.Has(int(fp.fnPreg)) {
			continue
		}
		return false
	}
	return true
}

// directCallOf returns how the call instruction in is made, if it is a
// direct call (planDirect).
func (fg *funcGen) directCallOf(in *x86.Info) (directCall, bool) {
	if in.Kind != x86.Call || fg.inLoop >= 0 {
		return directCall{}, false // no look-up in the program-wide map
	}
	i, ok := slices.BinarySearchFunc(fg.directs, in.Addr, func(d directCallAt, a uint64) int { return cmp.Compare(d.at, a) })
	if !ok {
		return directCall{}, false
	}
	return fg.directs[i].dc, true
}

// quiet reports whether fp is a framed function that leaves Thread.R and
// CallSite as its caller left them (decision 100): a function with a
// path register that makes no call and no system call that may end the
// process image. Nothing but its slow paths would write either word, and
// those swap the register with Thread.R (spill) instead of overwriting
// it; so its entry does not clear the call site and its exit restores
// neither. While it runs the call site is its caller's, which names no
// block of it (it has no call sites), as 0 would not. After the entry
// stub, which sets both, the entry's slow path gives them back
// (unquiet).
func (fp *funcPlan) quiet() bool {
	return fp.slot == 0 && fp.fnHasPreg && len(fp.f.Graph.Calls) == 0 && len(fp.f.Graph.Leaves) == 0 && !fp.frameless()
}
