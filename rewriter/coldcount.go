package rewriter

import (
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Path ends in a cold record (decision 151). In context mode a record of
// a dense function with more than runtime.ColdPaths paths starts cold: no
// dense array (DenseN 0) and a small hash table at Hash, where the
// runtime counts its path ends until it has counted promoteEnds of them
// and gives the record a hot twin (decisions 99, 136). The inline code's
// dense test fails for such a record, and until now every path end in it
// went to the stubs: in python3's start-up, 69 K of 184 K stub path ends,
// 51 K of them a path the table already held. Out of line, behind the
// dense test, the inline code now probes the table as a hashed
// function's path end does (hashCount) and counts there when it finds the
// path, and adds the end to Record.Cold as the runtime does, so the twin
// comes after the same number of ends. A path not in the table, a record
// whose ends have reached the count (its twin is due, or made), and no
// table at all take the stub as before.

// coldCounts reports whether fp's records may start cold with a table
// its inline code can probe: context mode counting frequencies only (a
// table entry is a key and a count), and a dense function of more than
// runtime.ColdPaths paths (rec_new in blpp_cct.c).
func (fp *funcPlan) coldCounts() bool {
	m := fp.g.mode
	return !m.FlowOnly && !m.Metrics && !fp.hashed() && fp.num.NumPaths > runtime.ColdPaths
}

// promoteEnds is how many path ends a cold record of fp counts before
// its hot twin: the runtime's promote_ends (blpp_htab.c) with one word a
// path.
func (fp *funcPlan) promoteEnds() uint64 {
	n := fp.num.NumPaths * 8 / runtime.PromoteBytes
	if n < runtime.PromoteEnds {
		n = runtime.PromoteEnds
	}
	return n
}

// coldHit counts path x in the cold record rec when the record's ends
// are below promoteEnds and hashCount's probes find the path in its
// table, and adds the end to Record.Cold; otherwise it goes to miss with
// nothing changed. rec ends up holding Thread.Record again, which is
// where every caller took it from; t is clobbered, x keeps the path id.
// sp is the stack depth the code runs at.
func (fg *funcGen) coldHit(rec, x, t enc.Reg, miss enc.Label, sp int32) {
	b := fg.g.buf
	b.CmpMem32Imm32D8(rec, int8(runtime.RecordColdOff), int32(fg.promoteEnds()-1))
	b.JccRel32(enc.CondAE, enc.LabelTarget(miss))
	fg.hashCount(rec, rec, x, t, miss, sp)
	b.MovRegFromGS(rec, runtime.OffRecord)
	b.IncMem32D8(rec, int8(runtime.RecordColdOff))
}

// coldScratch is a register other than the record's and the path's for
// coldHit's probe index.
func coldScratch(rec, x enc.Reg) enc.Reg {
	for _, r := range []enc.Reg{enc.RDX, enc.RAX, enc.RSI, enc.RDI} {
		if r != rec && r != x {
			return r
		}
	}
	panic("unreachable")
}

// coldPathEnd returns where the dense test of a path end in record rec
// sends a path id beyond the dense array: slow, or, when fp's records may
// start cold (coldCounts), out-of-line code that first runs pre, then
// counts the path with coldHit, its scratch register t saved at at(%rsp)
// (at 0: t is dead), runs post and jumps to back; or restores t and goes
// to slow. With step, the code steps over the red zone first (the
// function may keep data there; the flags must be dead) and t waits
// below it. sp is the stack depth the code starts at.
func (fg *funcGen) coldPathEnd(rec, x enc.Reg, slow, back enc.Label, sp int32, t enc.Reg, at int32, step bool, pre, post func()) enc.Label {
	if !fg.coldCounts() {
		return slow
	}
	b := fg.g.buf
	cold, miss := b.NewLabel(), b.NewLabel()
	leave := func() {
		if at != 0 {
			b.MovRegFromMem(t, enc.RSP, at)
		}
		if step {
			b.LeaRSP(redZone)
		}
	}
	fg.addColdAt(cold, sp, func() {
		if pre != nil {
			pre()
		}
		depth := sp
		if step {
			b.LeaRSP(-redZone)
			depth -= redZone
		}
		if at != 0 {
			b.MovMemFromReg(enc.RSP, at, t)
		}
		fg.coldHit(rec, x, t, miss, depth)
		leave()
		if post != nil {
			post()
		}
		b.JmpRel32(enc.LabelTarget(back))
		b.Bind(miss)
		b.SetSP(depth) // what leave above took back, miss has not
		leave()
		b.JmpRel32(enc.LabelTarget(slow))
	})
	return cold
}

// coldCopyPathEnd is coldPathEnd for the record form of a loop copy's
// head (countCopy), which counts one path p known when the code is
// written, in the record in rec. Out of line, past the red zone (the
// loop's code may keep data there; the flags are dead, countCopy's own
// compare writes them), a second register waits below %rsp; the probe's
// index comes from p's key as hashCount's does from a register's, and
// the key is compared as an immediate.
func (fg *funcGen) coldCopyPathEnd(rec enc.Reg, p int64, slow, back enc.Label) enc.Label {
	if !fg.coldCounts() {
		return slow
	}
	b := fg.g.buf
	t := enc.RAX
	if rec == t {
		t = enc.RCX
	}
	key := int32(p + 1)
	cold, second, found, miss := b.NewLabel(), b.NewLabel(), b.NewLabel(), b.NewLabel()
	fg.addColdAt(cold, 0, func() {
		b.LeaRSP(-redZone)
		b.MovMemFromReg(enc.RSP, -8, t)
		b.CmpMem32Imm32D8(rec, int8(runtime.RecordColdOff), int32(fg.promoteEnds()-1))
		b.JccRel32(enc.CondAE, enc.LabelTarget(miss))
		b.MovRegFromMem(rec, rec, runtime.RecordHashOff)
		b.TestRegReg(rec)
		b.JccRel32(enc.CondE, enc.LabelTarget(miss))
		b.MovRegImm(t, key)
		b.ImulReg32Imm32(t, t, runtime.HashMul)
		b.ImulRegMem(t, rec, runtime.HTabBytesOff)
		b.ShrRegImm(t, 32)
		b.AndReg32Imm8(t, -16)
		b.CmpMemIdxImm32(rec, t, runtime.HTabEntriesOff, key)
		b.JccRel32(enc.CondNE, enc.LabelTarget(second))
		b.IncMemIdx(rec, t, runtime.HTabEntriesOff+8)
		b.Bind(found)
		b.MovRegFromGS(rec, runtime.OffRecord)
		b.IncMem32D8(rec, int8(runtime.RecordColdOff))
		b.MovRegFromMem(t, enc.RSP, -8)
		b.LeaRSP(redZone)
		b.JmpRel32(enc.LabelTarget(back))
		b.Bind(second) // the entry after it: every table has one more than its capacity
		b.SetSP(-redZone)
		b.CmpMemIdxImm32(rec, t, runtime.HTabEntriesOff+16, key)
		b.JccRel32(enc.CondNE, enc.LabelTarget(miss))
		b.IncMemIdx(rec, t, runtime.HTabEntriesOff+16+8)
		b.JmpRel32(enc.LabelTarget(found))
		b.Bind(miss)
		b.SetSP(-redZone)
		b.MovRegFromMem(t, enc.RSP, -8)
		b.LeaRSP(redZone)
		b.JmpRel32(enc.LabelTarget(slow))
	})
	return cold
}
