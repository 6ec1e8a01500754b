package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// AnnotateOptions select what Annotate shows.
type AnnotateOptions struct {
	// Target is a function name or a source file (a path or its last
	// elements); "" shows every file (or, without DWARF, every function
	// that ran).
	Target string
	// Disasm shows annotated disassembly even when there is DWARF.
	Disasm bool
	// ReadFile reads source files; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// ErrNoTarget: Annotate found no function or file named so.
var ErrNoTarget = errors.New("no function or source file of that name")

// Annotate writes source files with each line's execution count, in the
// manner of gcov: "-" for a line without code, "#####" for a line whose
// code never ran, a '*' after the count of a line that ran while some
// block holding its code never did (gcov's mark of unexecuted blocks).
// Counts are the largest execution count of the blocks holding the
// line's code. Without DWARF (or with Disasm) it writes the disassembly
// of each function, every instruction with its block's count.
func Annotate(w io.Writer, m *Model, o AnnotateOptions) error {
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	funcs := m.matchFuncs(o.Target)
	if o.Disasm || !m.hasLines() {
		if o.Target != "" && len(funcs) == 0 {
			return fmt.Errorf("%w: %q", ErrNoTarget, o.Target)
		}
		return annotateDisasm(w, m, funcs, o.Target == "")
	}
	var lines map[string]map[int]uint64
	var missed map[string]map[int]bool
	var span map[string][2]int // per file, the lines to show (0,0: all)
	if len(funcs) > 0 {
		lines, missed = m.lineCounts(funcs), m.linesMissed(funcs)
		span = map[string][2]int{}
		for f, ls := range lines {
			lo, hi := 0, 0
			for l := range ls {
				if lo == 0 || l < lo {
					lo = l
				}
				hi = max(hi, l)
			}
			span[f] = [2]int{lo, hi}
		}
		// A function's listing starts at its declaration.
		for _, fi := range funcs {
			if s := m.debugOf(fi).Subprogram(m.Func(fi).Entry); s != nil {
				if sp, ok := span[s.DeclFile]; ok && s.DeclLine > 0 && s.DeclLine < sp[0] {
					span[s.DeclFile] = [2]int{s.DeclLine, sp[1]}
				}
			}
		}
	} else {
		var all []FuncID
		for _, i := range m.FuncIDs() {
			if m.Func(i).Instrumented {
				all = append(all, i)
			}
		}
		lines, missed = m.lineCounts(all), m.linesMissed(all)
		if o.Target != "" {
			for f := range lines {
				if !fileMatches(f, o.Target) {
					delete(lines, f)
				}
			}
			if len(lines) == 0 {
				return fmt.Errorf("%w: %q", ErrNoTarget, o.Target)
			}
		}
	}
	files := slices.Sorted(maps.Keys(lines))
	bw := bufio.NewWriter(w)
	for i, f := range files {
		if i > 0 {
			bw.WriteByte('\n')
		}
		annotateFile(bw, f, lines[f], missed[f], span[f], o.ReadFile)
	}
	return bw.Flush()
}

// matchFuncs lists the instrumented functions named target (the
// metadata's name or, with DWARF, the subprogram's).
func (m *Model) matchFuncs(target string) []FuncID {
	var out []FuncID
	if target == "" {
		return nil
	}
	for _, i := range m.FuncIDs() {
		f := m.Func(i)
		if !f.Instrumented {
			continue
		}
		if matchesName(f.Name, target) {
			out = append(out, i)
			continue
		}
		if s := m.debugOf(i).Subprogram(f.Entry); s != nil && (s.Name == target || s.Linkage == target) {
			out = append(out, i)
		}
	}
	return out
}

// hasLines says whether any module kept has DWARF line tables.
func (m *Model) hasLines() bool {
	for k := range m.Modules {
		if d := m.Modules[k].Debug; !m.hidden[uint32(k)] && d.HasLines() {
			return true
		}
	}
	return false
}

// fileMatches: target is name, or its last path elements.
func fileMatches(name, target string) bool {
	name, target = filepath.Clean(name), filepath.Clean(target)
	return name == target || strings.HasSuffix(name, string(filepath.Separator)+target)
}

// lineCounts gives, per file and line, the largest count of the blocks of
// funcs holding code of the line.
func (m *Model) lineCounts(funcs []FuncID) map[string]map[int]uint64 {
	out := map[string]map[int]uint64{}
	for _, fi := range funcs {
		mf := m.Func(fi)
		for bi, b := range mf.Blocks {
			c := m.Profile(fi).Blocks[bi]
			for _, row := range m.debugOf(fi).Rows(b.Addr, b.End) {
				if row.Line == 0 {
					continue
				}
				if out[row.File] == nil {
					out[row.File] = map[int]uint64{}
				}
				out[row.File][row.Line] = max(out[row.File][row.Line], c)
			}
		}
	}
	return out
}

// linesMissed marks, per file and line, the lines with code in a block of
// funcs that never ran.
func (m *Model) linesMissed(funcs []FuncID) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for _, fi := range funcs {
		mf := m.Func(fi)
		for bi, b := range mf.Blocks {
			if m.Profile(fi).Blocks[bi] != 0 {
				continue
			}
			for _, row := range m.debugOf(fi).Rows(b.Addr, b.End) {
				if row.Line == 0 {
					continue
				}
				if out[row.File] == nil {
					out[row.File] = map[int]bool{}
				}
				out[row.File][row.Line] = true
			}
		}
	}
	return out
}

func annotateFile(w *bufio.Writer, file string, counts map[int]uint64, missed map[int]bool, span [2]int, read func(string) ([]byte, error)) {
	executed := 0
	for _, c := range counts {
		if c > 0 {
			executed++
		}
	}
	fmt.Fprintf(w, "%s: %d lines with code, %d executed\n", file, len(counts), executed)
	src, err := read(file)
	var text []string
	if err == nil {
		text = strings.Split(strings.TrimSuffix(string(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))), "\n"), "\n")
	} else {
		fmt.Fprintf(w, "(source not readable: %v; lines with code only)\n", err)
	}
	lo, hi := 1, len(text)
	for l := range counts {
		hi = max(hi, l)
	}
	if span != [2]int{} {
		lo, hi = span[0], span[1]
	}
	for l := lo; l <= hi; l++ {
		c, code := counts[l]
		var line string
		if l-1 < len(text) {
			line = text[l-1]
		} else if !code {
			continue
		}
		col := "-"
		switch {
		case code && c == 0:
			col = "#####"
		case code:
			col = fmt.Sprint(c)
			if missed[l] {
				col += "*"
			} else {
				col += " "
			}
		}
		if !strings.HasSuffix(col, "*") && !strings.HasSuffix(col, " ") {
			col += " "
		}
		fmt.Fprintf(w, "%11s:%5d:%s\n", col, l, line)
	}
}

// annotateDisasm lists the instructions of funcs (all functions that ran
// when all is set), each with its block's count.
func annotateDisasm(w io.Writer, m *Model, funcs []FuncID, all bool) error {
	if all {
		for _, i := range m.FuncIDs() {
			f := m.Func(i)
			if f.Instrumented && (m.Profile(i).Calls > 0 || m.Profile(i).Executions > 0 || m.Profile(i).Partial > 0) {
				funcs = append(funcs, i)
			}
		}
	}
	bw := bufio.NewWriter(w)
	for k, fi := range funcs {
		mf := m.Func(fi)
		fp := m.Profile(fi)
		if k > 0 {
			bw.WriteByte('\n')
		}
		fmt.Fprintf(bw, "%s at %#x: %d calls, %d instructions executed\n", m.DisplayName(mf.Name), mf.Entry, fp.Calls, fp.Insns)
		order := make([]int, len(mf.Blocks))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return mf.Blocks[order[i]].Addr < mf.Blocks[order[j]].Addr })
		for _, bi := range order {
			b := &mf.Blocks[bi]
			c := fp.Blocks[bi]
			col := "##### "
			if c > 0 {
				col = fmt.Sprint(c) + " "
			}
			insts, err := m.BlockInsts(fi, bi)
			if err != nil {
				fmt.Fprintf(bw, "%11s  %#x  (B%d: %d instructions, not decodable: %v)\n", col, b.Addr, bi, b.Insts, err)
				continue
			}
			for _, in := range insts {
				fmt.Fprintf(bw, "%11s  %#x  %s\n", col, in.Addr, in.String())
			}
		}
	}
	return bw.Flush()
}
