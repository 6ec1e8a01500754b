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
	if m.FlowOnly {
		p.Comments = append(p.Comments, "flow-only profile: no calling context, stacks are one frame deep")
	}
	mp := &profile.Mapping{ID: 1, File: m.Binary, HasFunctions: true,
		HasFilenames: m.Debug != nil, HasLineNumbers: m.Debug != nil, HasInlineFrames: m.Debug != nil}
	if len(m.Table.OrigBuildID) > 0 {
		mp.BuildID = enchex.EncodeToString(m.Table.OrigBuildID)
	}
	p.Mapping = []*profile.Mapping{mp}
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
	mp.Start = math.MaxUint64
	location := func(fr StackFrame) *profile.Location {
		k := locKey{fr.Func, fr.Addr}
		if l, ok := locs[k]; ok {
			return l
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mp, Address: fr.Addr}
		mp.Start = min(mp.Start, fr.Addr)
		mp.Limit = max(mp.Limit, fr.Addr+1)
		name := m.FuncName(fr.Func)
		scopes := m.Debug.Frames(fr.Addr)
		row, hasRow := m.Debug.LineAt(fr.Addr)
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
	if len(p.Location) == 0 {
		mp.Start = 0
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return p, nil
}

// baseName is the last element of a path.
func baseName(p string) string { return filepath.Base(p) }
