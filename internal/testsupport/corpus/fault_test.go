package corpus_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestFaults builds this package's tests with the blppfault tag, in which
// the code generator plants a fault on request (rewriter/fault_on.go: a
// wrong chord increment, a dropped path-end count, an unstored call site
// that makes a partial path unlocatable), and runs TestFaultsDetected,
// which requires the same-run oracle to fail on each (issue 23,
// acceptance 3).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tests again with -tags blppfault; not under -short")
	}
	fixture.RequireTool(t, "valgrind", "valgrind")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH (Debian package golang-go)")
	}
	cmd := exec.Command(gobin, "test", "-tags", "blppfault", "-run", "^(TestFaultsDetected|TestFaultThreads)$", "-count=1", "-v", ".")
	cmd.Env = append(os.Environ(), "BLPP_FAULT=")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("go test -tags blppfault: %v", err)
	}
}
