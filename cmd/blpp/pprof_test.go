package main

// The pprof export read by the real `go tool pprof` at line and
// instruction level (issue 26, acceptance 2): -list shows blpp annotate's
// counts on every line, -traces the same calling contexts and values as
// the folded stacks, -disasm the original code's addresses, and -lines
// and -traces the frames of an inlined static function at its lines.

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// goTool finds the go command, whose `go tool pprof` the tests run.
func goTool(t *testing.T) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command for go tool pprof: %v", err)
	}
	return gotool
}

// pprofCmd runs go tool pprof with args and fails the test on an error.
func pprofCmd(t *testing.T, gotool string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gotool, append([]string{"tool", "pprof"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// fileLine names a source line (by the file's base name).
type fileLine struct {
	file string
	line int
}

// pprofValue reads one of pprof's value columns: "." is 0.
func pprofValue(t *testing.T, s string) uint64 {
	t.Helper()
	if s == "." {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("pprof value %q: %v", s, err)
	}
	return v
}

var (
	listRoutine = regexp.MustCompile(`^ROUTINE =+ (\S+) in (\S+)$`)
	listRow     = regexp.MustCompile(`^\s*(\S+)\s+(\S+)\s+(\d+):`)
)

// pprofList runs -list re with sample type index and returns the flat
// value of each line (summed over the routines shown), lines of value
// 0 left out.
func pprofList(t *testing.T, gotool, prof, index, re string) map[fileLine]uint64 {
	t.Helper()
	// The fixture cache is shared: the DWARF may name the source in
	// another checkout. pprof drops the path up to "testdata/" when it
	// searches -source_path.
	src := filepath.Join(fixture.Root(t), "testdata")
	out := pprofCmd(t, gotool, nil, "-sample_index="+index, "-source_path="+src, "-list", re, prof)
	got := map[fileLine]uint64{}
	file := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := listRoutine.FindStringSubmatch(sc.Text()); m != nil {
			file = filepath.Base(m[2])
			continue
		}
		m := listRow.FindStringSubmatch(sc.Text())
		if m == nil || file == "" {
			continue
		}
		l, _ := strconv.Atoi(m[3])
		if v := pprofValue(t, m[1]); v > 0 {
			got[fileLine{file, l}] += v
		}
	}
	if file == "" {
		t.Fatalf("go tool pprof -list %s: no routine\n%s", re, out)
	}
	return got
}

var (
	annotateFile = regexp.MustCompile(`^(\S+): \d+ lines? with code`)
	annotateRow  = regexp.MustCompile(`^\s*(-|#####|\d+)[* ]?:\s*(\d+):`)
)

// annotateCounts runs blpp annotate for target and returns the count of
// each line with code (0 for "#####").
func annotateCounts(t *testing.T, prof, inst, target string) map[fileLine]uint64 {
	t.Helper()
	out := mustBlpp(t, "annotate", prof, "--binary", inst, target)
	counts := map[fileLine]uint64{}
	file := ""
	for _, l := range strings.Split(out, "\n") {
		if m := annotateFile.FindStringSubmatch(l); m != nil {
			file = filepath.Base(m[1])
			continue
		}
		m := annotateRow.FindStringSubmatch(l)
		if m == nil || m[1] == "-" {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		var c uint64
		if m[1] != "#####" {
			c, _ = strconv.ParseUint(m[1], 10, 64)
		}
		counts[fileLine{file, n}] = c
	}
	if len(counts) == 0 {
		t.Fatalf("blpp annotate %s: no lines\n%s", target, out)
	}
	return counts
}

// compareLines requires pprof's per-line values to be the wanted ones:
// every line wanted shows its count in pprof (a line that
// never ran shows none), and pprof shows no other line.
func compareLines(t *testing.T, what string, pp, ann map[fileLine]uint64) {
	t.Helper()
	for k, c := range ann {
		if pp[k] != c {
			t.Errorf("%s %s:%d: go tool pprof -list shows %d, want %d", what, k.file, k.line, pp[k], c)
		}
	}
	for k, v := range pp {
		if _, ok := ann[k]; !ok {
			t.Errorf("%s %s:%d: go tool pprof -list shows %d, want no code there", what, k.file, k.line, v)
		}
	}
}

// exportPprof writes the pprof export of prof and returns its path and
// the profile read back.
func exportPprof(t *testing.T, dir, inst, prof string) (string, *profile.Profile) {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(inst)+".pb.gz")
	mustBlpp(t, "export", prof, "--binary", inst, "--format", "pprof", "-o", out)
	return out, readPprof(t, out)
}

// readPprof reads the pprof file a blpp export wrote.
func readPprof(t *testing.T, path string) *profile.Profile {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := profile.Parse(fh)
	if err != nil {
		t.Fatalf("pprof cannot parse the export %s: %v", filepath.Base(path), err)
	}
	return p
}

// TestPprofLines: on loops.c (gcc -O2 -g), go tool pprof -list FUNC
// with sample type lines shows blpp annotate's count on each line of
// FUNC; -traces gives the calling contexts of the folded stacks with the
// same instruction counts; -disasm lists the function's original
// addresses, and every location is at an instruction of the original
// code.
func TestPprofLines(t *testing.T) {
	gotool := goTool(t)
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	out, p := exportPprof(t, dir, inst, prof)

	for _, fn := range []string{"no_loop", "nested2", "nested3", "nested3_guarded", "two_loops", "continue_break", "collatz", "vector_sum"} {
		compareLines(t, fn, pprofList(t, gotool, out, "lines", "^"+fn+"$"), annotateCounts(t, prof, inst, fn))
	}

	t.Run("traces", func(t *testing.T) {
		// Each trace is one sample: stack and insns. Summed per stack of
		// function names they are the folded stacks' insns.
		traces := pprofCmd(t, gotool, nil, "-traces", "-sample_index=insns", out)
		got := map[string]uint64{}
		for _, blk := range strings.Split(traces, "-----------+-------------------------------------------------------") {
			var frames []string
			var v uint64
			for _, l := range strings.Split(blk, "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) == 2 && len(frames) == 0 && regexp.MustCompile(`^[0-9]+$`).MatchString(f[0]):
					v = pprofValue(t, f[0])
					frames = append(frames, f[1])
				case len(f) == 1 && len(frames) > 0 && strings.HasPrefix(l, " "):
					frames = append(frames, f[0])
				}
			}
			if len(frames) == 0 || v == 0 {
				continue
			}
			for i, j := 0, len(frames)-1; i < j; i, j = i+1, j-1 {
				frames[i], frames[j] = frames[j], frames[i]
			}
			got[strings.Join(frames, ";")] += v
		}
		want := map[string]uint64{}
		for _, l := range strings.Split(strings.TrimSpace(mustBlpp(t, "export", prof, "--binary", inst, "--format", "folded")), "\n") {
			i := strings.LastIndexByte(l, ' ')
			v, err := strconv.ParseUint(l[i+1:], 10, 64)
			if err != nil {
				t.Fatalf("folded line %q: %v", l, err)
			}
			want[l[:i]] += v
		}
		if len(want) < 10 {
			t.Fatalf("only %d folded stacks", len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("stack %s: go tool pprof -traces %d insns, folded %d", k, got[k], v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("stack %s: go tool pprof -traces %d insns, no such folded stack", k, v)
			}
		}
	})

	t.Run("disasm", func(t *testing.T) {
		objdump := fixture.RequireTool(t, "objdump", "binutils")
		dis, err := exec.Command(objdump, "-d", "--no-show-raw-insn", exe).Output()
		if err != nil {
			t.Fatalf("objdump -d: %v", err)
		}
		insts := map[uint64]bool{}
		for _, m := range regexp.MustCompile(`(?m)^\s+([0-9a-f]+):\t`).FindAllStringSubmatch(string(dis), -1) {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			insts[a] = true
		}
		// Locations are at run-time addresses: the original's plus the
		// load bias, which the mapping's start gives (the code segment's
		// page plus the bias).
		ef, err := elf.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		defer ef.Close()
		var page uint64
		for _, pr := range ef.Progs {
			if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 {
				page = pr.Vaddr - pr.Vaddr%pr.Align
				break
			}
		}
		bias := p.Mapping[0].Start - page
		for _, l := range p.Location {
			if !insts[l.Address-bias] {
				t.Errorf("location %#x (%s): not an instruction of the original code (bias %#x)", l.Address, l.Line[0].Function.Name, bias)
			}
		}
		// go tool pprof -disasm with the original binary named (pprof
		// reads it for mapping 0, docs/formats.md): its addresses, and
		// the instructions annotate counts for the function.
		for _, fn := range []string{"nested2", "collatz"} {
			asm := pprofCmd(t, gotool, nil, "-sample_index=insns", "-disasm", `\b`+fn+`\b`, exe, out)
			var sum uint64
			rows := 0
			for _, m := range regexp.MustCompile(`(?m)^\s*(\S+)\s+(\S+)\s+([0-9a-f]+): (.*)$`).FindAllStringSubmatch(asm, -1) {
				a, _ := strconv.ParseUint(m[3], 16, 64)
				if !insts[a] {
					t.Errorf("%s: -disasm row %#x is not an instruction of the original code", fn, a)
				}
				if rows == 0 && strings.HasPrefix(m[4], "JMP") {
					t.Errorf("%s: -disasm shows the instrumented entry jump, not the original code: %s", fn, m[0])
				}
				sum += pprofValue(t, m[1])
				rows++
			}
			hdr := regexp.MustCompile(`(?m)^` + fn + ` at 0x[0-9a-f]+: \d+ calls?, (\d+) instructions executed$`).FindStringSubmatch(mustBlpp(t, "annotate", "--disasm", prof, "--binary", inst, fn))
			if hdr == nil || rows == 0 {
				t.Fatalf("%s: no -disasm rows or no annotate --disasm header\n%s", fn, asm)
			}
			if want, _ := strconv.ParseUint(hdr[1], 10, 64); sum != want {
				t.Errorf("%s: go tool pprof -disasm flat insns %d, blpp annotate --disasm %d", fn, sum, want)
			}
			// Instructions per line: each original instruction (objdump)
			// at its line (addr2line) runs as often as the block that
			// holds it (annotate --disasm's row at or before it).
			got := pprofList(t, gotool, out, "insns", "^"+fn+"$")
			want, entryLines := insnsPerLine(t, exe, insts, mustBlpp(t, "annotate", "--disasm", prof, "--binary", inst, fn))
			// Where annotate --disasm cannot show the bytes under the
			// entry jump (metadata older than decision 86), the lines
			// of the instructions there cannot be told apart, only
			// their sum.
			for k := range entryLines {
				delete(got, k)
				delete(want, k)
			}
			compareLines(t, fn+" insns", got, want)
		}
	})
}

// TestPprofInline: a static function gcc inlined twice shows as an
// inline frame at its own lines under its caller's call line (-lines
// -traces), with its declaration line as the Function's start line, and
// -list of the caller and the inlined function together shows annotate's
// counts of the caller.
func TestPprofInline(t *testing.T) {
	gotool := goTool(t)
	dir := t.TempDir()
	exe := fixture.Build(t, "pprof/inline.c", gccO2PIE)
	inst, prof, stdout := profiled(t, dir, exe)
	if stdout == "" {
		t.Fatal("inline printed nothing")
	}
	out, p := exportPprof(t, dir, inst, prof)

	src, err := os.ReadFile(filepath.Join(fixture.Root(t), "testdata", "pprof", "inline.c"))
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(text string) int {
		for i, l := range strings.Split(string(src), "\n") {
			if strings.Contains(l, text) {
				return i + 1
			}
		}
		t.Fatalf("inline.c has no line %q", text)
		return 0
	}
	scaleDecl, runDecl := lineOf("int scale(int x)"), lineOf("int run(int n)")
	loopCall, lastCall := lineOf("acc += scale(i + acc);"), lineOf("acc += scale(acc);")

	starts := map[string]int64{}
	for _, f := range p.Function {
		starts[f.Name] = f.StartLine
	}
	if starts["scale"] != int64(scaleDecl) || starts["run"] != int64(runDecl) {
		t.Errorf("start lines: scale %d, run %d; want %d, %d (DW_AT_decl_line)", starts["scale"], starts["run"], scaleDecl, runDecl)
	}

	// -lines -traces: scale at a line of its body, inlined, right above
	// run at each of the two call lines.
	traces := pprofCmd(t, gotool, nil, "-lines", "-traces", out)
	frame := regexp.MustCompile(`^\s+(?:\d+\s+)?(\S+) \S*inline\.c:(\d+)( \(inline\))?$`)
	seen := map[int]bool{}
	for _, blk := range strings.Split(traces, "-----------+-------------------------------------------------------") {
		var names []string
		var lines []int
		var inl []bool
		for _, l := range strings.Split(blk, "\n") {
			if m := frame.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[2])
				names, lines, inl = append(names, m[1]), append(lines, n), append(inl, m[3] != "")
			}
		}
		for i := 0; i+1 < len(names); i++ {
			if names[i] == "scale" && names[i+1] == "run" {
				if !inl[i] || lines[i] <= scaleDecl || lines[i] > scaleDecl+5 {
					t.Errorf("scale frame at line %d (inline %v), want an inline frame in scale's body after line %d", lines[i], inl[i], scaleDecl)
				}
				seen[lines[i+1]] = true
			}
		}
	}
	if !seen[loopCall] || !seen[lastCall] {
		t.Errorf("go tool pprof -lines -traces: scale inlined at run's lines %v, want %d and %d\n%s", seen, loopCall, lastCall, traces)
	}

	compareLines(t, "run", pprofList(t, gotool, out, "lines", "^(run|scale)$"), annotateCounts(t, prof, inst, "run"))
}

// insnsPerLine counts the instructions executed per source line of the
// function annotate --disasm listed: every instruction of the original
// (insts) from the function's first row on, with the count of the
// listing's row at or before it, at the line addr2line gives it.
//
// entryLines holds the lines of the instructions under the entry jump
// when the listing says it cannot show them (nil otherwise).
func insnsPerLine(t *testing.T, exe string, insts map[uint64]bool, listing string) (want, entryLines map[fileLine]uint64) {
	t.Helper()
	type row struct{ addr, count uint64 }
	var rows []row
	for _, m := range regexp.MustCompile(`(?m)^\s*(#####|\d+)[* ]?\s+0x([0-9a-f]+)\s`).FindAllStringSubmatch(listing, -1) {
		a, _ := strconv.ParseUint(m[2], 16, 64)
		c, _ := strconv.ParseUint(m[1], 10, 64) // "#####": 0
		rows = append(rows, row{a, c})
	}
	hdr := regexp.MustCompile(`(?m)^\S+ at 0x([0-9a-f]+): .*$`).FindStringSubmatch(listing)
	if len(rows) == 0 || hdr == nil {
		t.Fatalf("annotate --disasm: no rows\n%s", listing)
	}
	var addrs []uint64
	end := rows[len(rows)-1].addr
	entry, _ := strconv.ParseUint(hdr[1], 16, 64)
	for a := range insts {
		if a >= entry && a <= end {
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	args := []string{"-e", exe}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	a2l := fixture.RequireTool(t, "addr2line", "binutils")
	out, err := exec.Command(a2l, args...).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(addrs) {
		t.Fatalf("addr2line: %d lines for %d addresses", len(lines), len(addrs))
	}
	want, entryLines = map[fileLine]uint64{}, map[fileLine]uint64{}
	hidden := strings.Contains(listing, "hold blpp's jump")
	k := 0
	for i, a := range addrs {
		for k+1 < len(rows) && rows[k+1].addr <= a {
			k++
		}
		loc := strings.Fields(lines[i])[0]
		j := strings.LastIndexByte(loc, ':')
		n, err := strconv.Atoi(loc[j+1:])
		if err != nil || n == 0 {
			continue
		}
		if rows[k].addr != a {
			continue // padding between blocks: in no block, never run
		}
		fl := fileLine{filepath.Base(loc[:j]), n}
		if hidden && a < entry+5 {
			entryLines[fl] = 1
		}
		if c := rows[k].count; c > 0 {
			want[fl] += c
		}
	}
	return want, entryLines
}
