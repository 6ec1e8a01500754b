package report

import (
	"bytes"
	"cmp"
	enchex "encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// PathBlockCount is a block and how often it executed.
type PathBlockCount struct {
	Addr  string `json:"addr"`
	Count uint64 `json:"count"`
}

// PathEntry is one executed path.
type PathEntry struct {
	ID     uint64   `json:"id"`
	Count  uint64   `json:"count"`
	Blocks []string `json:"blocks"`
}

// PathModule is one module of the profile in the JSON (decision 81).
type PathModule struct {
	// Name is the file's base name, which functions' "module" give.
	Name string `json:"name"`
	// Path is the instrumented file the metadata came from.
	Path    string `json:"path"`
	BuildID string `json:"build_id"` // of the instrumented file, hex
	Tag     uint32 `json:"tag"`
	// Instrumented: blpp rewrote the module (every module a profile
	// lists is; the field leaves room for modules seen but not counted).
	Instrumented bool `json:"instrumented"`
	Executable   bool `json:"executable,omitempty"`
	Unloaded     bool `json:"unloaded,omitempty"` // dlclose'd before the profile was written
}

// PathFunc is one function of the report.
type PathFunc struct {
	// Name is the symbol's name, without the module.
	Name string `json:"name"`
	// Module is the name of the function's module (PathDoc.Modules).
	Module string `json:"module"`
	// Demangled is Name demangled, when it is a C++ or Rust name.
	Demangled    string           `json:"demangled,omitempty"`
	Entry        string           `json:"entry"`
	Instrumented bool             `json:"instrumented"`
	Reason       string           `json:"reason,omitempty"`
	Blocks       []PathBlockCount `json:"blocks"`
	Paths        []PathEntry      `json:"paths"`
	// Executions is the number of completed paths of the function.
	Executions uint64 `json:"executions"`
	// Partial counts activations that ended without a path end (their
	// executed prefix is counted in Blocks); PartialUnknown those of them
	// whose stopping block is not known (not counted in Blocks).
	Partial        uint64 `json:"partial,omitempty"`
	PartialUnknown uint64 `json:"partial_unknown,omitempty"`
	// EntriesCounted says, for an uninstrumented function, that the
	// rewriter counted its entries (decision 70); Entries is then how
	// often it was entered.
	EntriesCounted bool   `json:"entries_counted,omitempty"`
	Entries        uint64 `json:"entries,omitempty"`

	shown string // the name the text views show: module!name with several modules
	id    FuncID
}

// PathDoc is the `blpp report --format json` document: block and path
// counts of every function, addresses in the ORIGINAL binary.
type PathDoc struct {
	Binary  string   `json:"binary"`
	Metrics []string `json:"metrics"`
	// Modules lists the profile's modules, the executable first.
	Modules   []PathModule `json:"modules"`
	Functions []PathFunc   `json:"functions"`
	// TotalPaths is the number of path executions in the program.
	TotalPaths uint64 `json:"total_path_executions"`
	// Contexts is the calling-context tree, threads merged
	// (Model.Contexts).
	Contexts []Context `json:"contexts"`
	// Runtime is the runtime's statistics from the profile (what took
	// the slow paths, memory, and any loss: see RuntimeWarnings).
	Runtime map[string]uint64 `json:"runtime_stats,omitempty"`
	// LatencyMetric names the metric whose per-execution distributions
	// the contexts' paths carry (decision 93); omitted when none.
	LatencyMetric string `json:"latency_metric,omitempty"`
	// TSCTicksPerNS is the time-stamp counter's rate in the run
	// (TicksPerNS), omitted when unknown.
	TSCTicksPerNS float64 `json:"tsc_ticks_per_ns,omitempty"`
}

// PathDoc makes the JSON document of the model: per function its block
// and path counts (paths in id order, those that ran), partial
// activations and, for a function left uninstrumented, its entries;
// then the contexts.
func (m *Model) PathDoc() *PathDoc {
	d := m.pathDoc(false)
	d.Contexts = m.Contexts()
	return d
}

// pathDoc is PathDoc without the contexts. For the text view (text),
// it leaves out what only the JSON shows: demangled names, entries, and
// block addresses and counts as hex strings (a whole-process profile has
// millions of blocks, decision 137), and the functions that did not run.
func (m *Model) pathDoc(text bool) *PathDoc {
	d := m.pathHead()
	for _, fid := range m.FuncIDs() {
		if fp := m.Profile(fid); text && fp.Executions == 0 && fp.Partial == 0 && fp.Calls == 0 {
			continue // the text lists what ran alone
		}
		pf := m.pathFunc(fid, text)
		d.TotalPaths += pf.Executions
		d.Functions = append(d.Functions, pf)
	}
	return d
}

// pathHead is the document without functions and contexts.
func (m *Model) pathHead() *PathDoc {
	d := &PathDoc{Binary: m.Binary, Functions: []PathFunc{}, Contexts: []Context{}, Runtime: m.Stats}
	for _, x := range m.Metrics {
		d.Metrics = append(d.Metrics, x.Name)
	}
	if m.LatencyCol > 0 && m.LatencyCol < len(m.Metrics) {
		// Metrics, not Columns: a model of functions alone has no
		// columns (ModelOptions.FunctionsOnly).
		d.LatencyMetric = m.Metrics[m.LatencyCol].Name
	}
	d.TSCTicksPerNS = TicksPerNS(m.Stats)
	for k := range m.Modules {
		x := &m.Modules[k]
		d.Modules = append(d.Modules, PathModule{Name: x.Name, Path: x.Path, BuildID: enchex.EncodeToString(x.BuildID), Tag: x.Tag, Instrumented: true,
			Executable: x.Flags&cct.ModuleFlagExecutable != 0, Unloaded: x.Flags&cct.ModuleFlagUnloaded != 0})
	}
	return d
}

// pathFunc is function fid in the document (pathDoc says what text
// leaves out).
func (m *Model) pathFunc(fid FuncID, text bool) PathFunc {
	mf := m.Func(fid)
	fp := m.Profile(fid)
	pf := PathFunc{shown: mf.Name, id: fid, Module: m.Modules[fid.Module].Name, Instrumented: mf.Instrumented, Reason: mf.Reason,
		Blocks: []PathBlockCount{}, Paths: []PathEntry{}}
	if !text {
		pf.Name, pf.Demangled, pf.Entry = RawName(mf.Name), demangled(mf.Name), hex(mf.Entry)
	}
	if !mf.Instrumented {
		pf.EntriesCounted = mf.EntriesCounted
		pf.Entries = fp.Calls
		return pf
	}
	ids := make([]uint64, 0, len(fp.Paths))
	for id, c := range fp.Paths {
		if c != 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		pe := PathEntry{ID: id, Count: fp.Paths[id]}
		if !text { // the text shows the blocks of its top paths alone (PathsText)
			e, _ := m.ExpandPath(fid, id) // expanded by NewModel
			for _, bl := range e.Blocks {
				pe.Blocks = append(pe.Blocks, hex(mf.Blocks[bl].Addr))
			}
		}
		pf.Paths = append(pf.Paths, pe)
	}
	pf.Executions, pf.Partial, pf.PartialUnknown = fp.Executions, fp.Partial, fp.PartialUnknown
	for i, bl := range mf.Blocks {
		if text {
			break
		}
		pf.Blocks = append(pf.Blocks, PathBlockCount{Addr: hex(bl.Addr), Count: fp.Blocks[i]})
	}
	return pf
}

// MakePaths builds the document of profile p of binary without its
// contexts: NewModel(binary, t, p, nil).PathDoc(), for callers that need
// only block and path counts (the corpus oracles).
func MakePaths(binary string, t *meta.Table, p *cct.Profile) (*PathDoc, error) {
	m, err := NewModel(binary, t, p, nil)
	if err != nil {
		return nil, err
	}
	return m.pathDoc(false), nil
}

// PathsJSON writes the document of `blpp report --format json`
// (Model.PathDoc).
//
// The functions and the contexts are written one at a time into the
// rest of the document, as json.Encoder with a two-space indent would
// have written them: a whole-process profile has hundreds of thousands of
// functions and millions of contexts, whose rendering took gigabytes
// (decision 139).
func PathsJSON(w io.Writer, m *Model) error {
	d := m.pathHead()
	fids := m.FuncIDs()
	for _, fid := range fids {
		if m.Func(fid).Instrumented {
			d.TotalPaths += m.Profile(fid).Executions
		}
	}
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return err
	}
	rest := head.Bytes()
	lists := []struct {
		mark string
		n    int
		item func(i int) any
	}{
		{"\n  \"functions\": []", len(fids), func(i int) any { return m.pathFunc(fids[i], false) }},
		{"\n  \"contexts\": []", len(m.Nodes), func(i int) any { return m.context(i) }},
	}
	for _, l := range lists {
		at := bytes.Index(rest, []byte(l.mark))
		if at < 0 {
			return fmt.Errorf("json: no %q in the document", l.mark)
		}
		at += len(l.mark) - 1 // before the ']'
		if _, err := w.Write(rest[:at]); err != nil {
			return err
		}
		rest = rest[at:]
		if l.n == 0 {
			continue // "[]", as the encoder writes an empty list
		}
		for i := range l.n {
			b, err := json.MarshalIndent(l.item(i), "    ", "  ")
			if err != nil {
				return err
			}
			sep := ",\n    "
			if i == 0 {
				sep = "\n    "
			}
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, "\n  "); err != nil {
			return err
		}
	}
	_, err := w.Write(rest)
	return err
}

// PathsText writes the hottest paths across the program (function, path
// id, count, share of all path executions, blocks with file:line) and the
// per-function totals.
func PathsText(w io.Writer, m *Model, o ViewOptions) error {
	d, top := m.pathDoc(true), o.Top
	type hp struct {
		f *PathFunc
		p *PathEntry
		i int // the order of the document, among equal counts
	}
	var all []hp
	for i := range d.Functions {
		f := &d.Functions[i]
		for j := range f.Paths {
			all = append(all, hp{f, &f.Paths[j], len(all)})
		}
	}
	// By count, the document's order among equals: a total order, so the
	// unstable sort gives the stable sort's result without its cost
	// (sort.SliceStable, by reflection, took a tenth of a small program's
	// run report).
	slices.SortFunc(all, func(a, b hp) int {
		if c := cmp.Compare(b.p.Count, a.p.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	if top > 0 && len(all) > top {
		all = all[:top]
	}
	pct := func(c uint64) float64 {
		if d.TotalPaths == 0 {
			return 0
		}
		return 100 * float64(c) / float64(d.TotalPaths)
	}
	fmt.Fprintf(w, "%s: %d path executions\n", d.Binary, d.TotalPaths)
	if s := m.Samples; s != nil {
		// Decision 92: where the time went is another view's.
		fmt.Fprintf(w, "%d samples of %s: --view hot --metric %s gives the hottest paths by sampled time\n", s.Recorded, s.Event, s.Event)
	}
	fmt.Fprintf(w, "\nhottest paths:\n")
	for i, h := range all {
		fmt.Fprintf(w, "%3d. %s path %d: %s (%.2f%%)\n", i+1, m.DisplayName(h.f.shown), h.p.ID, plural(h.p.Count, "execution", "executions"), pct(h.p.Count))
		e, err := m.ExpandPath(h.f.id, h.p.ID)
		if err != nil {
			return err
		}
		blocks := m.Func(h.f.id).Blocks
		for _, bl := range e.Blocks {
			writeBlockLine(w, "       ", blocks[bl].Addr, m.debugOf(h.f.id))
		}
	}
	fmt.Fprintln(w, "\nper function:")
	fs := make([]*PathFunc, 0, len(d.Functions))
	for i := range d.Functions {
		if d.Functions[i].Instrumented {
			fs = append(fs, &d.Functions[i])
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Executions > fs[j].Executions })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  executions\tshare\tdistinct paths\tfunction")
	shown, more := 0, 0
	for _, f := range fs {
		if f.Executions == 0 && f.Partial == 0 {
			continue
		}
		if top > 0 && shown >= top {
			more++
			continue
		}
		shown++
		fmt.Fprintf(tw, "  %d\t%.2f%%\t%d\t%s\n", f.Executions, pct(f.Executions), len(f.Paths), m.DisplayName(f.shown))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(w, "  ... and %d more functions (--top 0 lists all)\n", more)
	}
	return darkText(w, d, top, m.Names)
}

// darkText lists the uninstrumented functions that were entered, most
// entered first.
func darkText(w io.Writer, d *PathDoc, top int, o NameOptions) error {
	var fs []*PathFunc
	for i := range d.Functions {
		if f := &d.Functions[i]; !f.Instrumented && f.Entries > 0 {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Entries > fs[j].Entries })
	fmt.Fprintln(w, "\nuninstrumented functions entered:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  entries\tfunction\t")
	for k, f := range fs {
		if top > 0 && k >= top {
			fmt.Fprintf(tw, "  ... and %d more (--top 0 lists all)\n", len(fs)-k)
			break
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", f.Entries, DisplayName(f.shown, o), darkLabel(f.Reason, f.Entries))
	}
	return tw.Flush()
}
