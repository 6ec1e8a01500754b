package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Coverage is line, block and function coverage of the instrumented
// functions, per source file. Lines are the lines the DWARF line table
// gives to the code of instrumented functions; a line's count is the
// largest execution count of the blocks holding its code. Functions blpp
// left uninstrumented are not covered (their counts are unknown) and are
// only counted.
type Coverage struct {
	Binary string
	Files  []FileCoverage // by path
	// NoLines are the instrumented functions without line information.
	NoLines []FuncCoverage
	// Uninstrumented counts the functions blpp left out; Left names
	// them (display names, in table order).
	Uninstrumented int
	Left           []string
	Total          CoverageCounts
}

// CoverageCounts are the found/hit totals of a file or of everything.
type CoverageCounts struct {
	Lines, LinesHit   int
	Blocks, BlocksHit int
	Funcs, FuncsHit   int
}

// FileCoverage is one source file.
type FileCoverage struct {
	File  string
	Lines []LineCount // by line
	Funcs []FuncCoverage
	// Branches are the two-or-more-way branches of the file's blocks.
	Branches []BranchCoverage
	Counts   CoverageCounts
}

// LineCount is the execution count of one source line.
type LineCount struct {
	Line  int
	Count uint64
}

// FuncCoverage is one function.
type FuncCoverage struct {
	Name string // as the model shows it (Model.DisplayName)
	// Symbol is the name as the symbol table has it, which the lcov
	// tracefile keeps: lcov 1.x's genhtml reads a function name up to
	// its first comma, so "f(int, int)" and "f(int, char)" would become
	// one function; genhtml --demangle-cpp shows symbols demangled.
	Symbol            string
	File              string
	Line              int    // DW_AT_decl_line, else the first line of its code
	Calls             uint64 // activations
	Blocks, BlocksHit int
	Lines, LinesHit   int
}

// BranchCoverage is one side of a conditional branch or one jump-table
// target: the block ending in the branch (its index in the function) and
// how often control left that way.
type BranchCoverage struct {
	Line     int
	Block    int // a number unique in the file: the block's address
	Branch   int // the side, in edge order
	Taken    uint64
	Executed bool // the block ran (else lcov writes "-")
}

// MakeCoverage computes the coverage of m.
func MakeCoverage(m *Model) *Coverage {
	c := &Coverage{Binary: m.Binary}
	files := map[string]*FileCoverage{}
	lines := map[string]map[int]uint64{}
	file := func(name string) *FileCoverage {
		f := files[name]
		if f == nil {
			f = &FileCoverage{File: name}
			files[name] = f
			lines[name] = map[int]uint64{}
		}
		return f
	}
	for _, fi := range m.FuncIDs() {
		mf := m.Func(fi)
		if !mf.Instrumented {
			c.Uninstrumented++
			c.Left = append(c.Left, m.DisplayName(mf.Name))
			continue
		}
		fp := m.Profile(fi)
		fc := FuncCoverage{Name: m.DisplayName(mf.Name), Symbol: mf.Name, Calls: fp.Calls, Blocks: len(mf.Blocks)}
		if fc.Calls == 0 && len(fp.Blocks) > 0 {
			fc.Calls = fp.Blocks[0]
		}
		if s := m.debugOf(fi).Subprogram(mf.Entry); s != nil {
			fc.File, fc.Line = s.DeclFile, s.DeclLine
		}
		own := map[string]map[int]uint64{} // this function's lines
		for bi, b := range mf.Blocks {
			cnt := fp.Blocks[bi]
			if cnt > 0 {
				fc.BlocksHit++
			}
			for _, row := range m.debugOf(fi).Rows(b.Addr, b.End) {
				if row.Line == 0 {
					continue
				}
				if fc.File == "" {
					fc.File, fc.Line = row.File, row.Line
				}
				if own[row.File] == nil {
					own[row.File] = map[int]uint64{}
				}
				own[row.File][row.Line] = max(own[row.File][row.Line], cnt)
			}
		}
		for name, ls := range own {
			file(name)
			for l, n := range ls {
				lines[name][l] = max(lines[name][l], n)
				if name == fc.File {
					fc.Lines++
					if n > 0 {
						fc.LinesHit++
					}
				}
			}
		}
		if fc.File == "" {
			c.NoLines = append(c.NoLines, fc)
		} else {
			f := file(fc.File)
			f.Funcs = append(f.Funcs, fc)
			f.Counts.Blocks += fc.Blocks
			f.Counts.BlocksHit += fc.BlocksHit
			f.Counts.Funcs++
			if fc.Calls > 0 {
				f.Counts.FuncsHit++
			}
		}
		c.Total.Blocks += fc.Blocks
		c.Total.BlocksHit += fc.BlocksHit
		c.Total.Funcs++
		if fc.Calls > 0 {
			c.Total.FuncsHit++
		}
		// Branches: blocks with two or more ways out inside the function.
		for bi, b := range mf.Blocks {
			var outs []int
			for ei, e := range mf.Edges {
				if int(e.From) == bi && (e.Kind == edgeFallThrough || e.Kind == edgeBranch || e.Kind == edgeJumpTable) {
					outs = append(outs, ei)
				}
			}
			if len(outs) < 2 {
				continue
			}
			row, ok := m.debugOf(fi).LineAt(b.End - 1)
			if !ok || row.Line == 0 {
				continue
			}
			f := file(row.File)
			for k, ei := range outs {
				f.Branches = append(f.Branches, BranchCoverage{Line: row.Line, Block: int(b.Addr), Branch: k,
					Taken: fp.Edges[ei], Executed: fp.Blocks[bi] > 0})
			}
		}
	}
	for name, f := range files {
		for l, n := range lines[name] {
			f.Lines = append(f.Lines, LineCount{l, n})
			if n > 0 {
				f.Counts.LinesHit++
			}
		}
		f.Counts.Lines = len(f.Lines)
		sort.Slice(f.Lines, func(i, j int) bool { return f.Lines[i].Line < f.Lines[j].Line })
		sort.SliceStable(f.Funcs, func(i, j int) bool {
			if f.Funcs[i].Line != f.Funcs[j].Line {
				return f.Funcs[i].Line < f.Funcs[j].Line
			}
			return f.Funcs[i].Name < f.Funcs[j].Name
		})
		sort.SliceStable(f.Branches, func(i, j int) bool {
			a, b := f.Branches[i], f.Branches[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			if a.Block != b.Block {
				return a.Block < b.Block
			}
			return a.Branch < b.Branch
		})
		c.Total.Lines += f.Counts.Lines
		c.Total.LinesHit += f.Counts.LinesHit
		c.Files = append(c.Files, *f)
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].File < c.Files[j].File })
	return c
}

func ratio(hit, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d/%d", hit, n)
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", hit, n, 100*float64(hit)/float64(n))
}

// CoverageText writes, per file, line, block and function coverage, a
// table of functions, and the lines never executed (as ranges).
func CoverageText(w io.Writer, c *Coverage) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s: lines %s, blocks %s, functions %s\n", c.Binary,
		ratio(c.Total.LinesHit, c.Total.Lines), ratio(c.Total.BlocksHit, c.Total.Blocks), ratio(c.Total.FuncsHit, c.Total.Funcs))
	if c.Uninstrumented > 0 {
		names := c.Left
		more := ""
		if len(names) > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", len(c.Left)-5)
		}
		verb := "were"
		if c.Uninstrumented == 1 {
			verb = "was"
		}
		fmt.Fprintf(bw, "(%s %s not instrumented and not counted: %s%s)\n", plural(uint64(c.Uninstrumented), "function", "functions"), verb, strings.Join(names, ", "), more)
	}
	writeFuncs := func(fs []FuncCoverage, withLines bool) {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		if withLines {
			fmt.Fprintln(tw, "  line\tfunction\tcalls\tlines\tblocks")
		} else {
			fmt.Fprintln(tw, "  function\tcalls\tblocks")
		}
		for _, f := range fs {
			if withLines {
				fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\n", f.Line, f.Name, f.Calls, ratio(f.LinesHit, f.Lines), ratio(f.BlocksHit, f.Blocks))
			} else {
				fmt.Fprintf(tw, "  %s\t%d\t%s\n", f.Name, f.Calls, ratio(f.BlocksHit, f.Blocks))
			}
		}
		tw.Flush()
	}
	for _, f := range c.Files {
		fmt.Fprintf(bw, "\n%s: lines %s, blocks %s, functions %s\n", f.File,
			ratio(f.Counts.LinesHit, f.Counts.Lines), ratio(f.Counts.BlocksHit, f.Counts.Blocks), ratio(f.Counts.FuncsHit, f.Counts.Funcs))
		if len(f.Funcs) > 0 {
			writeFuncs(f.Funcs, true)
		}
		var never []int
		for _, l := range f.Lines {
			if l.Count == 0 {
				never = append(never, l.Line)
			}
		}
		if len(never) > 0 {
			fmt.Fprintf(bw, "  never executed: %s\n", lineRanges(never))
		}
	}
	if len(c.NoLines) > 0 {
		fmt.Fprintf(bw, "\nwithout line information:\n")
		writeFuncs(c.NoLines, false)
	}
	return bw.Flush()
}

// lineRanges writes sorted line numbers as "3, 7-9, 12".
func lineRanges(ls []int) string {
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ls[i], ls[j]))
		} else {
			parts = append(parts, fmt.Sprint(ls[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// CoverageLcov writes an lcov tracefile (geninfo(1) "TRACEFILE FORMAT"),
// one record per source file: SF, FN/FNDA/FNF/FNH for functions (calls),
// BRDA/BRF/BRH for branch sides, DA/LF/LH for lines, end_of_record.
// Functions without line information cannot be placed and are left out.
func CoverageLcov(w io.Writer, c *Coverage) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "TN:")
	for _, f := range c.Files {
		fmt.Fprintf(bw, "SF:%s\n", f.File)
		for _, fn := range f.Funcs {
			fmt.Fprintf(bw, "FN:%d,%s\n", fn.Line, fn.Symbol)
		}
		for _, fn := range f.Funcs {
			fmt.Fprintf(bw, "FNDA:%d,%s\n", fn.Calls, fn.Symbol)
		}
		fmt.Fprintf(bw, "FNF:%d\nFNH:%d\n", f.Counts.Funcs, f.Counts.FuncsHit)
		hit := 0
		for _, b := range f.Branches {
			taken := "-"
			if b.Executed {
				taken = fmt.Sprint(b.Taken)
			}
			if b.Taken > 0 {
				hit++
			}
			fmt.Fprintf(bw, "BRDA:%d,%d,%d,%s\n", b.Line, b.Block, b.Branch, taken)
		}
		fmt.Fprintf(bw, "BRF:%d\nBRH:%d\n", len(f.Branches), hit)
		for _, l := range f.Lines {
			fmt.Fprintf(bw, "DA:%d,%d\n", l.Line, l.Count)
		}
		fmt.Fprintf(bw, "LF:%d\nLH:%d\nend_of_record\n", f.Counts.Lines, f.Counts.LinesHit)
	}
	return bw.Flush()
}
