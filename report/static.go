package report

// This file renders the static analysis (no profile): `blpp cfg` and
// `blpp stats`. The JSON schemas are documented in docs/formats.md.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/pathnum"
)

// hex is a as "%#x" writes it; reports make one per block of every
// function that ran (a tenth of the report's time on libLLVM with Sprintf).
func hex(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// StatsFunc is one row of `blpp stats --json`.
type StatsFunc struct {
	Name           string  `json:"name"`
	Demangled      string  `json:"demangled,omitempty"` // Name demangled, when it is a C++ or Rust name
	Entry          string  `json:"entry"`
	Size           uint64  `json:"size"`
	Blocks         int     `json:"blocks"`
	Edges          int     `json:"edges"`
	Loops          int     `json:"loops"`
	Paths          *uint64 `json:"paths"`
	Overflow       bool    `json:"path_overflow,omitempty"`
	Split          bool    `json:"split,omitempty"`
	Instrumentable bool    `json:"instrumentable"`
	Reason         string  `json:"reason"`
	Detail         string  `json:"detail,omitempty"`
	Fragments      int     `json:"fragments,omitempty"`
	Source         string  `json:"source"`
}

// StatsSummary totals a stats report.
type StatsSummary struct {
	Functions      int     `json:"functions"`
	Instrumentable int     `json:"instrumentable"`
	Share          float64 `json:"instrumentable_share"`
	Blocks         int     `json:"blocks"`
	Edges          int     `json:"edges"`
	Loops          int     `json:"loops"`
	Overflow       int     `json:"path_overflow"`
	// PLTStubs are listed in functions but not counted in Functions: they
	// are linker-made trampolines, not procedures of the program.
	PLTStubs int            `json:"plt_stubs"`
	Reasons  map[string]int `json:"reasons"`
}

// Stats is the `blpp stats --json` document.
type Stats struct {
	Binary    string       `json:"binary"`
	Kind      string       `json:"kind"`
	Static    bool         `json:"static"`
	Functions []StatsFunc  `json:"functions"`
	Summary   StatsSummary `json:"summary"`
	// Names says how StatsText shows function names.
	Names NameOptions `json:"-"`
}

// MakeStats builds the stats model from an analysis.
func MakeStats(name string, r *analysis.Result) *Stats {
	s := &Stats{Binary: name, Kind: r.Binary.Kind.String(), Static: r.Binary.Static, Functions: []StatsFunc{}}
	s.Summary.Reasons = map[string]int{}
	for _, f := range r.Funcs {
		g := f.Graph
		row := StatsFunc{Name: f.Func.Name, Demangled: demangled(f.Func.Name), Entry: hex(f.Func.Addr), Size: f.Func.TotalSize(),
			Blocks: len(g.Blocks), Edges: len(g.Edges), Loops: len(g.Loops),
			Instrumentable: f.Instrumentable(), Reason: f.Reason(), Fragments: len(f.Func.Parts),
			Source: f.Func.Source.String()}
		if !row.Instrumentable {
			row.Detail = f.Detail()
		}
		if f.Numbering == nil && errors.Is(f.NumErr, pathnum.ErrPathLimit) {
			row.Overflow = true
			s.Summary.Overflow++
		}
		if n := f.Numbering; n != nil {
			if !n.RawOverflow {
				p := n.NumPaths
				row.Paths = &p
			} else {
				row.Overflow = true
				s.Summary.Overflow++
			}
			row.Split = n.Split
		}
		s.Functions = append(s.Functions, row)
		if f.Func.PLT {
			s.Summary.PLTStubs++
			continue
		}
		s.Summary.Functions++
		s.Summary.Blocks += row.Blocks
		s.Summary.Edges += row.Edges
		s.Summary.Loops += row.Loops
		if row.Instrumentable {
			s.Summary.Instrumentable++
		} else {
			s.Summary.Reasons[row.Reason]++
		}
	}
	if s.Summary.Functions > 0 {
		s.Summary.Share = float64(s.Summary.Instrumentable) / float64(s.Summary.Functions)
	}
	return s
}

// StatsJSON writes the stats document as indented JSON.
func StatsJSON(w io.Writer, s *Stats) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// StatsText writes an aligned table, one procedure per line, then the
// summary line and the refusals grouped by reason.
func StatsText(w io.Writer, s *Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "entry\tsize (B)\tblocks\tedges\tloops\tpaths\tinstrumentable\tfunction")
	for _, f := range s.Functions {
		paths := "-"
		switch {
		case f.Overflow:
			paths = "overflow"
		case f.Paths != nil:
			paths = fmt.Sprint(*f.Paths)
		}
		status := "yes"
		if !f.Instrumentable {
			status = "no: " + f.Reason
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", f.Entry, f.Size, f.Blocks, f.Edges, f.Loops, paths, status, DisplayName(f.Name, s.Names))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sum := s.Summary
	fmt.Fprintf(w, "\n%s: %d functions, %d instrumentable (%.1f%%), %d blocks, %d edges, %d loops",
		s.Binary, sum.Functions, sum.Instrumentable, 100*sum.Share, sum.Blocks, sum.Edges, sum.Loops)
	if sum.Overflow > 0 {
		fmt.Fprintf(w, ", %d with path overflow", sum.Overflow)
	}
	if sum.PLTStubs > 0 {
		fmt.Fprintf(w, " (and %d PLT stubs, not counted)", sum.PLTStubs)
	}
	fmt.Fprintln(w)
	var reasons []string
	for r := range sum.Reasons {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if sum.Reasons[reasons[i]] != sum.Reasons[reasons[j]] {
			return sum.Reasons[reasons[i]] > sum.Reasons[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		fmt.Fprintf(w, "  not instrumentable: %-26s %d\n", r, sum.Reasons[r])
	}
	return nil
}

// CFG models: `blpp cfg --format json`.

// CFGBlock is a basic block.
type CFGBlock struct {
	ID        int    `json:"id"`
	Addr      string `json:"addr"`
	End       string `json:"end"`
	Insts     int    `json:"insts"`
	LoopDepth int    `json:"loop_depth"`
}

// CFGEdge is an edge; To is -1 for EXIT.
type CFGEdge struct {
	ID        int    `json:"id"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	Kind      string `json:"kind"`
	Target    string `json:"target,omitempty"`
	Backedge  bool   `json:"backedge"`
	Broken    bool   `json:"broken,omitempty"`
	Dispatch  bool   `json:"dispatch,omitempty"`
	Val       uint64 `json:"val"`
	Inc       int64  `json:"inc"`
	ExitInc   int64  `json:"exit_inc,omitempty"`
	EntryInc  int64  `json:"entry_inc,omitempty"`
	FlagsLive bool   `json:"flags_live"`
}

// CFGLoop is a loop or irreducible region.
type CFGLoop struct {
	Header      int   `json:"header"`
	Blocks      []int `json:"blocks"`
	Entries     []int `json:"entries"`
	Backedges   []int `json:"backedges"`
	Parent      int   `json:"parent"`
	Depth       int   `json:"depth"`
	Irreducible bool  `json:"irreducible"`
}

// CFGTable is a recovered jump table.
type CFGTable struct {
	Jump     string   `json:"jump"`
	Table    string   `json:"table"`
	Entries  int      `json:"entries"`
	Relative bool     `json:"relative"`
	Targets  []string `json:"targets"`
}

// CFGCall is a call site.
type CFGCall struct {
	Addr     string `json:"addr"`
	Block    int    `json:"block"`
	Target   string `json:"target,omitempty"`
	Callee   string `json:"callee,omitempty"`
	NoReturn bool   `json:"noreturn,omitempty"`
}

// CFGFunc is one procedure's graph.
type CFGFunc struct {
	Name           string     `json:"name"`
	Demangled      string     `json:"demangled,omitempty"` // Name demangled, when it is a C++ or Rust name
	Entry          string     `json:"entry"`
	Size           uint64     `json:"size"`
	Fragments      []string   `json:"fragments,omitempty"`
	Instrumentable bool       `json:"instrumentable"`
	Reason         string     `json:"reason"`
	Paths          *uint64    `json:"paths"`
	Blocks         []CFGBlock `json:"blocks"`
	Edges          []CFGEdge  `json:"edges"`
	Loops          []CFGLoop  `json:"loops"`
	Tables         []CFGTable `json:"jump_tables"`
	Calls          []CFGCall  `json:"calls"`
}

// CFGDoc is the `blpp cfg --format json` document.
type CFGDoc struct {
	Binary    string    `json:"binary"`
	Functions []CFGFunc `json:"functions"`
	// Names says how CFGText and CFGDot show function names.
	Names NameOptions `json:"-"`
}

func ids(bs []cfg.BlockID) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = int(b)
	}
	return out
}

// MakeCFG builds the CFG model of the given procedures.
func MakeCFG(name string, r *analysis.Result, funcs []*analysis.Func) *CFGDoc {
	d := &CFGDoc{Binary: name, Functions: []CFGFunc{}}
	for _, f := range funcs {
		g, n := f.Graph, f.Numbering
		cf := CFGFunc{Name: f.Func.Name, Demangled: demangled(f.Func.Name), Entry: hex(f.Func.Addr), Size: f.Func.TotalSize(),
			Fragments: f.Func.PartNames, Instrumentable: f.Instrumentable(), Reason: f.Detail(),
			Blocks: []CFGBlock{}, Edges: []CFGEdge{}, Loops: []CFGLoop{}, Tables: []CFGTable{}, Calls: []CFGCall{}}
		if n != nil && !n.RawOverflow {
			p := n.NumPaths
			cf.Paths = &p
		}
		for i, b := range g.Blocks {
			cf.Blocks = append(cf.Blocks, CFGBlock{ID: i, Addr: hex(b.Addr), End: hex(b.End), Insts: b.Insts, LoopDepth: b.LoopDepth})
		}
		for i, e := range g.Edges {
			ce := CFGEdge{ID: i, From: int(e.From), To: int(e.To), Kind: e.Kind.String(), FlagsLive: e.FlagsLive, Dispatch: e.Dispatch}
			if e.Target != 0 {
				ce.Target = hex(e.Target)
			}
			if n != nil {
				ce.Backedge = n.Kind[i] == pathnum.Backedge
				ce.Broken = n.Kind[i] == pathnum.Broken
				ce.Val, ce.Inc = n.Val[i], n.Inc[i]
				ce.ExitInc, ce.EntryInc = n.ExitInc[i], n.EntryInc[i]
			}
			cf.Edges = append(cf.Edges, ce)
		}
		for _, l := range g.Loops {
			bes := make([]int, len(l.Backedges))
			for i, e := range l.Backedges {
				bes[i] = int(e)
			}
			cf.Loops = append(cf.Loops, CFGLoop{Header: int(l.Header), Blocks: ids(l.Blocks), Entries: ids(l.Entries),
				Backedges: bes, Parent: l.Parent, Depth: l.Depth, Irreducible: l.Irreducible})
		}
		for _, t := range g.Tables {
			ct := CFGTable{Jump: hex(t.Jump), Table: hex(t.Table), Entries: t.Entries, Relative: t.Relative}
			for _, a := range t.Targets {
				ct.Targets = append(ct.Targets, hex(a))
			}
			cf.Tables = append(cf.Tables, ct)
		}
		for _, c := range g.Calls {
			cc := CFGCall{Addr: hex(c.Addr), Block: int(c.Block), NoReturn: c.NoReturn}
			if c.Target != 0 {
				cc.Target = hex(c.Target)
				if callee := r.Program.FuncAt(c.Target); callee != nil {
					cc.Callee = callee.Name
				}
			}
			cf.Calls = append(cf.Calls, cc)
		}
		d.Functions = append(d.Functions, cf)
	}
	return d
}

// CFGJSON writes the CFG document as indented JSON.
func CFGJSON(w io.Writer, d *CFGDoc) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

func blockName(id int) string {
	if id < 0 {
		return "EXIT"
	}
	return fmt.Sprintf("B%d", id)
}

// CFGText writes each procedure's blocks, edges (kind, Ball-Larus value and
// increment, backedges with their path-end and restart increments), loops
// and jump tables.
func CFGText(w io.Writer, d *CFGDoc) error {
	for fi, f := range d.Functions {
		if fi > 0 {
			fmt.Fprintln(w)
		}
		paths := "overflow"
		if f.Paths != nil {
			paths = fmt.Sprint(*f.Paths)
		}
		fmt.Fprintf(w, "function %s at %s, %d bytes: %d blocks, %d edges, %d loops, %s paths\n",
			DisplayName(f.Name, d.Names), f.Entry, f.Size, len(f.Blocks), len(f.Edges), len(f.Loops), paths)
		if len(f.Fragments) > 0 {
			fmt.Fprintf(w, "  fragments: %s\n", strings.Join(f.Fragments, ", "))
		}
		if !f.Instrumentable {
			fmt.Fprintf(w, "  not instrumentable: %s\n", f.Reason)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  block\taddress\tinsts\tloop depth\t")
		for _, b := range f.Blocks {
			fmt.Fprintf(tw, "  %s\t%s-%s\t%d\t%d\t\n", blockName(b.ID), b.Addr, b.End, b.Insts, b.LoopDepth)
		}
		tw.Flush()
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  edge\tkind\tval\tinc\tflags\t")
		for _, e := range f.Edges {
			kind := e.Kind
			if e.Target != "" {
				kind += " " + e.Target
			}
			inc := fmt.Sprint(e.Inc)
			if e.Backedge || e.Broken {
				what := "backedge"
				if e.Broken {
					what = "broken"
				}
				if e.Dispatch {
					what += ", dispatch"
				}
				kind += " (" + what + ")"
				inc = fmt.Sprintf("end %+d, restart %d", e.ExitInc, e.EntryInc)
			}
			flags := "dead"
			if e.FlagsLive {
				flags = "live"
			}
			fmt.Fprintf(tw, "  %s -> %s\t%s\t%d\t%s\t%s\t\n", blockName(e.From), blockName(e.To), kind, e.Val, inc, flags)
		}
		tw.Flush()
		for i, l := range f.Loops {
			kind := "loop"
			if l.Irreducible {
				kind = "irreducible region"
			}
			var bs []string
			for _, b := range l.Blocks {
				bs = append(bs, blockName(b))
			}
			parent := "top level"
			if l.Parent >= 0 {
				parent = fmt.Sprintf("in loop %d", l.Parent)
			}
			fmt.Fprintf(w, "  loop %d: %s, header %s, depth %d, %s: %s\n", i, kind, blockName(l.Header), l.Depth, parent, strings.Join(bs, " "))
		}
		for _, t := range f.Tables {
			kind := "absolute"
			if t.Relative {
				kind = "relative"
			}
			fmt.Fprintf(w, "  jump table at %s for jmp %s: %d %s entries\n", t.Table, t.Jump, t.Entries, kind)
		}
	}
	return nil
}

// CFGDot writes a Graphviz digraph with one cluster per procedure:
// blocks as boxes labelled with their address range and instruction
// count, edges labelled with kind and increment, backedges dashed.
func CFGDot(w io.Writer, d *CFGDoc) error {
	fmt.Fprintln(w, "digraph blpp {")
	fmt.Fprintln(w, "  node [shape=box, fontname=\"monospace\", fontsize=10];")
	fmt.Fprintln(w, "  edge [fontname=\"monospace\", fontsize=9];")
	for fi, f := range d.Functions {
		fmt.Fprintf(w, "  subgraph cluster_%d {\n", fi)
		fmt.Fprintf(w, "    label=%q;\n", DisplayName(f.Name, d.Names)+" @ "+f.Entry)
		for _, b := range f.Blocks {
			fmt.Fprintf(w, "    f%d_%d [label=%q];\n", fi, b.ID, fmt.Sprintf("%s %s-%s\n%d insts", blockName(b.ID), b.Addr, b.End, b.Insts))
		}
		fmt.Fprintf(w, "    f%d_exit [label=\"EXIT\", shape=ellipse];\n", fi)
		for _, e := range f.Edges {
			to := fmt.Sprintf("f%d_%d", fi, e.To)
			if e.To < 0 {
				to = fmt.Sprintf("f%d_exit", fi)
			}
			label := e.Kind
			attrs := ""
			if e.Backedge || e.Broken {
				label += fmt.Sprintf("\nend %+d, restart %d", e.ExitInc, e.EntryInc)
				attrs = ", style=dashed, color=red"
			} else if e.Inc != 0 {
				label += fmt.Sprintf("\n%+d", e.Inc)
			}
			fmt.Fprintf(w, "    f%d_%d -> %s [label=%q%s];\n", fi, e.From, to, label, attrs)
		}
		fmt.Fprintln(w, "  }")
	}
	fmt.Fprintln(w, "}")
	return nil
}
