package meta

import "sort"

// edgeEntry is cfg.EdgeEntry's number: the edge from a joined
// procedure's entry block to the block of one of its other entries.
const edgeEntry EdgeKind = 9

// entryJumpSize is the length of the jump the rewriter writes over an
// entry (jmp rel32).
const entryJumpSize = 5

// OrigCode turns code, the bytes of the instrumented file at addr, into
// the original program's bytes there: every byte under a patch is
// replaced by the one the patch covered (code is modified in place and
// returned). ok is false when the table predates version 3, which did not
// record the patched bytes, and the range touches a place the rewriter
// patches (the first 5 bytes of an instrumented function's entries or of
// a left-out function whose entries are counted): the original bytes
// there are not known.
func (t *Table) OrigCode(addr uint64, code []byte) (out []byte, ok bool) {
	end := addr + uint64(len(code))
	if !t.PatchedKnown {
		for _, a := range t.patchSites() {
			if a < end && addr < a+entryJumpSize {
				return code, false
			}
		}
		return code, true
	}
	// The first patch that ends after addr, then every one that starts
	// before end.
	i := sort.Search(len(t.Patched), func(i int) bool {
		p := &t.Patched[i]
		return p.Addr+uint64(len(p.Orig)) > addr
	})
	for ; i < len(t.Patched) && t.Patched[i].Addr < end; i++ {
		p := &t.Patched[i]
		for k, b := range p.Orig {
			if a := p.Addr + uint64(k); a >= addr && a < end {
				code[a-addr] = b
			}
		}
	}
	return code, true
}

// patchSites lists where a table without Patched has patches: the
// entries of instrumented functions and of left-out functions whose
// entries are counted, and the other entries of joined procedures.
func (t *Table) patchSites() []uint64 {
	var out []uint64
	for i := range t.Funcs {
		f := &t.Funcs[i]
		if !f.Instrumented {
			if f.EntriesCounted {
				out = append(out, f.Entry)
			}
			continue
		}
		out = append(out, f.Entry)
		for _, e := range f.Edges {
			if e.Kind == edgeEntry && e.To >= 0 && int(e.To) < len(f.Blocks) {
				out = append(out, f.Blocks[e.To].Addr)
			}
		}
	}
	return out
}
