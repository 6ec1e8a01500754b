package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"blpp/cfg/x86"
	"blpp/meta"
)

// Edge kinds of meta.Edge (the numbering of cfg.EdgeKind).
const (
	edgeFallThrough meta.EdgeKind = iota
	edgeBranch
	edgeJumpTable
	edgeCallReturn
	edgeTailCall
	edgeReturn
	edgeNoReturn
	edgeHalt
)

// boltLoc is a location in BOLT's data: a symbol and an offset in it;
// sym == "" is the unknown location ("0 [unknown] 0").
type boltLoc struct {
	sym string
	off uint64
}

func (l boltLoc) String() string {
	if l.sym == "" {
		return "0 [unknown] 0"
	}
	return fmt.Sprintf("1 %s %x", boltEscape(l.sym), l.off)
}

// boltEscape escapes what BOLT's DataReader would take for a field end.
func boltEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// ExportBoltFdata writes m as BOLT's branch profile (the .fdata format
// that perf2bolt writes and llvm-bolt -data reads; bolt/lib/Profile/
// DataReader.cpp):
//
//	1 <from-symbol> <hex offset> 1 <to-symbol> <hex offset> <mispredictions> <count>
//
// one line per branch: the taken and not-taken sides of conditional
// branches, unconditional jumps, jump-table targets and fall-throughs
// between blocks, with exact counts from the path profile and 0
// mispredictions (blpp does not measure them); calls and tail calls to
// each function's entry, which BOLT adds up as the function's execution
// count, and "0 [unknown] 0" as the source of activations whose caller is
// not known. Symbols and offsets are those of the original binary's symbol
// table, so foo.cold fragments keep their own names. Returns and the
// returns from calls are left out: BOLT keeps calls inside its blocks.
func ExportBoltFdata(w io.Writer, m *Model, opts ExportOptions) error {
	type key struct{ from, to boltLoc }
	counts := map[key]uint64{}
	add := func(from, to boltLoc, c uint64) {
		if c > 0 && to.sym != "" {
			counts[key{from, to}] = satAdd(counts[key{from, to}], c)
		}
	}
	loc := func(addr uint64) boltLoc {
		name, off, ok := m.SymbolAt(addr)
		if !ok {
			return boltLoc{}
		}
		return boltLoc{name, off}
	}
	entered := map[FuncID]uint64{} // activations accounted for by calls written
	entryOf := map[uint64]FuncID{}
	for _, i := range m.FuncIDs() {
		entryOf[m.Func(i).Entry] = i
	}
	for _, fi := range m.FuncIDs() {
		mf := m.Func(fi)
		if !mf.Instrumented {
			continue
		}
		fp := m.Profile(fi)
		for ei, e := range mf.Edges {
			c := fp.Edges[ei]
			if c == 0 {
				continue
			}
			from := &mf.Blocks[e.From]
			switch e.Kind {
			case edgeFallThrough, edgeBranch, edgeJumpTable:
				if e.To < 0 || int(e.To) >= len(mf.Blocks) {
					continue // metadata decoded these in range; a branch to EXIT is malformed
				}
				to := &mf.Blocks[e.To]
				// BOLT knows the offsets of branches and of each block's
				// last instruction, not of the others: the edge leaves
				// from the block's last instruction (the jcc, jmp or
				// indirect jmp, or the instruction before a fall-through).
				src := from.Addr
				if a, ok := m.LastInst(mf, int(e.From)); ok {
					src = a
				}
				add(loc(src), loc(to.Addr), c)
			case edgeTailCall:
				a, ok := m.LastInst(mf, int(e.From))
				if !ok {
					continue
				}
				t, ok := m.directTarget(a)
				if !ok {
					continue
				}
				add(loc(a), loc(t), c)
				if k, ok := entryOf[t]; ok {
					entered[k] = satAdd(entered[k], c)
				}
			}
		}
	}
	// Calls: from the calling context tree when there is one, else the
	// direct calls decoded, counted by their block.
	if !m.FlowOnly && m.hasCallers() {
		for _, e := range m.CallEdges() {
			site := m.Func(e.Caller).CallSites[e.Site]
			add(loc(site), loc(m.Func(e.Callee).Entry), e.Count)
			entered[e.Callee] = satAdd(entered[e.Callee], e.Count)
		}
	} else {
		for d := range m.directCalls() {
			add(loc(d.Addr), loc(d.Target), d.Count)
			if k, ok := entryOf[d.Target]; ok {
				entered[k] = satAdd(entered[k], d.Count)
			}
		}
	}
	for _, fi := range m.FuncIDs() {
		if fp := m.Profile(fi); fp.Calls > entered[fi] {
			add(boltLoc{}, loc(m.Func(fi).Entry), fp.Calls-entered[fi])
		}
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	less := func(a, b boltLoc) int {
		switch {
		case a.sym != b.sym:
			if a.sym < b.sym {
				return -1
			}
			return 1
		case a.off != b.off:
			if a.off < b.off {
				return -1
			}
			return 1
		}
		return 0
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := less(keys[i].from, keys[j].from); c != 0 {
			return c < 0
		}
		return less(keys[i].to, keys[j].to) < 0
	})
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		fmt.Fprintf(bw, "%s %s 0 %d\n", k.from, k.to, counts[k])
	}
	return bw.Flush()
}

// LastInst returns the address of the last instruction of block bi of
// function f. When that instruction lies in the five bytes blpp patched
// at the function's entry, it is inferred from the block's edges: a
// single-instruction block starts with it; a block ending in a direct
// branch ends with its short form (2 bytes) when the target is within
// rel8 reach, else the rel32 form (6 bytes for jcc, 5 for jmp), as
// assemblers relax branches.
func (m *Model) LastInst(f *meta.Func, bi int) (uint64, bool) {
	b := &f.Blocks[bi]
	insts := m.BlockInsts(f, b)
	patched := f.Instrumented && b.Addr < f.Entry+5 && b.End > f.Entry
	if n := len(insts); n > 0 && (!patched || insts[n-1].Addr >= f.Entry+5) {
		return insts[n-1].Addr, true
	}
	if !patched {
		return 0, false
	}
	if b.Insts == 1 {
		return b.Addr, true
	}
	var target uint64
	cond, jump := false, false
	for _, e := range f.Edges {
		if int(e.From) != bi {
			continue
		}
		switch e.Kind {
		case edgeBranch:
			if e.To < 0 || int(e.To) >= len(f.Blocks) {
				return 0, false
			}
			jump = true
			target = f.Blocks[e.To].Addr
		case edgeFallThrough:
			cond = true
		}
	}
	if !jump {
		return 0, false
	}
	d := int64(target - b.End)
	n := uint64(2)
	if d < -128 || d > 127 {
		n = 5
		if cond {
			n = 6
		}
	}
	if b.End-b.Addr < n {
		return 0, false
	}
	return b.End - n, true
}

// BlockInsts decodes block b of function f from the original code that
// stays in the instrumented binary. An instrumented function's first five
// bytes hold blpp's jump to the relocated copy instead of the original
// instructions: there decoding starts at the first of the next five
// addresses from which it reaches the block's end exactly (x86 decoding
// resynchronises within a few instructions), and those instructions are
// missing from the result. nil when the bytes cannot be read or decoded.
func (m *Model) BlockInsts(f *meta.Func, b *meta.Block) []x86.Inst {
	if b.End <= b.Addr || b.End-b.Addr > 1<<20 {
		return nil
	}
	code := m.ReadCode(b.Addr, int(b.End-b.Addr))
	if uint64(len(code)) != b.End-b.Addr {
		return nil
	}
	decode := func(start uint64) []x86.Inst {
		var out []x86.Inst
		for a := start; a < b.End; {
			in, err := x86.Decode(code[a-b.Addr:], a)
			if err != nil {
				return nil
			}
			out = append(out, in)
			a += uint64(in.Len)
		}
		return out
	}
	if !f.Instrumented || b.Addr >= f.Entry+5 || b.Addr < f.Entry {
		return decode(b.Addr)
	}
	for k := uint64(5); k >= 1; k-- {
		if start := f.Entry + k; start < b.End {
			if out := decode(start); out != nil {
				return out
			}
		}
	}
	return nil
}
