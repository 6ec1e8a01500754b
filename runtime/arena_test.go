package runtime_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestArenaPopulate: the small objects' arena makes its pages present
// 64 KiB at a time with madvise(MADV_POPULATE_WRITE) ahead of its
// allocations, instead of taking a page fault at each page's first
// write (decision 145); a kernel that refuses it is asked once. The
// program's output and the profile's contexts are those of the run, and
// what the arena made present bounds a context's bytes (decision 146).
func TestArenaPopulate(t *testing.T) {
	strace, err := osexec.LookPath("strace")
	if err != nil {
		if os.Getenv("BLPP_REQUIRE_TOOLS") != "" {
			t.Fatal("strace not installed (Debian package strace)")
		}
		t.Skip("strace not installed (Debian package strace)")
	}
	orig := fixture.Build(t, "arenagrow.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	want, err := osexec.Command(orig).Output()
	if err != nil {
		t.Fatal(err)
	}
	inst, prof := rewriteInDir(t, orig)
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := osexec.Command(strace, "-qq", "-e", "trace=madvise", "-o", trace, inst)
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+prof)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("strace cannot trace here: %v", err)
	}
	if string(out) != string(want) {
		t.Fatalf("output %q, want %q", out, want)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Stats[cct.StatRecords]; n < 1<<15 {
		t.Fatalf("%d records, want the tree's 65,535 or so", n)
	}
	calls := regexp.MustCompile(`madvise\(0x[0-9a-f]+, (\d+), MADV_POPULATE_WRITE\) = (-?\d+)`).FindAllStringSubmatch(string(b), -1)
	var ok, failed, bytes int
	for _, c := range calls {
		n, _ := strconv.Atoi(c[1])
		if c[2] != "0" {
			failed++
			continue
		}
		ok++
		bytes += n
		if n > 64<<10 {
			t.Errorf("MADV_POPULATE_WRITE of %d bytes, want at most 64 KiB at a time", n)
		}
	}
	t.Logf("%d records; %d MADV_POPULATE_WRITE calls made %d KiB present, %d refused", p.Stats[cct.StatRecords], ok, bytes>>10, failed)
	switch {
	case failed > 1:
		t.Errorf("MADV_POPULATE_WRITE refused %d times, want it asked once", failed)
	case failed == 1 && ok > 0:
		t.Errorf("MADV_POPULATE_WRITE refused once and then asked again")
	case failed == 0 && bytes < 2<<20:
		t.Errorf("%d KiB made present ahead for %d records, want the small arena's pages (several MiB):\n%s", bytes>>10, p.Stats[cct.StatRecords], b)
	case failed == 0 && uint64(bytes) > 168*p.Stats[cct.StatRecords]:
		// Each context is a record with one path (an 88-byte header
		// and two counter words, decision 146), its 32-byte node and,
		// for half of them, a node list of two sites (four words):
		// 152 bytes, and the 64 KiB steps of populate. The 128-byte
		// header took 192.
		t.Errorf("%d KiB made present for %d records: %d bytes each, want at most 168", bytes>>10, p.Stats[cct.StatRecords], uint64(bytes)/p.Stats[cct.StatRecords])
	}
}
