package rewriter

import (
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/rewriter/addrmap"
)

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

// addrMap turns the recorded copies into the encoded address map of code
// placed at codeAddr, one function per instrumented function in table
// order. It builds the functions' maps a batch at a time on all workers
// and encodes each batch before the next, dropping the recorded copies:
// a whole addrmap.Map of a large library takes gigabytes.
func addrMap(g *gen, codeAddr uint64) []byte {
	e := addrmap.NewEncoder(len(g.funcs))
	const batch = 512
	funcs := make([]addrmap.Func, batch)
	for lo := 0; lo < len(g.funcs); lo += batch {
		n := min(batch, len(g.funcs)-lo)
		par.Each(n, g.workers, func(i int) {
			fg := g.funcs[lo+i]
			var r addrmap.Recorder
			for _, c := range fg.copies {
				if c.join {
					r.AddJoin(c.orig, codeAddr+uint64(c.off))
				} else {
					r.Add(c.orig, codeAddr+uint64(c.off))
				}
			}
			fg.copies = nil
			funcs[i] = r.Func(fg.f.Func.Addr)
		})
		for i := range n {
			e.Add(&funcs[i])
			funcs[i] = addrmap.Func{}
		}
	}
	return e.Bytes()
}
