package cfg

import "testing"

// TestSplitNames: the names compilers and BOLT give split-off code, and
// the parent each belongs to (decision 125).
func TestSplitNames(t *testing.T) {
	for _, c := range []struct {
		name, base string
	}{
		{"foo.cold", "foo"},
		{"foo.cold.12", "foo"},
		{"foo.part.0.cold", "foo.part.0"},
		{"_ZL17XXH3_hashLong_64bPKhmS0_m.llvm.1768801679344776328.warm", "_ZL17XXH3_hashLong_64bPKhmS0_m.llvm.1768801679344776328"},
		{"bar.warm", "bar"},
		{"bar.warm.cold", "bar.warm"},
	} {
		if !isColdName(c.name) {
			t.Errorf("%s is not taken for split-off code", c.name)
			continue
		}
		if b := coldBase(c.name); b != c.base {
			t.Errorf("%s: parent %q, want %q", c.name, b, c.base)
		}
	}
	for _, n := range []string{"cold", ".cold", "foo.colder", "foo.cold.", "foo.cold.x", "warmup", "foo.warmer", "foo.warm.1a"} {
		if isColdName(n) {
			t.Errorf("%s is taken for split-off code", n)
		}
	}
}
