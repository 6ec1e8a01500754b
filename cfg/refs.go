package cfg

import (
	"cmp"
	"iter"
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"
)

// refIndex is the set of data addresses the program's code refers to:
// rip-relative operands and absolute displacements (non-PIC code), found
// by a linear sweep of the executable sections. A table without a bounds
// check ends before the next such address: another table or other data
// begins there. The sets are sorted arrays: a large library's sweep
// finds millions of addresses, which maps held in several times the
// memory and filled one by one.
type refIndex struct {
	once sync.Once
	set  addrSet
	// calls are the targets of direct calls the same sweep found,
	// branches those of direct jumps and calls.
	calls, branches addrSet
	// from holds the source of every instruction with a direct target
	// (x86.Kind.HasTarget) by target.
	from Branches
}

// addrSet is a set of addresses, sorted and distinct.
type addrSet []uint64

func (s addrSet) has(a uint64) bool {
	_, ok := slices.BinarySearch(s, a)
	return ok
}

// newAddrSet sorts a into a set (a is reused).
func newAddrSet(a []uint64) addrSet {
	slices.Sort(a)
	return slices.Clip(slices.Compact(a))
}

// Branches maps the destination of branches to their sources.
type Branches struct {
	// to and from are the pairs, sorted by destination, then source.
	to, from []uint64
}

// Sources returns the sources of the branches to a, in address order.
// The slice is shared: callers must not change it.
func (br *Branches) Sources(a uint64) []uint64 {
	if br == nil {
		return nil
	}
	lo, ok := slices.BinarySearch(br.to, a)
	if !ok {
		return nil
	}
	hi := lo + 1
	for hi < len(br.to) && br.to[hi] == a {
		hi++
	}
	return br.from[lo:hi:hi]
}

// All yields every destination, in address order, with its sources.
func (br *Branches) All() iter.Seq2[uint64, []uint64] {
	return func(yield func(uint64, []uint64) bool) {
		if br == nil {
			return
		}
		for lo := 0; lo < len(br.to); {
			hi := lo + 1
			for hi < len(br.to) && br.to[hi] == br.to[lo] {
				hi++
			}
			if !yield(br.to[lo], br.from[lo:hi:hi]) {
				return
			}
			lo = hi
		}
	}
}

// newBranches sorts the pairs (to[i], from[i]), whose sources are
// distinct, by destination and then source (to and from are reused).
func newBranches(to, from []uint64) Branches {
	ps := make([]branchPair, len(to))
	rising := true
	for i := range ps {
		ps[i] = branchPair{to[i], from[i]}
		rising = rising && (i == 0 || from[i-1] < from[i])
	}
	if rising {
		// The sweep's order: sources rise, so a stable sort by
		// destination is the sort by destination, then source.
		ps = radixByTo(ps)
	} else {
		slices.SortFunc(ps, func(a, b branchPair) int {
			if c := cmp.Compare(a.to, b.to); c != 0 {
				return c
			}
			return cmp.Compare(a.from, b.from)
		})
	}
	for i, p := range ps {
		to[i], from[i] = p.to, p.from
	}
	return Branches{to: to, from: from}
}

type branchPair struct{ to, from uint64 }

// radixByTo sorts ps by destination, stably: a least significant digit
// radix sort by bytes, which skips a byte every pair shares (most of
// the high ones). A large library's sweep finds millions of pairs,
// which a comparison sort took 0.3 s of the index's critical path to
// order. It returns the sorted array (ps or the one it made).
func radixByTo(ps []branchPair) []branchPair {
	if len(ps) < 256 {
		slices.SortStableFunc(ps, func(a, b branchPair) int { return cmp.Compare(a.to, b.to) })
		return ps
	}
	tmp := make([]branchPair, len(ps))
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		clear(count[:])
		for i := range ps {
			count[byte(ps[i].to>>shift)]++
		}
		if count[byte(ps[0].to>>shift)] == len(ps) {
			continue // one value of this byte: the order stays
		}
		at := 0
		for d, c := range count {
			count[d] = at
			at += c
		}
		for i := range ps {
			d := byte(ps[i].to >> shift)
			tmp[count[d]] = ps[i]
			count[d]++
		}
		ps, tmp = tmp, ps
	}
	return ps
}

// BranchSources is the destination of every direct branch, call and
// other instruction with a target that a linear sweep of the executable
// sections finds, with the addresses of those instructions. The sweep
// may decode data as code, so a target may be bogus; the rewriter only
// uses it to stay away from code something may branch into. Its arrays
// are shared: callers must not change them.
func (b *Binary) BranchSources() *Branches {
	br := b.sweepRefs().from
	return &br
}

// DropRefs forgets the linear sweep's findings (BranchSources, and
// what the analysis read of them) for a caller done with analysing b:
// they take a large binary's tens of megabytes. Analysis of b after it
// sweeps again.
func (b *Binary) DropRefs() {
	b.refs = refIndex{}
}

// referenced reports whether some instruction of the program refers to
// addr as data. The sweep may decode data as code; a bogus reference only
// ends a table earlier.
func (b *Binary) referenced(addr uint64) bool {
	return b.sweepRefs().set.has(addr)
}

// calledDirectly reports whether a direct call instruction anywhere in
// the program's code targets addr: such an address starts a procedure,
// even when a procedure that jumps to it was taken for its parent.
func (b *Binary) calledDirectly(addr uint64) bool {
	return b.sweepRefs().calls.has(addr)
}

func (b *Binary) sweepRefs() *refIndex {
	ri := &b.refs
	ri.once.Do(func() {
		var facts refFacts
		for _, s := range b.sections {
			if !s.Exec {
				continue
			}
			facts.sweepChunks(b.Code(s.Addr), s.Addr, sweepChunk)
		}
		facts.index(ri)
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
func sweepStep(d *x86.Decoder, code []byte, addr uint64, off int, facts []sweepFact) (int, []sweepFact) {
	var in x86.Info
	if err := d.DecodeInfoTo(&in, code[off:], addr+uint64(off)); err != nil {
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
	for i := range in.Args {
		if m := &in.Args[i]; m.Kind == x86.ArgMem && m.Base == 0 && m.Segment == 0 && m.Val > 0 {
			facts = append(facts, sweepFact{off, factSet, uint64(m.Val)})
		}
	}
	return off + in.Len, facts
}

// refFacts collects the sweep's findings, by kind, in sweep order.
type refFacts struct {
	set, calls, branches []uint64
	to, from             []uint64
}

// add records facts found in code at addr.
func (rf *refFacts) add(addr uint64, facts []sweepFact) {
	for _, f := range facts {
		switch f.kind {
		case factSet:
			rf.set = append(rf.set, f.val)
		case factCall:
			rf.calls = append(rf.calls, f.val)
		case factBranch:
			rf.branches = append(rf.branches, f.val)
		case factFrom:
			rf.to = append(rf.to, f.val)
			rf.from = append(rf.from, addr+uint64(f.off))
		}
	}
}

// index sorts the findings into ri, on every worker.
func (rf *refFacts) index(ri *refIndex) {
	par.Each(4, 0, func(k int) {
		switch k {
		case 0:
			ri.set = newAddrSet(rf.set)
		case 1:
			ri.calls = newAddrSet(rf.calls)
		case 2:
			ri.branches = newAddrSet(rf.branches)
		case 3:
			ri.from = newBranches(rf.to, rf.from)
		}
	})
}

// sweepChunks adds the findings of a linear sweep of code, loaded at
// addr, swept in chunks of the given size.
func (rf *refFacts) sweepChunks(code []byte, addr uint64, chunk int) {
	nchunks := (len(code) + chunk - 1) / chunk
	runs := make([]sweepRun, sweepGroup)
	t := 0 // the true sweep's next offset
	var facts []sweepFact
	dec := x86.NewDecoder()
	defer dec.Release()
	for g := 0; g < nchunks; g += sweepGroup {
		n := min(sweepGroup, nchunks-g)
		par.Each(n, 0, func(i int) {
			start := (g + i) * chunk
			end := min(start+chunk, len(code))
			r := sweepRun{visited: runs[i].visited[:0], facts: runs[i].facts[:0]}
			d := x86.NewDecoder()
			defer d.Release()
			off := start
			for off < end {
				r.visited = append(r.visited, off)
				off, r.facts = sweepStep(d, code, addr, off, r.facts)
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
					rf.add(addr, r.facts[j:])
					t = r.exit
					break
				}
				t, facts = sweepStep(dec, code, addr, t, facts[:0])
				rf.add(addr, facts)
			}
		}
		if g == 0 && nchunks > n {
			// The first group's findings, scaled to the whole code and a
			// tenth more, size the arrays once: grown by doubling, they
			// copied a third of a gigabyte in a large library, on one
			// goroutine. (Only the capacity depends on the estimate.)
			rf.reserve(1.1 * float64(len(code)) / float64(n*chunk))
		}
	}
}

// reserve makes room in each array for scale times its length.
func (rf *refFacts) reserve(scale float64) {
	for _, a := range []*[]uint64{&rf.set, &rf.calls, &rf.branches, &rf.to, &rf.from} {
		if want := int(scale * float64(len(*a))); want > cap(*a) {
			*a = slices.Grow(*a, want-len(*a))
		}
	}
}
