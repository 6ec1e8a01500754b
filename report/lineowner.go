package report

import "sort"

// lineOwners decides which frame of an inline stack a line-table row
// belongs to. The line table and the tree of inlined subroutines are two
// separate records of the compiler [DWARF5 6.2, 3.3.8], and they disagree
// at the edges of inlined code: an instruction without a source location
// of its own (a spill, a copy the register allocator added) continues the
// line table's previous row, which is often the caller's line, while the
// address ranges of the inlined subroutine around it claim it for the
// callee. llvm-symbolizer reports such an instruction as the callee at the
// caller's line (clang 16 on Lua: reglevel "at line 503", a line of lcode.c
// where reglevel is in lparser.c), and a sample profile built that way
// gives the callee a line 274 lines past its declaration, which no
// instruction of the callee has.
//
// A row goes to the innermost frame whose source holds its line: the
// frame's function is declared in the row's file, at or above the row's
// line, and no other function of that file is declared between the two (C
// functions do not nest). Where no frame passes that test (a C++ lambda
// declared inside the function shortens the span the test allows), the
// innermost frame keeps the row if it is declared in the row's file at or
// above it; otherwise the row has no owner.
type lineOwners struct {
	decls map[string][]int // file → the declaration lines of its functions with code, sorted
}

func newLineOwners(di *DebugInfo) lineOwners {
	o := lineOwners{decls: map[string][]int{}}
	d := di.get()
	if d == nil {
		return o
	}
	seen := map[string]map[int]bool{}
	var add func(s *Scope)
	add = func(s *Scope) {
		if s.DeclFile != "" && s.DeclLine > 0 {
			if seen[s.DeclFile] == nil {
				seen[s.DeclFile] = map[int]bool{}
			}
			if !seen[s.DeclFile][s.DeclLine] {
				seen[s.DeclFile][s.DeclLine] = true
				o.decls[s.DeclFile] = append(o.decls[s.DeclFile], s.DeclLine)
			}
		}
		for _, c := range s.Inlined {
			add(c)
		}
	}
	for _, s := range d.allScopes() {
		add(s)
	}
	for _, ls := range o.decls {
		sort.Ints(ls)
	}
	return o
}

// holds reports whether a function declared at decl in file spans line:
// no other function of file is declared after decl and at or before line.
func (o lineOwners) holds(file string, decl, line int) bool {
	if line < decl {
		return false
	}
	ls := o.decls[file]
	i := sort.SearchInts(ls, decl+1) // the first declaration after decl
	return i == len(ls) || ls[i] > line
}

// owner returns the index in frames (outermost first, as Frames gives
// them) of the frame a row of file and line belongs to, or -1.
func (o lineOwners) owner(frames []*Scope, file string, line int) int {
	if len(frames) == 0 || line <= 0 {
		return -1
	}
	sameFile := func(s *Scope) bool { return s.DeclFile == "" || s.DeclFile == file }
	for k := len(frames) - 1; k >= 0; k-- {
		s := frames[k]
		if sameFile(s) && o.holds(file, s.DeclLine, line) {
			return k
		}
	}
	if in := frames[len(frames)-1]; sameFile(in) && line >= in.DeclLine {
		return len(frames) - 1
	}
	return -1
}
