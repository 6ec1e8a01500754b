package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/blpp/blpp/meta"
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
	edgeLanding
	edgeEntry
)

// boltLoc is a location in BOLT's data: a function and an offset in it;
// sym == "" is no location BOLT knows. With outside set it is the place
// outside the binary that entered function sym (see ExportBoltFdata).
type boltLoc struct {
	sym     string
	off     uint64
	outside bool
}

func (l boltLoc) String() string {
	if l.outside {
		return fmt.Sprintf("0 %s 0", boltEscape(l.sym))
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
// mispredictions (blpp does not measure them); each call and tail call to
// its target as often as the instruction ran (siteCalls: callbacks from
// uninstrumented code are not calls of the site that entered it), which
// BOLT adds up as the callee's execution count. Activations whose caller
// is not in the binary (main, callbacks from the C library, signal
// handlers) or not known come from a DSO location (field 0) named after
// the function itself, "0 f 0 1 f 0 0 N" (decision 86): BOLT counts them
// into f's execution count and ignores the branch (from == to), whereas
// perf2bolt's "0 [unknown] 0" makes llvm-bolt-16 keep branch data for a
// function "[unknown]" that it then reports as "profile for 1 objects was
// ignored". Functions and offsets
// are the original binary's as llvm-bolt names them (boltnames.go: local
// symbols "name/N", FDE-only functions "__BOLT_FDE_FUNCat<hex>", PLT
// entries "name@PLT"); a branch leaves from the offset of its block's last
// instruction, decoded from the original code. Locations BOLT would not
// know are left out. Returns and the returns from calls are left out:
// BOLT keeps calls inside its blocks.
func ExportBoltFdata(w io.Writer, m *Model, opts ExportOptions) error {
	type key struct{ from, to boltLoc }
	counts := map[key]uint64{}
	add := func(from, to boltLoc, c uint64) bool {
		if c == 0 || from.sym == "" || to.sym == "" {
			return false // a place BOLT does not know
		}
		counts[key{from, to}] = satAdd(counts[key{from, to}], c)
		return true
	}
	names := make([]boltFuncs, len(m.Modules))
	for k := range m.Modules {
		if m.Modules[k].File == nil {
			return fmt.Errorf("bolt-fdata: module %s: needs its instrumented file (the original code and symbols are read from it)", m.Modules[k].Name)
		}
		names[k] = newBoltFuncs(m.Modules[k].File)
	}
	loc := func(k uint32, addr uint64) boltLoc {
		l, _ := names[k].lookup(addr)
		return l
	}
	entered := map[FuncID]uint64{} // activations accounted for by calls written
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
			switch e.Kind {
			case edgeFallThrough, edgeBranch, edgeJumpTable:
				if e.To < 0 || int(e.To) >= len(mf.Blocks) {
					continue // metadata decoded these in range; a branch to EXIT is malformed
				}
				// BOLT knows the offsets of branches and of each block's
				// last instruction, not of the others: the edge leaves
				// from the block's last instruction (the jcc, jmp or
				// indirect jmp, or the instruction before a fall-through).
				if src, ok := m.lastInst(fi, int(e.From)); ok {
					add(loc(fi.Module, src), loc(fi.Module, mf.Blocks[e.To].Addr), c)
				}
			}
		}
	}
	for _, sc := range m.siteCalls() {
		if add(loc(sc.Caller.Module, sc.Addr), loc(sc.Caller.Module, sc.Target), sc.Count) && sc.HasCallee {
			entered[sc.Callee] = satAdd(entered[sc.Callee], sc.Count)
		}
	}
	for _, fi := range m.FuncIDs() {
		if fp := m.Profile(fi); fp.Calls > entered[fi] {
			if to := loc(fi.Module, m.Func(fi).Entry); to.sym != "" && to.off == 0 {
				add(boltLoc{sym: to.sym, outside: true}, to, fp.Calls-entered[fi])
			}
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
		case a.outside != b.outside:
			if a.outside {
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
