package report

import (
	"fmt"
	"testing"

	"github.com/google/pprof/profile"
)

// TestPprofAddsUp: the pprof model's values, summed the way pprof sums
// them, are the model's counts. Per function and source line the "lines"
// values add up to annotate's count (lineCounts), per function the
// "insns" values to its instructions, and the "count" values to its
// completed paths; every sample's leaf is a location inside a block of
// the function.
func TestPprofAddsUp(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("flow-only=", flowOnly), func(t *testing.T) {
			m := exModel(t, flowOnly)
			p, err := MakePprof(m)
			if err != nil {
				t.Fatal(err)
			}
			idx := map[string]int{}
			for i, st := range p.SampleType {
				idx[st.Type] = i
			}
			type fileLine struct {
				file string
				line int
			}
			lines := map[FuncID]map[fileLine]uint64{}
			insns := map[FuncID]uint64{}
			count := map[FuncID]uint64{}
			for _, s := range p.Sample {
				leaf := s.Location[0]
				var owner *FuncID
				for _, id := range m.FuncIDs() {
					for _, b := range m.Func(id).Blocks {
						if leaf.Address >= b.Addr && leaf.Address < b.End {
							owner = &id
						}
					}
				}
				if owner == nil {
					t.Fatalf("sample at %#x: in no block", leaf.Address)
				}
				id := *owner
				if lines[id] == nil {
					lines[id] = map[fileLine]uint64{}
				}
				ln := leaf.Line[0]
				if v := s.Value[idx["lines"]]; v != 0 {
					lines[id][fileLine{ln.Function.Filename, int(ln.Line)}] += uint64(v)
				}
				insns[id] += uint64(s.Value[idx["insns"]])
				count[id] += uint64(s.Value[idx["count"]])
			}
			for _, id := range m.FuncIDs() {
				if !m.Func(id).Instrumented {
					continue
				}
				name := m.FuncName(id)
				want := m.lineCounts([]FuncID{id})
				for file, ls := range want {
					for l, c := range ls {
						if got := lines[id][fileLine{file, l}]; got != c {
							t.Errorf("%s %s:%d: pprof lines %d, annotate %d", name, file, l, got, c)
						}
					}
				}
				for k, v := range lines[id] {
					if _, ok := want[k.file][k.line]; !ok {
						t.Errorf("%s %s:%d: pprof lines %d, annotate has no such line", name, k.file, k.line, v)
					}
				}
				if fp := m.Profile(id); insns[id] != fp.Insns || count[id] != fp.Executions {
					t.Errorf("%s: pprof insns %d, count %d; model %d, %d", name, insns[id], count[id], fp.Insns, fp.Executions)
				}
			}
		})
	}
}

// TestPprofLineOwners: a location's line goes to the inline frame whose
// source holds it (lineOwners), as in the LLVM export: work's a.c:25 in
// helper's range is work's line, helper's b.c:31 in inner's range is
// helper's; other rows stay with the innermost frame.
func TestPprofLineOwners(t *testing.T) {
	m := exModel(t, false)
	m.Debug = inlineDebug()
	m.Modules[0].Debug = m.Debug
	p, err := MakePprof(m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{
		0x1104: "work:25",
		0x1108: "helper:31 work:21",
		0x110c: "inner:52 helper:31 work:21",
		0x1100: "work:20",
	}
	seen := map[uint64]bool{}
	for _, l := range p.Location {
		w, ok := want[l.Address-m.Modules[0].Bias]
		if !ok {
			continue
		}
		got := ""
		for i, ln := range l.Line {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s:%d", ln.Function.Name, ln.Line)
		}
		if got != w {
			t.Errorf("location %#x: lines %q, want %q", l.Address, got, w)
		}
		seen[l.Address-m.Modules[0].Bias] = true
	}
	for a := range want {
		if !seen[a] {
			t.Errorf("no location at %#x", a)
		}
	}
}

// TestPprofByFunction: at function granularity each context gives at most
// one sample, at its function's entry, and the instructions per stack of
// callers and function are those of the line-granularity profile.
func TestPprofByFunction(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		m := exModel(t, flowOnly)
		byLine, err := makePprof(m, false)
		if err != nil {
			t.Fatal(err)
		}
		byFunc, err := makePprof(m, true)
		if err != nil {
			t.Fatal(err)
		}
		iInsns := len(byLine.SampleType) - 1
		entries := map[uint64]bool{}
		for _, id := range m.FuncIDs() {
			entries[m.Func(id).Entry] = true
		}
		// A sample's key: its function's name, then its callers' addresses.
		key := func(s *profile.Sample) string {
			k := s.Location[0].Line[len(s.Location[0].Line)-1].Function.Name
			for _, l := range s.Location[1:] {
				k += fmt.Sprintf(";%#x", l.Address)
			}
			return k
		}
		want, got := map[string]int64{}, map[string]int64{}
		for _, s := range byLine.Sample {
			want[key(s)] += s.Value[iInsns]
		}
		seen := map[string]bool{}
		for _, s := range byFunc.Sample {
			if !entries[s.Location[0].Address] {
				t.Errorf("flow-only=%v: sample at %#x, not a function's entry", flowOnly, s.Location[0].Address)
			}
			k := key(s)
			if seen[k] {
				t.Errorf("flow-only=%v: two samples for %s", flowOnly, k)
			}
			seen[k] = true
			got[k] += s.Value[iInsns]
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("flow-only=%v: %s: %d instructions by function, %d by line", flowOnly, k, got[k], v)
			}
		}
		if len(byFunc.Sample) >= len(byLine.Sample) || len(byFunc.Sample) == 0 {
			t.Errorf("flow-only=%v: %d samples by function, %d by line", flowOnly, len(byFunc.Sample), len(byLine.Sample))
		}
	}
}
