package report

// Sampled attribution (decision 92): the samples of a profile laid over
// the calling contexts, blocks and paths of the model. The runtime
// recorded, per thread, the running record, the interrupted pc (as an
// object and file offset) and the path register; here each pc becomes a
// function and block through the instrumented binary's address map
// (rewriter/addrmap: the rewritten code's copies of each original
// instruction), or a pseudo-block that says where it was (a library,
// blpp's runtime, uninstrumented code), and each sample is charged to a
// context, then shared among that context's paths by the estimator of
// share below.

import (
	"cmp"
	"debug/elf"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/addrmap"

	"golang.org/x/arch/x86/x86asm"
)

// Pseudo-blocks: where a sample was when it was not in instrumented code
// of the running context's function.
const (
	PseudoRuntime = "[blpp runtime]"
	PseudoUnknown = "[unknown code]"
)

// SampleInfo is what the model knows of the profile's samples.
type SampleInfo struct {
	cct.Sampling
	Column int // the sampled column in Model.Columns
	// Recorded is the samples the threads kept; Unattributed those of
	// them that ran under no record (a thread before its first
	// instrumented activation).
	Recorded, Unattributed uint64
	// Prefixed counts the samples whose path register named a prefix
	// (shared among the paths extending it), BlockLevel those shared
	// among every path through their block, Kept those no complete path
	// of their context passes (kept at block level), Pseudo those in a
	// pseudo-block.
	Prefixed, BlockLevel, Kept, Pseudo uint64
}

// NodeSamples are the samples of one context (CNode.Sampled).
type NodeSamples struct {
	Total  uint64            // samples charged to the context (exclusive of callees)
	Blocks map[int]uint64    // by block of its function
	Pseudo map[string]uint64 // by pseudo-block label
}

// codeIndex maps the rewritten code of one module back to its original
// instructions: every copy of an instruction, sorted by address.
type codeIndex struct {
	copies []codeCopy
	rt     [2]uint64 // the runtime's text [start, end), link-time
	orig   []origFunc
	// text is the rewritten code (.blpp.text) at textAddr; starts are
	// the functions' first copies in address order, jumps each
	// function's direct jumps (decoded when first needed).
	text     []byte
	textAddr uint64
	starts   []uint64
	jumps    map[uint64][]jumpEdge
}

// A jumpEdge is a direct jump of the rewritten code: where it goes and
// where it is.
type jumpEdge struct{ target, source uint64 }

type codeCopy struct {
	addr  uint64
	fn    int    // index in the module's metadata (instrumented functions come first)
	inst  uint64 // the original instruction
	first bool   // its first copy (the second is a loop copy, decision 58)
}

type origFunc struct {
	lo, hi uint64
	fn     int
}

// newCodeIndex indexes module mod's address map; nil when it has none.
func newCodeIndex(mod *Module) *codeIndex {
	if mod.File == nil {
		return nil
	}
	am, err := addrmap.FromELF(mod.File)
	if err != nil {
		return nil
	}
	x := &codeIndex{}
	for fi := range am.Funcs {
		for _, in := range am.Funcs[fi].Insts {
			for k, c := range in.Copies {
				x.copies = append(x.copies, codeCopy{addr: c, fn: fi, inst: in.Addr, first: k == 0})
			}
		}
	}
	sort.Slice(x.copies, func(i, j int) bool { return x.copies[i].addr < x.copies[j].addr })
	seen := map[int]bool{}
	for _, c := range x.copies {
		if !seen[c.fn] {
			seen[c.fn] = true
			x.starts = append(x.starts, c.addr)
		}
	}
	if s := mod.File.Section(".blpp.text"); s != nil {
		if d, err := s.Data(); err == nil {
			x.text, x.textAddr = d, s.Addr
		}
	}
	x.jumps = map[uint64][]jumpEdge{}
	if s := mod.File.Section(".blpp.rt"); s != nil {
		x.rt = [2]uint64{s.Addr, s.Addr + s.Size}
	}
	for i := range mod.Table.Funcs {
		f := &mod.Table.Funcs[i]
		if f.Size > 0 {
			x.orig = append(x.orig, origFunc{f.Entry, f.Entry + f.Size, i})
		}
	}
	sort.Slice(x.orig, func(i, j int) bool { return x.orig[i].lo < x.orig[j].lo })
	return x
}

// fileToAddr turns a file offset of f into a link-time address through
// its loaded segments.
func fileToAddr(f *elf.File, off uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && off >= p.Off && off-p.Off < p.Filesz {
			return p.Vaddr + off - p.Off, true
		}
	}
	return 0, false
}

// place is where a sampled pc was: an instrumented function's block (fn
// ≥ 0), or a pseudo-block.
type place struct {
	fn     int // index in the module's metadata, -1 for a pseudo-block
	block  int
	trusty bool // the pc is in the function's first copy: its path register is live
	pseudo string
}

// locate finds the place of link-time address a of module mod.
func (x *codeIndex) locate(mod *Module, a uint64) place {
	if a >= x.rt[0] && a < x.rt[1] {
		return place{fn: -1, pseudo: PseudoRuntime}
	}
	// The instruction about to run: the first copy at or after a
	// (instrumentation precedes the copy of the instruction it serves:
	// an entry, a block's incoming increments, an exit before its ret).
	// Between the copies of two functions, a pc close to the second's
	// first copy is in its entry, else in the first's out-of-line code.
	k := sort.Search(len(x.copies), func(i int) bool { return x.copies[i].addr >= a })
	ok := k < len(x.copies)
	if n := len(x.copies); !ok && n > 0 && a-x.copies[n-1].addr < entryReach {
		k, ok = n-1, true
	}
	switch {
	case ok && k > 0 && x.copies[k].addr != a:
		// Between two copies: code a jump leads to, out of line after
		// an instruction that does not fall through (a backedge's
		// counting code after the function's ret), belongs to the
		// jump's block; code reached by falling through is the next
		// instruction's leading instrumentation.
		if j, found := x.jumpInto(x.copies[k-1].addr, a); found {
			k = sort.Search(len(x.copies), func(i int) bool { return x.copies[i].addr > j }) - 1
		} else if x.copies[k-1].fn != x.copies[k].fn && x.copies[k].addr-a >= entryReach {
			k--
		}
	case !ok || k == 0 || x.copies[k].addr == a:
	}
	if ok && (k > 0 || a >= x.copies[0].addr-entryReach) {
		c := x.copies[k]
		if b := blockOf(&mod.Table.Funcs[c.fn], c.inst); b >= 0 {
			// The register is the block's only at a copied
			// instruction's start: instrumentation before it may be
			// mid-update.
			return place{fn: c.fn, block: b, trusty: c.first && c.addr == a}
		}
	}
	i := sort.Search(len(x.orig), func(i int) bool { return x.orig[i].lo > a }) - 1
	if i >= 0 && a < x.orig[i].hi {
		f := &mod.Table.Funcs[x.orig[i].fn]
		what := "uninstrumented "
		if f.Instrumented {
			what = "original code of "
		}
		return place{fn: -1, pseudo: "[" + what + RawName(f.Name) + "]"}
	}
	return place{fn: -1, pseudo: "[" + mod.Name + " other code]"}
}

// jumpInto finds the direct jump that leads into the code at a when
// the instruction copied at prev (the last copy before a) does not fall
// through: the jump to the greatest target in (prev, a]; it returns the
// jump's address.
func (x *codeIndex) jumpInto(prev, a uint64) (uint64, bool) {
	in, ok := x.decode(prev)
	if !ok || (in.Op != x86asm.RET && in.Op != x86asm.JMP && in.Op != x86asm.UD2) {
		return 0, false
	}
	i := sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > prev }) - 1
	if i < 0 {
		return 0, false
	}
	js := x.fnJumps(i)
	k := sort.Search(len(js), func(k int) bool { return js[k].target > a }) - 1
	if k < 0 || js[k].target <= prev {
		return 0, false
	}
	return js[k].source, true
}

func (x *codeIndex) decode(a uint64) (x86asm.Inst, bool) {
	if a < x.textAddr || a-x.textAddr >= uint64(len(x.text)) {
		return x86asm.Inst{}, false
	}
	in, err := x86asm.Decode(x.text[a-x.textAddr:], 64)
	return in, err == nil && in.Op != 0
}

// fnJumps decodes the code of the i-th function in address order (from
// its first copy to the next function's) and lists its direct jumps by
// target.
func (x *codeIndex) fnJumps(i int) []jumpEdge {
	lo := x.starts[i]
	if js, ok := x.jumps[lo]; ok {
		return js
	}
	hi := x.textAddr + uint64(len(x.text))
	if i+1 < len(x.starts) {
		hi = min(hi, x.starts[i+1])
	}
	var js []jumpEdge
	for a := lo; a < hi; {
		in, ok := x.decode(a)
		if !ok {
			break
		}
		if r, isRel := in.Args[0].(x86asm.Rel); isRel && (in.Op == x86asm.JMP || (in.Op >= x86asm.JA && in.Op <= x86asm.JS)) {
			js = append(js, jumpEdge{target: uint64(int64(a) + int64(in.Len) + int64(r)), source: a})
		}
		a += uint64(in.Len)
	}
	sort.Slice(js, func(i, j int) bool { return js[i].target < js[j].target })
	x.jumps[lo] = js
	return js
}

// entryReach bounds the instrumentation before a function's first
// copied instruction (its entry sequence and padding, decision 53).
const entryReach = 512

// blockOf is the block of f holding the instruction at a, -1 if none.
func blockOf(f *meta.Func, a uint64) int {
	for b := range f.Blocks {
		if a >= f.Blocks[b].Addr && a < f.Blocks[b].End {
			return b
		}
	}
	return -1
}

// attributeSamples charges the samples of thread th (the folded
// profile's one thread) to the contexts and their paths, filling the
// sampled column of every node and path. It runs before the totals and
// inclusive values are summed.
//
// The estimator [decision 92]. A sample in block B of function F under
// record r, with F the record's function, is a sample of context r at B.
// When the pc lies in F's first copy and (B, register) names a path
// prefix of F (meta.Table.ExpandPartial, as for partial paths), the
// sample is shared among r's complete paths that extend that prefix, in
// proportion to their exact counts in r; otherwise among r's paths
// through B, in proportion to their counts. Where no complete path of r
// fits (an activation that never finished, such as main's at exit), the
// sample stays with the context at block B. A pc in an instrumented
// function other than the record's (a callee's entry before it made its
// record, a one-path leaf that keeps no frame) goes to the record's
// child (or ancestor, for folded recursion) of that function, at block
// level; a pc anywhere else goes to a pseudo-block of the record. Each
// path's share is a fractional sample count; the column holds it times
// the period, rounded.
func (c *Model) attributeSamples(s *cct.Sampling, th *cct.Thread, col int) error {
	info := &SampleInfo{Sampling: *s, Column: col}
	c.Samples = info
	// Objects are modules by the path the process loaded, else the
	// file the report read, else (a profile read elsewhere) the base
	// name when only one module has it.
	byName, byBase := map[string]int{}, map[string]int{}
	for k := range c.Modules {
		for _, p := range []string{c.Modules[k].Loaded, c.Modules[k].Path} {
			if _, dup := byName[p]; p != "" && !dup {
				byName[p] = k
			}
		}
		b := filepath.Base(c.Modules[k].Loaded)
		if c.Modules[k].Loaded == "" {
			b = filepath.Base(c.Modules[k].Path)
		}
		if _, dup := byBase[b]; dup {
			byBase[b] = -1
		} else {
			byBase[b] = k
		}
	}
	index := map[int]*codeIndex{}
	shares := make([][]float64, len(c.Nodes)) // per node, per path: samples
	period := float64(s.Period)
	roots := map[FuncID]int{} // flow-only: each function's one context
	if c.FlowOnly {
		for i := range c.Nodes {
			roots[c.Nodes[i].FuncID()] = i
		}
	}
	// nodeOf is r's context of function fn: r itself, the child of fn
	// with the most calls (the call site is not known), an ancestor
	// (folded recursion), or in a flow-only profile fn's root; -1 if
	// none.
	nodeOf := func(r int, fn FuncID) int {
		n := &c.Nodes[r]
		if n.FuncID() == fn {
			return r
		}
		best := -1
		for _, ch := range n.Children {
			if c.Nodes[ch].FuncID() == fn && (best < 0 || c.Nodes[ch].Calls > c.Nodes[best].Calls) {
				best = ch
			}
		}
		if best >= 0 {
			return best
		}
		for a := n.Parent; a >= 0; a = c.Nodes[a].Parent {
			if c.Nodes[a].FuncID() == fn {
				return a
			}
		}
		if k, ok := roots[fn]; ok {
			return k
		}
		return -1
	}
	for _, q := range th.Samples {
		info.Recorded += q.Count
		var pl place
		mod := -1
		switch {
		case q.Object < 0:
			pl = place{fn: -1, pseudo: PseudoUnknown}
		default:
			obj := s.Objects[q.Object]
			k, ok := byName[obj]
			if !ok {
				k, ok = byBase[filepath.Base(obj)]
				ok = ok && k >= 0
			}
			if !ok {
				pl = place{fn: -1, pseudo: "[" + filepath.Base(obj) + "]"}
				break
			}
			mod = k
			x, seen := index[k]
			if !seen {
				x = newCodeIndex(&c.Modules[k])
				index[k] = x
			}
			a, inFile := uint64(0), false
			if f := c.Modules[k].File; f != nil {
				a, inFile = fileToAddr(f, q.Offset)
			}
			if x == nil || !inFile {
				pl = place{fn: -1, pseudo: "[" + c.Modules[k].Name + "]"}
				break
			}
			pl = x.locate(&c.Modules[k], a)
		}
		r := q.Record
		if k, ok := roots[FuncID{Module: uint32(mod), Func: uint32(pl.fn)}]; r < 0 && pl.fn >= 0 && ok {
			r = k // flow-only: the function's one context
		}
		if r < 0 || r >= len(c.Nodes) {
			info.Unattributed += q.Count
			continue
		}
		if pl.fn < 0 {
			c.Nodes[r].addSamples(-1, pl.pseudo, q.Count)
			info.Pseudo += q.Count
			continue
		}
		fn := FuncID{Module: uint32(mod), Func: uint32(pl.fn)}
		at := nodeOf(r, fn)
		if at < 0 {
			c.Nodes[r].addSamples(-1, "["+RawName(c.Func(fn).Name)+", no context]", q.Count)
			info.Pseudo += q.Count
			continue
		}
		n := &c.Nodes[at]
		n.addSamples(pl.block, "", q.Count)
		var prefix *meta.Expansion
		if at == r && pl.trusty {
			var err error
			if prefix, err = c.Modules[mod].Table.ExpandPartial(uint32(pl.fn), uint32(pl.block), q.Reg); err != nil {
				return err
			}
		}
		w := c.pathWeights(n, pl.block, prefix)
		if w == nil && prefix != nil {
			w = c.pathWeights(n, pl.block, nil)
			prefix = nil
		}
		if w == nil {
			info.Kept += q.Count
			continue
		}
		if prefix != nil {
			info.Prefixed += q.Count
		} else {
			info.BlockLevel += q.Count
		}
		if shares[at] == nil {
			shares[at] = make([]float64, len(n.Paths))
		}
		for i, x := range w {
			shares[at][i] += x * float64(q.Count)
		}
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Sampled == nil {
			continue
		}
		n.Excl[col] = uint64(math.Round(float64(n.Sampled.Total) * period))
		for k := range shares[i] {
			n.Paths[k].Samples = shares[i][k]
			n.Paths[k].Metrics[col] = uint64(math.Round(shares[i][k] * period))
		}
	}
	return nil
}

func (n *CNode) addSamples(block int, pseudo string, count uint64) {
	if n.Sampled == nil {
		n.Sampled = &NodeSamples{Blocks: map[int]uint64{}, Pseudo: map[string]uint64{}}
	}
	n.Sampled.Total += count
	if pseudo != "" {
		n.Sampled.Pseudo[pseudo] += count
	} else {
		n.Sampled.Blocks[block] += count
	}
}

// pathWeights are the shares of n's paths in a sample at block b: each
// path through b (extending prefix, when not nil) in proportion to its
// count; nil when no path fits.
func (c *Model) pathWeights(n *CNode, b int, prefix *meta.Expansion) []float64 {
	var w []float64
	var sum float64
	for i := range n.Paths {
		p := &n.Paths[i]
		if !fits(p.Blocks, b, prefix) {
			continue
		}
		if prefix != nil {
			e, err := c.ExpandPath(n.FuncID(), p.ID)
			if err != nil || e.FromEntry != prefix.FromEntry {
				continue
			}
		}
		if w == nil {
			w = make([]float64, len(n.Paths))
		}
		w[i] = float64(p.Metrics[0])
		sum += w[i]
	}
	if sum == 0 {
		return nil
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// fits says whether a path with blocks passes b and, with a prefix,
// begins with the prefix's blocks (which end at b).
func fits(blocks []int, b int, prefix *meta.Expansion) bool {
	if prefix != nil {
		if len(prefix.Blocks) > len(blocks) {
			return false
		}
		for i, x := range prefix.Blocks {
			if blocks[i] != x {
				return false
			}
		}
		return true
	}
	for _, x := range blocks {
		if x == b {
			return true
		}
	}
	return false
}

// FormatSampled writes value v of a sampled column with the samples it
// stands for (one decimal: a path's share is an estimate).
func (s *SampleInfo) FormatSampled(v uint64) string {
	n := float64(v) / float64(s.Period)
	if n == math.Trunc(n) {
		return fmt.Sprintf("%d (%d samples)", v, uint64(n))
	}
	return fmt.Sprintf("%d (%.1f samples)", v, n)
}

// Describe says what the sampled column is, for a view's header.
func (s *SampleInfo) Describe() string {
	var b strings.Builder
	unit := s.Unit
	if unit == cct.UnitNanoseconds {
		unit = "ns of thread CPU time (user space)"
	}
	fmt.Fprintf(&b, "sampled: 1 sample per %d %s by %s, %d samples", s.Period, unit, s.Source, s.Recorded)
	if s.Kind == cct.MetricFallback {
		fmt.Fprintf(&b, "; fallback: %s could not be sampled here", s.Requested)
	}
	if s.Dropped+s.Missed > 0 {
		fmt.Fprintf(&b, "; %d lost", s.Dropped+s.Missed)
	}
	b.WriteString("; a path's value is its estimated share")
	return b.String()
}

// writeSampledBlocks lists where a context's samples were: its blocks
// (file:line) and its pseudo-blocks, most samples first.
func writeSampledBlocks(w io.Writer, c *Model, n *CNode) {
	type row struct {
		label string
		n     uint64
	}
	var rows []row
	mf := c.Func(n.FuncID())
	for b, k := range n.Sampled.Blocks {
		label := fmt.Sprintf("block %d", b)
		if b >= 0 && b < len(mf.Blocks) {
			label = hex(mf.Blocks[b].Addr)
			if loc := c.debugOf(n.FuncID()).At(mf.Blocks[b].Addr); loc != "" {
				label += "  " + loc
			}
		}
		rows = append(rows, row{label, k})
	}
	for p, k := range n.Sampled.Pseudo {
		rows = append(rows, row{p, k})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].label < rows[j].label
	})
	fmt.Fprintf(w, "  %s in the context itself, where they were:\n", plural(n.Sampled.Total, "sample", "samples"))
	for _, r := range rows {
		fmt.Fprintf(w, "%8d  %s\n", r.n, r.label)
	}
}

// pprofSamples adds the sampled metric to p at value index vi: per
// context, one sample per block that was sampled, at the block's first
// address (a block's samples are not split by line; byFunc: at the
// function's entry), and one per
// pseudo-block, a location of its own (a function named by its label)
// above the context's stack.
func (m *Model) pprofSamples(p *profile.Profile, emit func(*profile.Sample, *pprofCallers) error, byFunc bool, vi int, location func(StackFrame) *profile.Location,
	function func(name, sys, file string, line int) *profile.Function) error {
	period := m.Samples.Period
	pseudo := map[string]*profile.Location{}
	stacks := m.Stacks()
	var frames []StackFrame
	var err error
	callers := &pprofCallers{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Sampled == nil || i >= len(stacks) {
			continue
		}
		frames = m.StackFrames(i, frames)
		callers.reset()
		for _, fr := range frames[1:] {
			callers.locs = append(callers.locs, location(fr))
		}
		leaf := frames[0]
		mf := m.Func(leaf.Func)
		add := func(at *profile.Location, k uint64, withLeaf bool) {
			s := &profile.Sample{Value: make([]int64, len(p.SampleType)), Location: []*profile.Location{at}}
			if withLeaf {
				s.Location = append(s.Location, location(leaf))
			}
			s.Value[vi] = int64(min(satMul(k, period), math.MaxInt64))
			if err == nil {
				err = emit(s, callers)
			}
		}
		for _, b := range sortedKeys(n.Sampled.Blocks) {
			at := leaf.Addr
			if b >= 0 && b < len(mf.Blocks) && !byFunc {
				at = mf.Blocks[b].Addr
			}
			add(location(StackFrame{leaf.Func, at}), n.Sampled.Blocks[b], false)
		}
		for _, label := range sortedKeys(n.Sampled.Pseudo) {
			l, ok := pseudo[label]
			if !ok {
				l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: function(label, label, "", 0)}}}
				p.Location = append(p.Location, l)
				pseudo[label] = l
			}
			add(l, n.Sampled.Pseudo[label], true)
		}
	}
	return err
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
