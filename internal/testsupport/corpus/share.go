package corpus

import (
	"debug/elf"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
)

// Share is the dynamic gauge of DESIGN decision 14: of the instructions a
// run of the original executable executed (callgrind's Ir of its main
// object), how many lie in functions blpp instrumented.
type Share struct {
	// Executed is the main object's executed instructions; Counted those
	// inside blocks of instrumented functions; PLT those in PLT stubs,
	// which are not functions (each runs once per call through it, and
	// the calls are counted at their sites).
	Executed, Counted, PLT uint64
	// Static is the share of functions instrumented (meta.Table), for
	// comparison.
	Functions, Instrumented int
	// Left lists the uninstrumented functions (and code outside every
	// function: PLT stubs, .init) that executed instructions, most first.
	Left []LeftOut
}

// LeftOut is code that ran but was not counted.
type LeftOut struct {
	Name   string
	Entry  uint64
	Reason string
	Insts  uint64 // executed instructions
}

// Ratio is the share of the instructions executed in the executable's
// code, PLT stubs aside, that lie in instrumented functions:
// Counted/(Executed-PLT), 1 when nothing ran. This is the gauge of
// DESIGN decision 14 and issue 23's target.
func (s Share) Ratio() float64 {
	if s.Executed <= s.PLT {
		return 1
	}
	return float64(s.Counted) / float64(s.Executed-s.PLT)
}

// RatioAll is Counted/Executed: PLT stubs count as not counted.
func (s Share) RatioAll() float64 {
	if s.Executed == 0 {
		return 1
	}
	return float64(s.Counted) / float64(s.Executed)
}

// StaticRatio is Instrumented/Functions.
func (s Share) StaticRatio() float64 {
	if s.Functions == 0 {
		return 1
	}
	return float64(s.Instrumented) / float64(s.Functions)
}

// PLTName is the LeftOut entry of the PLT stubs.
const PLTName = "(PLT stubs)"

// PLTRanges returns the address ranges of the executable's PLT sections
// (.plt, .plt.sec, .plt.got): stubs, not functions, which run once per
// call through them.
func PLTRanges(path string) ([][2]uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]uint64
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".plt") && s.Flags&elf.SHF_EXECINSTR != 0 {
			out = append(out, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	return out, nil
}

// DynamicShareOf is DynamicShare with the PLT stubs (plt: PLTRanges of
// the original) charged to PLTName instead of "(outside functions)",
// which then holds only code that no function covers.
func DynamicShareOf(tab *meta.Table, cg *callgrind.Profile, plt [][2]uint64) Share {
	type span struct {
		lo, hi uint64
		fn     int
	}
	var in, out []span
	s := Share{}
	for i := range tab.Funcs {
		f := &tab.Funcs[i]
		s.Functions++
		if f.Instrumented {
			s.Instrumented++
			for _, b := range f.Blocks {
				in = append(in, span{b.Addr, b.End, i})
			}
		}
		// An instrumented function's own range outside its blocks holds
		// the instructions before a moved entry jump (decision 67).
		out = append(out, span{f.Entry, f.Entry + f.Size, i})
	}
	byLo := func(v []span) {
		sort.Slice(v, func(a, b int) bool { return v[a].lo < v[b].lo })
	}
	byLo(in)
	byLo(out)
	find := func(v []span, a uint64) int {
		k := sort.Search(len(v), func(k int) bool { return v[k].lo > a }) - 1
		if k >= 0 && a < v[k].hi {
			return v[k].fn
		}
		return -1
	}
	left := map[int]uint64{}
	var pltInsts uint64
	inPLT := func(a uint64) bool {
		for _, r := range plt {
			if a >= r[0] && a < r[1] {
				return true
			}
		}
		return false
	}
	for addr, n := range cg.Exec {
		s.Executed += n
		if find(in, addr) >= 0 {
			s.Counted += n
			continue
		}
		if inPLT(addr) {
			pltInsts += n
			continue
		}
		left[find(out, addr)] += n
	}
	s.PLT = pltInsts
	if pltInsts > 0 {
		s.Left = append(s.Left, LeftOut{Name: PLTName, Insts: pltInsts, Reason: "PLT stubs are not functions: they run once per call through them"})
	}
	for fn, n := range left {
		l := LeftOut{Name: "(outside functions)", Insts: n}
		if fn >= 0 {
			f := &tab.Funcs[fn]
			l.Name, l.Entry, l.Reason = f.Name, f.Entry, f.Reason
			if f.Instrumented {
				l.Reason = "instrumented; these instructions precede its moved entry jump (decision 67)"
			}
		}
		s.Left = append(s.Left, l)
	}
	sort.Slice(s.Left, func(a, b int) bool {
		if s.Left[a].Insts != s.Left[b].Insts {
			return s.Left[a].Insts > s.Left[b].Insts
		}
		return s.Left[a].Entry < s.Left[b].Entry
	})
	return s
}

// Write prints the share and the largest left-out code (at most top
// entries).
func (s Share) Write(w io.Writer, top int) {
	fmt.Fprintf(w, "static %d/%d functions (%.2f%%), dynamic %d/%d instructions outside PLT stubs (%.3f%%; %.3f%% with the PLT's %d)\n",
		s.Instrumented, s.Functions, 100*s.StaticRatio(), s.Counted, s.Executed-s.PLT, 100*s.Ratio(), 100*s.RatioAll(), s.PLT)
	for i, l := range s.Left {
		if i == top {
			break
		}
		pct := 0.0
		if s.Executed > 0 {
			pct = 100 * float64(l.Insts) / float64(s.Executed)
		}
		fmt.Fprintf(w, "  %7.3f%% %12d  %-40s %s\n", pct, l.Insts, l.Name, l.Reason)
	}
}

// ProcessShare is the whole-process gauge of DESIGN decision 13 and issue
// 25: of the instructions the process executed in every object callgrind
// saw (the executable, its shared libraries, code it could not place),
// the dynamic loader aside, how many lie in instrumented functions.
// Executable-only share (Share) hides a program whose work is in a
// library; this does not.
type ProcessShare struct {
	// Executed is the process's instructions outside the dynamic loader;
	// PLT the executable's PLT stubs among them (set aside, as in Share);
	// Counted those blpp counts.
	Executed, Counted, PLT uint64
	// Objects lists every object's executed instructions, most first,
	// the loader included (marked Loader).
	Objects []ObjectShare
	// Left lists, for WholeShareOf, the instrumented modules' code that
	// ran uncounted (names module!function), most first.
	Left []LeftOut
}

// ObjectShare is one object's part of a process's instructions.
type ObjectShare struct {
	Name   string
	Insts  uint64
	Loader bool // the dynamic loader: not counted in Executed
}

// IsLoader tells the dynamic loader's object by its file name
// (ld-linux-x86-64.so.2 on x86-64 glibc, ld-2.36.so behind it).
func IsLoader(object string) bool {
	b := object[strings.LastIndexByte(object, '/')+1:]
	return strings.HasPrefix(b, "ld-linux") || strings.HasPrefix(b, "ld-2.") || strings.HasPrefix(b, "ld.so")
}

// sortObjects orders objects by executed instructions, most first, then
// by name.
func sortObjects(objs []ObjectShare) {
	sort.Slice(objs, func(a, b int) bool {
		if objs[a].Insts != objs[b].Insts {
			return objs[a].Insts > objs[b].Insts
		}
		return objs[a].Name < objs[b].Name
	})
}

// isValgrind tells valgrind's own objects (its preloaded core), which are
// no part of the program.
func isValgrind(object string) bool {
	return strings.Contains(object[strings.LastIndexByte(object, '/')+1:], "vgpreload")
}

// ProcessShareOf widens s, the executable's share in the same callgrind
// run cg, to the whole process. The executable's instructions are s's
// (its code callgrind filed under "???" included, once FoldUnknown moved
// it); every other object's come from cg.ObjectIr.
func ProcessShareOf(s Share, cg *callgrind.Profile) ProcessShare {
	ps := ProcessShare{Executed: s.Executed, Counted: s.Counted, PLT: s.PLT}
	ps.Objects = append(ps.Objects, ObjectShare{Name: cg.Object, Insts: s.Executed})
	var unknown uint64
	for _, n := range cg.UnknownExec {
		unknown += n
	}
	if unknown > 0 {
		ps.Executed += unknown
		ps.Objects = append(ps.Objects, ObjectShare{Name: callgrind.UnknownObject, Insts: unknown})
	}
	for ob, n := range cg.ObjectIr {
		if ob == cg.Object || ob == callgrind.UnknownObject {
			continue
		}
		o := ObjectShare{Name: ob, Insts: n, Loader: IsLoader(ob)}
		if !o.Loader {
			ps.Executed += n
		}
		ps.Objects = append(ps.Objects, o)
	}
	sortObjects(ps.Objects)
	return ps
}

// Ratio is Counted/(Executed-PLT): the share of the process's
// instructions, the loader and the executable's PLT stubs aside, that
// blpp counts; 1 when nothing ran.
func (ps ProcessShare) Ratio() float64 {
	if ps.Executed <= ps.PLT {
		return 1
	}
	return float64(ps.Counted) / float64(ps.Executed-ps.PLT)
}

// Write prints the process share and its largest objects (at most top).
func (ps ProcessShare) Write(w io.Writer, top int) {
	fmt.Fprintf(w, "whole process: %d/%d instructions outside the loader and PLT stubs counted (%.3f%%)\n",
		ps.Counted, ps.Executed-ps.PLT, 100*ps.Ratio())
	for i, o := range ps.Objects {
		if i == top {
			break
		}
		note := ""
		if o.Loader {
			note = " (dynamic loader: not in the gauge)"
		}
		fmt.Fprintf(w, "  %14d  %s%s\n", o.Insts, o.Name, note)
	}
}

// ModuleFile pairs an instrumented module with its original file.
type ModuleFile struct {
	Orig, Copy string
}

// WholeShareOf is the gauge of DESIGN decision 14 over a whole process
// whose shared objects are instrumented too (decision 81): cg is
// callgrind's run of the original program, made with OutDir kept as
// cgDir, whose main object is modules[0]; every module's counted
// instructions come from its own object's counts and the metadata of its
// instrumented copy (DynamicShareOf); every other object's instructions,
// the loader's aside, count as not counted.
func WholeShareOf(cg *callgrind.Profile, cgDir string, modules []ModuleFile) (ProcessShare, error) {
	var ps ProcessShare
	mine := map[string]bool{}
	for k, m := range modules {
		tab, f, err := report.LoadMeta(m.Copy)
		if err != nil {
			return ps, err
		}
		f.Close()
		plt, err := PLTRanges(m.Orig)
		if err != nil {
			return ps, err
		}
		ob := cg
		if k > 0 {
			// The program's processes only, as cg (the
			// denominator) is: not the children it ran.
			if ob, err = callgrind.CollectObjectOf(cgDir, m.Orig, nil, cg.PIDs); err != nil {
				return ps, err
			}
		}
		if real, err := filepath.EvalSymlinks(m.Orig); err == nil {
			mine[real] = true
		}
		mine[m.Orig] = true
		if ob == nil {
			continue // never ran
		}
		s := DynamicShareOf(tab, ob, plt)
		for _, l := range s.Left {
			l.Name = filepath.Base(m.Orig) + "!" + l.Name
			ps.Left = append(ps.Left, l)
		}
		ps.Counted += s.Counted
		ps.PLT += s.PLT
		ps.Objects = append(ps.Objects, ObjectShare{Name: m.Orig, Insts: s.Executed})
	}
	// The process's instructions are every object's once: a module's
	// .plt and .init code, which callgrind files under "???" and the
	// fold gave back to the module above, is in UnknownObject's total.
	for ob, n := range cg.ObjectIr {
		o := ObjectShare{Name: ob, Insts: n, Loader: IsLoader(ob) || isValgrind(ob)}
		if !o.Loader {
			ps.Executed += n
		}
		if !mine[ob] && ob != cg.Object {
			ps.Objects = append(ps.Objects, o)
		}
	}
	sortObjects(ps.Objects)
	sort.Slice(ps.Left, func(a, b int) bool {
		if ps.Left[a].Insts != ps.Left[b].Insts {
			return ps.Left[a].Insts > ps.Left[b].Insts
		}
		return ps.Left[a].Name < ps.Left[b].Name
	})
	return ps, nil
}
