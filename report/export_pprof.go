package report

import (
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	enchex "encoding/hex"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/blpp/blpp/cct"
)

// pprofUnit is the unit pprof shows for a metric.
func pprofUnit(name string) string {
	switch name {
	case "tsc", "cycles", "ref-cycles":
		return "cycles"
	}
	return "count"
}

// ExportPprof writes m as a gzipped profile.proto [github.com/google/pprof
// proto/profile.proto] (MakePprof's), streaming: each sample is encoded
// as it is made, and the rest of the profile (sample types, mappings,
// locations, functions, strings) follows them. A protocol buffer's fields
// may come in any order, and a sample names no string, only location ids
// and values. A whole-process profile gives tens of millions of samples
// tens of frames deep, more than fits in memory as profile.Samples
// (decision 139).
func ExportPprof(w io.Writer, m *Model, opts ExportOptions) error {
	if g := opts.Granularity; g != "" && g != GranularityLines && g != GranularityFunctions {
		return fmt.Errorf("pprof granularity %q: want %s or %s", g, GranularityLines, GranularityFunctions)
	}
	gz := gzip.NewWriter(w)
	var buf []byte
	p, err := buildPprof(m, opts.Granularity == GranularityFunctions, func(s *profile.Sample, c *pprofCallers) error {
		buf = appendPprofSample(buf[:0], s, c)
		_, err := gz.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	if err := p.WriteUncompressed(gz); err != nil {
		return err
	}
	return gz.Close()
}

// pprofCallers are the locations of a context's callers, innermost
// first, which every sample of the context ends with; ids holds their ids
// as varints once a sample has needed them.
type pprofCallers struct {
	locs    []*profile.Location
	ids     []byte
	encoded bool
}

func (c *pprofCallers) reset() {
	c.locs, c.ids, c.encoded = c.locs[:0], c.ids[:0], false
}

// appendPprofSample appends sample s, followed by c's locations, as
// field 2 of a Profile message: location ids (field 1) and values (field
// 2), packed.
func appendPprofSample(b []byte, s *profile.Sample, c *pprofCallers) []byte {
	if !c.encoded {
		for _, l := range c.locs {
			c.ids = binary.AppendUvarint(c.ids, l.ID)
		}
		c.encoded = true
	}
	nids := len(c.ids)
	for _, l := range s.Location {
		nids += uvarintLen(l.ID)
	}
	nvals := 0
	for _, v := range s.Value {
		nvals += uvarintLen(uint64(v))
	}
	n := 1 + uvarintLen(uint64(nids)) + nids + 1 + uvarintLen(uint64(nvals)) + nvals
	b = append(b, 2<<3|2)
	b = binary.AppendUvarint(b, uint64(n))
	b = append(b, 1<<3|2)
	b = binary.AppendUvarint(b, uint64(nids))
	for _, l := range s.Location {
		b = binary.AppendUvarint(b, l.ID)
	}
	b = append(b, c.ids...)
	b = append(b, 2<<3|2)
	b = binary.AppendUvarint(b, uint64(nvals))
	for _, v := range s.Value {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// uvarintLen is the length of x as a varint.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// MakePprof builds the pprof model of m (buildPprof), samples included,
// at line granularity.
func MakePprof(m *Model) (*profile.Profile, error) { return makePprof(m, false) }

func makePprof(m *Model, byFunc bool) (*profile.Profile, error) {
	var samples []*profile.Sample
	p, err := buildPprof(m, byFunc, func(s *profile.Sample, c *pprofCallers) error {
		s.Location = append(s.Location, c.locs...)
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Sample = samples
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return p, nil
}

// The pprof sample types after the profile's further metrics; see
// MakePprof.
const (
	pprofLines = "lines"
	pprofCount = "count"
)

// buildPprof builds the pprof model of m (docs/formats.md, decision 87),
// handing each sample to emit instead of keeping it in the profile: its
// own locations in the sample, its context's callers in c. With byFunc
// a context gives one sample, at its function's entry, which carries its
// instructions (ExportOptions.Granularity).
// Each calling context gives one sample per location of the code that
// ran in it: a location is a stretch of one block whose instructions
// share a source line and inline frame (DebugInfo.LineRuns; the whole
// block without line tables), at its first instruction's address, and
// the sample's stack is that location, then the call instructions of the
// context's callers up to its root. Values, in order:
//
//   - count: completed paths of the context, and after it one value per
//     further metric of the profile (tsc, cycles, ...: exclusive of
//     callees). Paths are not split by line, so these sit at the
//     location of the function's entry alone.
//   - lines: executions of source lines as blpp annotate counts them.
//     Per function, each line's count is that of its most executed block
//     (ties: the first), so the block's first location of the line
//     carries the block's count in each context and the line's other
//     locations 0; summed over the contexts, `pprof -list` shows
//     annotate's count on every line.
//   - insns (the default): instructions executed at the location, its
//     block's count times the location's instructions. Additive
//     everywhere: per line, per instruction (-disasm), per function and
//     per stack it is exact.
//
// Locations carry function names and file:line from DWARF, inline frames
// included (innermost first, each outer frame at the line of the call
// inlined into it), with each Function's start line its declaration's.
func buildPprof(m *Model, byFunc bool, emit func(*profile.Sample, *pprofCallers) error) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: pprofCount, Unit: "count"}},
		DefaultSampleType: MetricInsns,
		PeriodType:        &profile.ValueType{Type: MetricInsns, Unit: "count"},
		Period:            1,
	}
	for _, mt := range m.Metrics[1:] {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: mt.Name, Unit: pprofUnit(mt.Name)})
		if mt.Kind != cct.MetricReal {
			p.Comments = append(p.Comments, fmt.Sprintf("metric %s is %v", mt.Name, mt.Kind))
		}
	}
	iLines := len(p.SampleType)
	p.SampleType = append(p.SampleType, &profile.ValueType{Type: pprofLines, Unit: "count"},
		&profile.ValueType{Type: MetricInsns, Unit: "count"})
	iInsns := iLines + 1
	iSampled := -1
	if s := m.Samples; s != nil {
		// The sampled metric (decision 92): cpu/nanoseconds for the
		// clocks, as pprof names CPU profiles, so -sample_index=cpu.
		iSampled = len(p.SampleType)
		vt := &profile.ValueType{Type: s.Event, Unit: "count"}
		if s.Unit == cct.UnitNanoseconds {
			vt = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		}
		p.SampleType = append(p.SampleType, vt)
		p.Comments = append(p.Comments, fmt.Sprintf("%s: %s", vt.Type, s.Describe()))
	}
	p.Comments = append(p.Comments, "blpp path profile of "+m.Binary,
		"count: completed paths, at the function's entry; lines: executions of each source line (as blpp annotate counts them); insns: instructions executed")
	for k := range m.Modules[min(1, len(m.Modules)):] {
		mod := &m.Modules[k+1]
		p.Comments = append(p.Comments, fmt.Sprintf("module %s (tag %d): %s", mod.Name, mod.Tag, mod.Path))
	}
	if m.FlowOnly {
		p.Comments = append(p.Comments, "flow-only profile: no calling context, stacks are one frame deep")
	}
	if byFunc {
		p.Comments = append(p.Comments, "granularity functions: one sample per context, at its function's entry; lines are not given")
	}
	// One mapping per module, with the original build-id (what pprof
	// matches against symbol files); addresses are run-time ones,
	// link-time plus the module's load bias, so that modules do not
	// overlap.
	maps := make([]*profile.Mapping, len(m.Modules))
	fixed := make([]bool, len(m.Modules)) // bounds from the file's code segment
	for k := range m.Modules {
		mod := &m.Modules[k]
		mp := &profile.Mapping{ID: uint64(k + 1), File: mod.Path, HasFunctions: true,
			HasFilenames: mod.Debug.HasLines(), HasLineNumbers: mod.Debug.HasLines(), HasInlineFrames: mod.Debug.HasLines(), Start: math.MaxUint64}
		if len(mod.Table.OrigBuildID) > 0 {
			mp.BuildID = enchex.EncodeToString(mod.Table.OrigBuildID)
		} else if len(mod.BuildID) > 0 {
			mp.BuildID = enchex.EncodeToString(mod.BuildID)
		}
		if seg := firstCodeSegment(mod.File); seg != nil {
			// The mapping a loader makes of the original code, so that
			// pprof finds the file's bytes for an address: from the
			// segment's page, at the page's file offset (-disasm needs
			// it: go tool pprof takes Start minus the segment's page as
			// the load bias).
			skew := seg.Vaddr % max(seg.Align, 1)
			mp.Start, mp.Limit, mp.Offset = seg.Vaddr-skew+mod.Bias, seg.Vaddr+seg.Memsz+mod.Bias, seg.Off-skew
			fixed[k] = true
		}
		maps[k] = mp
		p.Mapping = append(p.Mapping, mp)
	}
	funcs := map[profile.Function]*profile.Function{}
	function := func(name, sys, file string, line int) *profile.Function {
		k := profile.Function{Name: name, SystemName: sys, Filename: file, StartLine: int64(line)}
		if f, ok := funcs[k]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: sys, Filename: file, StartLine: int64(line)}
		funcs[k] = f
		p.Function = append(p.Function, f)
		return f
	}
	type locKey struct {
		fn   FuncID
		addr uint64
	}
	locs := map[locKey]*profile.Location{}
	owners := map[uint32]lineOwners{} // by module, made when first needed
	location := func(fr StackFrame) *profile.Location {
		k := locKey{fr.Func, fr.Addr}
		if l, ok := locs[k]; ok {
			return l
		}
		mod, mp := &m.Modules[fr.Func.Module], maps[fr.Func.Module]
		addr := fr.Addr + mod.Bias
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mp, Address: addr}
		if !fixed[fr.Func.Module] {
			mp.Start = min(mp.Start, addr)
		}
		mp.Limit = max(mp.Limit, addr+1)
		name := RawName(m.FuncName(fr.Func))
		scopes := mod.Debug.Frames(fr.Addr)
		row, hasRow := mod.Debug.LineAt(fr.Addr)
		if hasRow && len(scopes) > 1 {
			// The row goes to the frame whose source holds its line, as
			// in the LLVM export (lineOwners): an instruction the
			// inlined callee's ranges claim at its caller's line is the
			// caller's.
			o, ok := owners[fr.Func.Module]
			if !ok {
				o = newLineOwners(mod.Debug)
				owners[fr.Func.Module] = o
			}
			if k := o.owner(scopes, row.File, row.Line); k >= 0 {
				scopes = scopes[:k+1]
			}
		}
		if len(scopes) == 0 {
			ln := profile.Line{Function: function(name, name, "", 0)}
			if hasRow {
				ln.Function = function(name, name, row.File, 0)
				ln.Line = int64(row.Line)
			}
			l.Line = []profile.Line{ln}
		} else {
			// Innermost first; each outer frame is at the line where the
			// frame inside it was inlined [DWARF5 3.3.8.2].
			line := 0
			if hasRow {
				line = row.Line
			}
			for i := len(scopes) - 1; i >= 0; i-- {
				s := scopes[i]
				n, sys := s.Name, s.SymbolName()
				if i == 0 {
					n, sys = name, name // the outermost frame is the symbol (clones keep their suffix)
				}
				file := s.DeclFile
				l.Line = append(l.Line, profile.Line{Function: function(n, sys, file, s.DeclLine), Line: int64(line)})
				line = s.CallLine
			}
		}
		locs[k] = l
		p.Location = append(p.Location, l)
		return l
	}
	clamp := func(x uint64) int64 {
		if x > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(x)
	}
	runs := map[FuncID][][]pprofRun{}
	stacks := m.Stacks()
	// callAt[i] is the location of the call that entered stack i (nil at
	// a root): a stack's callers are its own, its parent's, and so on.
	callAt := make([]*profile.Location, len(stacks))
	var blocks []uint64
	// A stack's samples are emitted once it is done: its entry sample's
	// values are set last.
	var pending []*profile.Sample
	callers := &pprofCallers{}
	flush := func() error {
		for _, s := range pending {
			if err := emit(s, callers); err != nil {
				return err
			}
		}
		pending = pending[:0]
		return nil
	}
	for i := range stacks {
		if err := flush(); err != nil {
			return nil, err
		}
		st := &stacks[i]
		leaf := st.Leaf
		if st.Parent >= 0 {
			callAt[i] = location(StackFrame{stacks[st.Parent].Leaf.Func, st.CallAddr})
		}
		callers.reset()
		for k := int32(i); k >= 0 && callAt[k] != nil; k = stacks[k].Parent {
			callers.locs = append(callers.locs, callAt[k])
		}
		sample := func(at uint64) *profile.Sample {
			s := &profile.Sample{Value: make([]int64, len(p.SampleType)),
				Location: []*profile.Location{location(StackFrame{leaf.Func, at})}}
			pending = append(pending, s)
			return s
		}
		var entry *profile.Sample // the sample at the leaf's entry, if any
		emitted := false
		if byFunc {
			if st.Insns > 0 {
				entry = sample(leaf.Addr)
				entry.Value[iInsns] = clamp(st.Insns)
				emitted = true
			}
		} else if blocks = m.StackBlocks(i, blocks); blocks != nil {
			rs, ok := runs[leaf.Func]
			if !ok {
				rs = m.pprofRuns(leaf.Func)
				runs[leaf.Func] = rs
			}
			for bi, c := range blocks {
				if c == 0 || bi >= len(rs) {
					continue
				}
				for _, r := range rs[bi] {
					insns := satMul(c, r.insns)
					if insns == 0 && !r.lines {
						continue
					}
					s := sample(r.addr)
					s.Value[iInsns] = clamp(insns)
					if r.lines {
						s.Value[iLines] = clamp(c)
					}
					if r.addr == leaf.Addr && entry == nil {
						entry = s
					}
					emitted = true
				}
			}
		}
		head := st.Count > 0
		for _, v := range st.Metrics {
			head = head || v > 0
		}
		if !head && (emitted || st.Calls == 0) {
			continue
		}
		// Paths and their metrics belong to the function, not to a line:
		// they go to its entry (and a context that only called keeps its
		// stack, with zero values).
		if entry == nil {
			entry = sample(leaf.Addr)
		}
		entry.Value[0] = clamp(st.Count)
		for j, v := range st.Metrics {
			entry.Value[1+j] = clamp(v)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if iSampled >= 0 {
		if err := m.pprofSamples(p, emit, byFunc, iSampled, location, function); err != nil {
			return nil, err
		}
	}
	for _, mp := range p.Mapping {
		if mp.Start > mp.Limit { // no location in it
			mp.Start = 0
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return p, nil
}

// firstCodeSegment is f's first executable PT_LOAD segment, which holds
// the original code (the rewriter's segments come after it); nil without.
func firstCodeSegment(f *elf.File) *elf.Prog {
	if f == nil {
		return nil
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			return p
		}
	}
	return nil
}

// A pprofRun is one location of a block: a LineRun inside it.
type pprofRun struct {
	addr  uint64 // its first address
	insns uint64 // instructions in it
	// lines: the block is its line's most executed one (MakePprof) and
	// this is the block's first run of the line, so it carries the
	// block's count as the line's executions.
	lines bool
}

// pprofRuns splits each block of function id into its runs, by index in
// meta.Func.Blocks. The runs of a block hold its instructions: those
// that decode are counted where they are, and the rest (code whose bytes
// cannot be read or decoded here, such as the entry jump's bytes) go to
// its first run, so that a block's runs add up to its instruction count.
func (m *Model) pprofRuns(id FuncID) [][]pprofRun {
	mf, fp, di := m.Func(id), m.Profile(id), m.debugOf(id)
	out := make([][]pprofRun, len(mf.Blocks))
	type fileLine struct {
		file string
		line int
	}
	type runID struct{ block, run int }
	best := map[fileLine]runID{}
	for bi := range mf.Blocks {
		b := &mf.Blocks[bi]
		lr := di.LineRuns(b.Addr, b.End)
		if len(lr) == 0 {
			out[bi] = []pprofRun{{addr: b.Addr, insns: uint64(b.Insts)}}
			continue
		}
		rs := make([]pprofRun, len(lr))
		for i := range lr {
			rs[i].addr = lr[i].Addr
		}
		var n uint64
		insts, _ := m.BlockInsts(id, bi) // none where the code cannot be read
		for _, in := range insts {
			i := sort.Search(len(lr), func(i int) bool { return lr[i].End > in.Addr })
			if i < len(lr) && in.Addr >= lr[i].Addr && n < uint64(b.Insts) {
				rs[i].insns++
				n++
			}
		}
		rs[0].insns += uint64(b.Insts) - n
		out[bi] = rs
		// The line's count is its most executed block's, as in
		// Model.lineCounts.
		for i, r := range lr {
			if r.Line == 0 {
				continue
			}
			k := fileLine{r.File, r.Line}
			if cur, ok := best[k]; !ok || fp.Blocks[bi] > fp.Blocks[cur.block] {
				best[k] = runID{bi, i}
			}
		}
	}
	for _, r := range best {
		out[r.block][r.run].lines = true
	}
	return out
}

// baseName is the last element of a path.
func baseName(p string) string { return filepath.Base(p) }
