package cfg

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/blpp/blpp/cfg/ehframe"
)

// ehRanges reads the call-site tables of the LSDAs of f's body and
// fragments: the FDE starting at each range gives its LSDA [LSB 5.0
// §10.6.1.2]. C++ (and Rust) code lists there, for each stretch of
// calls, the landing pad an exception raised by them continues at
// [Itanium C++ ABI: Exception Handling §1.6.4]. Landing pads are reached
// by no instruction of the procedure, only by the unwinder, so without
// this table their code is never decoded.
func (b *Binary) ehRanges(f *Function) ([]EHRange, error) {
	var out []EHRange
	for _, r := range f.Ranges() {
		i := sort.Search(len(b.fdes), func(i int) bool { return b.fdes[i].begin >= r.Addr })
		if i == len(b.fdes) || b.fdes[i].begin != r.Addr || b.fdes[i].lsda == 0 {
			continue
		}
		fd := b.fdes[i]
		s := b.section(fd.lsda)
		if s == nil || s.data == nil {
			return nil, fmt.Errorf("LSDA at %#x is not in file data", fd.lsda)
		}
		l, err := ehframe.ParseLSDA(s.data, s.Addr, fd.lsda, fd.begin, b.ehOpts)
		if err != nil {
			return nil, err
		}
		for _, cs := range l.CallSites {
			out = append(out, EHRange{Start: cs.Start, End: cs.End, LandingPad: cs.LandingPad})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// landingEdges adds one EdgeLanding per landing pad, from the block of a
// call the pad covers (any call of the procedure if none is covered: the
// edge only has to make the pad a path start).
func (bd *builder) landingEdges(blockOf func(uint64) (BlockID, bool)) {
	g := bd.g
	seen := map[uint64]bool{}
	for _, r := range g.EH {
		lp := r.LandingPad
		if lp == 0 || seen[lp] {
			continue
		}
		seen[lp] = true
		to, ok := blockOf(lp)
		if !ok {
			g.fail(ReasonExceptionTable, lp, "landing pad is not an instruction of the function")
			return
		}
		from := BlockID(-1)
		for _, c := range g.Calls {
			if from < 0 {
				from = c.Block
			}
			if covered(g.EH, c.Addr, lp) {
				from = c.Block
				break
			}
		}
		if from < 0 {
			g.fail(ReasonExceptionTable, lp, "landing pad in a function without calls")
			return
		}
		g.appendEdge(Edge{From: from, To: to, Kind: EdgeLanding})
	}
}

func covered(eh []EHRange, addr, lp uint64) bool {
	for _, r := range eh {
		if r.LandingPad == lp && addr >= r.Start && addr < r.End {
			return true
		}
	}
	return false
}

// dataPointers counts, for each address in code, the pointer-sized words
// of the allocated, non-executable sections that hold it and the
// R_X86_64_RELATIVE relocations that target it: the addresses taken in
// data (vtables, callback tables, .init_array; and a non-PIE's jump
// tables of absolute entries).
func (b *Binary) dataPointers() map[uint64]int32 {
	out := map[uint64]int32{}
	for _, v := range b.relative {
		if b.IsCode(v) {
			out[v]++
		}
	}
	for i := range b.sections {
		s := &b.sections[i]
		if s.Exec || s.data == nil {
			continue
		}
		for off := 0; off+8 <= len(s.data); off += 8 {
			if v := binary.LittleEndian.Uint64(s.data[off:]); v != 0 && b.IsCode(v) {
				out[v]++
			}
		}
	}
	return out
}

// normalBlocks marks the blocks reachable from the entry without passing
// an EdgeLanding: code that runs without an exception.
func (g *Graph) normalBlocks() []bool {
	seen := make([]bool, len(g.Blocks))
	if len(g.Blocks) == 0 {
		return seen
	}
	stack := []BlockID{Entry}
	seen[Entry] = true
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Succs(b) {
			ed := g.Edges[e]
			if ed.Kind == EdgeLanding || ed.To < 0 || int(ed.To) >= len(seen) || seen[ed.To] {
				continue
			}
			seen[ed.To] = true
			stack = append(stack, ed.To)
		}
	}
	return seen
}
