package rewriter

import (
	"errors"

	"github.com/blpp/blpp/rewriter/enc"
)

// The hot/cold split of the new code (decision 150). Each function's
// out-of-line slow paths (the addCold queue: the slow paths of entries,
// exits, path ends and call-cache misses that call the runtime's stubs)
// are emitted into a second child buffer, its cold part, and the join
// (pipeline.go) appends every function's cold part after all functions'
// hot parts, in function order. The hot part keeps the entry, the body,
// the trampolines and what addAside queued (loop copies, landing pads,
// other entries), and by default the tail variants of entries.
//
// The generator emits through fg.g.buf throughout: toCold exchanges
// the two streams of code under it (enc.Buf.Exchange), so the closures
// that captured the buffer emit into whichever stream is current, and
// labels are shared by both. What the unwind tables, the address map
// and the code map record of the stream not in use waits in fg.aside,
// and each part is described on its own: an FDE per part, with the CFA
// rules of the original instruction each stretch stands for
// (unwind.go), a symbol per part (symbols.go), the code map's lines by
// address (codesize.go). Cold code holds no copy of an original
// instruction (coldDone checks), so the address map covers hot parts
// alone.

// ColdLayout is where a function's cold code goes (Options.Cold).
type ColdLayout uint8

const (
	// ColdDefault is ColdApart.
	ColdDefault ColdLayout = iota
	// ColdApart: every function's cold code after all functions' hot
	// code; tail variants and trampolines stay hot.
	ColdApart
	// ColdApartTails: as ColdApart, with the tail variants of entries in
	// the cold part (for measurements: decision 150).
	ColdApartTails
	// ColdApartTrampolines: as ColdApartTails, with the trampolines in
	// the cold part too (for measurements).
	ColdApartTrampolines
	// ColdInline: each function's cold code after its trampolines, the
	// layout before decision 150 (for measurements).
	ColdInline
	// ColdApartNoEntries: as ColdApart, with the slow paths of entries
	// in the hot part (for measurements).
	ColdApartNoEntries
)

// coldItem is a piece of out-of-line code queued for after the
// trampolines; hot keeps it in the hot part.
type coldItem struct {
	f   func()
	hot bool
}

// streamRecords is what a function's emission records of one stream of
// its code, kept aside while the other is emitted.
type streamRecords struct {
	marks     []unwindMark
	copies    []copyMark
	ranges    []codeRange
	rangeBase int
}

// split reports whether functions have a cold part.
func (g *gen) split() bool { return g.cold != ColdInline }

// coldTails reports whether tail variants go to the cold part.
func (g *gen) coldTails() bool { return g.cold == ColdApartTails || g.cold == ColdApartTrampolines }

// coldTrampolines reports whether trampolines go to the cold part.
func (g *gen) coldTrampolines() bool { return g.cold == ColdApartTrampolines }

// toCold makes the cold stream (cold) or the hot one current in
// fg.g.buf. Without a cold part it does nothing.
func (fg *funcGen) toCold(cold bool) {
	if fg.coldBuf == nil || cold == fg.inCold {
		return
	}
	fg.flushSize()
	b := fg.g.buf
	b.Exchange(fg.coldBuf)
	a := &fg.aside
	fg.marks, a.marks = a.marks, fg.marks
	fg.copies, a.copies = a.copies, fg.copies
	fg.ranges, a.ranges = a.ranges, fg.ranges
	fg.rangeBase, a.rangeBase = a.rangeBase, fg.rangeBase
	fg.sz.at = b.Len()
	fg.inCold = cold
}

// errColdCopy: cold code must not copy original instructions, whose
// copies the address map lists for the hot parts only.
var errColdCopy = errors.New("internal error: a copy of an original instruction in cold code")

// coldDone ends the function's emission with the hot stream current: it
// records the cold part's extent, [cstart, cend) in the cold buffer
// (empty: none), and its code map stretches at offsets from cstart.
func (fg *funcGen) coldDone() error {
	if fg.coldBuf == nil {
		return nil
	}
	if len(fg.aside.copies) > 0 {
		return errColdCopy
	}
	fg.cstart, fg.cend = fg.aside.rangeBase, fg.coldBuf.Len()
	return fg.coldBuf.Err()
}

// coldChild makes the child buffer of fg's cold part, whose offsets
// count from 0: cold code asks for no alignment, so its bytes do not
// depend on where it lands. Every piece of it declares its %rsp
// displacement (addColdAt), so the 0 it starts with is never read.
func (fg *funcGen) coldChild(parent *enc.Buf, size int) {
	fg.coldBuf = parent.Child(0, 0, size)
	fg.aside = streamRecords{marks: fg.aside.marks[:0], copies: fg.aside.copies[:0]}
	fg.inCold = false
}
