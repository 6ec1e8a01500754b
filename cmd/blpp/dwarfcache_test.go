package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportDWARFCache: blpp report and blpp run keep the decompressed
// DWARF of a binary whose debug sections are compressed (gcc -gz) under
// the cache directory (decision 126), and the report read back through
// the cache is the report of the first reading.
func TestReportDWARFCache(t *testing.T) {
	exe := fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-gz"}})
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("BLPP_PROFILE", "")
	dwarfDir := filepath.Join(cache, "blpp", "dwarf")
	cached := func() []string {
		files, _ := filepath.Glob(filepath.Join(dwarfDir, "*.dwarf"))
		return files
	}
	inst, prof, _ := profiled(t, t.TempDir(), exe)
	first := mustBlpp(t, "report", prof, "--binary", inst)
	if !strings.Contains(first, "loops.c:") {
		t.Fatalf("the report has no source lines:\n%s", first)
	}
	if files := cached(); len(files) != 1 {
		t.Fatalf("blpp report cached %v, want one file", files)
	}
	if second := mustBlpp(t, "report", prof, "--binary", inst); second != first {
		t.Errorf("the report through the cache differs:\n%s\nfirst:\n%s", second, first)
	}
	if err := os.RemoveAll(dwarfDir); err != nil {
		t.Fatal(err)
	}
	if o := blpp("run", "--libs", "none", "--", exe); o.code != 0 || !strings.Contains(o.stderr, "loops.c:") {
		t.Fatalf("blpp run: %s", o)
	}
	if files := cached(); len(files) != 1 {
		t.Errorf("blpp run cached %v, want one file", files)
	}
}
