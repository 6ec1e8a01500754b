package report

// This file is the report model: one (merged) profile laid over the
// metadata of the instrumented binary, built once by NewModel, which
// every view and export reads (doc.go lists them).

import (
	"debug/elf"
	"fmt"
	"math/bits"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// MetricInsns is the derived metric: instructions executed, from block
// counts times each block's instruction count in the metadata. Exact, and
// available on machines without a PMU.
const MetricInsns = "insns"

// A Column is one metric of the model: a metric of the profile, in its
// order, or the derived insns (last).
type Column struct {
	Name    string
	Kind    cct.MetricKind
	Derived bool // computed by the report from block counts (insns)
	// Sampled, for the sampled metric (decision 92), says how it was
	// sampled; its values are samples times the period.
	Sampled *SampleInfo
}

// Label names the column for a header line, saying what its values are
// when they are not what the name suggests.
func (c Column) Label() string {
	switch {
	case c.Sampled != nil:
		return c.Name + " (" + c.Sampled.Describe() + ")"
	case c.Derived:
		return c.Name + " (derived: instructions of the executed blocks)"
	case c.Name == cct.FreqMetric:
		return c.Name + " (path executions)"
	case c.Kind == cct.MetricFallback && c.Name == "tsc":
		// The runtime's one fallback [DESIGN 8].
		return "tsc (fallback for cycles)"
	case c.Kind == cct.MetricFallback:
		return c.Name + " (fallback)"
	case c.Kind == cct.MetricUnavailable:
		return c.Name + " (unavailable: not measured, all 0)"
	}
	return c.Name
}

// Format writes value v of the column: the number, and for a sampled
// column the samples it stands for.
func (c Column) Format(v uint64) string {
	if c.Sampled != nil {
		return c.Sampled.FormatSampled(v)
	}
	return strconv.FormatUint(v, 10)
}

// Unit is what the column counts, for totals.
func (c Column) Unit() string {
	switch {
	case c.Sampled != nil:
		return c.Sampled.Unit
	case c.Derived:
		return "instructions"
	case c.Name == cct.FreqMetric:
		return "path executions"
	case c.Name == "tsc":
		return "ticks"
	}
	return c.Name
}

// A Module is one instrumented object of the process (decision 81): the
// executable or a shared object, Model.Modules in the profile's order
// (by tag, the executable first). A function is identified by (module,
// function): FuncID.
type Module struct {
	// Tag is the module's tag in the profile (0 for the executable);
	// the profile's function ids are Tag<<cct.FidBits | local index.
	Tag uint32
	// Name is the file's base name (libz.so.1), shown as module!func
	// when the profile has more than one module.
	Name string
	// Path is the instrumented file the metadata was read from; Loaded
	// the path the profile recorded (empty for an executable-only
	// profile), Flags its module flags.
	Path   string
	Loaded string
	Flags  cct.ModuleFlags
	Bias   uint64
	// BuildID is the instrumentation's id (meta.Table.InstrID), which the
	// profile names.
	BuildID []byte
	Table   *meta.Table
	// Funcs holds the counts of each function of Table.Funcs, by index.
	Funcs []FuncProfile
	// Debug is the DWARF of the module's original code (nil without),
	// Symbols its ELF function symbols, File the ELF file.
	Debug   *DebugInfo
	Symbols *Symbols
	File    *elf.File
	// DebugSource says where Debug came from when the binary has no DWARF
	// of its own (a separate debug file), and why candidates were refused.
	DebugSource DebugSource
}

// A ModuleFile is the instrumented file of one module of a profile, with
// its metadata (LoadMeta).
type ModuleFile struct {
	Path  string
	Table *meta.Table
	File  *elf.File // nil when only the metadata is at hand
}

// A FuncID names a function of the model: the module (index in
// Model.Modules) and the function's index in that module's metadata.
type FuncID struct {
	Module uint32
	Func   uint32
}

// A Model is a profile over the metadata of the binary that wrote it:
// per function block, edge and path counts (Module.Funcs), the calling
// contexts with their paths and metrics (Nodes, threads merged by
// matching (function, call site) chains from the root, cct.FoldThreads),
// and the stacks the exporters write (Stacks). Every path in it is
// expanded by meta.Table.ExpandPath, once.
type Model struct {
	Binary  string
	Modules []Module
	// Table, Debug, Symbols and File are Modules[0]'s, the
	// executable's: the one module profiles have today. Per-function data
	// is reached by FuncID (Func, Profile, FuncIDs), never through them.
	Table   *meta.Table
	Debug   *DebugInfo
	Symbols *Symbols
	File    *elf.File

	Metrics  []cct.Metric // as in the profile; Metrics[0] is "freq"
	Columns  []Column     // the metrics, then the derived insns
	Threads  int          // threads merged
	FlowOnly bool         // no calling context: every node is a root
	Stats    map[string]uint64
	// Names says how the views show function names (names.go); the
	// zero value demangles.
	Names NameOptions
	// LatencyCol is the column of the metric the paths' latency
	// distributions count (CPath.Latency, decision 93), 0 when the
	// profile has none.
	LatencyCol int

	Nodes []CNode
	Roots []int
	// Total holds per column the sum of Excl over the nodes (and so the
	// sum of Incl over the roots).
	Total []uint64
	// Partials of activations that had no record (the runtime's arena was
	// full) belong to no context: their count and their instructions. In
	// a flow-only profile they go to their function's root.
	UnattributedPartials, UnattributedInsns uint64
	// Samples says what the profile sampled (decision 92); nil when it
	// did not.
	Samples *SampleInfo

	// stacks has one entry per record of the folded calling-context tree
	// (in a flow-only profile, one per function that ran), in record
	// order, then one per function with partial paths that had no record;
	// built by Stacks on first use from src, with the filters made
	// before (stacks.go).
	stacks       []ProfileStack
	stacksBuilt  bool
	src          *stackSource
	stackFilters []stackFilter

	tagIndex map[uint32]uint32 // module tag → index in Modules
	hidden   map[uint32]bool   // modules FilterModules took out
}

// NewModel lays profile p over the metadata t of binary (ELF file f, nil
// when only the metadata is at hand: no lines, symbols or code). p must be
// valid (CheckValid; the reader and Merge return only such profiles); it
// is checked against t here: function indices, call sites, path ids and
// partial blocks. A profile whose instruction count overflows 64 bits is
// refused.
func NewModel(binary string, t *meta.Table, p *cct.Profile, f *elf.File) (*Model, error) {
	return NewModelWith(binary, t, p, f, ModelOptions{})
}

// ModelOptions are the choices of NewModelWith.
type ModelOptions struct {
	// Debug says where to look for separate debug info when the binary
	// has no DWARF (debugfile.go); the zero value searches SystemDebugDir.
	Debug DebugOptions
	// Libs holds, by tag, the files of the profile's modules other than
	// the executable (OpenModules finds them).
	Libs map[uint32]ModuleFile
	// FunctionsOnly leaves the calling contexts out (Nodes, Roots and
	// Total empty, no stacks): the model of the views that read only
	// functions (PathsText), a quarter less time and memory on a
	// whole-process profile. A sampled profile gets its contexts all the
	// same: its samples are attributed through them (decision 139).
	// Nor does it count blocks and edges (FuncProfile.Blocks and Edges
	// stay zero, PartialUnknown too): its paths are expanded only where
	// a view shows their blocks.
	FunctionsOnly bool
}

// NewModelWith is NewModel with options. When f has no DWARF, the DWARF
// and symbols come from its separate debug file, if one is found
// (Module.DebugSource), and functions the metadata calls sub_<hex> take
// that file's symbol names.
func NewModelWith(binary string, t *meta.Table, p *cct.Profile, f *elf.File, o ModelOptions) (*Model, error) {
	m := &Model{Binary: binary, Metrics: p.Metrics, Threads: len(p.Threads), LatencyCol: p.LatencyMetric,
		FlowOnly: p.Flags&cct.FlagFlowOnly != 0, Stats: p.Stats, tagIndex: map[uint32]uint32{}}
	entries := p.Modules
	// checks holds each module's checkModules error.
	var checks []error
	if entries == nil { // an executable-only profile
		if err := checkMatch(binary, t, p); err != nil {
			return nil, err
		}
		entries = []cct.Module{{Tag: 0, Flags: cct.ModuleFlagExecutable, BuildID: p.BuildID}}
	} else {
		// Every module at once, each error returned where its module's
		// turn comes below.
		files := make([]ModuleFile, len(entries))
		for i := range entries {
			if entries[i].Tag == 0 {
				files[i] = ModuleFile{Path: binary, Table: t}
			} else {
				files[i] = o.Libs[entries[i].Tag]
			}
		}
		checks = checkModules(entries, files, p)
	}
	for i := range entries {
		e := &entries[i]
		mf := ModuleFile{Path: binary, Table: t, File: f}
		if e.Tag != 0 {
			var ok bool
			if mf, ok = o.Libs[e.Tag]; !ok || mf.Table == nil {
				return nil, fmt.Errorf("module %s (tag %d): no instrumented file for it (the profile recorded %q; give it with --lib)", e.Name(), e.Tag, e.Path)
			}
		} else if t == nil {
			return nil, fmt.Errorf("module %s (tag 0, the executable): no instrumented file for it (give it with --binary)", e.Name())
		}
		if p.Modules != nil {
			if len(mf.Table.InstrID) > 0 && string(mf.Table.InstrID) != string(e.BuildID) {
				return nil, fmt.Errorf("module %s (tag %d): %s has build-id %x, the profile's module has %x: not the file that ran", e.Name(), e.Tag, mf.Path, mf.Table.InstrID, e.BuildID)
			}
			if err := checks[i]; err != nil {
				return nil, err
			}
		}
		mod := Module{Tag: e.Tag, Name: e.Name(), Path: mf.Path, Loaded: e.Path, Flags: e.Flags, Bias: e.Bias,
			BuildID: mf.Table.InstrID, Table: mf.Table, File: mf.File}
		if e.Path == "" {
			mod.Name = baseName(mf.Path)
		}
		if mf.File != nil {
			d := loadDebug(mf.Path, mf.File, mf.Table.OrigBuildID, o.Debug)
			mod.Debug, mod.Symbols, mod.DebugSource = d.Debug, d.Symbols, d.Source
			mod.Table = nameStripped(mod.Table, d.names)
		}
		m.tagIndex[e.Tag] = uint32(len(m.Modules))
		m.Modules = append(m.Modules, mod)
	}
	if len(m.Modules) > 1 {
		// Names are module!func (qualifyNames): every view shows them so.
		for k := range m.Modules {
			m.Modules[k].Table = qualifyNames(m.Modules[k].Table, m.Modules[k].Name)
		}
	}
	if len(m.Modules) > 0 {
		x := &m.Modules[0]
		m.Table, m.Debug, m.Symbols, m.File = x.Table, x.Debug, x.Symbols, x.File
	}
	contexts := !o.FunctionsOnly || p.Sampling != nil
	// Per-function sums are the same over the threads as over their
	// folded tree (every fold is a sum), so a model of functions alone
	// reads the threads as they are: folding copied every record and
	// path of the profile (11 ms of a cached blpp run's 120, decision
	// 164).
	folded := p
	if contexts {
		folded = p.FoldThreads()
	}
	// The model keeps only the folded profile: let the collector have
	// p's records (the caller holds them no longer, cmd/blpp liveOnly).
	p = nil
	if contexts {
		m.numberRan(folded) // buildFuncs, with blocks, relies on it too
		if err := m.buildContexts(folded); err != nil {
			return nil, err
		}
	}
	if err := m.buildFuncs(folded, !o.FunctionsOnly); err != nil {
		return nil, err
	}
	if !contexts {
		return m, nil
	}
	m.src = newStackSource(folded)
	if s := m.Samples; s != nil && len(folded.Threads) > 0 {
		// The sampled values of the stacks are the contexts' before any
		// FilterModules renumbers them.
		n := min(len(m.Nodes), len(folded.Threads[0].Records))
		m.src.sampled = make([]uint64, n)
		for i := range n {
			m.src.sampled[i] = m.Nodes[i].Excl[s.Column]
		}
	}
	return m, nil
}

// less orders functions by module, then index.
func (a FuncID) less(b FuncID) bool {
	if a.Module != b.Module {
		return a.Module < b.Module
	}
	return a.Func < b.Func
}

// id names the function of global function id fid of the profile (the
// profile is checked: its tag is a module's).
func (m *Model) id(fid uint32) FuncID {
	return FuncID{Module: m.tagIndex[cct.FidTag(fid)], Func: cct.FidLocal(fid)}
}

// Module returns the module of function id.
func (m *Model) Module(id FuncID) *Module { return &m.Modules[id.Module] }

// siteLines is the DWARF of the module of n's caller, where n's call
// site is (n's own module's for a root).
func (m *Model) siteLines(n *CNode) *DebugInfo {
	if n.Parent >= 0 && n.Parent < len(m.Nodes) {
		return m.Modules[m.Nodes[n.Parent].Module].Debug
	}
	return m.Modules[n.Module].Debug
}

// debugOf is the DWARF of function id's module (nil without).
func (m *Model) debugOf(id FuncID) *DebugInfo { return m.Modules[id.Module].Debug }

// Func returns the metadata of function id.
func (m *Model) Func(id FuncID) *meta.Func { return &m.Modules[id.Module].Table.Funcs[id.Func] }

// Profile returns the counts of function id.
func (m *Model) Profile(id FuncID) *FuncProfile { return &m.Modules[id.Module].Funcs[id.Func] }

// ExpandPath expands path id of function fn (meta.Table.ExpandPath).
func (m *Model) ExpandPath(fn FuncID, id uint64) (*meta.Expansion, error) {
	return m.Modules[fn.Module].Table.ExpandPath(fn.Func, id)
}

// FuncIDs lists every function of the model, module by module, in
// metadata order (of the modules FilterModules kept).
func (m *Model) FuncIDs() []FuncID {
	var out []FuncID
	for k := range m.Modules {
		if m.hidden[uint32(k)] {
			continue
		}
		for i := range m.Modules[k].Table.Funcs {
			out = append(out, FuncID{Module: uint32(k), Func: uint32(i)})
		}
	}
	return out
}

// FuncName is the name of function id as the metadata gives it (the
// symbol table's, or sub_<hex> in stripped code).
func (m *Model) FuncName(id FuncID) string { return m.Func(id).Name }

func (m *Model) column(name string) (int, bool) {
	for i, col := range m.Columns {
		if col.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Column returns the index of the named metric; the error lists the
// metrics there are.
func (m *Model) Column(name string) (int, error) {
	if i, ok := m.column(name); ok {
		return i, nil
	}
	names := make([]string, len(m.Columns))
	for i, col := range m.Columns {
		names[i] = col.Name
	}
	return -1, fmt.Errorf("no metric %q in this profile (there are: %s)", name, strings.Join(names, ", "))
}

var errInsnsOverflow = fmt.Errorf("the profile's instruction count (%s) overflows 64 bits", MetricInsns)

// mulAdd returns acc + a*b, or an error when it overflows.
func mulAdd(acc, a, b uint64) (uint64, error) {
	hi, lo := bits.Mul64(a, b)
	s, carry := bits.Add64(acc, lo, 0)
	if hi != 0 || carry != 0 {
		return 0, errInsnsOverflow
	}
	return s, nil
}

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// LoadMeta reads the metadata table of an instrumented binary.
func LoadMeta(path string) (*meta.Table, *elf.File, error) { return LoadMetaOf(path, 0, nil) }

// LoadMetaOf is LoadMeta of the graphs of module tag's functions in need
// alone (nil: all): the others are Skipped (meta.DecodeSome).
func LoadMetaOf(path string, tag uint32, need FuncSet) (*meta.Table, *elf.File, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	s := f.Section(meta.SectionName)
	if s == nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: no %s section: not a binary instrumented by blpp rewrite", path, meta.SectionName)
	}
	t, err := decodeSection(path, s, need.of(tag))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return t, f, nil
}

// decodeSection decodes the metadata section s of the file at path. It
// reads the file's pages in place where it can: a large library's
// metadata is hundreds of megabytes, which a copy into the heap faults
// in a page at a time, and Decode keeps nothing of the bytes.
func decodeSection(path string, s *elf.Section, need func(uint32) bool) (*meta.Table, error) {
	if t, ok, err := decodeMapped(path, s, need); ok {
		return t, err
	}
	d, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, meta.SectionName, err)
	}
	t, err := meta.DecodeSome(d, need)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// decodeMapped decodes section s from a read-only mapping of the file;
// ok is false where it cannot map it (decodeSection then reads it). A
// file cut short while mapped faults: the fault is an error, not a
// crash.
func decodeMapped(path string, s *elf.Section, need func(uint32) bool) (t *meta.Table, ok bool, err error) {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 || s.Size == 0 || s.Size > 1<<40 || s.Offset > 1<<48 {
		return nil, false, nil
	}
	file, oerr := os.Open(path)
	if oerr != nil {
		return nil, false, nil
	}
	defer file.Close()
	if st, serr := file.Stat(); serr != nil || uint64(st.Size()) < s.Offset+s.Size {
		return nil, false, nil // s.Data says what is wrong
	}
	page := uint64(os.Getpagesize())
	start := s.Offset &^ (page - 1)
	view, merr := syscall.Mmap(int(file.Fd()), int64(start), int(s.Offset-start+s.Size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if merr != nil {
		return nil, false, nil
	}
	defer syscall.Munmap(view)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			t, ok, err = nil, true, fmt.Errorf("%s: %s: the file changed while it was read (%v)", path, meta.SectionName, r)
		}
	}()
	if t, err = meta.DecodeSome(view[s.Offset-start:], need); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return t, true, nil
}

// checkMatch refuses a profile of another instrumented binary, or one
// whose records name functions the binary does not have, or give paths
// or partial activations to a function it does not instrument. A record
// of an uninstrumented function whose entries the binary counts holds
// only its calls (decision 70).
func checkMatch(binary string, t *meta.Table, p *cct.Profile) error {
	if len(t.InstrID) > 0 && string(p.BuildID) != string(t.InstrID) {
		return fmt.Errorf("the profile was written by another instrumented binary (build-id %x), not %s (build-id %x)", p.BuildID, binary, t.InstrID)
	}
	if n := len(t.Funcs); n > 0 {
		instrumented := func(fn uint32) bool { return int(fn) < n && t.Funcs[fn].Instrumented }
		for _, th := range p.Threads {
			for _, r := range th.Records {
				switch {
				case int(r.Func) >= n:
					return fmt.Errorf("the profile names function %d, but %s has %d functions", r.Func, binary, n)
				case !t.Funcs[r.Func].Instrumented && !t.Funcs[r.Func].EntriesCounted:
					return fmt.Errorf("the profile names function %d (%s), which %s does not instrument and whose entries it does not count", r.Func, t.Funcs[r.Func].Name, binary)
				case !t.Funcs[r.Func].Instrumented && len(r.Paths) > 0:
					return fmt.Errorf("the profile gives paths to function %d (%s), which %s does not instrument", r.Func, t.Funcs[r.Func].Name, binary)
				}
			}
			for _, qs := range [][]cct.Partial{th.Partials, th.Prefixes} {
				for _, q := range qs {
					if !instrumented(q.Func) {
						return fmt.Errorf("the profile has a partial path of function %d, which %s does not instrument", q.Func, binary)
					}
				}
			}
		}
	}
	return nil
}

// checkModules is checkMatch for the functions of each module of a
// profile with modules (entries, whose files are files; one without a
// table is not checked): the records and partials whose function has
// the module's tag, then cct.Profile.CheckModules. errs[i] is module
// i's first misfit. One pass over the records for all the modules: a
// whole-process profile's five modules each scanned them twice.
func checkModules(entries []cct.Module, files []ModuleFile, p *cct.Profile) (errs []error) {
	errs = make([]error, len(entries))
	what := func(i int) string {
		e := &entries[i]
		return fmt.Sprintf("module %s (tag %d, %s)", e.Name(), e.Tag, files[i].Path)
	}
	// The modules of each tag (one in a valid profile), chained from
	// head by next.
	head := make([]int32, cct.MaxTag+1)
	for i := range head {
		head[i] = -1
	}
	next := make([]int32, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		if tag := entries[i].Tag; tag <= cct.MaxTag && files[i].Table != nil {
			next[i], head[tag] = head[tag], int32(i)
		}
	}
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for k := head[cct.FidTag(r.Func)]; k >= 0; k = next[k] {
				if errs[k] != nil {
					continue
				}
				fs, fn := files[k].Table.Funcs, cct.FidLocal(r.Func)
				switch {
				case int(fn) >= len(fs):
					errs[k] = fmt.Errorf("the profile names function %d of %s, which has %d functions", fn, what(int(k)), len(fs))
				case !fs[fn].Instrumented && !fs[fn].EntriesCounted:
					errs[k] = fmt.Errorf("the profile names function %d (%s) of %s, which it does not instrument and whose entries it does not count", fn, fs[fn].Name, what(int(k)))
				case !fs[fn].Instrumented && len(r.Paths) > 0:
					errs[k] = fmt.Errorf("the profile gives paths to function %d (%s) of %s, which it does not instrument", fn, fs[fn].Name, what(int(k)))
				}
			}
		}
		for _, qs := range [][]cct.Partial{th.Partials, th.Prefixes} {
			for _, q := range qs {
				for k := head[cct.FidTag(q.Func)]; k >= 0; k = next[k] {
					if errs[k] != nil {
						continue
					}
					fs, fn := files[k].Table.Funcs, cct.FidLocal(q.Func)
					if int(fn) >= len(fs) || !fs[fn].Instrumented {
						errs[k] = fmt.Errorf("the profile has a partial path of function %d of %s, which it does not instrument", fn, what(int(k)))
					}
				}
			}
		}
	}
	var mods []cct.ModuleFuncs
	var of []int // the module of each of mods
	for i := range entries {
		t := files[i].Table
		if t == nil || errs[i] != nil {
			continue
		}
		funcs := make([]cct.FuncInfo, len(t.Funcs))
		for j := range t.Funcs {
			f := &t.Funcs[j]
			funcs[j] = cct.FuncInfo{NumPaths: f.NumPaths, NumBlocks: uint32(len(f.Blocks)), NumCallSites: uint32(len(f.CallSites))}
		}
		mods, of = append(mods, cct.ModuleFuncs{Tag: entries[i].Tag, Funcs: funcs}), append(of, i)
	}
	for k, err := range p.CheckModules(mods) {
		if err != nil {
			errs[of[k]] = fmt.Errorf("%s: %w", what(of[k]), err)
		}
	}
	return errs
}

// darkLabel says why an uninstrumented function was left out and how
// often it was entered (decision 70), for the text views.
func darkLabel(reason string, entries uint64) string {
	return fmt.Sprintf("uninstrumented (%s), entered %s", reason, plural(entries, "time", "times"))
}
