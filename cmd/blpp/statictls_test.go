package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunStaticTLS runs a program whose library has 24 KiB of
// initial-exec TLS (DF_STATIC_TLS, as librustc_driver has). Under any
// LD_AUDIT module glibc puts it in the static TLS surplus, 512 bytes by
// default, and refuses to load it; blpp run sizes the surplus with
// GLIBC_TUNABLES, which the program must not see, and keeps a value of
// its own (decision 124).
func TestRunStaticTLS(t *testing.T) {
	lib := fixture.Build(t, "modules/tls_lib.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-shared", "-fPIC", "-Wl,-soname,libtlsbig.so"}})
	prog := fixture.Build(t, "modules/tls_main.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-Wl,--no-as-needed", lib}})
	libDir := t.TempDir()
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, "libtlsbig.so"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LD_LIBRARY_PATH", libDir)
	for _, tun := range []string{"", "glibc.malloc.perturb=0"} {
		t.Setenv("GLIBC_TUNABLES", tun)
		if tun == "" {
			os.Unsetenv("GLIBC_TUNABLES")
		}
		dir := t.TempDir()
		want := runProc(t, dir, nil, nil, prog)
		if want.code != 0 {
			t.Fatalf("the program itself: %s", want.stderr)
		}
		for _, mode := range [][]string{nil, {"--libs", "none"}} {
			what := "blpp run " + strings.Join(mode, " ") + " with GLIBC_TUNABLES=" + tun
			got, _ := blppRun(t, dir, nil, mode, prog)
			sameBehaviour(t, what, want, got)
			rep, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(rep), "warning") || !strings.Contains(string(rep), "path executions") {
				t.Errorf("%s: the report:\n%s", what, rep)
			}
		}
	}
}
