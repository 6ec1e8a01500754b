package rewriter_test

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// TestDiscoveredExact rewrites nofde.c built like Debian's busybox
// (static, position-dependent, stripped, no unwind tables for its own
// code), so that its functions are known only by discovery, and requires
// the copy to behave like the original and every one of the fixture's
// functions to be instrumented with block counts equal to callgrind's.
func TestDiscoveredExact(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	want := []string{"main", "square", "twice", "negate", "checked", "classify", "tailed", "jumper", "cmp_int", "on_exit_msg"}
	for _, opt := range []string{"-O2", "-Os"} {
		c := fixture.Config{CC: "gcc", Opt: opt, Static: true, Strip: true,
			Extra: []string{"-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}}
		twin := c
		twin.Strip = false
		ef, err := elf.Open(fixture.Build(t, "nofde.c", twin))
		if err != nil {
			t.Fatal(err)
		}
		syms, err := ef.Symbols()
		ef.Close()
		if err != nil {
			t.Fatal(err)
		}
		addrOf := map[string]uint64{}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				addrOf[s.Name] = s.Value
			}
		}
		orig, inst, prof := rewriteFixture(t, "nofde.c", c)
		tab, f, err := report.LoadMeta(inst)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := report.MakePaths(inst, tab, prof)
		f.Close()
		if err != nil {
			t.Fatalf("%s: report: %v", c, err)
		}
		cg, err := callgrind.Run(orig, callgrind.Options{Dir: filepath.Dir(orig)})
		if err != nil {
			t.Fatalf("%s: callgrind: %v", c, err)
		}
		byEntry := map[string]int{}
		for i, fn := range doc.Functions {
			byEntry[fn.Entry] = i
		}
		for _, name := range want {
			a, ok := addrOf[name]
			if !ok {
				t.Fatalf("%s: no symbol %s", c, name)
			}
			i, ok := byEntry[fmt.Sprintf("%#x", a)]
			if !ok {
				t.Errorf("%s: %s (%#x) is not a function of the rewritten binary", c, name, a)
				continue
			}
			fn := doc.Functions[i]
			if !fn.Instrumented {
				t.Errorf("%s: %s (%s) is not instrumented: %s", c, name, fn.Name, fn.Reason)
				continue
			}
			if len(fn.Blocks) == 0 {
				t.Errorf("%s: %s has no blocks", c, name)
			}
			ran := false
			for _, b := range fn.Blocks {
				var addr uint64
				if _, err := fmtSscan(b.Addr, &addr); err != nil {
					t.Fatal(err)
				}
				if b.Count != cg.Exec[addr] {
					t.Errorf("%s: %s block %s: blpp %d, callgrind %d", c, name, b.Addr, b.Count, cg.Exec[addr])
				}
				ran = ran || b.Count > 0
			}
			if !ran {
				t.Errorf("%s: %s never ran: the comparison proves nothing", c, name)
			}
		}
	}
}

// TestTextDataUntouched rewrites textdata.c, whose constant tables live
// in .text and are reached only by lea (as OpenSSL's SHA-256 constants
// are), stripped, so that discovery sees their addresses as taken by
// code: nothing may be written over them, and the copy must print what
// the original prints (decision 114). Before the fix the SHA-256
// constants read from their middle came out changed.
func TestTextDataUntouched(t *testing.T) {
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2", Strip: true},
		{CC: "gcc", Opt: "-Os", Strip: true},
		{CC: "gcc", Opt: "-O2", Static: true, Strip: true},
		{CC: "clang", Opt: "-O2", Strip: true},
	} {
		rewriteFixture(t, "textdata.c", c)
	}
}

// TestOpenSSLDigest rewrites Debian's libcrypto and runs openssl's
// SHA-256 with it (the rewritten library works in an uninstrumented
// program): the digest must be the original library's. Its SHA-NI code
// reads its constants from K256+128 in .text, which discovery once took
// for a procedure's entry and patched (decision 114).
func TestOpenSSLDigest(t *testing.T) {
	openssl := fixture.RequireTool(t, "openssl", "openssl")
	lib := "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"
	if _, err := os.Stat(lib); err != nil {
		if os.Getenv("BLPP_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s: %v (Debian package libssl3)", lib, err)
		}
		t.Skipf("%s: %v (Debian package libssl3)", lib, err)
	}
	dir := t.TempDir()
	in, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewriter.Rewrite(in, rewriter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "libcrypto.so.3"), out, 0o755); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "input")
	var data []byte
	for i := 0; i < 5000; i++ {
		data = append(data, fmt.Sprintf("line %d of the digest's input\n", i)...)
	}
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"sha256", "sha224", "sha512", "sha1", "md5"} {
		want := runProc(t, openssl, []string{alg, input})
		got := runProc(t, openssl, []string{alg, input}, "LD_LIBRARY_PATH="+dir, "BLPP_PROFILE="+filepath.Join(dir, "prof"))
		sameBehaviour(t, "openssl "+alg+" with the rewritten libcrypto", want, got)
	}
}
