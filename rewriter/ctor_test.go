package rewriter_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestLibraryConstructorCallsBack: a shared library's constructor calls an
// instrumented function of the executable before the program's entry
// point, so before the runtime is ready (%gs is not set up yet). The
// rewritten program must behave like the original, and main's own calls
// are still counted.
func TestLibraryConstructorCallsBack(t *testing.T) {
	cc := fixture.RequireTool(t, "gcc", "gcc")
	src := filepath.Join(fixture.Root(t), "testdata", "ctor")
	dir := t.TempDir()
	lib := filepath.Join(dir, "libctor.so")
	exe := filepath.Join(dir, "ctor")
	for _, args := range [][]string{
		{"-O2", "-g", "-fPIC", "-shared", "-o", lib, filepath.Join(src, "lib.c")},
		{"-O2", "-g", "-rdynamic", "-o", exe, filepath.Join(src, "main.c"), lib, "-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
		}
	}
	inst := rewriteBinary(t, exe, exe+".blpp")
	want := runProc(t, exe, nil)
	prof := filepath.Join(dir, "blpp.out")
	got := runProc(t, inst, nil, "BLPP_PROFILE="+prof)
	sameBehaviour(t, "ctor", want, got)
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Threads) == 0 || len(p.Threads[0].Records) == 0 {
		t.Fatal("the profile has no counts")
	}
}
