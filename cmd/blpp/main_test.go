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
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/testsupport/golden"
	"github.com/blpp/blpp/report"
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

// acceptedProblem checks the output of a command that accepted a
// corrupted binary: no crash report, nothing on stderr, a complete document.
func acceptedProblem(args []string, o outcome) string {
	if p := crashProblem(o.stderr); p != "" {
		return p
	}
	if o.stderr != "" {
		return fmt.Sprintf("exit status 0 with stderr %q", o.stderr)
	}
	var errs []string
	if args[0] == "stats" {
		_, errs = statsSchemaErrors([]byte(o.stdout))
	} else {
		_, errs = cfgSchemaErrors([]byte(o.stdout))
	}
	if len(errs) > 0 {
		return "exit status 0 but the output is not a complete document: " + strings.Join(errs, "; ")
	}
	return ""
}

// JSON schema checks. The documents are decoded into map[string]any with
// json.Number, so a renamed or retyped field shows up here rather than as
// a zero value in a Go struct.

type jsonKind int

const (
	jString jsonKind = iota
	jInt
	jBool
	jArray
	jObject
	jIntOrNull
)

func (k jsonKind) String() string {
	return [...]string{"string", "integer", "boolean", "array", "object", "integer or null"}[k]
}

func hasKind(v any, k jsonKind) bool {
	switch k {
	case jString:
		_, ok := v.(string)
		return ok
	case jInt:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			_, err = strconv.ParseUint(n.String(), 10, 64)
		}
		return err == nil
	case jBool:
		_, ok := v.(bool)
		return ok
	case jArray:
		_, ok := v.([]any)
		return ok
	case jObject:
		_, ok := v.(map[string]any)
		return ok
	case jIntOrNull:
		return v == nil || hasKind(v, jInt)
	}
	return false
}

// checkKeys appends to errs one message per key of want missing from obj
// or of the wrong type.
func checkKeys(errs *[]string, where string, obj map[string]any, want map[string]jsonKind) {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := obj[k]
		if !ok {
			*errs = append(*errs, fmt.Sprintf("%s: no key %q", where, k))
		} else if !hasKind(v, want[k]) {
			*errs = append(*errs, fmt.Sprintf("%s: %q is %T %v, want %v", where, k, v, v, want[k]))
		}
	}
}

func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON document")
	}
	return doc, nil
}

// decodeChecked decodes one JSON object and checks its top-level keys.
func decodeChecked(data []byte, keys map[string]jsonKind) (map[string]any, []string) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, []string{fmt.Sprintf("not one JSON object: %v", err)}
	}
	var errs []string
	checkKeys(&errs, "document", doc, keys)
	return doc, errs
}

// checkObjects checks that every element of arr (the array name) is an
// object with keys, and calls each, when set, with those that are.
func checkObjects(errs *[]string, name string, arr []any, keys map[string]jsonKind, each func(i int, where string, obj map[string]any)) {
	for i, v := range arr {
		where := fmt.Sprintf("%s[%d]", name, i)
		obj, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, fmt.Sprintf("%s is %T, want object", where, v))
			continue
		}
		n := len(*errs)
		checkKeys(errs, where, obj, keys)
		if len(*errs) == n && each != nil {
			each(i, where, obj)
		}
	}
}

func num(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

var hexAddr = regexp.MustCompile(`^0x[0-9a-f]+$`)

var statsFuncKeys = map[string]jsonKind{
	"name": jString, "entry": jString, "size": jInt, "blocks": jInt, "edges": jInt,
	"loops": jInt, "paths": jIntOrNull, "instrumentable": jBool, "reason": jString,
}

// statsSchemaErrors decodes a `blpp stats --json` document and lists every
// way it departs from the documented schema.
func statsSchemaErrors(data []byte) (map[string]any, []string) {
	doc, errs := decodeChecked(data, map[string]jsonKind{"binary": jString, "functions": jArray, "summary": jObject})
	if len(errs) > 0 {
		return doc, errs
	}
	funcs := doc["functions"].([]any)
	instrumentable := 0
	checkObjects(&errs, "functions", funcs, statsFuncKeys, func(_ int, where string, f map[string]any) {
		where = fmt.Sprintf("%s (%s)", where, f["name"])
		if f["name"] == "" {
			errs = append(errs, where+": empty name")
		}
		if !hexAddr.MatchString(f["entry"].(string)) {
			errs = append(errs, fmt.Sprintf("%s: entry %q is not 0x-prefixed lower-case hex", where, f["entry"]))
		}
		for _, k := range []string{"size", "blocks", "edges", "loops", "paths"} {
			if f[k] != nil && num(f[k]) < 0 {
				errs = append(errs, fmt.Sprintf("%s: %s is negative", where, k))
			}
		}
		ins, reason := f["instrumentable"].(bool), f["reason"].(string)
		if ins {
			instrumentable++
		}
		if ins != (reason == "") {
			errs = append(errs, fmt.Sprintf("%s: instrumentable %v with reason %q (want a reason exactly when not instrumentable)", where, ins, reason))
		}
		if ins && num(f["blocks"]) == 0 {
			errs = append(errs, where+": instrumentable without blocks")
		}
		if f["paths"] != nil && num(f["paths"]) < 1 {
			errs = append(errs, fmt.Sprintf("%s: %v paths", where, f["paths"]))
		}
	})
	sum := doc["summary"].(map[string]any)
	n := len(errs)
	checkKeys(&errs, "summary", sum, map[string]jsonKind{"functions": jInt, "instrumentable": jInt})
	if len(errs) == n {
		if got := num(sum["instrumentable"]); got != int64(instrumentable) {
			errs = append(errs, fmt.Sprintf("summary: instrumentable %d, but %d functions are", got, instrumentable))
		}
		if got := num(sum["functions"]); got > int64(len(funcs)) || got < num(sum["instrumentable"]) {
			errs = append(errs, fmt.Sprintf("summary: %d functions, with %d listed and %d instrumentable", got, len(funcs), num(sum["instrumentable"])))
		}
	}
	return doc, errs
}

var (
	cfgFuncKeys = map[string]jsonKind{
		"name": jString, "entry": jString, "size": jInt, "instrumentable": jBool, "reason": jString,
		"paths": jIntOrNull, "blocks": jArray, "edges": jArray, "loops": jArray, "jump_tables": jArray, "calls": jArray,
	}
	cfgBlockKeys = map[string]jsonKind{"id": jInt, "addr": jString, "end": jString, "insts": jInt, "loop_depth": jInt}
	cfgEdgeKeys  = map[string]jsonKind{"id": jInt, "from": jInt, "to": jInt, "kind": jString, "backedge": jBool, "val": jInt, "inc": jInt}
	cfgLoopKeys  = map[string]jsonKind{"header": jInt, "blocks": jArray, "backedges": jArray, "parent": jInt, "depth": jInt, "irreducible": jBool}
	cfgTableKeys = map[string]jsonKind{"jump": jString, "table": jString, "entries": jInt, "targets": jArray}
)

// cfgSchemaErrors checks a `blpp cfg --format json` document against the
// fields the CFG model documents, and decodes it.
func cfgSchemaErrors(data []byte) (*cfgDoc, []string) {
	doc, errs := decodeChecked(data, map[string]jsonKind{"binary": jString, "functions": jArray})
	if len(errs) > 0 {
		return nil, errs
	}
	checkObjects(&errs, "functions", doc["functions"].([]any), cfgFuncKeys, func(_ int, where string, f map[string]any) {
		for _, part := range []struct {
			key  string
			want map[string]jsonKind
		}{{"blocks", cfgBlockKeys}, {"edges", cfgEdgeKeys}, {"loops", cfgLoopKeys}, {"jump_tables", cfgTableKeys}} {
			checkObjects(&errs, fmt.Sprintf("%s (%s).%s", where, f["name"], part.key), f[part.key].([]any), part.want, nil)
		}
	})
	if len(errs) > 0 {
		return nil, errs
	}
	var d cfgDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, []string{err.Error()}
	}
	return &d, nil
}

// The CFG document as this test reads it, once cfgSchemaErrors has checked
// its fields against the schema the test states (cfgFuncKeys and the
// rest): the report's own types.
type (
	cfgDoc   = report.CFGDoc
	cfgFunc  = report.CFGFunc
	cfgBlock = report.CFGBlock
	cfgEdge  = report.CFGEdge
	cfgLoop  = report.CFGLoop
	cfgTable = report.CFGTable
)

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	o := blpp(args...)
	if o.code != 0 || o.stderr != "" || crashProblem(o.stderr) != "" {
		t.Fatalf("blpp %q: %s", args, o)
	}
	return o.stdout
}

func cfgJSON(t *testing.T, args ...string) *cfgDoc {
	t.Helper()
	out := mustRun(t, append([]string{"cfg", "--format", "json"}, args...)...)
	d, errs := cfgSchemaErrors([]byte(out))
	if len(errs) > 0 {
		t.Fatalf("blpp cfg --format json %q:\n%s", args, strings.Join(errs, "\n"))
	}
	return d
}

// cfgFuncNamed returns the function of d with that name.
func cfgFuncNamed(t *testing.T, d *cfgDoc, name string) *cfgFunc {
	t.Helper()
	for i := range d.Functions {
		if d.Functions[i].Name == name {
			return &d.Functions[i]
		}
	}
	t.Fatalf("%s: no function %s in the cfg output", d.Binary, name)
	return nil
}

func TestStatsJSONSchema(t *testing.T) {
	tests := []struct {
		src string
		cfg fixture.Config
	}{
		{"switch.c", gccO2PIE},
		{"loops.c", gccO0},
		{"cold.c", gccO2},
		{"irreducible.c", clangO2PI},
	}
	for _, tt := range tests {
		t.Run(tt.src+"/"+tt.cfg.String(), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			doc, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", bin)))
			for _, e := range errs {
				t.Error(e)
			}
			if len(errs) > 0 {
				return
			}
			if doc["binary"] != bin {
				t.Errorf("binary = %q, want %q", doc["binary"], bin)
			}
			funcs := doc["functions"].([]any)
			if len(funcs) == 0 {
				t.Fatal("no functions")
			}
			// Procedures come in address order, and with the default
			// path limit every instrumentable one has a path count.
			var last int64 = -1
			for _, fv := range funcs {
				f := fv.(map[string]any)
				entry, _ := strconv.ParseInt(strings.TrimPrefix(f["entry"].(string), "0x"), 16, 64)
				if entry < last {
					t.Errorf("%s at %#x listed after %#x", f["name"], entry, last)
				}
				last = entry
				if f["instrumentable"].(bool) && f["paths"] == nil {
					t.Errorf("%s: instrumentable but paths is null without a path limit", f["name"])
				}
			}
		})
	}
}

// statsRow is one line of the `blpp stats` table.
type statsRow struct{ entry, size, blocks, edges, loops, paths, status, name string }

var statsSummaryRE = regexp.MustCompile(`^(.+): (\d+) functions, (\d+) instrumentable \((\d+\.\d)%\), (\d+) blocks, (\d+) edges, (\d+) loops`)

// parseStatsText splits the stats text into table rows and the summary
// line.
func parseStatsText(t *testing.T, out string) ([]statsRow, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "entry") {
		t.Fatalf("stats output has no table header:\n%s", out)
	}
	var rows []statsRow
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		f := strings.Fields(lines[i])
		if len(f) < 8 {
			t.Fatalf("short stats row %q", lines[i])
		}
		status := f[6]
		rest := f[7:]
		if status == "no:" {
			// The reason takes words up to the function name, the last
			// field.
			status = "no: " + strings.Join(f[7:len(f)-1], " ")
			rest = f[len(f)-1:]
		}
		rows = append(rows, statsRow{f[0], f[1], f[2], f[3], f[4], f[5], status, strings.Join(rest, " ")})
	}
	if i+1 >= len(lines) {
		t.Fatalf("stats output has no summary line:\n%s", out)
	}
	m := statsSummaryRE.FindStringSubmatch(lines[i+1])
	if m == nil {
		t.Fatalf("summary line %q does not match %s", lines[i+1], statsSummaryRE)
	}
	return rows, m
}

// TestStatsText checks the table and summary line against the JSON of the
// same binary, with and without a path limit.
func TestStatsText(t *testing.T) {
	tests := []struct {
		src      string
		cfg      fixture.Config
		maxPaths string
	}{
		{"switch.c", gccO2PIE, ""},
		{"loops.c", gccO2PIE, ""},
		{"loops.c", gccO2PIE, "8"},
		{"switch.c", gccO2PIE, "2"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/max-paths=%s", tt.src, tt.cfg, tt.maxPaths), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			var extra []string
			if tt.maxPaths != "" {
				extra = []string{"--max-paths", tt.maxPaths}
			}
			doc, errs := statsSchemaErrors([]byte(mustRun(t, append([]string{"stats", "--json", bin}, extra...)...)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			text := mustRun(t, append([]string{"stats", bin}, extra...)...)
			rows, sum := parseStatsText(t, text)
			funcs := doc["functions"].([]any)
			if len(rows) != len(funcs) {
				t.Fatalf("%d table rows, %d JSON functions", len(rows), len(funcs))
			}
			for i, r := range rows {
				f := funcs[i].(map[string]any)
				want := statsRow{f["entry"].(string), fmt.Sprint(f["size"]), fmt.Sprint(f["blocks"]), fmt.Sprint(f["edges"]),
					fmt.Sprint(f["loops"]), "", "yes", f["name"].(string)}
				if !f["instrumentable"].(bool) {
					want.status = "no: " + f["reason"].(string)
				}
				switch {
				case f["paths"] != nil:
					want.paths = fmt.Sprint(f["paths"])
				case r.paths == "overflow":
					want.paths = "overflow"
				default:
					want.paths = "-"
				}
				if r != want {
					t.Errorf("row %d = %+v, JSON says %+v", i, r, want)
				}
			}
			s := doc["summary"].(map[string]any)
			share := 0.0
			if num(s["functions"]) > 0 {
				share = 100 * float64(num(s["instrumentable"])) / float64(num(s["functions"]))
			}
			if sum[1] != bin || sum[2] != fmt.Sprint(s["functions"]) || sum[3] != fmt.Sprint(s["instrumentable"]) ||
				sum[4] != fmt.Sprintf("%.1f", share) {
				t.Errorf("summary line %q disagrees with JSON summary %v", sum[0], s)
			}
		})
	}
}

// TestMaxPathsOverflow forces path overflow with --max-paths 2: a function
// with more than 2 paths gets "paths": null, the others keep their count,
// and the text table says "overflow" for the former.
func TestMaxPathsOverflow(t *testing.T) {
	for _, src := range []string{"switch.c", "loops.c"} {
		t.Run(src, func(t *testing.T) {
			bin := fixture.Build(t, src, gccO2PIE)
			base, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", bin)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			limited, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", "--max-paths", "2", bin)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			rows, _ := parseStatsText(t, mustRun(t, "stats", "--max-paths", "2", bin))
			bf, lf := base["functions"].([]any), limited["functions"].([]any)
			if len(bf) != len(lf) || len(rows) != len(lf) {
				t.Fatalf("%d functions without a limit, %d with --max-paths 2, %d table rows", len(bf), len(lf), len(rows))
			}
			over, kept := 0, 0
			for i := range bf {
				b, l := bf[i].(map[string]any), lf[i].(map[string]any)
				if b["name"] != l["name"] {
					t.Fatalf("function %d is %s without a limit, %s with one", i, b["name"], l["name"])
				}
				if b["paths"] == nil {
					if l["paths"] != nil {
						t.Errorf("%s: paths %v under --max-paths 2, null without a limit", l["name"], l["paths"])
					}
					continue
				}
				switch n := num(b["paths"]); {
				case n > 2:
					over++
					if l["paths"] != nil {
						t.Errorf("%s: %d paths without a limit, %v under --max-paths 2 (want null)", l["name"], n, l["paths"])
					}
					if rows[i].paths != "overflow" {
						t.Errorf("%s: %d paths, over --max-paths 2, but the table shows %q in the paths column, want \"overflow\" (status %q)",
							l["name"], n, rows[i].paths, rows[i].status)
					}
				default:
					kept++
					if !hasKind(l["paths"], jInt) || num(l["paths"]) != n {
						t.Errorf("%s: %d paths without a limit, %v under --max-paths 2 (want the same number)", l["name"], n, l["paths"])
					}
				}
			}
			if over == 0 || kept == 0 {
				t.Errorf("%d functions over the limit, %d under: the fixture does not exercise both", over, kept)
			}
		})
	}
}

var (
	cfgHeaderRE = regexp.MustCompile(`^function (\S+) at (0x[0-9a-f]+), (\d+) bytes: (\d+) blocks, (\d+) edges, (\d+) loops, (\d+|overflow) paths$`)
	cfgBlockRE  = regexp.MustCompile(`^  B(\d+) +(0x[0-9a-f]+)-(0x[0-9a-f]+) +(\d+) +(\d+) *$`)
	cfgEdgeRE   = regexp.MustCompile(`^  B(\d+) -> (B\d+|EXIT) +([a-z-]+)(?: (0x[0-9a-f]+))?(?: \((backedge|broken)\))? +(\d+) +(.+?) +(live|dead) *$`)
	cfgBackRE   = regexp.MustCompile(`^end \+?(-?\d+), restart (-?\d+)$`)
	cfgLoopRE   = regexp.MustCompile(`^  loop (\d+): (loop|irreducible region), header B(\d+), depth (\d+), (top level|in loop \d+): (.*)$`)
	cfgTableRE  = regexp.MustCompile(`^  jump table at (0x[0-9a-f]+) for jmp (0x[0-9a-f]+): (\d+) (absolute|relative) entries$`)
)

// checkCFGText compares the text rendering with the JSON, function by
// function and line by line.
func checkCFGText(t *testing.T, text string, d *cfgDoc) {
	t.Helper()
	fi := -1
	var f *cfgFunc
	var nb, ne, nl, nt int
	finish := func() {
		if f == nil {
			return
		}
		if nb != len(f.Blocks) || ne != len(f.Edges) || nl != len(f.Loops) || nt != len(f.Tables) {
			t.Errorf("%s: text lists %d blocks, %d edges, %d loops, %d jump tables; JSON has %d, %d, %d, %d",
				f.Name, nb, ne, nl, nt, len(f.Blocks), len(f.Edges), len(f.Loops), len(f.Tables))
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if m := cfgHeaderRE.FindStringSubmatch(line); m != nil {
			finish()
			fi++
			if fi >= len(d.Functions) {
				t.Fatalf("text has more functions than the JSON's %d", len(d.Functions))
			}
			f = &d.Functions[fi]
			nb, ne, nl, nt = 0, 0, 0, 0
			paths := "overflow"
			if f.Paths != nil {
				paths = fmt.Sprint(*f.Paths)
			}
			want := []string{f.Name, f.Entry, fmt.Sprint(f.Size), fmt.Sprint(len(f.Blocks)), fmt.Sprint(len(f.Edges)), fmt.Sprint(len(f.Loops)), paths}
			if !slices.Equal(m[1:], want) {
				t.Errorf("header %q, JSON says %q", line, want)
			}
			continue
		}
		if strings.HasPrefix(line, "function ") {
			t.Errorf("malformed function header %q", line)
			continue
		}
		if f == nil {
			if line != "" {
				t.Errorf("line before the first function: %q", line)
			}
			continue
		}
		if strings.Contains(line, "+-") {
			t.Errorf("%s: %q prints a negative increment as \"+-N\"", f.Name, strings.TrimSpace(line))
		}
		if m := cfgBlockRE.FindStringSubmatch(line); m != nil {
			if nb < len(f.Blocks) {
				b := f.Blocks[nb]
				want := []string{fmt.Sprint(b.ID), b.Addr, b.End, fmt.Sprint(b.Insts), fmt.Sprint(b.LoopDepth)}
				if !slices.Equal(m[1:], want) {
					t.Errorf("%s: block line %q, JSON says %q", f.Name, line, want)
				}
			}
			nb++
			continue
		}
		if m := cfgEdgeRE.FindStringSubmatch(line); m != nil {
			if ne < len(f.Edges) {
				e := f.Edges[ne]
				to := "EXIT"
				if e.To >= 0 {
					to = fmt.Sprintf("B%d", e.To)
				}
				mark := ""
				if e.Backedge {
					mark = "backedge"
				} else if e.Broken {
					mark = "broken"
				}
				if m[1] != fmt.Sprint(e.From) || m[2] != to || m[3] != e.Kind || m[4] != e.Target || m[5] != mark || m[6] != fmt.Sprint(e.Val) {
					t.Errorf("%s: edge line %q, JSON says %+v", f.Name, line, e)
				}
				if mark == "" {
					if m[7] != fmt.Sprint(e.Inc) {
						t.Errorf("%s: edge line %q shows increment %q, JSON says %d", f.Name, line, m[7], e.Inc)
					}
				} else if b := cfgBackRE.FindStringSubmatch(m[7]); b == nil || b[1] != fmt.Sprint(e.ExitInc) || b[2] != fmt.Sprint(e.EntryInc) {
					t.Errorf("%s: backedge line %q, JSON says exit_inc %d, entry_inc %d", f.Name, line, e.ExitInc, e.EntryInc)
				}
			}
			ne++
			continue
		}
		if m := cfgLoopRE.FindStringSubmatch(line); m != nil {
			if nl < len(f.Loops) {
				l := f.Loops[nl]
				if m[1] != fmt.Sprint(nl) || m[3] != fmt.Sprint(l.Header) || m[4] != fmt.Sprint(l.Depth) || (m[2] == "loop") == l.Irreducible {
					t.Errorf("%s: loop line %q, JSON says %+v", f.Name, line, l)
				}
			}
			nl++
			continue
		}
		if m := cfgTableRE.FindStringSubmatch(line); m != nil {
			if nt < len(f.Tables) {
				tb := f.Tables[nt]
				if m[1] != tb.Table || m[2] != tb.Jump || m[3] != fmt.Sprint(tb.Entries) || (m[4] == "relative") != tb.Relative {
					t.Errorf("%s: jump table line %q, JSON says %+v", f.Name, line, tb)
				}
			}
			nt++
			continue
		}
		switch {
		case line == "", strings.HasPrefix(line, "  block "), strings.HasPrefix(line, "  edge "),
			strings.HasPrefix(line, "  fragments: "), strings.HasPrefix(line, "  not instrumentable: "):
		default:
			t.Errorf("%s: unexpected line %q", f.Name, line)
		}
	}
	finish()
	if fi+1 != len(d.Functions) {
		t.Errorf("text has %d functions, JSON %d", fi+1, len(d.Functions))
	}
}

// checkCFGModel checks facts every CFG document must satisfy: edge
// endpoints in range, blocks inside the function, loop membership and
// depth agreeing with the blocks' loop_depth.
func checkCFGModel(t *testing.T, d *cfgDoc) {
	t.Helper()
	for _, f := range d.Functions {
		entry, _ := strconv.ParseUint(strings.TrimPrefix(f.Entry, "0x"), 16, 64)
		depth := make([]int, len(f.Blocks))
		for i, b := range f.Blocks {
			if b.ID != i {
				t.Errorf("%s: block %d has id %d", f.Name, i, b.ID)
			}
			addr, _ := strconv.ParseUint(strings.TrimPrefix(b.Addr, "0x"), 16, 64)
			end, _ := strconv.ParseUint(strings.TrimPrefix(b.End, "0x"), 16, 64)
			if end <= addr || b.Insts < 1 || uint64(b.Insts) > end-addr {
				t.Errorf("%s: block B%d %s-%s has %d instructions", f.Name, i, b.Addr, b.End, b.Insts)
			}
			if len(f.Fragments) == 0 && (addr < entry || end > entry+f.Size) {
				t.Errorf("%s: block B%d %s-%s outside the function [%s,%#x)", f.Name, i, b.Addr, b.End, f.Entry, entry+f.Size)
			}
		}
		if len(f.Blocks) > 0 && f.Blocks[0].Addr != f.Entry {
			t.Errorf("%s: B0 at %s, entry at %s", f.Name, f.Blocks[0].Addr, f.Entry)
		}
		for i, e := range f.Edges {
			if e.ID != i || e.From < 0 || e.From >= len(f.Blocks) || e.To < -1 || e.To >= len(f.Blocks) {
				t.Errorf("%s: edge %d %+v out of range", f.Name, i, e)
			}
		}
		for i, l := range f.Loops {
			if l.Parent >= i || (l.Parent < 0) != (l.Depth == 1) || (l.Parent >= 0 && f.Loops[l.Parent].Depth != l.Depth-1) {
				t.Errorf("%s: loop %d has parent %d and depth %d", f.Name, i, l.Parent, l.Depth)
			}
			if !slices.Contains(l.Blocks, l.Header) {
				t.Errorf("%s: loop %d does not contain its header B%d", f.Name, i, l.Header)
			}
			for _, b := range l.Blocks {
				if b >= 0 && b < len(depth) {
					depth[b] = max(depth[b], l.Depth)
				}
			}
		}
		for i, b := range f.Blocks {
			if b.LoopDepth != depth[i] {
				t.Errorf("%s: B%d has loop_depth %d, but the deepest loop containing it has depth %d", f.Name, i, b.LoopDepth, depth[i])
			}
		}
	}
}

var dotEdgeRE = regexp.MustCompile(`(?m)^    f\d+_\d+ -> f\d+_(\d+|exit) \[`)

func TestCFGFormats(t *testing.T) {
	tests := []struct {
		src, fn string // fn: --func, "" for all
		cfg     fixture.Config
	}{
		{"switch.c", "", gccO2PIE},
		{"switch.c", "^dense$", gccO0},
		{"loops.c", "", gccO2PIE},
		{"loops.c", "nested", clangO0},
		{"irreducible.c", "", gccO2PIE},
		{"cold.c", "", gccO2},
		{"interp.c", "^run_vm$", gccO3PIE},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.src, tt.cfg, tt.fn), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			args := []string{bin}
			if tt.fn != "" {
				args = append(args, "--func", tt.fn)
			}
			d := cfgJSON(t, args...)
			if d.Binary != bin {
				t.Errorf("binary = %q, want %q", d.Binary, bin)
			}
			if len(d.Functions) == 0 {
				t.Fatal("no functions")
			}
			if tt.fn != "" {
				rx := regexp.MustCompile(tt.fn)
				for _, f := range d.Functions {
					if !rx.MatchString(f.Name) {
						t.Errorf("--func %s selected %s", tt.fn, f.Name)
					}
				}
			}
			checkCFGModel(t, d)
			// Text is the default format.
			text := mustRun(t, append([]string{"cfg"}, args...)...)
			if explicit := mustRun(t, append([]string{"cfg", "--format", "text"}, args...)...); explicit != text {
				t.Error("--format text differs from the default output")
			}
			checkCFGText(t, text, d)

			dot := mustRun(t, append([]string{"cfg", "--format", "dot"}, args...)...)
			edges := 0
			for _, f := range d.Functions {
				edges += len(f.Edges)
			}
			if got := len(dotEdgeRE.FindAllString(dot, -1)); got != edges {
				t.Errorf("DOT has %d edges, JSON %d", got, edges)
			}
			if strings.Contains(dot, "+-") {
				t.Errorf("DOT labels print a negative increment as \"+-N\"")
			}
			renderDot(t, dot)
		})
	}
}

// renderDot pipes DOT into Graphviz and checks it renders an SVG.
func renderDot(t *testing.T, dot string) {
	t.Helper()
	dotPath := fixture.RequireTool(t, "dot", "graphviz")
	cmd := exec.Command(dotPath, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v\n%s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Errorf("dot -Tsvg warned: %s", stderr.Bytes())
	}
	if !bytes.Contains(stdout.Bytes(), []byte("<svg")) {
		t.Errorf("dot -Tsvg printed no <svg> element:\n%.500s", stdout.Bytes())
	}
}

// TestJumpTable checks the switch fixture's dense(): one jump table whose
// distinct targets are the ones internal/testsupport/fixture records (12: 11 cases and
// the default), one "jumptable" edge per target, and a text line naming
// the table.
func TestJumpTable(t *testing.T) {
	exp, _ := fixture.ExpectFor("switch.c")
	for _, c := range []fixture.Config{gccO0, gccO2PIE, gccO2, gccO3PIE, clangO2PI} {
		t.Run(c.String(), func(t *testing.T) {
			fe, ok := exp.Func("dense", c)
			if !ok || fe.JumpTableTargets == 0 {
				t.Fatalf("internal/testsupport/fixture records no jump table for dense under %s", c)
			}
			bin := fixture.Build(t, "switch.c", c)
			d := cfgJSON(t, bin, "--func", "^dense$")
			if len(d.Functions) != 1 {
				t.Fatalf("--func ^dense$ selected %d functions", len(d.Functions))
			}
			f := &d.Functions[0]
			if len(f.Tables) != 1 {
				t.Fatalf("dense has %d jump tables, want 1", len(f.Tables))
			}
			tb := f.Tables[0]
			targets := map[string]bool{}
			for _, a := range tb.Targets {
				targets[a] = true
			}
			if len(targets) != fe.JumpTableTargets {
				t.Errorf("jump_tables[0] has %d distinct targets, want %d", len(targets), fe.JumpTableTargets)
			}
			if tb.Entries < len(targets) || len(tb.Targets) != tb.Entries {
				t.Errorf("jump table has %d entries and %d targets (%d distinct)", tb.Entries, len(tb.Targets), len(targets))
			}
			edgeTargets := map[string]bool{}
			n := 0
			for _, e := range f.Edges {
				if e.Kind == "jumptable" {
					n++
					edgeTargets[f.Blocks[e.To].Addr] = true
				}
			}
			if n != fe.JumpTableTargets {
				t.Errorf("%d edges of kind jumptable, want %d", n, fe.JumpTableTargets)
			}
			if !sameSet(edgeTargets, targets) {
				t.Errorf("jumptable edges reach %v, the table lists %v", keys(edgeTargets), keys(targets))
			}
			text := mustRun(t, "cfg", bin, "--func", "^dense$")
			want := fmt.Sprintf("jump table at %s for jmp %s: %d ", tb.Table, tb.Jump, tb.Entries)
			if !strings.Contains(text, want) {
				t.Errorf("text output does not mention %q:\n%s", want, text)
			}
		})
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLoops checks every function internal/testsupport/fixture describes in loops.c:
// the loop depths in the JSON, and that each loop's backedges are edges
// marked "backedge": true into its header (in these reducible graphs the
// numbering's DFS backedges are exactly the loops' backedges).
func TestLoops(t *testing.T) {
	exp, _ := fixture.ExpectFor("loops.c")
	for _, c := range []fixture.Config{gccO0, gccO2PIE, gccO3PIE, clangO2PI} {
		t.Run(c.String(), func(t *testing.T) {
			bin := fixture.Build(t, "loops.c", c)
			d := cfgJSON(t, bin)
			sawNested3 := false
			for _, name := range exp.Names() {
				fe, ok := exp.Func(name, c)
				if !ok {
					continue
				}
				f := cfgFuncNamed(t, d, name)
				sawNested3 = sawNested3 || name == "nested3"
				var depths []int
				for _, l := range f.Loops {
					if l.Irreducible {
						t.Errorf("%s: loop at B%d is irreducible", name, l.Header)
						continue
					}
					depths = append(depths, l.Depth)
				}
				sort.Ints(depths)
				if !slices.Equal(depths, fe.Depths) || len(depths) != fe.Loops {
					t.Errorf("%s: loop depths %v, want %v", name, depths, fe.Depths)
				}
				marked := map[int]bool{}
				for _, e := range f.Edges {
					if e.Backedge {
						marked[e.ID] = true
					}
				}
				inLoops := map[int]bool{}
				for _, l := range f.Loops {
					if len(l.Backedges) == 0 {
						t.Errorf("%s: loop at B%d has no backedges", name, l.Header)
					}
					for _, id := range l.Backedges {
						inLoops[id] = true
						if id < 0 || id >= len(f.Edges) {
							t.Errorf("%s: loop at B%d lists edge %d of %d", name, l.Header, id, len(f.Edges))
							continue
						}
						if e := f.Edges[id]; !e.Backedge || e.To != l.Header {
							t.Errorf("%s: loop backedge %d is %+v, want \"backedge\": true into header B%d", name, id, e, l.Header)
						}
					}
				}
				if len(marked) != len(inLoops) {
					t.Errorf("%s: edges %v are marked backedges, loops list %v", name, marked, inLoops)
				}
			}
			if !sawNested3 {
				t.Error("nested3 was not checked")
			}
		})
	}
}

// TestPathNumbers checks the Ball-Larus law on the CLI's own output: in
// the DAG of non-backedge edges plus, for each backedge v→w, pseudo edges
// ENTRY→w (worth entry_inc) and v→EXIT (worth exit_inc), the sums of inc
// along the ENTRY→EXIT paths are exactly 0..paths-1.
func TestPathNumbers(t *testing.T) {
	tests := []struct {
		src string
		cfg fixture.Config
	}{
		{"loops.c", gccO2PIE},
		{"loops.c", clangO0},
		{"switch.c", gccO2PIE},
		{"early.c", gccO2PIE},
		{"irreducible.c", gccO2PIE},
		{"irreducible.c", clangO2PI},
		{"interp.c", gccO2},
		{"recursion.c", gccO2PIE},
		{"cold.c", gccO2},
		{"hash.c", gccO3PIE},
	}
	for _, tt := range tests {
		t.Run(tt.src+"/"+tt.cfg.String(), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			d := cfgJSON(t, bin)
			checked, backedges := 0, 0
			for _, f := range d.Functions {
				if f.Paths == nil || *f.Paths > 1000 {
					continue
				}
				if err := pathLaw(&f); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
				checked++
				for _, e := range f.Edges {
					if e.Backedge {
						backedges++
					}
				}
			}
			if checked == 0 {
				t.Fatal("no function was checked")
			}
			t.Logf("%d functions, %d backedges", checked, backedges)
		})
	}
}

// pathLaw enumerates the ENTRY→EXIT paths of f's DAG view and checks that
// their increment sums are a permutation of 0..paths-1.
func pathLaw(f *cfgFunc) error {
	n := len(f.Blocks)
	exit := n
	type arc struct {
		to  int
		inc int64
	}
	succ := make([][]arc, n+1)
	entryInc := map[int]int64{} // ENTRY→w, shared by all backedges into w
	for _, e := range f.Edges {
		to := e.To
		if to < 0 {
			to = exit
		}
		if !e.Backedge && !e.Broken {
			if e.ExitInc != 0 || e.EntryInc != 0 {
				return fmt.Errorf("DAG edge %d has exit_inc %d, entry_inc %d", e.ID, e.ExitInc, e.EntryInc)
			}
			succ[e.From] = append(succ[e.From], arc{to, e.Inc})
			continue
		}
		if e.To < 0 {
			return fmt.Errorf("edge %d into EXIT is a backedge", e.ID)
		}
		succ[e.From] = append(succ[e.From], arc{exit, e.ExitInc})
		if e.To == 0 {
			// The next path starts at ENTRY like a fresh activation.
			if e.EntryInc != 0 {
				return fmt.Errorf("backedge %d into the entry block restarts at %d, want 0", e.ID, e.EntryInc)
			}
			continue
		}
		if v, ok := entryInc[e.To]; ok && v != e.EntryInc {
			return fmt.Errorf("backedges into B%d restart at %d and %d", e.To, v, e.EntryInc)
		}
		entryInc[e.To] = e.EntryInc
	}
	ws := make([]int, 0, len(entryInc))
	for w := range entryInc {
		ws = append(ws, w)
	}
	sort.Ints(ws)
	for _, w := range ws {
		succ[0] = append(succ[0], arc{w, entryInc[w]})
	}

	want := *f.Paths
	seen := make(map[int64]bool, want)
	onPath := make([]bool, n+1)
	var count uint64
	var walk func(v int, sum int64) error
	walk = func(v int, sum int64) error {
		if v == exit {
			count++
			if count > want {
				return fmt.Errorf("more than %d paths", want)
			}
			if sum < 0 || uint64(sum) >= want {
				return fmt.Errorf("a path sums to %d, outside [0,%d)", sum, want)
			}
			if seen[sum] {
				return fmt.Errorf("two paths sum to %d", sum)
			}
			seen[sum] = true
			return nil
		}
		if onPath[v] {
			return fmt.Errorf("cycle through B%d without a backedge", v)
		}
		onPath[v] = true
		defer func() { onPath[v] = false }()
		for _, a := range succ[v] {
			if err := walk(a.to, sum+a.inc); err != nil {
				return err
			}
		}
		return nil
	}
	if n == 0 {
		return fmt.Errorf("%d paths but no blocks", want)
	}
	if err := walk(0, 0); err != nil {
		return err
	}
	if count != want {
		return fmt.Errorf("%d paths reach EXIT, the output says %d", count, want)
	}
	return nil
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
