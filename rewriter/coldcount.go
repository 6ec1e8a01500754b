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
	fg.hashCount(rec, rec, x, t, miss, sp, true)
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

// below is a register that waits at at(%rsp) while out-of-line code uses
// it.
type below struct {
	r  enc.Reg
	at int32
}

// coldPathEnd returns where the dense test of a path end in record rec
// sends a path id (in x) beyond the dense array: slow, or, when fp's
// records may start cold (coldCounts), out-of-line code that saves the
// registers in saves, runs pre (which may go to slow: nothing saved has
// changed yet), counts the path with coldHit (its scratch register is
// saves[0]), gives the saved registers back, runs post and jumps to back;
// or gives them back and goes to slow. With step, the code steps over
// the red zone first (the function may keep data there; the flags must
// be dead) and the registers wait below it. sp is the stack depth the
// code starts at.
func (fg *funcGen) coldPathEnd(rec, x enc.Reg, slow, back enc.Label, sp int32, saves []below, step bool, pre, post func()) enc.Label {
	if !fg.coldCounts() {
		return slow
	}
	b := fg.g.buf
	cold, miss := b.NewLabel(), b.NewLabel()
	depth := sp
	if step {
		depth -= redZone
	}
	leave := func() {
		for i := len(saves) - 1; i >= 0; i-- {
			b.MovRegFromMem(saves[i].r, enc.RSP, saves[i].at)
		}
		if step {
			b.LeaRSP(redZone)
		}
	}
	fg.addColdAt(cold, sp, func() {
		if step {
			b.LeaRSP(-redZone)
		}
		for _, v := range saves {
			b.MovMemFromReg(enc.RSP, v.at, v.r)
		}
		if pre != nil {
			pre()
		}
		fg.coldHit(rec, x, saves[0].r, miss, depth)
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
// head (countCopy), which counts one path p, known when the code is
// written, in the record in rec: past the red zone (the loop's code may
// keep data there; countCopy's own compare writes the flags), two
// registers wait below %rsp, and one of them takes p.
func (fg *funcGen) coldCopyPathEnd(rec enc.Reg, p int32, slow, back enc.Label) enc.Label {
	b := fg.g.buf
	t := coldScratch(rec, rec)
	x := coldScratch(rec, t)
	return fg.coldPathEnd(rec, x, slow, back, 0, []below{{t, -8}, {x, -16}}, true, func() { b.MovRegImm(x, p) }, nil)
}
