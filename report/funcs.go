package report

// This file builds the per-function and per-stack part of the model,
// which the exporters (pprof, folded stacks, LLVM sample profiles, BOLT
// fdata), coverage, annotate and diff read: every path of every
// calling-context record expanded into blocks and edges of the original
// binary. The formats are documented in docs/formats.md.

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// FuncProfile holds the counts of one function over every context.
type FuncProfile struct {
	Blocks []uint64 // executions of each block (meta.Func.Blocks)
	// Edges counts traversals of each edge (meta.Func.Edges): DAG edges
	// of completed and partial paths, and backedges (and broken edges)
	// once for each path that ended on them.
	Edges []uint64
	// Paths maps path number → completed executions.
	Paths      map[uint64]uint64
	Executions uint64 // completed paths
	Partial    uint64 // activations that stopped without a path end
	// PartialUnknown counts those of them whose executed prefix is not
	// known (not in Blocks and Edges).
	PartialUnknown uint64
	Calls          uint64 // activations (records' Calls)
	Insns          uint64 // instructions executed: Σ block count × block instructions
	Metrics        []uint64
}

// ProfileStack is one calling context: its function (the leaf) and,
// through Parent, its callers' contexts. The stacks form a tree, parents
// first, so that a profile of millions of contexts does not hold each
// one's frames to the root (Model.StackFrames lists them) nor its block
// counts (Model.StackBlocks computes them).
type ProfileStack struct {
	// Leaf is the context's function, Addr its entry.
	Leaf StackFrame
	// Parent is the index in Model.Stacks of the caller's context, before
	// this one; -1 at a root.
	Parent int32
	// CallAddr is the call instruction in Parent's function that led
	// here (that function's entry when the call site is not known).
	CallAddr uint64
	Count    uint64   // completed paths ("freq")
	Calls    uint64   // activations
	Insns    uint64   // instructions executed in this context (callees excluded)
	Metrics  []uint64 // sums of Metrics[1:], callees excluded
	// Sampled is the sampled metric of the context, callees excluded
	// (decision 92): its column's value, 0 without samples.
	Sampled uint64

	// rec is the folded record the stack is (StackBlocks expands its
	// paths), -1 for a function's partials without a record, whose
	// block counts blocks holds.
	rec    int32
	blocks []uint64
}

// StackFrame is one frame of a ProfileStack.
type StackFrame struct {
	Func FuncID
	Addr uint64 // original address
}

// ExportOptions are the options shared by the exporters.
type ExportOptions struct {
	// Metric names the value folded stacks carry: "insns" (default),
	// "count" (or "freq"), "calls", or a metric of the profile.
	Metric string
	// Granularity is pprof's: "lines" (or "", the default) gives a
	// sample per location of the code that ran (MakePprof), "functions"
	// one per context, at its function's entry, with the context's
	// instructions (a whole-process profile's per-location samples are
	// tens of millions, decision 139).
	Granularity string
}

// The values of ExportOptions.Granularity.
const (
	GranularityLines     = "lines"
	GranularityFunctions = "functions"
)

// numberRan numbers the functions with paths in the folded profile, on
// every processor, before buildContexts expands their paths one by one.
func (m *Model) numberRan(folded *cct.Profile) {
	if len(folded.Threads) == 0 {
		return
	}
	ran := make([][]uint32, len(m.Modules))
	seen := map[uint32]bool{}
	for _, r := range folded.Threads[0].Records {
		if len(r.Paths) > 0 && !seen[r.Func] {
			seen[r.Func] = true
			id := m.id(r.Func)
			ran[id.Module] = append(ran[id.Module], id.Func)
		}
	}
	for k := range m.Modules {
		m.Modules[k].Table.NumberFuncs(ran[k])
	}
}

// buildFuncs sums the profile's threads (the folded profile's one, or
// an unfolded profile's every thread: the sums are the same) per
// function: block, edge and path counts, metrics, calls and partial
// activations. It checks every path and partial the stacks (stacks.go)
// expand again later, so building them cannot fail. Without blocks it
// sums paths, calls and partial activations alone
// (ModelOptions.FunctionsOnly).
func (m *Model) buildFuncs(folded *cct.Profile, blocks bool) error {
	nm := len(folded.Metrics) - 1
	for k := range m.Modules {
		t := m.Modules[k].Table
		funcs := make([]FuncProfile, len(t.Funcs))
		m.Modules[k].Funcs = funcs
		// One allocation per module for the counters of all its
		// instrumented functions, not three per function.
		var nb, ne, nf int
		for i := range t.Funcs {
			if mf := &t.Funcs[i]; mf.Instrumented {
				nb, ne, nf = nb+len(mf.Blocks), ne+len(mf.Edges), nf+1
			}
		}
		arena := make([]uint64, nb+ne+nf*nm)
		for i := range t.Funcs {
			mf := &t.Funcs[i]
			if !mf.Instrumented {
				continue
			}
			fp := &funcs[i]
			fp.Blocks, arena = arena[:len(mf.Blocks):len(mf.Blocks)], arena[len(mf.Blocks):]
			fp.Edges, arena = arena[:len(mf.Edges):len(mf.Edges)], arena[len(mf.Edges):]
			fp.Metrics, arena = arena[:nm:nm], arena[nm:]
		}
	}
	for ti := range folded.Threads {
		if err := m.sumRecords(folded.Threads[ti].Records); err != nil {
			return err
		}
	}
	// Blocks and edges: each path of a function once, with its count over
	// every context (saturating sums are the same in any order; numberRan
	// has numbered the functions).
	for k := range m.Modules {
		if !blocks {
			break // nor partial activations' nor fork prefixes' below
		}
		funcs, t := m.Modules[k].Funcs, m.Modules[k].Table
		for i := range funcs {
			fp := &funcs[i]
			for id, c := range fp.Paths {
				e, err := t.ExpandPath(uint32(i), id)
				if err != nil {
					return err
				}
				addExpansion(fp, e, c)
			}
		}
	}
	for ti := range folded.Threads {
		parts := folded.Threads[ti].Partials
		for qi := range parts {
			q := &parts[qi]
			id := m.id(q.Func)
			t := m.Modules[id.Module].Table
			fp := m.Profile(id)
			fp.Partial = satAdd(fp.Partial, q.Count)
			if !blocks {
				continue
			}
			e, err := expandPartial(t, id.Func, q)
			if err != nil {
				return err
			}
			if e == nil {
				fp.PartialUnknown = satAdd(fp.PartialUnknown, q.Count)
				continue // stopping block unknown: counted, not expanded
			}
			addExpansion(fp, e, q.Count)
		}
	}
	// A fork child's prefixes ran in the parent (cct.Thread.Prefixes).
	for ti := range folded.Threads {
		if !blocks {
			break
		}
		prefixes := folded.Threads[ti].Prefixes
		for qi := range prefixes {
			q := &prefixes[qi]
			funcs, t, fn, ok := m.prefixFunc(q)
			if !ok {
				continue
			}
			e, err := expandPartial(t, fn, q)
			if err != nil {
				return err
			}
			if e != nil {
				subExpansion(&funcs[fn], e, q.Count)
			}
		}
	}
	for k := range m.Modules {
		funcs, t := m.Modules[k].Funcs, m.Modules[k].Table
		for i := range funcs {
			fp := &funcs[i]
			for b, c := range fp.Blocks {
				fp.Insns = satAdd(fp.Insns, satMul(c, uint64(t.Funcs[i].Blocks[b].Insts)))
			}
		}
	}
	return nil
}

// CallSiteAddr is the original address of call site cs of function fn:
// a record's CallSite is the caller's local call-site index plus one, 0
// when not known; an unknown site gives the caller's entry.
func (m *Model) CallSiteAddr(fn FuncID, cs uint32) uint64 {
	f := m.Func(fn)
	if cs == 0 || int(cs) > len(f.CallSites) {
		return f.Entry
	}
	return f.CallSites[cs-1]
}

// TotalInsns is the number of instructions the profile counts.
func (m *Model) TotalInsns() uint64 {
	var s uint64
	for k := range m.Modules { // every module, FilterModules or not
		for i := range m.Modules[k].Funcs {
			s = satAdd(s, m.Modules[k].Funcs[i].Insns)
		}
	}
	return s
}

// addExpansion adds c runs of e to fp's block and edge counts.
func addExpansion(fp *FuncProfile, e *meta.Expansion, c uint64) {
	for _, b := range e.Blocks {
		fp.Blocks[b] = satAdd(fp.Blocks[b], c)
	}
	for _, k := range e.Edges {
		fp.Edges[k] = satAdd(fp.Edges[k], c)
	}
}

// addBlocks adds c runs of e to the block counts of a stack (nil: an
// uninstrumented leaf, nothing to add).
func addBlocks(blocks []uint64, e *meta.Expansion, c uint64) {
	for _, b := range e.Blocks {
		if int(b) < len(blocks) {
			blocks[b] = satAdd(blocks[b], c)
		}
	}
}

// subExpansion takes a fork prefix's blocks and edges away
// (cct.Thread.Prefixes), never below zero.
func subExpansion(fp *FuncProfile, e *meta.Expansion, c uint64) {
	for _, b := range e.Blocks {
		fp.Blocks[b] -= min(fp.Blocks[b], c)
	}
	for _, k := range e.Edges {
		fp.Edges[k] -= min(fp.Edges[k], c)
	}
}

// expandPartial expands the executed prefix of partial path q
// (meta.Table.ExpandPartial): nil when the runtime did not know where the
// activation stopped (cct.BlockUnknown) or the pair names no prefix.
func expandPartial(t *meta.Table, local uint32, q *cct.Partial) (*meta.Expansion, error) {
	if q.Block == cct.BlockUnknown {
		return nil, nil
	}
	return t.ExpandPartial(local, q.Block, q.Reg)
}

// Symbols are the function symbols of an ELF file (.symtab and .dynsym).
type Symbols struct {
	syms []elfSym // sorted by addr; sized function symbols
	// read, when set, reads syms on first use (lazySymbols); once
	// guards it.
	read func() []elfSym
	once sync.Once
}

// list returns the symbols, read first if they are read lazily.
func (s *Symbols) list() []elfSym {
	s.once.Do(func() {
		if s.read != nil {
			s.syms, s.read = s.read(), nil
		}
	})
	return s.syms
}

// lazySymbols is NewSymbols of f read when first looked up: a module's
// symbols serve one export, and a whole-process profile's libraries
// have tens of thousands each. f must stay open until then.
func lazySymbols(f *elf.File) *Symbols {
	return &Symbols{read: func() []elfSym { return NewSymbols(f).syms }}
}

type elfSym struct {
	name       string
	addr, size uint64
	global     bool
}

// NewSymbols reads f's function symbols.
func NewSymbols(f *elf.File) *Symbols {
	symtab, err := f.Symbols()
	if err != nil {
		symtab = nil
	}
	return &Symbols{syms: dedupeSyms(sortSyms(funcSyms(f, symtab)))}
}

// funcSyms is the function symbols of f, in the order of .symtab, whose
// symbols symtab has been read already (loadDebug reads them once for
// symtabNames too), then .dynsym; with duplicates.
func funcSyms(f *elf.File, symtab []elf.Symbol) []elfSym {
	var syms []elfSym
	add := func(ss []elf.Symbol) {
		for _, y := range ss {
			if elf.ST_TYPE(y.Info) != elf.STT_FUNC || y.Size == 0 || y.Value == 0 || y.Section == elf.SHN_UNDEF {
				continue
			}
			syms = append(syms, elfSym{y.Name, y.Value, y.Size, elf.ST_BIND(y.Info) != elf.STB_LOCAL})
		}
	}
	add(symtab)
	if ss, err := f.DynamicSymbols(); err == nil {
		add(ss)
	}
	return syms
}

// sortSyms sorts ss by address, stably, into a new slice; dedupeSyms
// then drops the duplicates, which share their first's address and so
// follow it in its run of equal addresses (sort.SliceStable, by
// reflection, and a map of every symbol took most of a whole-process
// report's symbol reading). Keys of address and index are sorted, a
// total order, so the unstable sort gives the stable sort's result: a
// stable sort moving the symbols themselves took two and a half times as
// long.
func sortSyms(ss []elfSym) []elfSym {
	type key struct {
		addr uint64
		i    int
	}
	keys := make([]key, len(ss))
	for i := range ss {
		keys[i] = key{ss[i].addr, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	out := make([]elfSym, len(ss))
	for k, x := range keys {
		out[k] = ss[x.i]
	}
	return out
}

// dedupeSyms keeps, of the symbols ss sorted by address, the first of
// each address and size, in place.
func dedupeSyms(ss []elfSym) []elfSym {
	out := ss[:0]
	for i := 0; i < len(ss); {
		j := i + 1
		for j < len(ss) && ss[j].addr == ss[i].addr {
			j++
		}
		start := len(out)
		if j-i <= 16 {
			for k := i; k < j; k++ {
				y := ss[k]
				if !slices.ContainsFunc(out[start:], func(x elfSym) bool { return x.size == y.size }) {
					out = append(out, y)
				}
			}
		} else { // many symbols at one address: no quadratic search
			seen := make(map[uint64]bool, j-i)
			for k := i; k < j; k++ {
				if y := ss[k]; !seen[y.size] {
					seen[y.size] = true
					out = append(out, y)
				}
			}
		}
		i = j
	}
	return out
}

// mergeSyms is the symbols of a and b, both sorted by address, sorted by
// address, a's first at an address, without duplicates (dedupeSyms).
func mergeSyms(a, b []elfSym) []elfSym {
	out := make([]elfSym, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].addr < a[0].addr {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(append(out, a...), b...)
	return dedupeSyms(out)
}

// Lookup returns the function symbol holding addr and addr's offset in it.
func (s *Symbols) Lookup(addr uint64) (string, uint64, bool) {
	if s == nil {
		return "", 0, false
	}
	syms := s.list()
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
	for k := i; k >= 0 && k > i-8; k-- {
		y := &syms[k]
		if addr >= y.addr && addr-y.addr < y.size {
			return y.name, addr - y.addr, true
		}
	}
	return "", 0, false
}

// prefixFunc finds the function of a fork child's prefix q among the
// model's modules: the module's function counters and metadata, and the
// function's index there; ok is false for a function of no module or
// without blocks.
func (m *Model) prefixFunc(q *cct.Partial) (funcs []FuncProfile, t *meta.Table, fn uint32, ok bool) {
	k, ok := m.tagIndex[cct.FidTag(q.Func)]
	if !ok {
		return nil, nil, 0, false
	}
	funcs, t, fn = m.Modules[k].Funcs, m.Modules[k].Table, cct.FidLocal(q.Func)
	if int(fn) >= len(funcs) || funcs[fn].Blocks == nil {
		return nil, nil, 0, false
	}
	return funcs, t, fn, true
}

// sumRecords adds records' calls, paths and metrics to their functions'
// profiles (buildFuncs), the records of one thread.
func (m *Model) sumRecords(recs []cct.Record) error {
	for ri := range recs {
		r := &recs[ri]
		id := m.id(r.Func)
		t := m.Modules[id.Module].Table
		fp := m.Profile(id)
		fp.Calls = satAdd(fp.Calls, r.Calls)
		if len(r.Paths) > 0 && fp.Paths == nil {
			// Sized by the first record's paths, a lower bound: fewer
			// rehashes as it grows.
			fp.Paths = make(map[uint64]uint64, len(r.Paths))
		}
		for _, path := range r.Paths {
			if path.ID >= t.Funcs[id.Func].NumPaths {
				// buildContexts has refused it; a second line of defence.
				return fmt.Errorf("%s: path %d, but the function has %d paths", t.Funcs[id.Func].Name, path.ID, t.Funcs[id.Func].NumPaths)
			}
			c := path.Count
			fp.Paths[path.ID] = satAdd(fp.Paths[path.ID], c)
			fp.Executions = satAdd(fp.Executions, c)
			for j, v := range path.Metrics {
				fp.Metrics[j] = satAdd(fp.Metrics[j], v)
			}
		}
	}
	return nil
}
