package rewriter

import (
	"math"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Backedges: the path end and restart at a loop's backedge, count[r +
// ExitInc]++ and r = EntryInc [Ball-Larus 96 §3.3], in the forms the
// plan allows: slot counters at fixed %gs offsets, the running record's
// dense array, the path register in a general register, the hashed
// table, and the runtime's backedge stub when none applies.

// backedge emits a path end at a backedge inline: count[r + ExitInc]++
// in the running record's dense array, then r = EntryInc. When that is
// not possible (no record or another function's, a path the dense array
// does not hold: hashed functions, a fork child's stale record, before
// the runtime is ready) an out-of-line call to the backedge stub does the
// same work. The inline form saves the call, the stub's register saves
// and its checks: loops are where time goes. No test of the ready word
// (see storeCallSite): before the runtime is ready %gs points at a block
// without a record. Live flags are kept in %rax (saveFlags), pushed
// between %rax and %rcx.
func (fg *funcGen) backedge(e cfg.EdgeID, flagsLive bool) {
	b, n := fg.g.buf, fg.num
	if fg.hasPreg && fg.slot != 0 {
		fg.regBackedge(e, flagsLive)
		return
	}
	if fg.recordBackedgeIn(e, flagsLive) {
		return
	}
	if fg.hasPreg {
		// The record's counters: the code below reads Thread.R and
		// leaves EntryInc there, the stub too; so does the register.
		// A swapping loop register takes EntryInc back and gives
		// Thread.R the program's value again [decision 56].
		fg.spill()
		fg.backedgeMem(e, flagsLive)
		if fg.inLoop >= 0 && fg.loops[fg.inLoop].swap || fg.quiet() {
			fg.reload()
		} else {
			b.MovRegImm(fg.preg, int32(n.EntryInc[e])) // sign-extended; flags untouched
		}
		return
	}
	fg.backedgeMem(e, flagsLive)
}

// backedgeMem is backedge for a path register in Thread.R.
func (fg *funcGen) backedgeMem(e cfg.EdgeID, flagsLive bool) {
	g, b, n := fg.g, fg.g.buf, fg.num
	if fg.slot != 0 && !flagsLive {
		if r, ok := fg.deadReg(e); ok {
			fg.slotBackedgeIn(e, r)
			return
		}
	}
	slow, done := b.NewLabel(), b.NewLabel()
	b.LeaRSP(-redZone)
	if g.mode.Metrics && !g.mode.TSCOnly {
		fg.backedgeStub(e)
		return
	}
	b.Push(enc.RAX)
	if flagsLive { // the tests and the increment write the flags
		saveFlags(b)
		b.Push(enc.RAX)
	}
	if fg.slot != 0 {
		fg.slotBackedge(e, flagsLive, slow, done)
		return
	}
	b.Push(enc.RCX)
	tsc, hash := g.mode.TSCOnly, fg.hashInline()
	depth := int32(-redZone - 16) // %rax and %rcx pushed below the red zone
	if flagsLive {
		depth -= 8 // and the flags
	}
	if tsc || hash {
		b.Push(enc.RDX)
		depth -= 8
	}
	b.MovRegFromGS(enc.RCX, runtime.OffRecord)
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	b.TestRegReg(enc.RCX)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.CmpMemImm32D8(enc.RCX, runtime.RecordFuncOff, fg.gid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	if k := int32(n.ExitInc[e]); k != 0 {
		b.AddRegImm32(enc.RAX, k)
	}
	if hash {
		fg.hashCount(enc.RCX, enc.RCX, enc.RAX, enc.RDX, slow, depth, true)
	} else {
		counted := b.NewLabel()
		b.CmpRegMemD8(enc.RAX, enc.RCX, runtime.RecordDenseNOff)
		// Below %rsp nothing is live here: %rdx waits there.
		b.JccRel32(enc.CondAE, enc.LabelTarget(fg.coldPathEnd(enc.RCX, enc.RAX, slow, counted, depth, []below{{enc.RDX, -8}}, false, nil, nil)))
		if tsc {
			b.LeaRegDisp32(enc.RCX, enc.RCX, countsOff)
			fg.countTSC(enc.RCX)
			b.MovGS64Imm(offMAcc, 0)
		} else {
			b.IncMemIndexed(enc.RCX, enc.RAX, countsOff+8)
		}
		b.Bind(counted)
	}
	scratch := []enc.Reg{enc.RCX}
	if tsc || hash {
		scratch = append(scratch, enc.RDX)
	}
	fg.leaveBackedgeSaved(e, flagsLive, scratch, slow, done, depth)
}

// leaveBackedgeSaved ends the inline part of a backedge that pushed %rax,
// the flags kept in %rax when flagsLive, then scratch, below the red zone
// (depth, from the activation's %rsp): r = EntryInc, pop them (restore),
// step back over the red zone to done. It queues the slow path, which
// pops them, calls the backedge stub and rejoins the inline code at done.
func (fg *funcGen) leaveBackedgeSaved(e cfg.EdgeID, flagsLive bool, scratch []enc.Reg, slow, done enc.Label, depth int32) {
	b := fg.g.buf
	b.MovGS64Imm(fg.g.stubs.OffR, int32(fg.num.EntryInc[e]))
	restore := func() {
		for i := len(scratch) - 1; i >= 0; i-- {
			b.Pop(scratch[i])
		}
		if flagsLive {
			b.Pop(enc.RAX)
			restoreFlags(b)
		}
		b.Pop(enc.RAX)
	}
	restore()
	b.LeaRSP(redZone)
	b.Bind(done)
	fg.addColdAt(slow, depth, func() {
		restore()
		fg.backedgeStub(e)
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// countTSC counts path %rax of the counters at counts (the record's:
// %rcx or %rsi) with its time: after the calls word, the path's words
// {count, tsc sum} get 1 and macc + (now - mstart), and mstart = now, as
// path_metrics does [DESIGN 8]. With latency each path has a third word,
// its latency entry, (3 × path: lea instead of a shift) and the value
// goes there too (tscLatency). It clobbers %rax, %rdx, counts and the
// flags; the caller sets macc.
func (fg *funcGen) countTSC(counts enc.Reg) {
	b := fg.g.buf
	if fg.g.mode.Latency {
		b.LeaRegIdxD8(enc.RAX, enc.RAX, enc.RAX, 2, 0)
		b.LeaRegIdxD8(counts, counts, enc.RAX, 8, 8)
	} else {
		b.ShlRegImm(enc.RAX, 4)
		b.LeaRegIdxD8(counts, counts, enc.RAX, 1, 8)
	}
	b.IncMem(counts, 0)
	fg.tscProgress()
	b.AddMemRegD8(counts, 8, enc.RDX)
	b.MovGSFromReg(offMStart, enc.RAX)
	if fg.g.mode.Latency {
		fg.tscLatency(counts)
	}
}

// tscLatency adds the value of the path that ends, in %rdx, to the
// path's latency word, the third of the path's words at v, as the
// runtime's count does [decisions 93, 148]. The word is 0 until the
// path first runs in its record; then it keeps that execution's value
// (complemented: negative); from the second execution on it holds the
// address of the path's entry, taken from the thread's region
// (latencyWord, out of line). With an entry: one compare with the
// smallest of the slowest values kept (ascending, at the entry's start),
// taken only by a value to keep, and the log2 histogram. An increment
// at hist + 8 × bsr(value|1) would make a store whose address waits for
// the rdtsc just read, which holds back later memory accesses until the
// read completes (it made the loop kernels' tsc mode 1.36 times
// slower). So the entry's pending word holds 1 + the bucket of the
// path's latest execution, and an execution counts its predecessor's,
// whose address is known by then:
//
//	mov 16(v),%rax; test %rax,%rax; jle cold; cmp (%rax),%rdx;
//	ja keep; back: mov P(%rax),v; incq P(%rax,v,8); or $1,%rdx;
//	bsr %rdx,%rdx; lea 1(%rdx),%rdx; mov %rdx,P(%rax)
//
// where P is the pending word's offset, and the histogram's words follow
// it, so that pending 0 (none yet) increments the pending word itself,
// which the last mov overwrites; the runtime's writer counts what is
// left pending. keep, out of line, moves the kept values smaller than
// the new one down a place, the smallest dropping out, and puts the new
// one in the gap. It clobbers %rax, %rdx, v and the flags.
func (fg *funcGen) tscLatency(v enc.Reg) {
	b := fg.g.buf
	cold, keep, back, done := b.NewLabel(), b.NewLabel(), b.NewLabel(), b.NewLabel()
	slow := func(k int) int8 { return int8(8 * k) }
	pend := int8(8 * runtime.LatencyPending)
	b.MovRegFromMemD8(enc.RAX, v, 16)
	b.TestRegReg(enc.RAX)
	b.JccRel32(enc.CondLE, enc.LabelTarget(cold))
	b.CmpRegMemD8(enc.RDX, enc.RAX, slow(0))
	b.JccRel32(enc.CondA, enc.LabelTarget(keep))
	b.Bind(back)
	b.MovRegFromMemD8(v, enc.RAX, pend)
	b.IncMemIndexed(enc.RAX, v, int32(pend))
	b.OrRegImm8(enc.RDX, 1)
	b.BsrRegReg(enc.RDX, enc.RDX)
	b.LeaRegSelf(enc.RDX, 1)
	b.MovMemFromRegD8(enc.RAX, pend, enc.RDX)
	b.Bind(done)
	sp := b.SP()
	fg.addColdAt(cold, sp, func() {
		fg.latencyWord(v, done)
	})
	fg.addColdAt(keep, sp, func() {
		n := runtime.LatencySlowest
		put := make([]enc.Label, n-1)
		for k := 0; k+1 < n; k++ {
			// The next kept value is at least the new one: the gap
			// is here.
			put[k] = b.NewLabel()
			b.MovRegFromMemD8(v, enc.RAX, slow(k+1))
			b.CmpRegReg(v, enc.RDX)
			b.JccRel32(enc.CondAE, enc.LabelTarget(put[k]))
			b.MovMemFromRegD8(enc.RAX, slow(k), v)
		}
		b.MovMemFromRegD8(enc.RAX, slow(n-1), enc.RDX)
		b.JmpRel32(enc.LabelTarget(back))
		for k, l := range put {
			b.Bind(l)
			b.MovMemFromRegD8(enc.RAX, slow(k), enc.RDX)
			b.JmpRel32(enc.LabelTarget(back))
		}
	})
}

// latencyWord is tscLatency's out-of-line code for a latency word that
// holds no entry: %rax is the word (0, or negative: a kept value or the
// runtime's mark of a path whose executions are dropped), with the flags
// of test %rax,%rax; %rdx the value. A path's first execution keeps its
// value in the word, complemented, when it is below 2^62 (%rax >> 62 is
// then 0, the word cmpxchg expects), with a cmpxchg (no lock: only the
// thread and its signal handlers write its records), so that a signal
// handler's count of the same path of the same record in between is
// seen. Everything else (a second execution takes an entry and moves the
// kept value into it; a value that does not fit; a full region; the
// word moved on by a signal handler) is the runtime's lat_count, through
// the blpp_lat_word stub, which preserves every register. The cold code
// stays as short as the entry taking it replaces [decision 148].
func (fg *funcGen) latencyWord(v enc.Reg, done enc.Label) {
	b := fg.g.buf
	more := b.NewLabel()
	b.JccRel32(enc.CondNE, enc.LabelTarget(more)) // a kept value: the second execution
	b.MovRegFromReg(enc.RAX, enc.RDX)
	b.ShrRegImm(enc.RAX, 62)
	b.JccRel32(enc.CondNE, enc.LabelTarget(more)) // a value the word cannot keep
	b.NotReg(enc.RDX)
	b.CmpxchgMemRegD8(v, 16, enc.RDX)
	b.JccRel32(enc.CondE, enc.LabelTarget(done))
	b.NotReg(enc.RDX) // a signal handler's count got there first
	b.Bind(more)
	b.LeaRegD8(enc.RAX, v, 16)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.LatWord))
	b.JmpRel32(enc.LabelTarget(done))
}

// tscProgress emits the read of the time-stamp counter and the running
// path's progress: now into %rax, macc + (now - mstart) into %rdx.
func (fg *funcGen) tscProgress() {
	b := fg.g.buf
	b.Rdtsc()
	b.ShlRegImm(enc.RDX, 32)
	b.OrRegReg(enc.RAX, enc.RDX)
	b.MovRegFromReg(enc.RDX, enc.RAX)
	b.SubRegGS(enc.RDX, offMStart)
	b.AddRegGS(enc.RDX, offMAcc)
}

// backedgeStub calls the backedge stub for edge e, %rsp already below the
// red zone, and steps back over the red zone and its arguments.
func (fg *funcGen) backedgeStub(e cfg.EdgeID) {
	b, n := fg.g.buf, fg.num
	pushImm32(b, int32(n.EntryInc[e]))
	pushImm32(b, int32(n.ExitInc[e]))
	pushImm32(b, fg.gid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Backedge))
	b.LeaRSP(redZone + 24)
}

// recordBackedgeIn is the record form of a backedge (backedgeMem) where
// the flags are dead and so are the registers it needs: one for the
// record, and one for the path id unless the path register is a general
// register. Nothing is pushed and the red zone is not stepped over:
// mov %gs:record,%rec; [mov %gs:r,%x]; test; je; cmpq $fid,func(%rec);
// jne; lea k(%x),%x; cmp dense_n(%rec),%x; jae; incq counts+8(%rec,%x,8);
// r = EntryInc. It reports false (emitting nothing) where it does not
// apply.
func (fg *funcGen) recordBackedgeIn(e cfg.EdgeID, flagsLive bool) bool {
	g, b, n := fg.g, fg.g.buf, fg.num
	if flagsLive || g.mode.Metrics || fg.slot != 0 {
		return false
	}
	need := 2
	if fg.hasPreg {
		need = 1
	}
	if fg.hashInline() {
		need++ // the entry's offset (hashCount)
	}
	rs := fg.deadRegs(e, need)
	if len(rs) < need {
		return false
	}
	rec, x := rs[0], fg.preg
	if !fg.hasPreg {
		x = rs[1]
	}

	slow, done := b.NewLabel(), b.NewLabel()
	k := int32(n.ExitInc[e])
	b.MovRegFromGS(rec, runtime.OffRecord)
	if !fg.hasPreg {
		b.MovRegFromGS(x, g.stubs.OffR)
	}
	if k != 0 {
		b.LeaRegSelf(x, k)
	}
	fg.ownRecord(rec, slow)
	if fg.hashInline() {
		fg.hashCount(rec, rec, x, rs[len(rs)-1], slow, 0, true)
	} else {
		// A cold record's table takes one more register, which waits
		// past the red zone (the flags are dead here).
		counted := b.NewLabel()
		cold := fg.coldPathEnd(rec, x, slow, counted, 0, []below{{coldScratch(rec, x), -8}}, true, nil, nil)
		b.CmpRegMem(x, rec, runtime.RecordDenseNOff)
		b.JccRel32(enc.CondAE, enc.LabelTarget(cold))
		b.IncMemIndexed(rec, x, countsOff+8)
		b.Bind(counted)
	}
	if fg.hasPreg {
		b.MovRegImm(x, int32(n.EntryInc[e])) // sign-extended: EntryInc may be negative
	} else {
		b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	}
	b.Bind(done)
	undo := int32(0)
	if fg.hasPreg {
		undo = k // Thread.R gets the value before the edge
	}
	fg.coldBackedge(e, slow, done, undo)
	return true
}

// ownRecord jumps to slow unless rec, loaded from Thread.record, is a
// record of this function: the check of the inline record forms of a
// backedge (recordBackedgeIn, countCopy).
func (fg *funcGen) ownRecord(rec enc.Reg, slow enc.Label) {
	b := fg.g.buf
	b.TestRegReg(rec)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.CmpMemImm32(rec, runtime.RecordFuncOff, fg.gid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
}

// coldBackedge queues the slow path of a backedge whose inline part
// saved nothing: take undo back off the path register, spill it, call
// the backedge stub, reload the register and rejoin the inline code at
// done.
func (fg *funcGen) coldBackedge(e cfg.EdgeID, slow, done enc.Label, undo int32) {
	b := fg.g.buf
	fg.addColdAt(slow, 0, func() {
		if undo != 0 {
			b.LeaRegSelf(fg.preg, -undo)
		}
		fg.spill()
		b.LeaRSP(-redZone)
		fg.backedgeStub(e)
		fg.reload()
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// slotBackedgeIn is the slot form of a backedge (slotBackedge) where the
// flags are dead and register r is too: nothing to save, so nothing is
// pushed and the red zone is not stepped over.
func (fg *funcGen) slotBackedgeIn(e cfg.EdgeID, r enc.Reg) {
	g, b, n := fg.g, fg.g.buf, fg.num
	slow, done := b.NewLabel(), b.NewLabel()
	b.CmpGS64Imm(runtime.OffCur, fg.curValue())
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.MovRegFromGS(r, g.stubs.OffR)
	fg.slotCount(r, int32(n.ExitInc[e]), slow)
	b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	b.Bind(done)
	fg.coldBackedge(e, slow, done, 0) // no path register here: no spill
}

// regBackedge is backedge for a function whose path register lives in a
// general register x (assignPathReg): x += ExitInc, and when x is a path
// id, count[x]++ at the function's slot counters (slotCount), then x =
// EntryInc. No test of
// Thread.cur: x belongs to this activation whatever the runtime thinks
// runs, and every block %gs can point at after an entry has the slot
// counters (thread blocks, and early_gs's scratch block, whose counts
// are dropped), so the bound alone keeps the increment inside them.
// With dead flags that is all (no push, no red-zone step); live flags
// are kept in %rax. Otherwise the add is undone and x goes to Thread.R
// for the stub, and comes back.
func (fg *funcGen) regBackedge(e cfg.EdgeID, flagsLive bool) {
	b, n, x := fg.g.buf, fg.num, fg.preg
	slow, done := b.NewLabel(), b.NewLabel()
	if flagsLive {
		b.LeaRSP(-redZone)
		b.Push(enc.RAX)
		saveFlags(b)
	}
	k := int32(n.ExitInc[e])
	fg.slotCount(x, k, slow)
	b.MovRegImm(x, int32(n.EntryInc[e])) // sign-extended: EntryInc may be negative
	restore := func() {
		if flagsLive {
			restoreFlags(b)
			b.Pop(enc.RAX)
			b.LeaRSP(redZone)
		}
	}
	restore()
	b.Bind(done)
	sp := int32(0)
	if flagsLive {
		sp = -redZone - 8
	}
	fg.addColdAt(slow, sp, func() {
		if k != 0 {
			b.LeaRegSelf(x, -k)
		}
		restore()
		fg.spill()
		b.LeaRSP(-redZone)
		fg.backedgeStub(e)
		fg.reload()
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// slotCount emits the count of a backedge of a slot function whose path
// register (before the backedge's ExitInc k) is in reg: reg += k, then
// count[reg]++ in the slots when reg is a path id, else jump to slow
// (reg holding the sum). The add comes first because the register alone
// may be negative (chord increments are); one unsigned compare then
// bounds the sum.
func (fg *funcGen) slotCount(reg enc.Reg, k int32, slow enc.Label) {
	b := fg.g.buf
	if k != 0 {
		b.LeaRegSelf(reg, k)
	}
	b.CmpRegImm32(reg, int32(fg.num.NumPaths))
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.IncGSIndexed(fg.slot+8, reg)
}

// hashCount counts path x of a hashed function in record rec's newest
// hash table when the path's entry is at its home slot there or the one
// after, the runtime's first two probes (blpp_rt.c home) [decision 48];
// any other case (no table yet, the path elsewhere or not yet seen) jumps
// to slow:
//
//	mov hash(rec),tab; test tab,tab; je slow
//	add $1,x; je undo          (the key: path + 1; never 0, the empty key)
//	imul $HashMul,x32,t32; imul bytes(tab),t; shr $32,t; and $-16,t32
//	cmp x,entries(tab,t); jne second
//	lea -1(x),x; incq entries+8(tab,t)
//
// with, out of line, second: cmp x,entries+16(tab,t); jne undo;
// lea -1(x),x; incq entries+24(tab,t); jmp back; undo: lea -1(x),x;
// jmp slow. Every table has one more entry than its capacity,
// never written, so the second probe stays inside it. With insert, a
// path in neither entry goes into its home entry when that is empty
// (hashInsert) instead of to the stub [decision 161]. tab and t are
// clobbered, and so are the flags; x holds the path id again on every
// way out. The key comparison alone makes the count right, whatever entry
// the index picks: keys are written only after checking the path, by the
// runtime or by hashInsert, and never removed. sp is the stack depth the
// out-of-line code runs at (coldStub's).
func (fg *funcGen) hashCount(rec, tab, x, t enc.Reg, slow enc.Label, sp int32, insert bool) {
	b := fg.g.buf
	second, undo, done := b.NewLabel(), b.NewLabel(), b.NewLabel()
	b.MovRegFromMem(tab, rec, runtime.RecordHashOff)
	b.TestRegReg(tab)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.AddRegImm32(x, 1)
	b.JccRel32(enc.CondE, enc.LabelTarget(undo))
	b.ImulReg32Imm32(t, x, runtime.HashMul)
	b.ImulRegMem(t, tab, runtime.HTabBytesOff)
	b.ShrRegImm(t, 32)
	b.AndReg32Imm8(t, -16)
	b.CmpMemIdxReg(tab, t, runtime.HTabEntriesOff, x)
	b.JccRel32(enc.CondNE, enc.LabelTarget(second))
	b.LeaRegSelf(x, -1)
	b.IncMemIdx(tab, t, runtime.HTabEntriesOff+8)
	b.Bind(done)
	fg.addColdAt(second, sp, func() {
		b.CmpMemIdxReg(tab, t, runtime.HTabEntriesOff+16, x)
		miss := undo
		if insert {
			miss = b.NewLabel()
		}
		b.JccRel32(enc.CondNE, enc.LabelTarget(miss))
		b.LeaRegSelf(x, -1)
		b.IncMemIdx(tab, t, runtime.HTabEntriesOff+16+8)
		b.JmpRel32(enc.LabelTarget(done))
		if miss != undo {
			b.Bind(miss)
			fg.hashInsert(tab, x, t, undo, done)
		}
		b.Bind(undo)
		b.LeaRegSelf(x, -1)
		b.JmpRel32(enc.LabelTarget(slow))
	})
}

// hashInsert puts key x (a path id + 1) into its home entry at offset t
// of table tab when that entry is empty, counts the path there, takes x
// back to the path id and jumps to done [decision 161]. It needs room in
// the table (HTabLeftOff) and the key to be one of the function's paths;
// otherwise, or when a signal handler took the entry first, it jumps to
// miss with nothing changed. The claim is an unlocked cmpxchg of the
// empty key: one instruction, so a handler on the thread that put a key
// there first makes it fail rather than lose its key. A key whose home
// is taken goes to the stub as before: claiming the entry after home
// too took python3's start-up 2% fewer instructions for 6% more code.
// cmpxchg compares with %rax, so %rax and a second register wait below
// the stack, 256 bytes down: past the red zone and whatever the path
// end's own code keeps below %rsp. tab, x and t are as they were on the
// way to miss; the flags are clobbered.
func (fg *funcGen) hashInsert(tab, x, t enc.Reg, miss, done enc.Label) {
	b := fg.g.buf
	n := fg.num.NumPaths
	b.CmpMemIdxImm8(tab, t, runtime.HTabEntriesOff, 0)
	b.JccRel32(enc.CondNE, enc.LabelTarget(miss))
	b.CmpMemImm32D8(tab, runtime.HTabLeftOff, 0)
	b.JccRel32(enc.CondLE, enc.LabelTarget(miss))
	if n <= math.MaxInt32 {
		b.CmpRegImm32(x, int32(n)) // x is the key: at most NumPaths
		b.JccRel32(enc.CondA, enc.LabelTarget(miss))
	}
	// s takes whichever of tab, x and t is %rax, or waits unused.
	var s enc.Reg
	for _, r := range []enc.Reg{enc.RSI, enc.RDI, enc.R8, enc.R9, enc.RDX, enc.RCX} {
		if r != tab && r != x && r != t {
			s = r
			break
		}
	}
	sub := func(r enc.Reg) enc.Reg {
		if r == enc.RAX {
			return s
		}
		return r
	}
	inUse := tab == enc.RAX || x == enc.RAX || t == enc.RAX
	restore := b.NewLabel()
	b.LeaRSP(-2 * redZone)
	b.Push(s)
	if inUse {
		b.MovRegFromReg(s, enc.RAX)
	} else {
		b.Push(enc.RAX)
	}
	if n > math.MaxInt32 {
		// A bound of more than 32 bits takes a register. Above it
		// ZF is clear, which sends the jne below to miss.
		b.MovImm64(enc.RAX, n)
		b.CmpRegReg(sub(x), enc.RAX)
		b.JccRel32(enc.CondA, enc.LabelTarget(restore))
	}
	b.MovRegImm(enc.RAX, 0)
	b.CmpxchgMemIdxReg(sub(tab), sub(t), runtime.HTabEntriesOff, sub(x))
	b.Bind(restore) // mov, pop and lea leave ZF as cmp or cmpxchg set it
	if inUse {
		b.MovRegFromReg(enc.RAX, s)
	} else {
		b.Pop(enc.RAX)
	}
	b.Pop(s)
	b.LeaRSP(2 * redZone)
	b.JccRel32(enc.CondNE, enc.LabelTarget(miss))
	b.DecMemD8(tab, runtime.HTabLeftOff)
	b.LeaRegSelf(x, -1)
	b.IncMemIdx(tab, t, runtime.HTabEntriesOff+8)
	b.JmpRel32(enc.LabelTarget(done))
}

// slotBackedge is the rest of backedge for a function with slot
// counters [decision 42], after %rax (and the flags) are saved: when Cur
// says the running activation is this function's, count[r + ExitInc]++
// at the function's fixed offset from %gs, then r = EntryInc. One
// register, no record: the counters' place is known when the code is
// written.
func (fg *funcGen) slotBackedge(e cfg.EdgeID, flagsLive bool, slow, done enc.Label) {
	g, b, n := fg.g, fg.g.buf, fg.num
	b.CmpGS64Imm(runtime.OffCur, fg.curValue())
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	fg.slotCount(enc.RAX, int32(n.ExitInc[e]), slow)
	depth := int32(-redZone - 8) // %rax pushed below the red zone
	if flagsLive {
		depth -= 8 // and the flags
	}
	fg.leaveBackedgeSaved(e, flagsLive, nil, slow, done, depth)
}
