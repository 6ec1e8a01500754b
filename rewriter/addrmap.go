package rewriter

import "github.com/blpp/blpp/rewriter/addrmap"

// copyMark is an original instruction and where one of its copies starts
// in the code buffer.
type copyMark struct {
	orig uint64
	off  int32 // the code buffer stays under 2 GiB (enc.Buf's fields)
	join bool  // a jmp left out here (addrmap.Inst.Joins)
}

// copied records that a copy of the original instruction at orig starts
// at the code buffer's current end. The code generator calls it right
// before it emits the instruction's bytes (relocated or re-encoded), after
// any instrumentation that precedes it.
func (fg *funcGen) copied(orig uint64) {
	fg.copies = append(fg.copies, copyMark{orig: orig, off: int32(fg.g.buf.Len())})
}

// joined records that a copy of the unconditional jmp at orig was left
// out because it would have jumped to the code buffer's current end, the
// next instruction emitted: in a loop copy, a block's jmp to the block
// laid out after it (emitLoopCopy).
func (fg *funcGen) joined(orig uint64) {
	fg.copies = append(fg.copies, copyMark{orig: orig, off: int32(fg.g.buf.Len()), join: true})
}

// addrMapCode turns fg's recorded copies into its part of the address
// map (recorded in r, a scratch), for code placed at codeAddr, at the offsets where fg was emitted
// (addrmap.Code.Shift moves it).
func (fg *funcGen) addrMapCode(codeAddr uint64, r *addrmap.Recorder) addrmap.Code {
	r.Reset()
	r.Grow(len(fg.copies))
	for _, c := range fg.copies {
		if c.join {
			r.AddJoin(c.orig, codeAddr+uint64(c.off))
		} else {
			r.Add(c.orig, codeAddr+uint64(c.off))
		}
	}
	return r.Code(fg.f.Func.Addr)
}
