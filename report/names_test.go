package report

import "testing"

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
