package runtime_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestTwinWaits: a cold record of a function with many paths gets its
// hot twin (the whole dense array) only after path ends in proportion to
// the twin's size (promote_ends, decision 136). coldtwin.c runs a
// 4096-path function 100 times in each of 2,048 contexts: with twins
// made after 32 path ends, as before, the arena held 2,048 twins of 32
// KiB (75 MB); counted in their cold records, the whole run needs a few
// megabytes.
func TestTwinWaits(t *testing.T) {
	orig := fixture.Build(t, "coldtwin.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	want, err := osexec.Command(orig).Output()
	if err != nil {
		t.Fatalf("coldtwin: %v", err)
	}
	inst, prof := rewriteInDir(t, orig)
	cmd := osexec.Command(inst)
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+prof)
	got, err := cmd.Output()
	if err != nil || string(got) != string(want) {
		t.Fatalf("instrumented coldtwin: %v, stdout %q, want %q", err, got, want)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	// Every activation of wide() ran one of its paths: 204,800 path
	// executions in records of 4096 paths, counted where they ran.
	var ends uint64
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for _, q := range r.Paths {
				if q.ID < 4096 && len(r.Paths) <= 3 && r.Calls == 100 {
					ends += q.Count
				}
			}
		}
	}
	arena := p.Stats[cct.StatArenaBytes]
	t.Logf("%d records, arena %d bytes, %d path ends in wide's records", p.Stats[cct.StatRecords], arena, ends)
	if ends != 2048*100 {
		t.Errorf("wide's records counted %d path ends, want %d", ends, 2048*100)
	}
	if arena > 16<<20 {
		t.Errorf("the arena holds %d bytes: records of a 4096-path function that ran 100 path ends got their hot twins", arena)
	}
}

// rewriteInDir rewrites the fixture binary orig with the default options
// into a temporary directory and returns the instrumented binary and the
// profile path it is to write.
func rewriteInDir(t *testing.T, orig string) (inst, prof string) {
	t.Helper()
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewriter.Rewrite(data, rewriter.Options{})
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	dir := t.TempDir()
	inst = filepath.Join(dir, filepath.Base(orig)+".blpp")
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		t.Fatal(err)
	}
	return inst, filepath.Join(dir, "prof")
}
