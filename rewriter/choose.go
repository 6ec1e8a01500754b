package rewriter

// Which functions may be instrumented: the checks rewrite makes of each
// function, and of the code that branches into it, before any is planned.

import (
	"fmt"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// usesGS reports whether the code of g names the %gs segment, which the
// instrumentation takes for itself (ErrUsesGS).
func usesGS(b *cfg.Binary, g *cfg.Graph) bool {
	for i := range g.Blocks {
		// Most blocks' bytes rule %gs out without decoding.
		if code := b.Bytes(g.Blocks[i].Addr, int(g.Blocks[i].End-g.Blocks[i].Addr)); code != nil && !x86.MayNameGS(code) {
			continue
		}
		for in := range b.Insts(&g.Blocks[i]) {
			if in.Raw.Op == x86asm.RDGSBASE || in.Raw.Op == x86asm.WRGSBASE {
				return true
			}
			for _, arg := range in.Raw.Args {
				if m, ok := arg.(x86asm.Mem); ok && m.Segment == x86asm.GS {
					return true
				}
			}
		}
	}
	return false
}

// branchTargets collects the targets of every direct jump, branch and
// call found by a linear sweep of the executable sections, each with the
// addresses of the instructions that branch there. The entry jump
// overwrites an instrumented function's first 5 bytes, so no code that
// may run may branch into them (glibc's string functions share tails
// that way: __mempcpy_* jumps to __memmove_*+5). The sweep may decode
// data as code; a bogus target only makes the check more cautious.
func branchTargets(b *cfg.Binary) *cfg.Branches {
	// The analysis sweeps the code the same way for its reference index;
	// one sweep serves both.
	return b.BranchSources()
}

// patchedInto reports whether some branch that may run lands inside the
// bytes the entry jump of f replaces. A branch of f's own (a loop back
// to the instruction after the prologue's first push: lua's
// luaK_exp2const and others) never runs once the entry is patched, so
// long as no other code branches into f past its entry: the original
// body then never runs, and the relocated copy's branch goes to the
// relocated block. Such self-branches are allowed; any other is not.
func patchedInto(f *cfg.Function, targets *cfg.Branches) bool {
	self := false
	for _, e := range append([]uint64{f.Addr}, f.Entries...) {
		for a := e + 1; a < e+5; a++ {
			for _, src := range targets.Sources(a) {
				if !f.Contains(src) {
					return true
				}
				self = true
			}
		}
	}
	return self && enteredInside(f, targets)
}

// enteredInside reports whether code outside f branches into f anywhere
// but at its entries.
func enteredInside(f *cfg.Function, targets *cfg.Branches) bool {
	for _, r := range f.Ranges() {
		for a := r.Addr; a < r.End(); a++ {
			if f.IsEntry(a) {
				continue
			}
			for _, src := range targets.Sources(a) {
				if !f.Contains(src) {
					return true
				}
			}
		}
	}
	return false
}

// leaveBranchedInto takes out of chosen, and lists in sum, every function
// that code outside all the chosen functions branches into past its entry
// (a function left uninstrumented jumping into its middle: glibc's string
// functions share their tails between entry points). That code would run
// the function's original blocks, which count nothing, and its copy's
// counts would no longer be the function's [DESIGN 2]. The branches come
// from a linear sweep of the executable sections (into), which decodes
// data as code too. A branch from a procedure left out is real code; one
// from between procedures counts only where the bytes of that gap up to
// it decode (sweptData), so that a table kept in .text after a function
// does not keep the function out (decision 172). Leaving a function out
// adds no branch into another, so one pass is enough. all are every
// procedure analysed, chosen or not.
func leaveBranchedInto(b *cfg.Binary, all, chosen []*analysis.Func, moved map[*analysis.Func]uint64, into *cfg.Branches, sum *Summary) []*analysis.Func {
	type span struct {
		lo, hi uint64
		f      *analysis.Func
	}
	spansOf := func(fs []*analysis.Func) []span {
		var spans []span
		for _, f := range fs {
			for _, r := range f.Func.Ranges() {
				spans = append(spans, span{r.Addr, r.End(), f})
			}
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
		return spans
	}
	find := func(spans []span, a uint64) int {
		k := sort.Search(len(spans), func(k int) bool { return spans[k].lo > a }) - 1
		if k >= 0 && a < spans[k].hi {
			return k
		}
		return -1
	}
	spans, known := spansOf(chosen), spansOf(all)
	owner := func(a uint64) *analysis.Func {
		if k := find(spans, a); k >= 0 {
			return spans[k].f
		}
		return nil
	}
	// sweptData reports whether from, a source outside every procedure,
	// lies in a gap between procedures whose bytes before it do not all
	// decode: data the sweep read as code (OpenSSL's SHA-256 keeps its
	// round constants in .text right after the function, and one of
	// them decodes as a jno into the function's body; decision 172).
	sweptData := func(from uint64) bool {
		if find(known, from) >= 0 {
			return false // a procedure left out: real code
		}
		lo := uint64(0)
		if k := sort.Search(len(known), func(k int) bool { return known[k].lo > from }) - 1; k >= 0 {
			lo = known[k].hi
		}
		if from-lo > gapWindow {
			lo = from - gapWindow
		}
		return !decodesTo(b, lo, from)
	}
	bad := map[*analysis.Func]uint64{}
	for t, froms := range into.All() {
		f := owner(t)
		// Branches up to a moved entry jump run the instructions before it
		// in place and then the copy (decision 67).
		if f == nil || f.Func.IsEntry(t) || (moved[f] != 0 && t <= moved[f]) {
			continue
		}
		for _, from := range froms {
			if owner(from) == nil && !sweptData(from) {
				if _, seen := bad[f]; !seen || from < bad[f] {
					bad[f] = from
				}
				break
			}
		}
	}
	if len(bad) == 0 {
		return chosen
	}
	kept := chosen[:0]
	for _, f := range chosen {
		from, ok := bad[f]
		if !ok {
			kept = append(kept, f)
			continue
		}
		sum.Skipped = append(sum.Skipped, Skipped{Name: f.Func.Name, Entry: fmt.Sprintf("%#x", f.Func.Addr),
			Reason: "branched into by uninstrumented code", Detail: fmt.Sprintf("the code at %#x, in no instrumented function, jumps into its body", from),
			Size: f.Func.TotalSize()})
	}
	return kept
}

// gapWindow bounds how far before a branch found between procedures
// sweptData decodes.
const gapWindow = 4096

// decodesTo reports whether every instruction from lo on decodes, up to
// and including the one at to (to must be reached exactly).
func decodesTo(b *cfg.Binary, lo, to uint64) bool {
	d := x86.NewDecoder()
	defer d.Release()
	var in x86.Info
	for a := lo; a <= to; a += uint64(in.Len) {
		code := b.Code(a)
		if len(code) == 0 || d.DecodeInfoTo(&in, code, a) != nil {
			return false
		}
		if a == to {
			return true
		}
	}
	return false
}

// fdeIndex answers whether an .eh_frame FDE covers an address: the FDE
// ranges sorted by start, with the largest end among each prefix (FDEs
// may overlap).
type fdeIndex struct {
	rs     []cfg.Range
	maxEnd []uint64
}

func newFDEIndex(b *cfg.Binary) *fdeIndex {
	x := &fdeIndex{rs: b.FDEs()}
	sort.Slice(x.rs, func(i, j int) bool { return x.rs[i].Addr < x.rs[j].Addr })
	x.maxEnd = make([]uint64, len(x.rs))
	var m uint64
	for i, r := range x.rs {
		m = max(m, r.End())
		x.maxEnd[i] = m
	}
	return x
}

// cover says how much of [lo, hi) FDEs cover: all of it, none of it, or
// (mixed) some.
func (x *fdeIndex) cover(lo, hi uint64) (all, none bool) {
	i := sort.Search(len(x.rs), func(i int) bool { return x.rs[i].Addr >= hi })
	none = true
	for i--; i >= 0 && x.maxEnd[i] > lo; i-- {
		if r := x.rs[i]; r.End() > lo {
			none = false
			if r.Addr <= lo && r.End() >= hi {
				return true, false
			}
		}
	}
	return false, none
}

// partlyUnwound finds a function whose instructions the original's
// .eh_frame describes in part: unwindInfo refuses its copy (its unwind
// rows would end where the original's do, and an unwinder stepping
// through the rest would go wrong), and finding that before the layout
// spares rewrite a second layout round (glibc's __clone, whose FDE stops
// before its system call, and static glibc's signal trampolines: about
// a quarter of every rewrite of libc.so.6). It looks only at the
// instructions whose copies surely keep a mark of their own in
// unwindInfo (body instructions that are not a block's last, a nop or
// the entry's endbr64), so it never refuses a function unwindInfo would
// take; one it misses still gets the second round. It returns an
// uncovered address and a covered one.
func partlyUnwound(b *cfg.Binary, x *fdeIndex, f *analysis.Func) (off, on uint64, ok bool) {
	g := f.Graph
	// Most functions lie wholly inside FDEs, or wholly outside.
	anyAll, anyNone, mixed := false, false, false
	for i := range g.Blocks {
		blk := &g.Blocks[i]
		if blk.Insts < 2 {
			continue
		}
		switch all, none := x.cover(blk.Addr, blk.Last); {
		case all:
			anyAll = true
		case none:
			anyNone = true
		default:
			mixed = true
		}
	}
	if !mixed && (!anyAll || !anyNone) {
		return 0, 0, false
	}
	for i := range g.Blocks {
		blk := &g.Blocks[i]
		for in := range b.Insts(blk) {
			if in.Addr == blk.Last {
				break
			}
			if in.Endbr || in.Op == x86asm.NOP {
				continue
			}
			if all, _ := x.cover(in.Addr, in.Addr+1); all {
				on = in.Addr
			} else {
				off = in.Addr
			}
			if on != 0 && off != 0 {
				return off, on, true
			}
		}
	}
	return 0, 0, false
}

// leavePartlyUnwound takes out of chosen, and lists in sum, the
// functions partlyUnwound finds, with the reason the code generator
// would have given. Only binaries with unwind tables are looked at.
func leavePartlyUnwound(b *cfg.Binary, chosen []*analysis.Func, sum *Summary) []*analysis.Func {
	x := newFDEIndex(b)
	if len(x.rs) == 0 {
		return chosen
	}
	kept := chosen[:0]
	for _, f := range chosen {
		off, on, ok := partlyUnwound(b, x, f)
		if !ok {
			kept = append(kept, f)
			continue
		}
		sum.Skipped = append(sum.Skipped, Skipped{Name: f.Func.Name, Entry: fmt.Sprintf("%#x", f.Func.Addr),
			Reason: "code generation", Size: f.Func.TotalSize(),
			Detail: fmt.Sprintf("unwind tables: unwind information covers only part of the function (%#x, not %#x)", on, off)})
	}
	return kept
}
