package rewriter

import (
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"
)

// Emission is serial (one code buffer, labels in order), and decoding
// the original instructions took most of its time. The instructions of
// the functions about to be emitted are decoded ahead, a batch at a
// time on the other workers, so that emission only reads them. Only a
// few batches are held at once: a decoded instruction takes a few
// hundred bytes.

// predecodeBatch is how many functions are decoded ahead together.
const predecodeBatch = 64

// predecode decodes g.funcs ahead of emission, batch by batch, and sends
// on the channel returned the number of functions decoded so far after
// each batch; it closes the channel after the last. Emission of function
// i waits until the count passes i.
func (g *gen) predecode() <-chan int {
	ready := make(chan int, 1)
	go func() {
		defer close(ready)
		for lo := 0; lo < len(g.funcs); lo += predecodeBatch {
			hi := min(lo+predecodeBatch, len(g.funcs))
			par.Each(hi-lo, g.workers, func(i int) { g.funcs[lo+i].predecode() })
			ready <- hi
		}
	}()
	return ready
}

// predecode decodes the function's blocks' instructions in block order,
// as emit walks them, into fg.pre. Where a block's code is missing or an
// instruction does not decode it leaves fg.pre nil, and emit decodes as
// it goes (and reports the error itself).
func (fg *funcGen) predecode() {
	gr, b := fg.f.Graph, fg.g.b
	n := 0
	for i := range gr.Blocks {
		n += gr.Blocks[i].Insts
	}
	insts := make([]x86.Inst, 0, n)
	for i := range gr.Blocks {
		blk := &gr.Blocks[i]
		code := b.Code(blk.Addr)
		if uint64(len(code)) < blk.End-blk.Addr {
			return
		}
		for a := blk.Addr; a < blk.End; {
			in, err := x86.Decode(code[a-blk.Addr:blk.End-blk.Addr], a)
			if err != nil {
				return
			}
			insts = append(insts, in)
			a += uint64(in.Len)
		}
	}
	fg.pre = insts
}
