package report

// This file is the per-procedure summary in the manner of Weinberger's
// lprint [Weinberger 84, "Cheap dynamic instruction counting"]: for each
// procedure the instructions it executed, its calls, its static size, the
// instructions and blocks that never ran; then the same per source file.

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// A ProcRow is one procedure (or one source file) of the summary.
type ProcRow struct {
	Name         string // as the model shows it (Model.DisplayName)
	Func         FuncID // procedure rows
	File         string // DWARF file of the entry's line; "" when unknown
	Procs        int    // procedures (1 for a procedure row)
	Executed     uint64 // instructions executed
	Calls        uint64
	Static       uint64 // instructions in its blocks
	NeverInsns   uint64 // static instructions of blocks never entered
	Blocks       int
	NeverBlocks  int
	Instrumented bool
}

// Procs is the summary.
type Procs struct {
	Binary   string
	Total    uint64 // instructions executed
	Funcs    []ProcRow
	Files    []ProcRow
	Skipped  int // functions blpp did not instrument (no counts)
	FlowOnly bool
}

// MakeProcs sums the model per procedure and per source file, both by
// instructions executed, then name.
func MakeProcs(m *Model) *Procs {
	s := &Procs{Binary: m.Binary, Total: m.TotalInsns(), FlowOnly: m.FlowOnly}
	files := map[string]*ProcRow{}
	for _, i := range m.FuncIDs() {
		mf := m.Func(i)
		if !mf.Instrumented {
			s.Skipped++
			continue
		}
		fp := m.Profile(i)
		r := ProcRow{Name: m.DisplayName(mf.Name), Func: i, Procs: 1, Executed: fp.Insns, Calls: fp.Calls, Blocks: len(mf.Blocks), Instrumented: true}
		if d := m.debugOf(i); d != nil {
			if lr, ok := d.LineAt(mf.Entry); ok {
				r.File = lr.File
			}
		}
		for b, blk := range mf.Blocks {
			r.Static += uint64(blk.Insts)
			if fp.Blocks[b] == 0 {
				r.NeverInsns += uint64(blk.Insts)
				r.NeverBlocks++
			}
		}
		s.Funcs = append(s.Funcs, r)
		f := files[r.File]
		if f == nil {
			f = &ProcRow{Name: r.File, File: r.File}
			files[r.File] = f
		}
		f.Procs++
		f.Executed = satAdd(f.Executed, r.Executed)
		f.Calls = satAdd(f.Calls, r.Calls)
		f.Static += r.Static
		f.NeverInsns += r.NeverInsns
		f.Blocks += r.Blocks
		f.NeverBlocks += r.NeverBlocks
	}
	for _, f := range files {
		s.Files = append(s.Files, *f)
	}
	order := func(rows []ProcRow) {
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].Executed != rows[j].Executed {
				return rows[i].Executed > rows[j].Executed
			}
			return rows[i].Name < rows[j].Name
		})
	}
	order(s.Funcs)
	order(s.Files)
	return s
}

func ratioPct(n, d uint64) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// procCountsHeader heads the columns of ProcRow.counts, which both tables
// of ProcsText start with.
const procCountsHeader = "insns executed\t%\tcalls\tstatic insns\tnever run\t%\tblocks\tnever entered\t"

// counts is r's count columns, each ended by a tab; total is the
// program's instructions executed.
func (r *ProcRow) counts(total uint64) string {
	return fmt.Sprintf("%d\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t", r.Executed, pct(r.Executed, total), r.Calls, r.Static,
		r.NeverInsns, ratioPct(r.NeverInsns, r.Static), r.Blocks, r.NeverBlocks)
}

// ProcsText writes the summary: per procedure, then per source file.
func ProcsText(w io.Writer, s *Procs) error {
	fmt.Fprintf(w, "%s: per-procedure summary, %d instructions executed\n", s.Binary, s.Total)
	fmt.Fprintf(w, "never run: static instructions and blocks of blocks never entered\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s  procedure (file)\n", procCountsHeader)
	for _, r := range s.Funcs {
		file := r.File
		if file == "" {
			file = "?"
		}
		fmt.Fprintf(tw, "%s  %s (%s)\n", r.counts(s.Total), r.Name, shortFile(file))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nper source file (the file of each procedure's entry line)\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%sprocedures\t  file\n", procCountsHeader)
	for _, r := range s.Files {
		file := r.File
		if file == "" {
			file = "(no line information)"
		}
		fmt.Fprintf(tw, "%s%d\t  %s\n", r.counts(s.Total), r.Procs, file)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "\n%s not instrumented (no counts; blpp stats says why)\n", plural(uint64(s.Skipped), "function", "functions"))
	}
	return nil
}
