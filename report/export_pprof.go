package report

import (
	enchex "encoding/hex"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/google/pprof/profile"

	"blpp/cct"
)

// pprofUnit is the unit pprof shows for a metric.
func pprofUnit(name string) string {
	switch name {
	case "tsc", "cycles", "ref-cycles":
		return "cycles"
	}
	return "count"
}

// ExportPprof writes m as a gzipped profile.proto [github.com/google/pprof
// proto/profile.proto]: one sample per calling context, its stack leaf
// first (the leaf at its function's entry, each caller at the call
// instruction), with values "count" (completed paths), one per further
// metric of the profile (tsc, cycles, ...: exclusive of callees), and
// "insns" (instructions executed in the context), the default. Locations
// carry function names and file:line from DWARF, inlined frames included.
func ExportPprof(w io.Writer, m *Model, opts ExportOptions) error {
	p, err := MakePprof(m)
	if err != nil {
		return err
	}
	return p.Write(w)
}

// MakePprof builds the pprof model of m.
func MakePprof(m *Model) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "count", Unit: "count"}},
		DefaultSampleType: "insns",
		PeriodType:        &profile.ValueType{Type: "insns", Unit: "count"},
		Period:            1,
	}
	for _, mt := range m.Metrics[1:] {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: mt.Name, Unit: pprofUnit(mt.Name)})
		if mt.Kind != cct.MetricReal {
			p.Comments = append(p.Comments, fmt.Sprintf("metric %s is %v", mt.Name, mt.Kind))
		}
	}
	p.SampleType = append(p.SampleType, &profile.ValueType{Type: "insns", Unit: "count"})
	p.Comments = append(p.Comments, "blpp path profile of "+m.Binary)
	for k := range m.Modules[min(1, len(m.Modules)):] {
		mod := &m.Modules[k+1]
		p.Comments = append(p.Comments, fmt.Sprintf("module %s (tag %d): %s", mod.Name, mod.Tag, mod.Path))
	}
	if m.FlowOnly {
		p.Comments = append(p.Comments, "flow-only profile: no calling context, stacks are one frame deep")
	}
	// One mapping per module, with the original build-id (what pprof
	// matches against symbol files); addresses are run-time ones,
	// link-time plus the module's load bias, so that modules do not
	// overlap.
	maps := make([]*profile.Mapping, len(m.Modules))
	for k := range m.Modules {
		mod := &m.Modules[k]
		mp := &profile.Mapping{ID: uint64(k + 1), File: mod.Path, HasFunctions: true,
			HasFilenames: mod.Debug.HasLines(), HasLineNumbers: mod.Debug.HasLines(), HasInlineFrames: mod.Debug.HasLines(), Start: math.MaxUint64}
		if len(mod.Table.OrigBuildID) > 0 {
			mp.BuildID = enchex.EncodeToString(mod.Table.OrigBuildID)
		} else if len(mod.BuildID) > 0 {
			mp.BuildID = enchex.EncodeToString(mod.BuildID)
		}
		maps[k] = mp
		p.Mapping = append(p.Mapping, mp)
	}
	funcs := map[profile.Function]*profile.Function{}
	function := func(name, sys, file string, line int) *profile.Function {
		k := profile.Function{Name: name, SystemName: sys, Filename: file, StartLine: int64(line)}
		if f, ok := funcs[k]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: sys, Filename: file, StartLine: int64(line)}
		funcs[k] = f
		p.Function = append(p.Function, f)
		return f
	}
	type locKey struct {
		fn   FuncID
		addr uint64
	}
	locs := map[locKey]*profile.Location{}
	location := func(fr StackFrame) *profile.Location {
		k := locKey{fr.Func, fr.Addr}
		if l, ok := locs[k]; ok {
			return l
		}
		mod, mp := &m.Modules[fr.Func.Module], maps[fr.Func.Module]
		addr := fr.Addr + mod.Bias
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mp, Address: addr}
		mp.Start = min(mp.Start, addr)
		mp.Limit = max(mp.Limit, addr+1)
		name := RawName(m.FuncName(fr.Func))
		scopes := mod.Debug.Frames(fr.Addr)
		row, hasRow := mod.Debug.LineAt(fr.Addr)
		if len(scopes) == 0 {
			ln := profile.Line{Function: function(name, name, "", 0)}
			if hasRow {
				ln.Function = function(name, name, row.File, 0)
				ln.Line = int64(row.Line)
			}
			l.Line = []profile.Line{ln}
		} else {
			// Innermost first; each outer frame is at the line where the
			// frame inside it was inlined [DWARF5 3.3.8.2].
			line := 0
			if hasRow {
				line = row.Line
			}
			for i := len(scopes) - 1; i >= 0; i-- {
				s := scopes[i]
				n, sys := s.Name, s.SymbolName()
				if i == 0 {
					n, sys = name, name // the outermost frame is the symbol (clones keep their suffix)
				}
				file := s.DeclFile
				l.Line = append(l.Line, profile.Line{Function: function(n, sys, file, s.DeclLine), Line: int64(line)})
				line = s.CallLine
			}
		}
		locs[k] = l
		p.Location = append(p.Location, l)
		return l
	}
	clamp := func(x uint64) int64 {
		if x > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(x)
	}
	for i := range m.Stacks {
		st := &m.Stacks[i]
		if st.Count == 0 && st.Insns == 0 && st.Calls == 0 {
			continue
		}
		s := &profile.Sample{}
		s.Value = append(s.Value, clamp(st.Count))
		for _, v := range st.Metrics {
			s.Value = append(s.Value, clamp(v))
		}
		s.Value = append(s.Value, clamp(st.Insns))
		for _, fr := range st.Frames {
			s.Location = append(s.Location, location(fr))
		}
		p.Sample = append(p.Sample, s)
	}
	for _, mp := range p.Mapping {
		if mp.Start > mp.Limit { // no location in it
			mp.Start = 0
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return p, nil
}

// baseName is the last element of a path.
func baseName(p string) string { return filepath.Base(p) }
