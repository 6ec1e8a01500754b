package rewriter

import (
	"bufio"
	"fmt"
	"io"
)

// What the new code is made of (Summary.CodeKinds): every byte of a
// function's instrumented copy is counted under one kind (what it is
// for) and one region (where it lies in the function's code), so that
// the size of what a user runs can be told apart from the size of what
// is there in case (decision 111). The code generator names the kind of
// what it is about to emit (beginKind/endKind, the innermost one wins);
// the region follows from the emission's order (emit: the body, then the
// trampolines, then the out-of-line code queued by addCold).

// codeKind is what a stretch of new code is for.
type codeKind uint8

const (
	kindOther codeKind = iota
	// kindOriginal: copies of original instructions, as long as the
	// originals; kindRelocation: what relocating them added (a short
	// branch made rel32, a table load made a jump through a register).
	kindOriginal
	kindRelocation
	// kindJump: jumps the layout added (a fall-through whose target is
	// not next, a trampoline's way back, the joins of entry variants).
	kindJump
	// kindIncrement: chord increments [Ball-Larus 96 §3.4].
	kindIncrement
	// kindPathEnd: path ends at backedges and loop copies' heads, and
	// setjmp's returns.
	kindPathEnd
	kindEntry
	// kindExit: exits, which count the path that ends there.
	kindExit
	// kindCallSite: a call's own work: the site's store, the path
	// register's spill and reload, hooks of calls that leave.
	kindCallSite
	// kindLoopRegister: moving the path register into and out of a
	// loop's register [decision 56].
	kindLoopRegister
	// kindPadding: alignment of functions' starts, loop headers, jump
	// targets and loop copies [decisions 53, 104].
	kindPadding
	// kindEndbr: endbr64 at new indirect-branch targets [decision 95].
	kindEndbr
	nCodeKinds
)

var codeKindNames = [nCodeKinds]string{"other", "original", "relocation", "jump", "increment", "path_end",
	"entry", "exit", "call_site", "loop_register", "padding", "endbr"}

func (k codeKind) String() string { return codeKindNames[k] }

// codeRegion is where in a function's code a byte lies.
type codeRegion uint8

const (
	// regionInline: the body, in the original's block order, with the
	// entries before it.
	regionInline codeRegion = iota
	// regionTrampoline: out-of-line code of taken edges.
	regionTrampoline
	// regionCold: out-of-line slow paths and entry variants.
	regionCold
	// regionLoopCopy: loop copies [decision 58].
	regionLoopCopy
	nCodeRegions
)

// codeSizes counts a function's bytes by kind and region.
type codeSizes [nCodeKinds][nCodeRegions]int

// sizer is a function's running account: the kind and region of the
// bytes emitted since offset at.
type sizer struct {
	kind   codeKind
	region codeRegion
	at     int
	n      codeSizes
}

// flushSize counts the bytes emitted since the last change of kind or
// region under the old ones.
func (fg *funcGen) flushSize() {
	n := fg.g.buf.Len()
	fg.account(fg.sz.kind, n)
}

// account counts the bytes from the last count to offset n under kind k.
func (fg *funcGen) account(k codeKind, n int) {
	fg.sz.n[k][fg.sz.region] += n - fg.sz.at
	if fg.g.codeMap && n > fg.sz.at {
		r := codeRange{int32(fg.sz.at - fg.rangeBase), int32(n - fg.rangeBase), k, fg.sz.region}
		if last := len(fg.ranges) - 1; last >= 0 && fg.ranges[last].end == r.off && fg.ranges[last].kind == k && fg.ranges[last].region == r.region {
			fg.ranges[last].end = r.end // one stretch of one kind
		} else {
			fg.ranges = append(fg.ranges, r)
		}
	}
	fg.sz.at = n
}

// beginKind makes k the kind of what is emitted next and returns the
// kind before, for endKind: `defer fg.endKind(fg.beginKind(k))`.
func (fg *funcGen) beginKind(k codeKind) codeKind {
	fg.flushSize()
	prev := fg.sz.kind
	fg.sz.kind = k
	return prev
}

// endKind goes back to kind prev.
func (fg *funcGen) endKind(prev codeKind) {
	fg.flushSize()
	fg.sz.kind = prev
}

// setRegion makes r the region of what is emitted next and returns the
// region before.
func (fg *funcGen) setRegion(r codeRegion) codeRegion {
	fg.flushSize()
	prev := fg.sz.region
	fg.sz.region = r
	return prev
}

// copiedSize counts a copy of an original instruction of n bytes
// emitted since offset at: n of it original, the rest what its
// relocation added.
func (fg *funcGen) copiedSize(at, n int) {
	end := fg.g.buf.Len()
	fg.account(fg.sz.kind, at) // what came before the copy
	if end-at < n {
		n = end - at // a jmp left out, a load made a patch
	}
	fg.account(kindOriginal, at+n)
	fg.account(kindRelocation, end)
}

// CodeKind is the size of one kind of new code, by where it lies in its
// functions (Summary.CodeKinds).
type CodeKind struct {
	// Kind is one of other, original, relocation, jump, increment,
	// path_end, entry, exit, call_site, loop_register, padding, endbr.
	Kind string `json:"kind"`
	// Bytes is the sum of the four places.
	Bytes int `json:"bytes"`
	// Inline: in the body and the entries before it; Trampolines: the
	// out-of-line code of taken edges; Cold: out-of-line slow paths and
	// entry variants; LoopCopies: the second copies of loops.
	Inline      int `json:"inline"`
	Trampolines int `json:"trampolines"`
	Cold        int `json:"cold"`
	LoopCopies  int `json:"loop_copies"`
}

// codeKinds returns the summary's rows of s in the kinds' order (stable
// for readers), leaving out kinds with no bytes.
func (s *codeSizes) codeKinds() []CodeKind {
	var out []CodeKind
	for k := range nCodeKinds {
		r := s[k]
		c := CodeKind{Kind: k.String(), Inline: r[regionInline], Trampolines: r[regionTrampoline], Cold: r[regionCold], LoopCopies: r[regionLoopCopy]}
		c.Bytes = c.Inline + c.Trampolines + c.Cold + c.LoopCopies
		if c.Bytes != 0 {
			out = append(out, c)
		}
	}
	return out
}

// add adds t to s.
func (s *codeSizes) add(t *codeSizes) {
	for k := range s {
		for r := range s[k] {
			s[k][r] += t[k][r]
		}
	}
}

var codeRegionNames = [nCodeRegions]string{"inline", "trampoline", "cold", "loop_copy"}

func (r codeRegion) String() string { return codeRegionNames[r] }

// codeRange is a stretch of a function's code of one kind in one
// place, at offsets from where its emission began (funcGen.rangeBase).
type codeRange struct {
	off, end int32
	kind     codeKind
	region   codeRegion
}

// writeCodeMap writes the map of the new code placed at codeAddr
// (Options.CodeMap): per stretch, in address order, a line
// "start end kind place function" with the addresses in hex, end
// exclusive, and the places inline, trampoline, cold and loop_copy. A
// profiler's or simulator's per-address counts can be put on kinds
// with it (decision 111).
func writeCodeMap(w io.Writer, g *gen, codeAddr uint64) error {
	bw := bufio.NewWriter(w)
	for _, fg := range g.funcs {
		at := int64(codeAddr) + int64(fg.start-fg.rangeStart)
		for _, r := range fg.ranges {
			fmt.Fprintf(bw, "%x %x %s %s %s\n", at+int64(r.off), at+int64(r.end), r.kind, r.region, fg.f.Func.Name)
		}
	}
	return bw.Flush()
}
