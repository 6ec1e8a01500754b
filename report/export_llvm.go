package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ErrNoDebugInfo: the binary has no DWARF line information, which a
// source-level format needs.
var ErrNoDebugInfo = errors.New("the binary has no DWARF line information (build it with -g)")

// sampleLoc is a line offset from the function's DW_AT_decl_line and a
// discriminator: LLVM's LineLocation.
type sampleLoc struct {
	off, disc int
}

// funcSamples is LLVM's FunctionSamples: body samples per location, call
// targets per location, and inlined callees per call site.
type funcSamples struct {
	name    string
	head    uint64
	body    map[sampleLoc]uint64
	targets map[sampleLoc]map[string]uint64
	inlined map[sampleLoc]map[string]*funcSamples
}

func newFuncSamples(name string) *funcSamples {
	return &funcSamples{name: name, body: map[sampleLoc]uint64{}, targets: map[sampleLoc]map[string]uint64{},
		inlined: map[sampleLoc]map[string]*funcSamples{}}
}

func (fs *funcSamples) total() uint64 {
	var t uint64
	for _, c := range fs.body {
		t = satAdd(t, c)
	}
	for _, m := range fs.inlined {
		for _, c := range m {
			t = satAdd(t, c.total())
		}
	}
	return t
}

// child returns the samples of callee inlined at loc.
func (fs *funcSamples) top() (string, uint64)     { return fs.name, fs.head }
func (fs *funcSamples) writeBody(w *bufio.Writer) { writeSampleBody(w, fs, 1) }

// A sampleTop is a function's samples at the top level of an LLVM
// sample profile: line-based (funcSamples) or probe-based (probeSamples).
type sampleTop interface {
	total() uint64
	top() (name string, head uint64)
	writeBody(w *bufio.Writer)
}

// writeSampleProfile writes top's functions that have samples, the
// largest total first (then by name): "name:total:head" and the body.
func writeSampleProfile[K comparable, T sampleTop](w io.Writer, top map[K]T) error {
	list := make([]T, 0, len(top))
	for _, fs := range top {
		if _, head := fs.top(); fs.total() > 0 || head > 0 {
			list = append(list, fs)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		ti, tj := list[i].total(), list[j].total()
		if ti != tj {
			return ti > tj
		}
		ni, _ := list[i].top()
		nj, _ := list[j].top()
		return ni < nj
	})
	bw := bufio.NewWriter(w)
	for _, fs := range list {
		name, head := fs.top()
		fmt.Fprintf(bw, "%s:%d:%d\n", name, fs.total(), head)
		fs.writeBody(bw)
	}
	return bw.Flush()
}

func (fs *funcSamples) child(loc sampleLoc, callee string) *funcSamples {
	m := fs.inlined[loc]
	if m == nil {
		m = map[string]*funcSamples{}
		fs.inlined[loc] = m
	}
	c := m[callee]
	if c == nil {
		c = newFuncSamples(callee)
		m[callee] = c
	}
	return c
}

// ExportLLVMSample writes m as an LLVM text sample profile
// [llvm/ProfileData/SampleProfReader.h, "Text format"], as
// clang -fprofile-sample-use and llvm-profdata read it:
//
//	name:total_samples:head_samples
//	 offset[.discriminator]: samples [callee:samples ...]
//	 offset[.discriminator]: inlined_callee:total_samples
//	  offset[.discriminator]: samples ...
//
// Offsets are source lines minus the function's DW_AT_decl_line; the
// samples of a line (and discriminator) are the largest execution count of
// the blocks holding its code, times LLVM's duplication factor of that
// code (an unrolled loop's copies each run a fraction of the source's
// iterations), as llvm-profgen counts them; so they are exact execution
// counts, not estimates. Code inlined from other functions
// (DW_TAG_inlined_subroutine) is nested under its call site; a row of the
// line table goes to the frame whose source holds its line (see
// lineOwners), which is not always the innermost. Head samples are the
// function's activations; call targets come from the calling context tree
// when the profile has one, else from direct call instructions.
//
// A binary built with clang -fpseudo-probe-for-profiling gets a
// probe-based profile instead (exportProbeSample), which the compiler
// reads when the build that uses it has the flag too.
func ExportLLVMSample(w io.Writer, m *Model, opts ExportOptions) error {
	if len(m.Modules) == 1 && m.Modules[0].File != nil {
		starts := map[uint64]uint64{}
		for _, fi := range m.FuncIDs() {
			mf := m.Func(fi)
			starts[ProbeGUID(RawName(mf.Name))] = mf.Entry
		}
		pp, err := ReadPseudoProbes(m.Modules[0].File, starts)
		if err != nil {
			return fmt.Errorf("pseudo probes: %w", err)
		}
		if pp != nil {
			return exportProbeSample(w, m, pp)
		}
	}
	if !m.Debug.HasLines() {
		return ErrNoDebugInfo
	}
	top := map[string]*funcSamples{}
	owners := newLineOwners(m.Debug)
	targets := m.callTargets()
	// place finds the samples node of row, a line of the code at addr,
	// and the row's place in it; false for a row no frame can take.
	place := func(addr uint64, row LineRange) (*funcSamples, sampleLoc, bool) {
		if row.Line == 0 {
			return nil, sampleLoc{}, false
		}
		frames := m.Debug.Frames(addr)
		k := owners.owner(frames, row.File, row.Line)
		if k < 0 {
			return nil, sampleLoc{}, false
		}
		fs := samplesNode(top, frames[:k+1])
		if fs == nil {
			return nil, sampleLoc{}, false
		}
		return fs, sampleLoc{row.Line - frames[k].DeclLine, row.Discriminator}, true
	}
	for _, fi := range m.FuncIDs() {
		fp := m.Profile(fi)
		mf := m.Func(fi)
		if !mf.Instrumented || (fp.Calls == 0 && fp.Executions == 0 && fp.Partial == 0) {
			continue
		}
		// Head samples belong to the function itself even when its first
		// instruction is code inlined into it (a type check at the top of
		// a function often is): LLVM takes the function's entry count
		// from them.
		if len(mf.Blocks) > 0 {
			if frames := m.Debug.Frames(mf.Blocks[0].Addr); len(frames) > 0 {
				fs := samplesNode(top, frames[:1])
				head := fp.Calls
				if head == 0 {
					head = fp.Blocks[0]
				}
				fs.head = satAdd(fs.head, head)
			}
		}
		for bi, b := range mf.Blocks {
			c := fp.Blocks[bi]
			if c == 0 {
				continue
			}
			for _, row := range m.Debug.Rows(b.Addr, b.End) {
				fs, loc, ok := place(max(row.Addr, b.Addr), row)
				if !ok {
					continue
				}
				n := c
				if row.Dup > 1 {
					n = satMul(c, uint64(row.Dup))
				}
				fs.body[loc] = max(fs.body[loc], n)
			}
		}
		for ci, addr := range mf.CallSites {
			ts := targets[callKey{fi, uint32(ci)}]
			if len(ts) == 0 {
				continue
			}
			row, ok := m.Debug.LineAt(addr)
			if !ok {
				continue
			}
			fs, loc, ok := place(addr, row)
			if !ok {
				continue
			}
			if fs.targets[loc] == nil {
				fs.targets[loc] = map[string]uint64{}
			}
			for name, c := range ts {
				fs.targets[loc][name] = satAdd(fs.targets[loc][name], c)
			}
		}
	}
	return writeSampleProfile(w, top)
}

// samplesNode returns the samples node of the innermost of frames
// (outermost first), creating it and the chain of inlined call sites that
// leads to it; nil when a call site of the chain has no line a sample
// profile can name: line 0, a line above its caller's declaration, or a
// line of another file than its caller's.
func samplesNode(top map[string]*funcSamples, frames []*Scope) *funcSamples {
	name := frames[0].SymbolName()
	fs := top[name]
	if fs == nil {
		fs = newFuncSamples(name)
		top[name] = fs
	}
	for i := 1; i < len(frames); i++ {
		s, caller := frames[i], frames[i-1]
		off := s.CallLine - caller.DeclLine
		if s.CallLine == 0 || off < 0 || (s.CallFile != "" && caller.DeclFile != "" && s.CallFile != caller.DeclFile) {
			return nil
		}
		fs = fs.child(sampleLoc{off, s.CallDiscriminator}, s.SymbolName())
	}
	return fs
}

func (l sampleLoc) String() string {
	if l.disc != 0 {
		return fmt.Sprintf("%d.%d", l.off, l.disc)
	}
	return fmt.Sprint(l.off)
}

func sortLocs[V any](m map[sampleLoc]V) []sampleLoc {
	out := make([]sampleLoc, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].off != out[j].off {
			return out[i].off < out[j].off
		}
		return out[i].disc < out[j].disc
	})
	return out
}

func writeSampleBody(w *bufio.Writer, fs *funcSamples, depth int) {
	writeBodyLines(w, fs.body, fs.targets, depth)
	ind := indent(depth)
	for _, loc := range sortLocs(fs.inlined) {
		m := fs.inlined[loc]
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := m[n]
			if c.total() == 0 {
				continue
			}
			fmt.Fprintf(w, "%s%s: %s:%d\n", ind, loc, n, c.total())
			writeSampleBody(w, c, depth+1)
		}
	}
}

func indent(depth int) string { return strings.Repeat(" ", depth) }

// writeBodyLines writes the body samples of a function, each location with
// its call targets, hottest target first.
func writeBodyLines(w *bufio.Writer, body map[sampleLoc]uint64, targets map[sampleLoc]map[string]uint64, depth int) {
	ind := indent(depth)
	// A location with call targets but no body sample of its own still
	// needs a body line to carry them.
	for loc := range targets {
		if _, ok := body[loc]; !ok {
			var s uint64
			for _, c := range targets[loc] {
				s = satAdd(s, c)
			}
			body[loc] = s
		}
	}
	for _, loc := range sortLocs(body) {
		fmt.Fprintf(w, "%s%s: %d", ind, loc, body[loc])
		ts := targets[loc]
		names := make([]string, 0, len(ts))
		for n := range ts {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if ts[names[i]] != ts[names[j]] {
				return ts[names[i]] > ts[names[j]]
			}
			return names[i] < names[j]
		})
		for _, n := range names {
			if ts[n] > 0 {
				fmt.Fprintf(w, " %s:%d", n, ts[n])
			}
		}
		w.WriteByte('\n')
	}
}

// callKey is a call site: function and local call-site index.
type callKey struct {
	fn   FuncID
	site uint32
}

// callTargets counts, per call site, the calls to each callee (by the
// name a sample profile uses), as siteCalls gives them: direct calls by
// their block's executions, indirect calls by the records under the site
// (left out without a calling context tree).
func (m *Model) callTargets() map[callKey]map[string]uint64 {
	out := map[callKey]map[string]uint64{}
	var plt []map[uint64]string
	for _, sc := range m.siteCalls() {
		if sc.Site < 0 || sc.Count == 0 {
			continue
		}
		var name string
		switch {
		case sc.HasCallee:
			name = m.sampleName(sc.Callee)
		case sc.External != "":
			name = sc.External
		default:
			name = m.nameAt(sc.Target)
			if name == "" {
				if plt == nil {
					plt = make([]map[uint64]string, len(m.Modules))
					for k := range m.Modules {
						if f := m.Modules[k].File; f != nil {
							plt[k] = pltNames(f)
						}
					}
				}
				name = strings.TrimSuffix(plt[sc.Caller.Module][sc.Target], "@PLT")
			}
		}
		if name == "" {
			continue
		}
		k := callKey{sc.Caller, uint32(sc.Site)}
		if out[k] == nil {
			out[k] = map[string]uint64{}
		}
		out[k][name] = satAdd(out[k][name], sc.Count)
	}
	return out
}

// sampleName is the name a sample profile gives function fn: its DWARF
// subprogram's linkage name or name (clones such as foo.constprop.0 are
// foo), else the symbol.
func (m *Model) sampleName(fn FuncID) string {
	f := m.Func(fn)
	if s := m.Debug.Subprogram(f.Entry); s != nil && s.SymbolName() != "" {
		return s.SymbolName()
	}
	return strings.TrimSuffix(RawName(f.Name), "@plt")
}

// nameAt names the function at a call target.
func (m *Model) nameAt(addr uint64) string {
	for _, i := range m.FuncIDs() {
		if m.Func(i).Entry == addr {
			return m.sampleName(i)
		}
	}
	if s := m.Debug.Subprogram(addr); s != nil && s.SymbolName() != "" {
		return s.SymbolName()
	}
	if name, off, ok := m.Symbols.Lookup(addr); ok && off == 0 {
		return name
	}
	return ""
}

// blockCountAt is the execution count of the block of function fn that
// holds addr.
func (m *Model) blockCountAt(fn FuncID, addr uint64) uint64 {
	mf := m.Func(fn)
	for bi, b := range mf.Blocks {
		if addr >= b.Addr && addr < b.End {
			return m.Profile(fn).Blocks[bi]
		}
	}
	return 0
}
