package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestDisplayName(t *testing.T) {
	tests := []struct{ raw, want string }{
		// Itanium C++ [Itanium C++ ABI 5.1], parameters and template
		// arguments kept so overloads and instantiations stay apart.
		{"_Z3fooi", "foo(int)"},
		{"_Z3food", "foo(double)"},
		{"_ZN3FooC2Ev", "Foo::Foo()"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"},
		{"_Z10accumulateIlET_RKSt6vectorIS0_SaIS0_EESt8functionIFS0_S0_S0_EE",
			"long accumulate<long>(std::vector<long, std::allocator<long> > const&, std::function<long (long, long)>)"},
		// GCC's clones and split-off fragments.
		{"_Z3fooi.isra.0", "foo(int) [clone .isra.0]"},
		{"_Z3fooi.cold", "foo(int) [clone .cold]"},
		{"_ZL7checkedRK5Shape.constprop.0", "checked(Shape const&) [clone .constprop.0]"},
		{"_Z3fooi.part.0", "foo(int) [clone .part.0]"},
		{"_Z3fooi.part.0.cold", "foo(int) [clone .part.0] [clone .cold]"},
		// A PLT entry or symbol version after the name.
		{"_Z3fooi@plt", "foo(int)@plt"},
		// Rust: legacy (the hash left out) and v0.
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"_RNvCs15kBYyAo9fc_7mycrate4main", "mycrate::main"},
		// C, stripped code and what does not demangle pass through.
		{"main", "main"},
		{"sub_4030", "sub_4030"},
		{"printf@plt", "printf@plt"},
		{"__libc_start_main", "__libc_start_main"},
		{"_Zgarbage", "_Zgarbage"},
		{"_Z", "_Z"},
		{"_R", "_R"},
		{"_ZN", "_ZN"},
		{"", ""},
		{"@", "@"},
	}
	for _, tt := range tests {
		if got := DisplayName(tt.raw, NameOptions{}); got != tt.want {
			t.Errorf("DisplayName(%q) = %q, want %q", tt.raw, got, tt.want)
		}
		if got := DisplayName(tt.raw, NameOptions{Raw: true}); got != tt.raw {
			t.Errorf("DisplayName(%q, Raw) = %q, want it unchanged", tt.raw, got)
		}
	}
}

// A hostile name whose substitutions would grow without bound is cut
// short: returned unchanged or bounded, never huge.
func TestDisplayNameBounded(t *testing.T) {
	raw := "_Z1fIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII"
	if got := DisplayName(raw, NameOptions{}); len(got) > 1<<16 {
		t.Errorf("DisplayName of a hostile name is %d bytes long", len(got))
	}
}

func FuzzDisplayName(f *testing.F) {
	for _, s := range []string{"_Z3fooi.isra.0", "_RNvCs15kBYyAo9fc_7mycrate4main", "_ZN4core3fmt5write17h0123456789abcdefE", "main", "_Z3fooi@plt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if got := DisplayName(raw, NameOptions{Raw: true}); got != raw {
			t.Fatalf("Raw changed %q to %q", raw, got)
		}
		_ = DisplayName(raw, NameOptions{})
	})
}

// cxxModel is exModel with C++ names: work is work(int), and the
// uninstrumented helper a static function's clone.
func cxxModel(t *testing.T, scale uint64, o NameOptions) *Model {
	tab := exTable(t)
	tab.Funcs[1].Name = "_Z4worki"
	tab.Funcs[2].Name = "_ZL6helperv.isra.0"
	p := exProfile(t, tab, false)
	for ti := range p.Threads {
		r := &p.Threads[ti].Records[1]
		for k := range r.Paths {
			r.Paths[k].Count *= scale
			r.Paths[k].Metrics[0] *= scale
		}
	}
	m, err := NewModel("demo.blpp", tab, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Debug = exDebug()
	m.Modules[0].Debug = m.Debug
	m.Names = o
	return m
}

// TestNamesEveryView renders every view and export of a model with a C++
// name: the views for people show it demangled (or, under Raw, mangled
// and only so); the exports for tools keep the symbol either way.
func TestNamesEveryView(t *testing.T) {
	const sym, name = "_Z4worki", "work(int)"
	render := map[string]func(w *bytes.Buffer, m *Model) error{
		"tree":    func(w *bytes.Buffer, m *Model) error { return TreeText(w, m, ViewOptions{All: true}) },
		"callers": func(w *bytes.Buffer, m *Model) error { return CallersText(w, m, ViewOptions{All: true}) },
		"flat":    func(w *bytes.Buffer, m *Model) error { return FlatText(w, m, ViewOptions{}) },
		"paths":   func(w *bytes.Buffer, m *Model) error { return PathsText(w, m, ViewOptions{}) },
		"context": func(w *bytes.Buffer, m *Model) error {
			ids, err := m.Match("main/" + name)
			if err != nil || len(ids) == 0 {
				return fmt.Errorf("Match(main/%s) = %v, %v", name, ids, err)
			}
			return ContextPathsText(w, m, ids, "PATTERN", ViewOptions{})
		},
		"hot": func(w *bytes.Buffer, m *Model) error {
			h, err := MakeHotPaths(m, "", 1)
			if err != nil {
				return err
			}
			return HotText(w, h, HotOptions{})
		},
		"procs":    func(w *bytes.Buffer, m *Model) error { return ProcsText(w, MakeProcs(m)) },
		"coverage": func(w *bytes.Buffer, m *Model) error { return CoverageText(w, MakeCoverage(m)) },
		"folded":   func(w *bytes.Buffer, m *Model) error { return ExportFolded(w, m, ExportOptions{}) },
		"cfgprof": func(w *bytes.Buffer, m *Model) error {
			return CFGProfileDot(w, m, m.MatchFuncs(func(n string) bool { return n == name }), CFGProfileOptions{Share: 0.9})
		},
		"html": func(w *bytes.Buffer, m *Model) error {
			h, err := MakeHotPaths(m, "", 1)
			if err != nil {
				return err
			}
			return HTML(w, m, HTMLOptions{Hot: h})
		},
		"diff": func(w *bytes.Buffer, m *Model) error {
			return DiffText(w, MakeDiff(m, cxxModel(t, 2, m.Names)), 0)
		},
	}
	for view, f := range render {
		for _, raw := range []bool{false, true} {
			var out bytes.Buffer
			if err := f(&out, cxxModel(t, 1, NameOptions{Raw: raw})); err != nil {
				t.Errorf("%s (raw %v): %v", view, raw, err)
				continue
			}
			shown, hidden := name, sym
			if raw {
				shown, hidden = sym, name
			}
			if s := out.String(); !strings.Contains(s, shown) || strings.Contains(s, hidden) {
				t.Errorf("%s (raw %v) shows %q or lacks %q:\n%s", view, raw, hidden, shown, s)
			}
		}
	}
	// The JSON has both; lcov and BOLT fdata keep the symbol (the LLVM
	// sample profile names functions by DWARF here: TestDemangle in
	// cmd/blpp checks it keeps linkage names).
	m := cxxModel(t, 1, NameOptions{})
	var js bytes.Buffer
	if err := PathsJSON(&js, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "_Z4worki"`, `"demangled": "work(int)"`, `"function": "_Z4worki"`, `"demangled": "helper() [clone .isra.0]"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("the JSON lacks %s", want)
		}
	}
	tools := map[string]func(w *bytes.Buffer) error{
		// bolt-fdata needs the binary: cmd/blpp's TestDemangle checks it.
		"lcov": func(w *bytes.Buffer) error { return CoverageLcov(w, MakeCoverage(m)) },
	}
	for format, f := range tools {
		var out bytes.Buffer
		if err := f(&out); err != nil {
			t.Errorf("%s: %v", format, err)
		} else if s := out.String(); !strings.Contains(s, sym) || strings.Contains(s, name) {
			t.Errorf("%s does not keep the symbol %s:\n%s", format, sym, s)
		}
	}
}
