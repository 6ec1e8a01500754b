package main

// Separate debug info (issue 26, acceptance 3): a -O2 -g fixture split as
// distributions split their packages (objcopy --only-keep-debug, then
// --strip-debug --add-gnu-debuglink, then strip) gives the same annotate,
// lcov and LLVM sample output as the unsplit build, whether its debug file
// is found by .gnu_debuglink, under a --debug-dir .build-id tree or in a
// local DEBUGINFOD_URLS root; a debug file whose CRC or build-id does not
// match is refused with a note.

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// splitOutputs are the outputs compared between builds.
var splitOutputs = [][]string{
	{"annotate"},
	{"coverage", "--format", "lcov"},
	{"export", "--format", "llvm-sample"},
}

// outputsOf runs each of splitOutputs on inst's profile, with the binary's
// path replaced by BINARY.
func outputsOf(t *testing.T, inst, prof string, extra ...string) []string {
	t.Helper()
	var outs []string
	for _, args := range splitOutputs {
		out := mustBlpp(t, append(append(append([]string(nil), args...), prof, "--binary", inst), extra...)...)
		outs = append(outs, strings.ReplaceAll(out, inst, "BINARY"))
	}
	return outs
}

func mustCmd(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// buildIDOf returns the hex NT_GNU_BUILD_ID of path, via the model's
// reader's counterpart in readelf's terms: the .note.gnu.build-id
// descriptor.
func buildIDOf(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s: no .note.gnu.build-id", path)
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		t.Fatalf("%s: .note.gnu.build-id: %v", path, err)
	}
	return fmt.Sprintf("%x", d[16:])
}

func TestSeparateDebugInfo(t *testing.T) {
	objcopy := fixture.RequireTool(t, "objcopy", "binutils")
	strip := fixture.RequireTool(t, "strip", "binutils")
	exe := fixture.Build(t, "early.c", gccO2PIE)
	root := t.TempDir()

	// The unsplit build.
	full := filepath.Join(root, "full", "early")
	copyFile(t, exe, full)
	inst, prof, stdout := profiled(t, filepath.Dir(full), full)
	want := outputsOf(t, inst, prof)
	for i, w := range want[:2] { // the sample profile names no files
		if !strings.Contains(w, "early.c") {
			t.Fatalf("blpp %s of the unsplit build names no source line:\n%s", splitOutputs[i][0], w)
		}
	}

	// The split build: early.debug beside the stripped program.
	splitDir := filepath.Join(root, "split")
	split := filepath.Join(splitDir, "early")
	copyFile(t, exe, split)
	mustCmd(t, splitDir, objcopy, "--only-keep-debug", "early", "early.debug")
	mustCmd(t, splitDir, objcopy, "--strip-debug", "--add-gnu-debuglink=early.debug", "early")
	mustCmd(t, splitDir, strip, "--strip-unneeded", "early")
	if f, err := elf.Open(split); err != nil {
		t.Fatal(err)
	} else {
		if f.Section(".debug_info") != nil || f.Section(".symtab") != nil {
			t.Fatalf("%s still has .debug_info or .symtab", split)
		}
		f.Close()
	}
	debugFile := filepath.Join(splitDir, "early.debug")
	id := buildIDOf(t, split)
	if got := buildIDOf(t, debugFile); got != id {
		t.Fatalf("debug file build-id %s, program's %s", got, id)
	}

	sinst, sprof, sstdout := profiled(t, splitDir, split)
	if sstdout != stdout {
		t.Fatalf("the split build's output differs:\n%s\nwant\n%s", sstdout, stdout)
	}
	// The instrumented copy keeps the original's build-id and debuglink.
	if got := buildIDOf(t, sinst); got != id {
		t.Errorf("the instrumented copy's build-id is %s, the original's %s", got, id)
	}
	compare := func(name string, got []string) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: blpp %s differs from the unsplit build's:\n%s\nwant\n%s", name, strings.Join(splitOutputs[i], " "), got[i], want[i])
			}
		}
	}
	compare("debuglink", outputsOf(t, sinst, sprof))
	flat := mustBlpp(t, "report", sprof, "--binary", sinst, "--view", "flat")
	if !strings.Contains(flat, " search2d\n") || strings.Contains(flat, "sub_14a0") {
		t.Errorf("the stripped build's functions are not named from the debug file:\n%s", flat)
	}

	// A .build-id tree given with --debug-dir (colon-separated with a
	// directory that does not exist), the debug file no longer beside
	// the program.
	bidDir := filepath.Join(root, "bid")
	copyFile(t, split, filepath.Join(bidDir, "early"))
	binst, bprof, _ := profiled(t, bidDir, filepath.Join(bidDir, "early"))
	dbg := filepath.Join(root, "dbg")
	copyFile(t, debugFile, filepath.Join(dbg, ".build-id", id[:2], id[2:]+".debug"))
	compare("--debug-dir", outputsOf(t, binst, bprof, "--debug-dir", filepath.Join(root, "none")+":"+dbg))
	compare("--debug-dir twice", outputsOf(t, binst, bprof, "--debug-dir", filepath.Join(root, "none"), "--debug-dir", dbg))
	if o := blpp("annotate", bprof, "--binary", binst); strings.Contains(o.stdout, "early.c") {
		t.Errorf("without --debug-dir the .build-id tree was found anyway: %s", o)
	}
	// The debuglink under DIR/<binary's directory>/ of a --debug-dir,
	// and in the binary's .debug/ subdirectory.
	dl := filepath.Join(root, "dl")
	copyFile(t, debugFile, filepath.Join(dl, bidDir, "early.debug"))
	compare("--debug-dir debuglink", outputsOf(t, binst, bprof, "--debug-dir", dl))
	copyFile(t, debugFile, filepath.Join(bidDir, ".debug", "early.debug"))
	compare(".debug/ debuglink", outputsOf(t, binst, bprof))
	if err := os.RemoveAll(filepath.Join(bidDir, ".debug")); err != nil {
		t.Fatal(err)
	}

	// A local debuginfod tree named by DEBUGINFOD_URLS.
	di := filepath.Join(root, "debuginfod")
	copyFile(t, debugFile, filepath.Join(di, "buildid", id, "debuginfo"))
	t.Setenv("DEBUGINFOD_URLS", "https://debuginfod.invalid file://"+di)
	compare("DEBUGINFOD_URLS", outputsOf(t, binst, bprof))
	t.Setenv("DEBUGINFOD_URLS", "")

	// A debuglink whose CRC does not match: skipped, with a note.
	crcDir := filepath.Join(root, "crc")
	copyFile(t, split, filepath.Join(crcDir, "early"))
	cinst, cprof, _ := profiled(t, crcDir, filepath.Join(crcDir, "early"))
	data, err := os.ReadFile(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crcDir, "early.debug"), append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	o := blpp("annotate", cprof, "--binary", cinst)
	if o.code != 0 || strings.Contains(o.stdout, "early.c") || !strings.Contains(o.stderr, "blpp: note: ") || !strings.Contains(o.stderr, "CRC-32") {
		t.Errorf("a debuglink with the wrong CRC: want no lines and a note: %s\n%s", o, o.stdout)
	}

	// A debug file of another build (another build-id) under the
	// program's .build-id name: refused, with a note.
	other := fixture.Build(t, "early.c", fixture.Config{CC: "gcc", Opt: "-O1", PIE: true})
	bad := filepath.Join(root, "bad")
	mustCmd(t, root, objcopy, "--only-keep-debug", other, filepath.Join(root, "other.debug"))
	copyFile(t, filepath.Join(root, "other.debug"), filepath.Join(bad, ".build-id", id[:2], id[2:]+".debug"))
	o = blpp("coverage", bprof, "--binary", binst, "--debug-dir", bad)
	if strings.Contains(o.stdout, "early.c") || !strings.Contains(o.stderr, "blpp: note: ") || !strings.Contains(o.stderr, "build-id") || !strings.Contains(o.stderr, id) {
		t.Errorf("a debug file of another build: want it refused with a note: %s\n%s", o, o.stdout)
	}
	// The search goes on past a refused file: the build-id tree comes
	// first (refused), then the debuglink beside the program (taken).
	copyFile(t, debugFile, filepath.Join(bidDir, "early.debug"))
	o = blpp("annotate", bprof, "--binary", binst, "--debug-dir", bad)
	if o.code != 0 || strings.ReplaceAll(o.stdout, binst, "BINARY") != want[0] || !strings.Contains(o.stderr, "refused") {
		t.Errorf("a refused .build-id file then a good debuglink: want the debuglink's lines and a note: %s", o)
	}
}

// TestDebianDebugPackage reports on a Debian program whose debug info
// comes from its -dbg package, found by build-id under /usr/lib/debug:
// x86_64-linux-gnu-strings of binutils with binutils-x86-64-linux-gnu-dbg
// (.ci/run installs it; Debian's dbgsym archive is not reachable here, and
// libc6-dbg covers no program blpp instruments).
func TestDebianDebugPackage(t *testing.T) {
	const prog, pkg = "/usr/bin/x86_64-linux-gnu-strings", "binutils-x86-64-linux-gnu-dbg"
	skip := func(why string) {
		if os.Getenv(fixture.EnvRequireTools) == "1" {
			t.Fatalf("%s (install %s)", why, pkg)
		}
		t.Skipf("%s (install %s)", why, pkg)
	}
	if _, err := os.Stat(prog); err != nil {
		skip(prog + " missing")
	}
	id := buildIDOf(t, prog)
	if _, err := os.Stat(filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")); err != nil {
		skip("no debug file for " + prog)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "strings")
	copyFile(t, prog, exe)
	input := filepath.Join(dir, "input")
	if err := os.WriteFile(input, []byte("\x00\x01hello, blpp\x00\x02\x03separate debug info\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, prof, out := profiled(t, dir, exe, input)
	if out != "hello, blpp\nseparate debug info\n" {
		t.Fatalf("strings printed %q", out)
	}
	flat := mustBlpp(t, "report", prof, "--binary", inst, "--view", "flat")
	if !strings.Contains(flat, " print_strings\n") || strings.Contains(flat, "sub_") {
		t.Errorf("functions not named from the debug file:\n%s", flat)
	}
	cov := mustBlpp(t, "coverage", prof, "--binary", inst)
	if !strings.Contains(cov, "strings.c: lines ") {
		t.Errorf("coverage has no lines of strings.c:\n%s", cov)
	}
}
