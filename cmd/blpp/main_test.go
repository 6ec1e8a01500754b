package main

// The CLI is tested in-process through run: the usage and help texts
// (golden files, rewritten by -update), the refusals (every bad command
// line or input file ends in exit status 2 and exactly one line on stderr),
// hostile inputs (truncated and corrupted copies of a real binary), the
// stats and cfg JSON schemas, the agreement of the text, JSON and DOT
// renderings, facts the fixtures are known to hold (internal/testsupport/fixture
// Expectations), and the Ball-Larus path-number law checked on the cfg
// JSON itself.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/testsupport/golden"
)

// outcome is what one in-process blpp invocation produced.
type outcome struct {
	code           int
	stdout, stderr string
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d, stdout %d bytes, stderr %q", o.code, len(o.stdout), o.stderr)
}

// blpp runs one command line in-process.
func blpp(args ...string) outcome {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return outcome{code, stdout.String(), stderr.String()}
}

// blppWithin runs one command line, giving up after d: a hostile input
// that sends the analysis into a loop must fail the test, not hang it.
func blppWithin(d time.Duration, args ...string) (outcome, bool) {
	done := make(chan outcome, 1)
	go func() { done <- blpp(args...) }()
	select {
	case o := <-done:
		return o, true
	case <-time.After(d):
		return outcome{}, false
	}
}

// Fixture configurations used below. gcc is the reference compiler; a
// clang build is added where a fact is claimed for both compilers.
var (
	gccO0     = fixture.Config{CC: "gcc", Opt: "-O0"}
	gccO2PIE  = fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	gccO2     = fixture.Config{CC: "gcc", Opt: "-O2"}
	gccO3PIE  = fixture.Config{CC: "gcc", Opt: "-O3", PIE: true}
	clangO0   = fixture.Config{CC: "clang", Opt: "-O0"}
	clangO2PI = fixture.Config{CC: "clang", Opt: "-O2", PIE: true}
)

// crashMarks are what a panic or an unrecovered runtime error leaves on
// stderr. "internal error" is run's own one-line report of a recovered
// panic: still a bug, since no input may make blpp panic.
var crashMarks = []string{"panic", "goroutine", "runtime error", "internal error", ".go:", "runtime/"}

// crashProblem says why stderr looks like a crash, or "".
func crashProblem(stderr string) string {
	for _, m := range crashMarks {
		if strings.Contains(stderr, m) {
			return fmt.Sprintf("stderr contains %q (a panic or stack trace)", m)
		}
	}
	return ""
}

// refusalProblem says how o fails to be a clean refusal (exit status 2,
// nothing on stdout, exactly one line on stderr starting with "blpp", no
// crash), or "".
func refusalProblem(o outcome) string {
	if p := crashProblem(o.stderr); p != "" {
		return p
	}
	switch {
	case o.code != 2:
		return fmt.Sprintf("exit status %d, want 2", o.code)
	case o.stdout != "":
		return fmt.Sprintf("refusal wrote %d bytes to stdout (a malformed input must not be half-reported): %.200q", len(o.stdout), o.stdout)
	case !strings.HasSuffix(o.stderr, "\n") || strings.Count(o.stderr, "\n") != 1:
		return fmt.Sprintf("stderr is not exactly one line: %q", o.stderr)
	case !strings.HasPrefix(o.stderr, "blpp"):
		return fmt.Sprintf("stderr does not start with \"blpp\": %q", o.stderr)
	}
	return ""
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string // stdout compared with testdata/<golden>
	}{
		{"no arguments", nil, 2, "usage.golden"},
		{"--help", []string{"--help"}, 0, "usage.golden"},
		{"-h", []string{"-h"}, 0, "usage.golden"},
		{"help", []string{"help"}, 0, "usage.golden"},
		{"help stats", []string{"help", "stats"}, 0, "help-stats-short.golden"},
		{"stats --help", []string{"stats", "--help"}, 0, "help-stats.golden"},
		{"stats -h", []string{"stats", "-h"}, 0, "help-stats.golden"},
		{"cfg --help", []string{"cfg", "--help"}, 0, "help-cfg.golden"},
		{"demo --help", []string{"demo", "--help"}, 0, "help-demo.golden"},
		// --help wins over a missing BINARY argument.
		{"cfg --format json --help", []string{"cfg", "--format", "json", "--help"}, 0, "help-cfg.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := blpp(tt.args...)
			if o.code != tt.code {
				t.Errorf("exit status %d, want %d", o.code, tt.code)
			}
			if o.stderr != "" {
				t.Errorf("stderr = %q, want nothing", o.stderr)
			}
			if !strings.HasPrefix(o.stdout, "usage: blpp ") {
				t.Errorf("stdout does not start with the usage line: %q", o.stdout)
			}
			golden.CheckString(t, tt.golden, o.stdout)
		})
	}
	// Every command is listed in the top-level usage, and its own help
	// names every flag its usage line promises.
	o := blpp("--help")
	for _, c := range commands {
		if listed := strings.Contains(o.stdout, "  "+c.name+" "); listed == c.hidden {
			t.Errorf("blpp --help lists %s: %v, want %v (hidden: %v)", c.name, listed, !c.hidden, c.hidden)
		}
		h := blpp(c.name, "--help")
		for _, fl := range regexp.MustCompile(`--[a-z-]+`).FindAllString(c.usage, -1) {
			if !strings.Contains(h.stdout, fl) {
				t.Errorf("blpp %s --help does not describe %s", c.name, fl)
			}
		}
	}
}

// testBinary builds the small fixture the refusal and corruption tests
// start from and returns its path and bytes.
func testBinary(t *testing.T) (string, []byte) {
	t.Helper()
	path := fixture.Build(t, "switch.c", gccO2PIE)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestCommandLineErrors(t *testing.T) {
	bin, _ := testBinary(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"unknown top-level flag", []string{"--bogus"}, "unknown command"},
		{"stats unknown flag", []string{"stats", "--bogus", bin}, "unknown flag: --bogus"},
		{"cfg unknown flag", []string{"cfg", "--bogus", bin}, "unknown flag: --bogus"},
		{"cfg unknown shorthand", []string{"cfg", "-x", bin}, "unknown shorthand flag"},
		{"demo unknown flag", []string{"demo", "--bogus"}, "unknown flag: --bogus"},
		{"stats flag without value", []string{"stats", bin, "--func"}, "--func"},
		{"stats bad --max-paths", []string{"stats", "--max-paths", "many", bin}, "--max-paths"},
		{"stats negative --max-paths", []string{"stats", "--max-paths=-1", bin}, "--max-paths"},
		{"stats no binary", []string{"stats"}, "BINARY"},
		{"stats two binaries", []string{"stats", bin, bin}, "BINARY"},
		{"cfg no binary", []string{"cfg", "--format", "json"}, "BINARY"},
		{"cfg two binaries", []string{"cfg", bin, bin}, "BINARY"},
		{"cfg bad format", []string{"cfg", "--format", "xml", bin}, `--format "xml"`},
		{"cfg bad regexp", []string{"cfg", "--func", "(", bin}, "--func"},
		{"stats bad regexp", []string{"stats", "--func", "a[", bin}, "--func"},
		{"cfg no match", []string{"cfg", "--func", "^no_such_function$", bin}, "no function matches"},
		{"demo argument", []string{"demo", "extra"}, "no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := blpp(tt.args...)
			if p := refusalProblem(o); p != "" {
				t.Fatalf("blpp %q: %s\n%s", tt.args, p, o)
			}
			if !strings.Contains(o.stderr, tt.want) {
				t.Errorf("blpp %q: stderr %q does not mention %q", tt.args, o.stderr, tt.want)
			}
			if want := "blpp " + tt.args[0] + ": "; find(tt.args[0]) != nil && !strings.HasPrefix(o.stderr, want) {
				t.Errorf("blpp %q: stderr %q does not start with %q", tt.args, o.stderr, want)
			}
		})
	}
}

// inputCommands are the command lines every bad input is fed to; the
// input path is appended.
var inputCommands = [][]string{
	{"stats"},
	{"stats", "--json"},
	{"cfg"},
	{"cfg", "--format", "json"},
	{"cfg", "--format", "dot"},
	{"cfg", "--func", "dense"},
}

func TestBadInputFiles(t *testing.T) {
	_, data := testBinary(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	patched := func(off int, b ...byte) []byte {
		c := slices.Clone(data)
		copy(c[off:], b)
		return c
	}
	aarch64 := slices.Clone(data)
	binary.LittleEndian.PutUint16(aarch64[18:], uint16(elf.EM_AARCH64))
	if err := os.Mkdir(filepath.Join(dir, "a directory"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		path string
		want string // in stderr
	}{
		{"missing", filepath.Join(dir, "missing"), "no such file"},
		{"missing, newline in name", filepath.Join(dir, "no\nsuch"), "no such file"},
		{"directory", filepath.Join(dir, "a directory"), "directory"},
		{"empty", write("empty", nil), "not an ELF"},
		{"text", write("text.txt", []byte("#!/bin/sh\necho this is not an ELF file\n")), "not an ELF"},
		{"aarch64", write("aarch64", aarch64), "x86-64"},
		{"ELF32 class", write("elf32", patched(int(elf.EI_CLASS), byte(elf.ELFCLASS32))), "x86-64"},
		{"big-endian", write("msb", patched(int(elf.EI_DATA), byte(elf.ELFDATA2MSB))), "x86-64"},
	}
	for _, n := range []int{4, 10, 63, 64, 100, 1000, len(data) / 2, len(data) - 1} {
		tests = append(tests, struct{ name, path, want string }{
			fmt.Sprintf("truncated to %d bytes", n), write(fmt.Sprintf("trunc%d", n), data[:n]), "malformed"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, args := range inputCommands {
				args := append(slices.Clone(args), tt.path)
				o, ok := blppWithin(20*time.Second, args...)
				if !ok {
					t.Fatalf("blpp %q did not finish in 20 s", args)
				}
				if p := refusalProblem(o); p != "" {
					t.Errorf("blpp %q: %s\n%s", args, p, o)
					continue
				}
				if !strings.Contains(o.stderr, tt.want) {
					t.Errorf("blpp %q: stderr %q does not mention %q", args, o.stderr, tt.want)
				}
				// The file is named once, so the user knows which input
				// was refused.
				if name := filepath.Base(tt.path); !strings.Contains(name, "\n") && !strings.Contains(o.stderr, name) {
					t.Errorf("blpp %q: stderr %q does not name the file", args, o.stderr)
				}
			}
		})
	}
}

// region is a byte range of the test binary that corruption targets.
type region struct {
	name     string
	off, end int
}

// corruptionRegions locates the ELF header, the program and section header
// tables and a few sections in data.
func corruptionRegions(t *testing.T, data []byte) []region {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var hdr elf.Header64
	if err := binary.Read(bytes.NewReader(data), binary.LittleEndian, &hdr); err != nil {
		t.Fatal(err)
	}
	rs := []region{
		{"ELF header", 0, 64},
		{"program headers", int(hdr.Phoff), int(hdr.Phoff) + int(hdr.Phnum)*int(hdr.Phentsize)},
		{"section headers", int(hdr.Shoff), int(hdr.Shoff) + int(hdr.Shnum)*int(hdr.Shentsize)},
	}
	for _, name := range []string{".eh_frame", ".eh_frame_hdr", ".text", ".rodata", ".symtab", ".dynamic"} {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			t.Fatalf("test binary has no %s section", name)
		}
		rs = append(rs, region{name, int(s.Offset), int(s.Offset + s.Size)})
	}
	for _, r := range rs {
		if r.off < 0 || r.end > len(data) || r.off >= r.end {
			t.Fatalf("region %s [%#x,%#x) outside the %d-byte file", r.name, r.off, r.end, len(data))
		}
	}
	return rs
}

// corrupt changes between 1 and 16 bytes of r in a copy of data, chosen
// by seed: single bytes XORed with a non-zero value, a run of random
// bytes, or a field set to 0 or all ones (the values that most often reach
// an unchecked size or offset). It returns the copy and a description
// that reproduces the change.
func corrupt(data []byte, r region, seed uint64) ([]byte, string) {
	rng := rand.New(rand.NewPCG(seed, 0x626c7070))
	c := slices.Clone(data)
	var what []string
	pos := func() int { return r.off + rng.IntN(r.end-r.off) }
	switch seed % 4 {
	case 0: // one byte
		p := pos()
		c[p] ^= byte(1 + rng.IntN(255))
		what = append(what, fmt.Sprintf("[%#x]=%#02x", p, c[p]))
	case 1: // several scattered bytes
		for range 2 + rng.IntN(7) {
			p := pos()
			c[p] ^= byte(1 + rng.IntN(255))
			what = append(what, fmt.Sprintf("[%#x]=%#02x", p, c[p]))
		}
	case 2: // a run of random bytes
		p := pos()
		n := min(2+rng.IntN(15), r.end-p)
		for i := range n {
			c[p+i] = byte(rng.IntN(256))
		}
		what = append(what, fmt.Sprintf("[%#x:%#x]=% x", p, p+n, c[p:p+n]))
	case 3: // an aligned 2-, 4- or 8-byte field set to 0 or all ones
		w := []int{2, 4, 8}[rng.IntN(3)]
		p := r.off + (rng.IntN(max(1, (r.end-r.off)/w)))*w
		v := byte(0)
		if rng.IntN(2) == 0 {
			v = 0xff
		}
		for i := 0; i < w && p+i < r.end; i++ {
			c[p+i] = v
		}
		what = append(what, fmt.Sprintf("[%#x:+%d]=%#02x...", p, w, v))
	}
	if bytes.Equal(c, data) { // the field already held that value
		p := pos()
		c[p] ^= 0xff
		what = append(what, fmt.Sprintf("[%#x]=%#02x", p, c[p]))
	}
	return c, strings.Join(what, " ")
}

// TestCorruptedInputs feeds hundreds of corrupted copies of a real binary
// to `stats --json` (and some to `cfg --format json`): each must be
// refused cleanly, or, when the corruption is harmless, give a complete
// and valid document.
func TestCorruptedInputs(t *testing.T) {
	_, data := testBinary(t)
	path := filepath.Join(t.TempDir(), "corrupt")
	seeds := 100
	if testing.Short() {
		seeds = 8
	}
	counts := map[string][2]int{} // region: refused, accepted
	for _, r := range corruptionRegions(t, data) {
		failures := 0
		for seed := range uint64(seeds) {
			c, what := corrupt(data, r, seed)
			if err := os.WriteFile(path, c, 0o644); err != nil {
				t.Fatal(err)
			}
			cmds := [][]string{{"stats", "--json", path}}
			if seed%4 == 0 {
				cmds = append(cmds, []string{"cfg", "--format", "json", path})
			}
			for _, args := range cmds {
				o, ok := blppWithin(20*time.Second, args...)
				var problem string
				switch {
				case !ok:
					problem = "did not finish in 20 s"
				case o.code == 0:
					problem = acceptedProblem(args, o)
					n := counts[r.name]
					n[1]++
					counts[r.name] = n
				default:
					problem = refusalProblem(o)
					n := counts[r.name]
					n[0]++
					counts[r.name] = n
				}
				if problem != "" {
					failures++
					if failures <= 3 {
						t.Errorf("%s, seed %d (%s): blpp %s: %s\n%s", r.name, seed, what, args[0], problem, o)
					}
				}
			}
		}
		if failures > 3 {
			t.Errorf("%s: %d more failures not shown", r.name, failures-3)
		}
	}
	t.Logf("refused/accepted per region: %v", counts)
}

func TestDemo(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	o, ok := blppWithin(60*time.Second, "demo", "--cc", "gcc", "--keep", dir)
	if !ok {
		t.Fatal("blpp demo did not finish in 60 s")
	}
	if o.code != 0 {
		t.Fatalf("blpp demo: %s\nstdout:\n%s", o, o.stdout)
	}
	if p := crashProblem(o.stderr); p != "" {
		t.Errorf("blpp demo: %s", p)
	}
	var summary []string
	for _, line := range strings.Split(o.stdout, "\n") {
		if m := statsSummaryRE.FindStringSubmatch(line); m != nil {
			summary = m
		}
	}
	if summary == nil {
		t.Fatalf("blpp demo printed no stats summary line:\n%s", o.stdout)
	}
	if summary[1] != filepath.Join(dir, "demo") || summary[2] == "0" || summary[3] == "0" {
		t.Errorf("demo summary %q: want the demo binary with instrumentable functions", summary[0])
	}
	for _, want := range []string{"$ blpp stats ", "$ blpp cfg ", "function classify at ", "$ blpp rewrite ", "$ blpp report ", "hottest paths:", "count path "} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// TestCheckers makes sure the checkers above can fail: a schema checker
// that accepts a renamed field, or a path-law check that accepts a wrong
// increment, would make the tests that use them vacuous.
func TestCheckers(t *testing.T) {
	bin := fixture.Build(t, "loops.c", gccO2PIE)
	stats := mustRun(t, "stats", "--json", bin)
	cfgOut := mustRun(t, "cfg", "--format", "json", "--func", "^nested3$", bin)
	for _, tt := range []struct{ name, from, to string }{
		{"renamed paths", `"paths":`, `"path_count":`},
		{"instrumentable as string", `"instrumentable": true`, `"instrumentable": "true"`},
		{"fractional blocks", `"blocks": 3,`, `"blocks": 3.5,`},
		{"truncated", "\n  \"summary\"", ""},
	} {
		if !strings.Contains(stats, tt.from) {
			t.Fatalf("%s: stats output has no %q", tt.name, tt.from)
		}
		doc := strings.Replace(stats, tt.from, tt.to, 1)
		if tt.name == "truncated" {
			doc = stats[:strings.Index(stats, tt.from)]
		}
		if _, errs := statsSchemaErrors([]byte(doc)); len(errs) == 0 {
			t.Errorf("statsSchemaErrors accepts stats output with %s", tt.name)
		}
	}
	if _, errs := cfgSchemaErrors([]byte(strings.Replace(cfgOut, `"backedge":`, `"back_edge":`, 1))); len(errs) == 0 {
		t.Error("cfgSchemaErrors accepts a renamed backedge field")
	}

	d := cfgJSON(t, bin, "--func", "^nested3$")
	f := cfgFuncNamed(t, d, "nested3")
	if err := pathLaw(f); err != nil {
		t.Fatalf("unchanged nested3: %v", err)
	}
	mutations := map[string]func(f *cfgFunc){
		"increment changed": func(f *cfgFunc) {
			for i := range f.Edges {
				if f.Edges[i].Inc != 0 {
					f.Edges[i].Inc++
					return
				}
			}
		},
		"backedge unmarked": func(f *cfgFunc) {
			for i := range f.Edges {
				if f.Edges[i].Backedge {
					f.Edges[i].Backedge = false
					return
				}
			}
		},
		"restart changed": func(f *cfgFunc) {
			for i := range f.Edges {
				if f.Edges[i].Backedge {
					f.Edges[i].EntryInc++
					return
				}
			}
		},
		"path count changed": func(f *cfgFunc) { *f.Paths++ },
	}
	for name, mutate := range mutations {
		g := *f
		g.Edges = slices.Clone(f.Edges)
		paths := *f.Paths
		g.Paths = &paths
		mutate(&g)
		if err := pathLaw(&g); err == nil {
			t.Errorf("pathLaw accepts nested3 with %s", name)
		}
	}
}

// writeCounter counts the writes made to it.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestOutputBuffered: a command's many lines reach its standard output
// in few writes (a whole-process profile's views are hundreds of
// thousands of lines), all of them.
func TestOutputBuffered(t *testing.T) {
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	var out writeCounter
	var errs bytes.Buffer
	if code := run([]string{"stats", exe}, &out, &errs); code != 0 {
		t.Fatalf("blpp stats: exit %d: %s", code, errs.String())
	}
	want := blpp("stats", exe).stdout
	lines := strings.Count(want, "\n")
	if out.String() != want || lines < 10 || out.writes > 1+len(want)/(64<<10) {
		t.Errorf("blpp stats wrote %d lines in %d writes (or not the same lines)", lines, out.writes)
	}
}
