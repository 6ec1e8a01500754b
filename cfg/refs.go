package cfg

import (
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"

	"golang.org/x/arch/x86/x86asm"
)

// refIndex is the set of data addresses the program's code refers to:
// rip-relative operands and absolute displacements (non-PIC code), found
// by a linear sweep of the executable sections. A table without a bounds
// check ends before the next such address: another table or other data
// begins there.
type refIndex struct {
	once sync.Once
	set  map[uint64]bool
	// calls are the targets of direct calls the same sweep found,
	// branches those of direct jumps and calls.
	calls, branches map[uint64]bool
	// from maps the target of every instruction with a direct target
	// (x86.Kind.HasTarget) to the addresses of those instructions, in
	// address order.
	from map[uint64][]uint64
}

// BranchSources maps the destination of every direct branch, call and
// other instruction with a target that a linear sweep of the executable
// sections finds to the addresses of the instructions, in address
// order. The sweep may decode data as code, so a target may be bogus;
// the rewriter only uses it to stay away from code something may branch
// into. The map is shared: callers must not change it.
func (b *Binary) BranchSources() map[uint64][]uint64 {
	return b.sweepRefs().from
}

// DropRefs forgets the linear sweep's findings (BranchSources, and
// what the analysis read of them) for a caller done with analysing b:
// their maps take a large binary's hundred megabytes. Analysis of b
// after it sweeps again.
func (b *Binary) DropRefs() {
	b.refs = refIndex{}
}

// referenced reports whether some instruction of the program refers to
// addr as data. The sweep may decode data as code; a bogus reference only
// ends a table earlier.
func (b *Binary) referenced(addr uint64) bool {
	return b.sweepRefs().set[addr]
}

// calledDirectly reports whether a direct call instruction anywhere in
// the program's code targets addr: such an address starts a procedure,
// even when a procedure that jumps to it was taken for its parent.
func (b *Binary) calledDirectly(addr uint64) bool {
	return b.sweepRefs().calls[addr]
}

func (b *Binary) sweepRefs() *refIndex {
	ri := &b.refs
	ri.once.Do(func() {
		ri.set = make(map[uint64]bool)
		ri.calls = make(map[uint64]bool)
		ri.branches = make(map[uint64]bool)
		ri.from = make(map[uint64][]uint64)
		for _, s := range b.sections {
			if !s.Exec {
				continue
			}
			ri.sweep(b.Code(s.Addr), s.Addr)
		}
	})
	return ri
}

// The sweep decodes every byte offset it lands on: from 0, the next
// offset is past the instruction decoded, or one byte on where nothing
// decodes. That rule makes the offsets visited from any start a chain
// that, once it meets the true one, follows it. So each chunk of the code
// is swept on its own, on all workers, from its first byte; then, in
// order, the true sweep enters the chunk and steps on its own only until
// it lands on an offset the chunk's sweep visited, and takes that sweep's
// findings from there (x86 code realigns within a few instructions).

const (
	sweepChunk = 256 << 10 // bytes of code per chunk
	sweepGroup = 16        // chunks swept together (bounds the memory held)
)

// sweepFact is one finding of the sweep: kind factSet, factCall,
// factBranch (the maps of refIndex) or factFrom (a source of val at off).
type sweepFact struct {
	off  int
	kind uint8
	val  uint64
}

const (
	factSet = iota
	factCall
	factBranch
	factFrom
)

// sweepRun is a chunk's own sweep: the offsets it visited in order, its
// findings in offset order, and the first offset it reached at or past
// the chunk's end.
type sweepRun struct {
	visited []int
	facts   []sweepFact
	exit    int
}

// sweepStep decodes the instruction at off, appends its findings to
// facts, and returns the next offset.
func sweepStep(code []byte, addr uint64, off int, facts []sweepFact) (int, []sweepFact) {
	in, err := x86.Decode(code[off:], addr+uint64(off))
	if err != nil {
		return off + 1, facts
	}
	if in.RIPRel && !in.Kind.HasTarget() {
		facts = append(facts, sweepFact{off, factSet, in.RIPTarget})
	}
	if in.Kind == x86.Call {
		facts = append(facts, sweepFact{off, factCall, in.Target})
	}
	if in.Kind == x86.Call || in.Kind == x86.Jmp || in.Kind == x86.Jcc {
		facts = append(facts, sweepFact{off, factBranch, in.Target})
	}
	if in.Kind.HasTarget() {
		facts = append(facts, sweepFact{off, factFrom, in.Target})
	}
	for _, a := range in.Raw.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Segment == 0 && m.Disp > 0 {
			facts = append(facts, sweepFact{off, factSet, uint64(m.Disp)})
		}
	}
	return off + in.Len, facts
}

// add records facts found in code at addr.
func (ri *refIndex) add(addr uint64, facts []sweepFact) {
	for _, f := range facts {
		switch f.kind {
		case factSet:
			ri.set[f.val] = true
		case factCall:
			ri.calls[f.val] = true
		case factBranch:
			ri.branches[f.val] = true
		case factFrom:
			ri.from[f.val] = append(ri.from[f.val], addr+uint64(f.off))
		}
	}
}

// sweep adds the findings of a linear sweep of code, loaded at addr.
func (ri *refIndex) sweep(code []byte, addr uint64) { ri.sweepChunks(code, addr, sweepChunk) }

// sweepChunks is sweep with chunks of the given size.
func (ri *refIndex) sweepChunks(code []byte, addr uint64, chunk int) {
	nchunks := (len(code) + chunk - 1) / chunk
	runs := make([]sweepRun, sweepGroup)
	t := 0 // the true sweep's next offset
	var facts []sweepFact
	for g := 0; g < nchunks; g += sweepGroup {
		n := min(sweepGroup, nchunks-g)
		par.Each(n, 0, func(i int) {
			start := (g + i) * chunk
			end := min(start+chunk, len(code))
			r := sweepRun{visited: runs[i].visited[:0], facts: runs[i].facts[:0]}
			off := start
			for off < end {
				r.visited = append(r.visited, off)
				off, r.facts = sweepStep(code, addr, off, r.facts)
			}
			r.exit = off
			runs[i] = r
		})
		for i := range n {
			r := &runs[i]
			end := min((g+i+1)*chunk, len(code))
			for t < end {
				if k, ok := slices.BinarySearch(r.visited, t); ok {
					j := sort.Search(len(r.facts), func(j int) bool { return r.facts[j].off >= r.visited[k] })
					ri.add(addr, r.facts[j:])
					t = r.exit
					break
				}
				t, facts = sweepStep(code, addr, t, facts[:0])
				ri.add(addr, facts)
			}
		}
	}
}
