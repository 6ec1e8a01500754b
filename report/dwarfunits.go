package report

import (
	"debug/dwarf"
	"sort"
	"sync"
)

// unitIndex finds the compile units of a module by address, and reads a
// unit's line program and scopes (readUnit) the first time a lookup needs
// them. NewDebugInfo reads only each unit's first entry and its address
// ranges (DW_AT_low_pc/high_pc or DW_AT_ranges [DWARF5 3.1.1, 2.17]);
// libc's debug file has 1,600 units and a report of a short program needs
// a few of them.
//
// A lookup gives what reading every unit would give as long as the units'
// address ranges do not overlap and cover their own code, which compilers
// guarantee. A unit without ranges is consulted for every address (it is
// read on the first lookup), so code it describes is not lost.
type unitIndex struct {
	d        *dwarf.Data
	units    []*cuUnit
	spans    []unitSpan // sorted by lo
	unranged []int      // units without address ranges

	mu      sync.Mutex // guards reading (origins, the units' tables)
	origins map[dwarf.Offset]*origin
}

type cuUnit struct {
	off    dwarf.Offset // of the unit's entry
	read   bool
	tables *DebugInfo // what readUnit gave; nil: nothing
}

// unitSpan is one address range of unit u; maxHi is the largest hi of
// the spans up to this one, so a search can stop scanning back.
type unitSpan struct {
	lo, hi, maxHi uint64
	u             int
}

func newUnitIndex(d *dwarf.Data) *unitIndex {
	x := &unitIndex{d: d, origins: map[dwarf.Offset]*origin{}}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag == dwarf.TagCompileUnit {
			u := len(x.units)
			x.units = append(x.units, &cuUnit{off: cu.Offset})
			rs, err := d.Ranges(cu)
			n := 0
			for _, rg := range rs {
				if err == nil && rg[1] > rg[0] {
					x.spans = append(x.spans, unitSpan{lo: rg[0], hi: rg[1], u: u})
					n++
				}
			}
			if n == 0 {
				x.unranged = append(x.unranged, u)
			}
		}
		r.SkipChildren()
	}
	if len(x.units) == 0 {
		return nil
	}
	sort.SliceStable(x.spans, func(i, j int) bool { return x.spans[i].lo < x.spans[j].lo })
	var m uint64
	for i := range x.spans {
		m = max(m, x.spans[i].hi)
		x.spans[i].maxHi = m
	}
	return x
}

// tablesOf returns the tables of unit u, reading them first if needed.
// x.mu is held.
func (x *unitIndex) tablesOf(u int) *DebugInfo {
	cu := x.units[u]
	if !cu.read {
		cu.read = true
		cu.tables = readUnit(x.d, cu.off, x.origins)
	}
	return cu.tables
}

// lookup returns the tables of the units whose ranges overlap [lo, hi),
// and of the units without ranges, in unit order.
func (x *unitIndex) lookup(lo, hi uint64) []*DebugInfo {
	i := sort.Search(len(x.spans), func(i int) bool { return x.spans[i].lo >= hi })
	var us []int
	for k := i - 1; k >= 0 && x.spans[k].maxHi > lo; k-- {
		if x.spans[k].hi > lo {
			us = append(us, x.spans[k].u)
		}
	}
	us = append(us, x.unranged...)
	if len(us) > 1 {
		sort.Ints(us)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*DebugInfo
	for k, u := range us {
		if k > 0 && us[k-1] == u {
			continue
		}
		if t := x.tablesOf(u); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// rows is Rows over the units: one unit's rows as they are; the rows of
// several merged and clipped as finish does for a whole module.
func (x *unitIndex) rows(lo, hi uint64) []LineRange {
	ts := x.lookup(lo, hi)
	switch len(ts) {
	case 0:
		return nil
	case 1:
		return ts[0].Rows(lo, hi)
	}
	var all []LineRange
	for _, t := range ts {
		all = append(all, t.Rows(lo, hi)...)
	}
	return clipRows(all)
}

// frames is Frames over the units: the first unit, in unit order, with a
// subprogram holding addr.
func (x *unitIndex) frames(addr uint64) []*Scope {
	for _, t := range x.lookup(addr, addr+1) {
		if fs := t.Frames(addr); fs != nil {
			return fs
		}
	}
	return nil
}

// hasLines reads units until one has a line-table row.
func (x *unitIndex) hasLines() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for u := range x.units {
		if t := x.tablesOf(u); t != nil && len(t.rows) > 0 {
			return true
		}
	}
	return false
}

// allScopes returns every concrete subprogram of the module, in unit
// order: the views that need the whole module (line owners for the pprof
// and LLVM sample exports) read every unit.
func (di *DebugInfo) allScopes() []*Scope {
	d := di.get()
	if d == nil {
		return nil
	}
	if d.units == nil {
		return d.scopes
	}
	x := d.units
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*Scope
	for u := range x.units {
		if t := x.tablesOf(u); t != nil {
			out = append(out, t.scopes...)
		}
	}
	return out
}
