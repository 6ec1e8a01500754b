package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"text/tabwriter"
)

// Diff compares two profiles: each function's share of the instructions
// executed and each path's share of the path executions, old against new.
// Functions are matched by name, paths by function name and path number
// (path numbers mean the same only for the same instrumented binary, so
// paths are compared only then).
type Diff struct {
	Old, New            string
	OldInsns, NewInsns  uint64
	OldPaths, NewPaths  uint64
	Funcs               []DiffRow // changed shares, largest change first
	Paths               []DiffRow
	SameBinary          bool
	UnchangedFunctions  int
	UnchangedPathsCount int
	// Names says how DiffText shows the function names (the old model's).
	Names NameOptions
}

// DiffRow is one function or path in both profiles.
type DiffRow struct {
	Func     string // as the symbol table has it
	Path     uint64 // for path rows
	Old, New uint64 // instructions (functions) or executions (paths)
	OldShare float64
	NewShare float64
}

// Delta is the change of share, in percentage points.
func (r DiffRow) Delta() float64 { return 100 * (r.NewShare - r.OldShare) }

// sameShare reports a/ta == b/tb exactly.
func sameShare(a, ta, b, tb uint64) bool {
	x := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(tb))
	y := new(big.Int).Mul(new(big.Int).SetUint64(b), new(big.Int).SetUint64(ta))
	return x.Cmp(y) == 0
}

// ppText prints a change in percentage points with two decimals, or
// with as many as show its first two digits when it is smaller than
// that (a change is never shown as +0.00).
func ppText(d float64) string {
	dec, a := 2, math.Abs(d)
	if a > 0 && a < 0.005 {
		for a*math.Pow(10, float64(dec)) < 10 && dec < 8 {
			dec++
		}
	}
	return fmt.Sprintf("%+.*f", dec, d)
}

func share(a, t uint64) float64 {
	if t == 0 {
		return 0
	}
	return float64(a) / float64(t)
}

// MakeDiff compares old with new.
func MakeDiff(old, new *Model) *Diff {
	d := &Diff{Old: old.Binary, New: new.Binary, OldInsns: old.TotalInsns(), NewInsns: new.TotalInsns(), Names: old.Names}
	d.SameBinary = string(old.Table.InstrID) == string(new.Table.InstrID) && len(old.Table.Funcs) == len(new.Table.Funcs)
	type counts struct{ insns, execs uint64 }
	byName := func(m *Model) map[string]counts {
		out := map[string]counts{}
		for _, i := range m.FuncIDs() {
			if !m.Func(i).Instrumented {
				continue
			}
			c := out[m.Func(i).Name]
			c.insns = satAdd(c.insns, m.Profile(i).Insns)
			c.execs = satAdd(c.execs, m.Profile(i).Executions)
			out[m.Func(i).Name] = c
		}
		return out
	}
	of, nf := byName(old), byName(new)
	for _, c := range of {
		d.OldPaths = satAdd(d.OldPaths, c.execs)
	}
	for _, c := range nf {
		d.NewPaths = satAdd(d.NewPaths, c.execs)
	}
	names := map[string]bool{}
	for n := range of {
		names[n] = true
	}
	for n := range nf {
		names[n] = true
	}
	for n := range names {
		a, b := of[n].insns, nf[n].insns
		if a == 0 && b == 0 {
			continue
		}
		if sameShare(a, d.OldInsns, b, d.NewInsns) {
			d.UnchangedFunctions++
			continue
		}
		d.Funcs = append(d.Funcs, DiffRow{Func: n, Old: a, New: b, OldShare: share(a, d.OldInsns), NewShare: share(b, d.NewInsns)})
	}
	if d.SameBinary {
		for _, i := range old.FuncIDs() {
			ids := map[uint64]bool{}
			for id := range old.Profile(i).Paths {
				ids[id] = true
			}
			for id := range new.Profile(i).Paths {
				ids[id] = true
			}
			for id := range ids {
				a, b := old.Profile(i).Paths[id], new.Profile(i).Paths[id]
				if sameShare(a, d.OldPaths, b, d.NewPaths) {
					d.UnchangedPathsCount++
					continue
				}
				d.Paths = append(d.Paths, DiffRow{Func: old.Func(i).Name, Path: id, Old: a, New: b,
					OldShare: share(a, d.OldPaths), NewShare: share(b, d.NewPaths)})
			}
		}
	}
	order := func(rs []DiffRow) {
		sort.Slice(rs, func(i, j int) bool {
			di, dj := abs(rs[i].Delta()), abs(rs[j].Delta())
			if di != dj {
				return di > dj
			}
			if rs[i].Func != rs[j].Func {
				return rs[i].Func < rs[j].Func
			}
			return rs[i].Path < rs[j].Path
		})
	}
	order(d.Funcs)
	order(d.Paths)
	return d
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// DiffText writes the functions and paths whose share changed most (top
// of each; 0 lists all), or "no change" when no share changed.
func DiffText(w io.Writer, d *Diff, top int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "old: %s: %d instructions, %d path executions\n", d.Old, d.OldInsns, d.OldPaths)
	fmt.Fprintf(bw, "new: %s: %d instructions, %d path executions\n", d.New, d.NewInsns, d.NewPaths)
	if len(d.Funcs) == 0 && len(d.Paths) == 0 {
		fmt.Fprintln(bw, "no change")
		return bw.Flush()
	}
	table := func(title string, rs []DiffRow, paths bool, unchanged int) {
		fmt.Fprintf(bw, "\n%s (%d changed, %d unchanged):\n", title, len(rs), unchanged)
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
		if paths {
			fmt.Fprintln(tw, "old\tnew\told share\tnew share\tchange\t\t")
		} else {
			fmt.Fprintln(tw, "old\tnew\told share\tnew share\tchange\t\t")
		}
		for i, r := range rs {
			if top > 0 && i >= top {
				break
			}
			name := DisplayName(r.Func, d.Names)
			if paths {
				name = fmt.Sprintf("%s path %d", name, r.Path)
			}
			fmt.Fprintf(tw, "%d\t%d\t%.2f%%\t%.2f%%\t%s pp\t\t%s\n", r.Old, r.New, 100*r.OldShare, 100*r.NewShare, ppText(r.Delta()), name)
		}
		tw.Flush()
		if top > 0 && len(rs) > top {
			fmt.Fprintf(bw, "... and %d more (--top 0 lists all)\n", len(rs)-top)
		}
	}
	if len(d.Funcs) > 0 {
		table("functions, share of instructions executed", d.Funcs, false, d.UnchangedFunctions)
	}
	if len(d.Paths) > 0 {
		table("paths, share of path executions", d.Paths, true, d.UnchangedPathsCount)
	}
	return bw.Flush()
}
