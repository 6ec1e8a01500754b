package report

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"blpp/cct"
	"blpp/meta"
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

// PathFunc is one function of the report.
type PathFunc struct {
	Name         string           `json:"name"`
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

	blockAddrs []uint64
	lines      []string
}

// PathDoc is the `blpp report --format json` document: block and path
// counts of every function, addresses in the ORIGINAL binary.
type PathDoc struct {
	Binary    string     `json:"binary"`
	Metrics   []string   `json:"metrics"`
	Functions []PathFunc `json:"functions"`
	// TotalPaths is the number of path executions in the program.
	TotalPaths uint64 `json:"total_path_executions"`
	// Contexts is the calling-context tree, threads merged
	// (ContextTree.Contexts). MakePaths leaves it empty; `blpp report`
	// fills it.
	Contexts []Context `json:"contexts"`
	// Runtime is the runtime's statistics from the profile (what took
	// the slow paths, memory, and any loss: see RuntimeWarnings).
	Runtime map[string]uint64 `json:"runtime_stats,omitempty"`
}

// LoadMeta reads the metadata table of an instrumented binary.
func LoadMeta(path string) (*meta.Table, *elf.File, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	s := f.Section(meta.SectionName)
	if s == nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: no %s section: not a binary instrumented by blpp rewrite", path, meta.SectionName)
	}
	d, err := s.Data()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %s: %w", path, meta.SectionName, err)
	}
	t, err := meta.Decode(d)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, f, nil
}

// MakePaths builds the report from the metadata and one (merged) profile.
// Path numbers are expanded to blocks by regenerating each function's
// Ball-Larus numbering from the stored graph; block counts add every
// path's count to each block it passes through, plus the executed
// prefixes of partial paths.
func MakePaths(binary string, t *meta.Table, p *cct.Profile, lines *LineTable) (*PathDoc, error) {
	if err := checkMatch(binary, t, p); err != nil {
		return nil, err
	}
	d := &PathDoc{Binary: binary, Functions: []PathFunc{}, Contexts: []Context{}, Runtime: p.Stats}
	for _, m := range p.Metrics {
		d.Metrics = append(d.Metrics, m.Name)
	}
	flat := p.Flat()
	entries := UninstrumentedEntries(t, p)
	partial := map[uint32]map[[2]int64]uint64{}
	prefix := map[uint32]map[[2]int64]uint64{} // a fork child's (cct.Thread.Prefixes)
	for _, th := range p.Threads {
		byFuncStop(partial, th.Partials)
		byFuncStop(prefix, th.Prefixes)
	}
	for fid := range t.Funcs {
		mf := &t.Funcs[fid]
		pf := PathFunc{Name: mf.Name, Entry: hex(mf.Entry), Instrumented: mf.Instrumented, Reason: mf.Reason,
			Blocks: []PathBlockCount{}, Paths: []PathEntry{}}
		if !mf.Instrumented {
			pf.EntriesCounted = mf.EntriesCounted
			pf.Entries = entries[uint32(fid)]
			d.Functions = append(d.Functions, pf)
			continue
		}
		if _, err := t.FuncNumbering(uint32(fid)); err != nil {
			return nil, err
		}
		counts := make([]uint64, len(mf.Blocks))
		ids := make([]uint64, 0, len(flat[uint32(fid)]))
		for id := range flat[uint32(fid)] {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			c := flat[uint32(fid)][id].Count
			if c == 0 {
				continue
			}
			e, err := t.ExpandPath(uint32(fid), id)
			if err != nil {
				return nil, err
			}
			pe := PathEntry{ID: id, Count: c}
			for _, bl := range e.Blocks {
				counts[bl] += c
				pe.Blocks = append(pe.Blocks, hex(mf.Blocks[bl].Addr))
			}
			pf.Paths = append(pf.Paths, pe)
			pf.Executions += c
		}
		for key, c := range partial[uint32(fid)] {
			e, err := expandPartial(t, &cct.Partial{Func: uint32(fid), Block: uint32(key[0]), Reg: key[1]})
			if err != nil {
				return nil, err
			}
			pf.Partial += c
			if e == nil {
				pf.PartialUnknown += c
				continue
			}
			for _, bl := range e.Blocks {
				counts[bl] += c
			}
		}
		// Blocks a fork child's live activations ran in the parent: the
		// child's paths include them, the parent's profile counts them.
		for key, c := range prefix[uint32(fid)] {
			e, err := expandPartial(t, &cct.Partial{Func: uint32(fid), Block: uint32(key[0]), Reg: key[1]})
			if err != nil {
				return nil, err
			}
			if e != nil {
				for _, bl := range e.Blocks {
					counts[bl] -= min(counts[bl], c)
				}
			}
		}
		for i, bl := range mf.Blocks {
			pf.Blocks = append(pf.Blocks, PathBlockCount{Addr: hex(bl.Addr), Count: counts[i]})
			pf.blockAddrs = append(pf.blockAddrs, bl.Addr)
		}
		d.TotalPaths += pf.Executions
		d.Functions = append(d.Functions, pf)
	}
	return d, nil
}

// byFuncStop adds partial-shaped entries to m: per function, counts by
// (stopping block, path register).
func byFuncStop(m map[uint32]map[[2]int64]uint64, qs []cct.Partial) {
	for _, q := range qs {
		if m[q.Func] == nil {
			m[q.Func] = map[[2]int64]uint64{}
		}
		m[q.Func][[2]int64{int64(q.Block), q.Reg}] += q.Count
	}
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

// UninstrumentedEntries sums, per uninstrumented function, the calls of
// its records over every thread and context: how often it was entered,
// where the rewriter counted that (decision 70).
func UninstrumentedEntries(t *meta.Table, p *cct.Profile) map[uint32]uint64 {
	out := map[uint32]uint64{}
	for _, th := range p.Threads {
		for _, r := range th.Records {
			if int(r.Func) < len(t.Funcs) && !t.Funcs[r.Func].Instrumented {
				out[r.Func] += r.Calls
			}
		}
	}
	return out
}

// darkLabel says why an uninstrumented function was left out and how
// often it was entered (decision 70), for the text views.
func darkLabel(reason string, entries uint64) string {
	return fmt.Sprintf("uninstrumented (%s), entered %s", reason, plural(entries, "time", "times"))
}

// PathsJSON writes the document.
func PathsJSON(w io.Writer, d *PathDoc) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// LineTable maps addresses of the original code to file:line through the
// DWARF line tables that stay in the instrumented binary.
type LineTable struct {
	rows []lineRow
}

type lineRow struct {
	addr uint64
	file string
	line int
}

// NewLineTable reads the line tables of f; nil when f has no DWARF.
func NewLineTable(f *elf.File) *LineTable {
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	lt := &LineTable{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			switch {
			case le.EndSequence:
				// Code past a sequence's end has no line (until another
				// sequence starts there).
				lt.rows = append(lt.rows, lineRow{addr: le.Address})
			case le.File != nil:
				lt.rows = append(lt.rows, lineRow{le.Address, le.File.Name, le.Line})
			}
		}
	}
	sort.SliceStable(lt.rows, func(i, j int) bool { return lt.rows[i].addr < lt.rows[j].addr })
	if len(lt.rows) == 0 {
		return nil
	}
	return lt
}

// At returns "file:line" for addr, or "".
func (lt *LineTable) At(addr uint64) string {
	if lt == nil {
		return ""
	}
	i := sort.Search(len(lt.rows), func(i int) bool { return lt.rows[i].addr > addr }) - 1
	// Several rows may share an address (an end marker and the next
	// sequence's start): prefer a row with a line.
	for i > 0 && lt.rows[i].file == "" && lt.rows[i-1].addr == lt.rows[i].addr {
		i--
	}
	if i < 0 || lt.rows[i].file == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", shortFile(lt.rows[i].file), lt.rows[i].line)
}

func shortFile(f string) string {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i] == '/' {
			return f[i+1:]
		}
	}
	return f
}

// writeBlockLine writes one block of an expanded path: its original
// address and, when the line tables know it, file:line.
func writeBlockLine(w io.Writer, indent string, addr uint64, lines *LineTable) {
	if loc := lines.At(addr); loc != "" {
		fmt.Fprintf(w, "%s%s  %s\n", indent, hex(addr), loc)
	} else {
		fmt.Fprintf(w, "%s%s\n", indent, hex(addr))
	}
}

// PathsText writes the hottest paths across the program (function, path
// id, count, share of all path executions, blocks with file:line) and the
// per-function totals.
func PathsText(w io.Writer, d *PathDoc, top int, lines *LineTable) error {
	type hp struct {
		f *PathFunc
		p *PathEntry
	}
	var all []hp
	for i := range d.Functions {
		f := &d.Functions[i]
		for j := range f.Paths {
			all = append(all, hp{f, &f.Paths[j]})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].p.Count > all[j].p.Count })
	if top > 0 && len(all) > top {
		all = all[:top]
	}
	pct := func(c uint64) float64 {
		if d.TotalPaths == 0 {
			return 0
		}
		return 100 * float64(c) / float64(d.TotalPaths)
	}
	fmt.Fprintf(w, "%s: %d path executions\n\nhottest paths:\n", d.Binary, d.TotalPaths)
	for i, h := range all {
		fmt.Fprintf(w, "%3d. %s path %d: %d executions (%.2f%%)\n", i+1, h.f.Name, h.p.ID, h.p.Count, pct(h.p.Count))
		for _, b := range h.p.Blocks {
			var a uint64
			fmt.Sscanf(b, "0x%x", &a)
			writeBlockLine(w, "       ", a, lines)
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
		fmt.Fprintf(tw, "  %d\t%.2f%%\t%d\t%s\n", f.Executions, pct(f.Executions), len(f.Paths), f.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(w, "  ... and %d more functions (--top 0 lists all)\n", more)
	}
	return darkText(w, d, top)
}

// darkText lists the uninstrumented functions that were entered, most
// entered first.
func darkText(w io.Writer, d *PathDoc, top int) error {
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
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", f.Entries, f.Name, darkLabel(f.Reason, f.Entries))
	}
	return tw.Flush()
}
