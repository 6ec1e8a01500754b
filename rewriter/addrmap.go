package rewriter

import "blpp/rewriter/addrmap"

// copyMark is an original instruction and where one of its copies starts
// in the code buffer.
type copyMark struct {
	orig uint64
	off  int
}

// copied records that a copy of the original instruction at orig starts
// at the code buffer's current end. The code generator calls it right
// before it emits the instruction's bytes (relocated or re-encoded), after
// any instrumentation that precedes it.
func (fg *funcGen) copied(orig uint64) {
	fg.copies = append(fg.copies, copyMark{orig, fg.g.buf.Len()})
}

// addrMap turns the recorded copies into the address map of code placed
// at codeAddr, one function per instrumented function in table order.
func addrMap(g *gen, codeAddr uint64) *addrmap.Map {
	m := &addrmap.Map{Funcs: make([]addrmap.Func, 0, len(g.funcs))}
	for _, fg := range g.funcs {
		var r addrmap.Recorder
		for _, c := range fg.copies {
			r.Add(c.orig, codeAddr+uint64(c.off))
		}
		m.Funcs = append(m.Funcs, r.Func(fg.f.Func.Addr))
	}
	return m
}
