package main

// Tests of the verbs that change or run programs: blpp rewrite (its
// refusals leave no file behind; its summary, as text and as JSON), blpp
// report on profiles that are not what they should be, and blpp run (the
// program's exit status, the report on stderr or in a file).

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// listDir returns the names in dir, sorted; nil for a missing dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// elf32Exec returns a small but well-formed 32-bit i386 executable: an
// ELF header and one PT_LOAD segment holding `xor %ebx,%ebx; mov $1,%eax;
// int $0x80` (exit(0)).
func elf32Exec() []byte {
	const base = 0x08048000
	code := []byte{0x31, 0xdb, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xcd, 0x80}
	hdrSize, phSize := binary.Size(elf.Header32{}), binary.Size(elf.Prog32{})
	off := uint32(hdrSize + phSize)
	h := elf.Header32{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_386), Version: uint32(elf.EV_CURRENT),
		Entry: base + off, Phoff: uint32(hdrSize), Ehsize: uint16(hdrSize),
		Phentsize: uint16(phSize), Phnum: 1, Shentsize: uint16(binary.Size(elf.Section32{})),
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS32)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	ph := elf.Prog32{Type: uint32(elf.PT_LOAD), Vaddr: base, Paddr: base,
		Filesz: off + uint32(len(code)), Memsz: off + uint32(len(code)), Flags: uint32(elf.PF_R | elf.PF_X), Align: 0x1000}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, &h)
	binary.Write(&b, binary.LittleEndian, &ph)
	b.Write(code)
	return b.Bytes()
}

// TestRewriteRefusals: every input blpp rewrite cannot instrument, and
// every output it cannot write, ends in exit status 2 with one line on
// stderr that starts "blpp rewrite:" and says what is wrong, and leaves
// neither the output nor a temporary file behind.
func TestRewriteRefusals(t *testing.T) {
	bin, data := testBinary(t)
	in := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(in, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	class32 := slices.Clone(data)
	class32[elf.EI_CLASS] = byte(elf.ELFCLASS32)
	notDir := write("plain-file", []byte("x"))

	tests := []struct {
		name string
		args func(out string) []string // the command line, given an output path
		want []string                  // each in stderr
	}{
		{"text file", func(out string) []string {
			return []string{"rewrite", write("script.sh", []byte("#!/bin/sh\nexit 0\n")), "-o", out}
		}, []string{"script.sh", "not an ELF"}},
		{"empty file", func(out string) []string { return []string{"rewrite", write("empty", nil), "-o", out} },
			[]string{"empty", "not an ELF"}},
		{"32-bit i386 executable", func(out string) []string { return []string{"rewrite", write("i386", elf32Exec()), "-o", out} },
			[]string{"i386", "not an x86-64 ELF", "ELFCLASS32"}},
		{"x86-64 binary with EI_CLASS=ELFCLASS32", func(out string) []string {
			return []string{"rewrite", write("class32", class32), "-o", out}
		}, []string{"class32", "not an x86-64 ELF", "ELFCLASS32"}},
		{"missing input", func(out string) []string { return []string{"rewrite", filepath.Join(in, "missing"), "-o", out} },
			[]string{"missing", "no such file"}},
		{"input is a directory", func(out string) []string { return []string{"rewrite", in, "-o", out} },
			[]string{"directory"}},
		{"output directory missing", func(out string) []string {
			return []string{"rewrite", bin, "-o", filepath.Join(filepath.Dir(out), "no-such-dir", "out")}
		}, []string{"cannot write", "no-such-dir", "no such file"}},
		{"output directory is a file", func(out string) []string {
			return []string{"rewrite", bin, "-o", filepath.Join(notDir, "out")}
		}, []string{"cannot write", "not a directory"}},
		{"output is a directory", func(out string) []string {
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"rewrite", bin, "-o", out}
		}, []string{"cannot write", "is a directory"}},
		{"-o missing", func(string) []string { return []string{"rewrite", bin} }, []string{"-o OUT is required"}},
		{"-o without value", func(string) []string { return []string{"rewrite", bin, "-o"} }, []string{"-o"}},
		{"no input", func(out string) []string { return []string{"rewrite", "-o", out} }, []string{"IN"}},
		{"two inputs", func(out string) []string { return []string{"rewrite", bin, bin, "-o", out} }, []string{"IN"}},
		{"bad --include", func(out string) []string { return []string{"rewrite", bin, "-o", out, "--include", "("} },
			[]string{"--include"}},
		{"unknown flag", func(out string) []string { return []string{"rewrite", bin, "-o", out, "--bogus"} },
			[]string{"unknown flag: --bogus"}},
		{"--shadow-frames below 64", func(out string) []string { return []string{"rewrite", bin, "-o", out, "--shadow-frames", "63"} },
			[]string{"--shadow-frames: 63 is not between 64 and 2^30"}},
		{"--shadow-frames above 2^30", func(out string) []string {
			return []string{"rewrite", bin, "-o", out, "--shadow-frames", "1073741825"}
		}, []string{"--shadow-frames: 1073741825"}},
		{"--module-tag above the largest", func(out string) []string { return []string{"rewrite", bin, "-o", out, "--module-tag", "2048"} },
			[]string{"--module-tag: 2048 is above 2047"}},
		{"--module-tag on an executable", func(out string) []string { return []string{"rewrite", bin, "-o", out, "--module-tag", "5"} },
			[]string{"module tag 5: an executable's tag is 0"}},
	}
	// Shared libraries are rewritten, libc.so.6 too, but not the dynamic
	// linker (decision 81).
	for _, lib := range []struct{ path, want string }{
		{"/lib64/ld-linux-x86-64.so.2", "the dynamic linker is never instrumented"},
	} {
		if _, err := os.Stat(lib.path); err != nil {
			continue
		}
		tests = append(tests, struct {
			name string
			args func(string) []string
			want []string
		}{"shared library " + filepath.Base(lib.path), func(out string) []string { return []string{"rewrite", lib.path, "-o", out} },
			[]string{lib.want}})
	}
	if os.Geteuid() != 0 {
		// root writes into read-only directories.
		tests = append(tests, struct {
			name string
			args func(string) []string
			want []string
		}{"read-only output directory", func(out string) []string {
			dir := filepath.Dir(out)
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			return []string{"rewrite", bin, "-o", out}
		}, []string{"cannot write", "permission denied"}})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "out")
			args := tt.args(out)
			before := listDir(t, outDir)
			o, ok := blppWithin(60*time.Second, args...)
			if !ok {
				t.Fatalf("blpp %q did not finish in 60 s", args)
			}
			if p := refusalProblem(o); p != "" {
				t.Fatalf("blpp %q: %s\n%s", args, p, o)
			}
			if !strings.HasPrefix(o.stderr, "blpp rewrite: ") {
				t.Errorf("blpp %q: stderr %q does not start with \"blpp rewrite: \"", args, o.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("blpp %q: stderr %q does not mention %q", args, o.stderr, w)
				}
			}
			if after := listDir(t, outDir); !slices.Equal(before, after) {
				t.Errorf("blpp %q: the output directory held %q before and %q after the refusal", args, before, after)
			}
			if after := listDir(t, in); slices.ContainsFunc(after, func(n string) bool { return strings.HasPrefix(n, ".blpp") }) {
				t.Errorf("blpp %q: temporary file left in the input directory: %q", args, after)
			}
		})
	}
}

// runBinary runs prog with env added, retrying while a parallel test's
// fork holds the just-written executable open (ETXTBSY).
func runBinary(t *testing.T, prog string, args []string, env ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	for try := 0; ; try++ {
		cmd := exec.Command(prog, args...)
		cmd.Env = append(os.Environ(), env...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if errors.Is(err, syscall.ETXTBSY) && try < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return o.Bytes(), e.Bytes(), ee.ExitCode()
		case err != nil:
			t.Fatalf("%s: %v", prog, err)
		}
		return o.Bytes(), e.Bytes(), 0
	}
}

// instrumented rewrites crash.c (gcc -O2 PIE) with blpp rewrite into dir,
// runs it once with the profile in dir, and returns the original, the
// instrumented binary and the profile.
func instrumented(t *testing.T, dir string) (orig, inst, prof string) {
	t.Helper()
	orig = fixture.Build(t, "crash.c", gccO2PIE)
	inst = filepath.Join(dir, "crash.blpp")
	if o := blpp("rewrite", orig, "-o", inst); o.code != 0 {
		t.Fatalf("blpp rewrite: %s", o)
	}
	prof = filepath.Join(dir, "crash.prof")
	if _, stderr, code := runBinary(t, inst, nil, "BLPP_PROFILE="+prof); code != 0 {
		t.Fatalf("%s: exit %d\n%s", inst, code, stderr)
	}
	return orig, inst, prof
}

// TestReportRefusals: blpp report refuses, in one line and with exit
// status 2, a profile that is damaged or is no profile at all, and a
// binary that blpp did not instrument.
func TestReportRefusals(t *testing.T) {
	dir := t.TempDir()
	orig, inst, prof := instrumented(t, dir)
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cct.Parse(data); err != nil {
		t.Fatalf("the runtime's profile does not parse: %v", err)
	}
	for _, format := range []string{"text", "json"} {
		if o := blpp("report", "--binary", inst, "--format", format, prof); o.code != 0 || o.stdout == "" || o.stderr != "" {
			t.Fatalf("blpp report of the intact profile (%s): %s", format, o)
		}
	}

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// An instrumented binary of another program.
	otherSrc, _ := testBinary(t)
	other := filepath.Join(dir, "switch.blpp")
	if o := blpp("rewrite", otherSrc, "-o", other); o.code != 0 {
		t.Fatalf("blpp rewrite: %s", o)
	}
	type refusal struct {
		name    string
		binary  string
		profile string
		want    string // in stderr
	}
	var tests []refusal
	// A byte flipped in the magic, the version, the header, the body and
	// the checksum; the checksum catches what the structure does not.
	for _, off := range []int{0, len(cct.Magic), len(cct.Magic) + 4, 24, len(data) / 2, len(data) - 9, len(data) - 1} {
		b := slices.Clone(data)
		b[off] ^= 0xff
		tests = append(tests, refusal{fmt.Sprintf("byte %d flipped", off), inst, write(fmt.Sprintf("flip%d", off), b), ""})
	}
	for _, n := range []int{0, 5, len(cct.Magic), 30, len(data) / 2, len(data) - 1} {
		tests = append(tests, refusal{fmt.Sprintf("truncated to %d bytes", n), inst, write(fmt.Sprintf("trunc%d", n), data[:n]), ""})
	}
	tests = append(tests,
		refusal{"appended byte", inst, write("longer", append(slices.Clone(data), 0)), ""},
		refusal{"text file", inst, write("notes.txt", []byte("not a profile\n")), "not a blpp profile"},
		refusal{"an ELF file", inst, orig, "not a blpp profile"},
		refusal{"missing profile", inst, filepath.Join(dir, "missing.prof"), "no such file"},
		refusal{"--binary /bin/true", "/bin/true", prof, "not a binary instrumented by blpp"},
		refusal{"--binary the original", orig, prof, "not a binary instrumented by blpp"},
		refusal{"--binary missing", filepath.Join(dir, "missing.bin"), prof, "no such file"},
		refusal{"--binary a text file", write("bin.txt", []byte("hello\n")), prof, "bin.txt"},
		refusal{"--binary another instrumented program", other, prof, "build-id"},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				args := []string{"report", "--binary", tt.binary, "--format", format, tt.profile}
				o, ok := blppWithin(20*time.Second, args...)
				if !ok {
					t.Fatalf("blpp %q did not finish in 20 s", args)
				}
				if p := refusalProblem(o); p != "" {
					t.Fatalf("blpp %q: %s\n%s", args, p, o)
				}
				if !strings.HasPrefix(o.stderr, "blpp report: ") {
					t.Errorf("blpp %q: stderr %q does not start with \"blpp report: \"", args, o.stderr)
				}
				if !strings.Contains(o.stderr, tt.want) {
					t.Errorf("blpp %q: stderr %q does not mention %q", args, o.stderr, tt.want)
				}
				// The refused file is named.
				bad := tt.profile
				if tt.binary != inst {
					bad = tt.binary
				}
				if !strings.Contains(o.stderr, filepath.Base(bad)) {
					t.Errorf("blpp %q: stderr %q does not name %s", args, o.stderr, filepath.Base(bad))
				}
			}
		})
	}
}

// rewriteSummaryRE is the first line of blpp rewrite's text summary.
var rewriteSummaryRE = regexp.MustCompile(`^(.+) -> (.+): ([0-9]+) of ([0-9]+) functions instrumented \(([0-9]+\.[0-9])%\), ([0-9]+) bytes of new code$`)

// TestRewriteSummary rewrites fixtures with -v and with --json and checks
// that the two summaries agree with each other and with the JSON schema
// (functions, instrumented, skipped[] with name, entry and reason), that
// -v lists every uninstrumented function, and that the two runs write the
// same, working binary.
func TestRewriteSummary(t *testing.T) {
	// A static build: the C library's functions give skipped entries of
	// several reasons.
	for _, c := range []fixture.Config{gccO2PIE, {CC: "gcc", Opt: "-O2", Static: true}} {
		t.Run(c.String(), func(t *testing.T) {
			src := fixture.Build(t, "crash.c", c)
			dir := t.TempDir()
			outV, outJ, outQ := filepath.Join(dir, "v.blpp"), filepath.Join(dir, "j.blpp"), filepath.Join(dir, "q.blpp")
			v := blpp("rewrite", "-v", src, "-o", outV)
			j := blpp("rewrite", "--json", src, "-o", outJ)
			q := blpp("rewrite", src, "-o", outQ)
			for _, o := range []outcome{v, j, q} {
				if o.code != 0 || o.stderr != "" {
					t.Fatalf("blpp rewrite: %s", o)
				}
			}

			doc, err := decodeObject([]byte(j.stdout))
			if err != nil {
				t.Fatalf("--json output does not decode: %v\n%s", err, j.stdout)
			}
			var errs []string
			checkKeys(&errs, "summary", doc, map[string]jsonKind{
				"functions": jInt, "instrumented": jInt, "skipped": jArray, "code_bytes": jInt, "entries_counted": jInt,
			})
			if len(errs) > 0 {
				t.Fatalf("--json schema: %s\n%s", strings.Join(errs, "; "), j.stdout)
			}
			var sum struct {
				Functions    int `json:"functions"`
				Instrumented int `json:"instrumented"`
				Skipped      []struct {
					Name, Entry, Reason, Detail string
					EntriesCounted              bool   `json:"entries_counted"`
					NotCounted                  string `json:"entries_not_counted"`
				} `json:"skipped"`
				CodeBytes int `json:"code_bytes"`
				CodeKinds []struct {
					Kind  string `json:"kind"`
					Bytes int    `json:"bytes"`
				} `json:"code_kinds"`
				CodeElsewhere int `json:"code_elsewhere"`
			}
			if err := json.Unmarshal([]byte(j.stdout), &sum); err != nil {
				t.Fatal(err)
			}
			for i, s := range doc["skipped"].([]any) {
				obj, ok := s.(map[string]any)
				if !ok {
					t.Fatalf("skipped[%d] is not an object", i)
				}
				checkKeys(&errs, fmt.Sprintf("skipped[%d]", i), obj, map[string]jsonKind{"name": jString, "entry": jString, "reason": jString})
			}
			if len(errs) > 0 {
				t.Fatalf("--json schema: %s", strings.Join(errs, "; "))
			}
			if sum.Instrumented == 0 || sum.CodeBytes == 0 || sum.Functions != sum.Instrumented+len(sum.Skipped) {
				t.Errorf("summary: %d functions, %d instrumented, %d skipped, %d bytes of code: want instrumented + skipped = functions, all non-zero",
					sum.Functions, sum.Instrumented, len(sum.Skipped), sum.CodeBytes)
			}
			reasons := map[string]int{}
			for _, s := range sum.Skipped {
				if s.Name == "" || s.Reason == "" || !regexp.MustCompile(`^0x[0-9a-f]+$`).MatchString(s.Entry) {
					t.Errorf("skipped entry %+v: want a name, a hex entry and a reason", s)
				}
				reasons[s.Reason]++
			}

			// The text summary says the same.
			lines := strings.Split(strings.TrimSuffix(v.stdout, "\n"), "\n")
			m := rewriteSummaryRE.FindStringSubmatch(lines[0])
			if m == nil {
				t.Fatalf("-v: first line %q is not the summary", lines[0])
			}
			share := fmt.Sprintf("%.1f", 100*float64(sum.Instrumented)/float64(sum.Functions))
			if m[1] != src || m[2] != outV || m[3] != strconv.Itoa(sum.Instrumented) || m[4] != strconv.Itoa(sum.Functions) || m[5] != share || m[6] != strconv.Itoa(sum.CodeBytes) {
				t.Errorf("-v summary %q disagrees with the JSON (%d of %d, %s%%, %d bytes)", lines[0], sum.Instrumented, sum.Functions, share, sum.CodeBytes)
			}
			// -v breaks the new code down as code_kinds does (decision 111).
			kinds := sum.CodeElsewhere
			for _, k := range sum.CodeKinds {
				kinds += k.Bytes
				if !regexp.MustCompile(`(?m)^ +` + k.Kind + ` +` + strconv.Itoa(k.Bytes) + ` `).MatchString(v.stdout) {
					t.Errorf("-v lacks the new code's row %s %d:\n%s", k.Kind, k.Bytes, v.stdout)
				}
			}
			if len(sum.CodeKinds) == 0 || kinds != sum.CodeBytes {
				t.Errorf("code_kinds and code_elsewhere add up to %d bytes, code_bytes is %d", kinds, sum.CodeBytes)
			}
			if !regexp.MustCompile(`(?m)^ +total +` + strconv.Itoa(sum.CodeBytes) + ` `).MatchString(v.stdout) {
				t.Errorf("-v lacks the new code's total %d:\n%s", sum.CodeBytes, v.stdout)
			}
			if !strings.HasPrefix(v.stdout, strings.Replace(q.stdout, outQ, outV, 1)) {
				t.Errorf("-v does not start with the plain summary:\n%s\nplain:\n%s", v.stdout, q.stdout)
			}
			for r, n := range reasons {
				if want := regexp.MustCompile(`(?m)^  uninstrumented: ` + regexp.QuoteMeta(r) + ` +` + strconv.Itoa(n) + `$`); !want.MatchString(q.stdout) {
					t.Errorf("summary lacks the line for %d functions skipped because %q:\n%s", n, r, q.stdout)
				}
			}
			for _, s := range sum.Skipped {
				detail := s.Reason
				if s.Detail != "" {
					detail = s.Detail
				}
				entries := "counted"
				if !s.EntriesCounted {
					entries = "not counted: " + s.NotCounted
					if s.NotCounted == "" {
						t.Errorf("%s: entries not counted, with no reason", s.Name)
					}
				}
				row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(s.Entry) + ` +` + regexp.QuoteMeta(s.Name) + ` +` + regexp.QuoteMeta(detail) + ` +` + regexp.QuoteMeta(entries) + `$`)
				if !row.MatchString(v.stdout) {
					t.Errorf("-v does not list %s at %s (%s; entries %s)", s.Name, s.Entry, detail, entries)
				}
				if strings.Contains(q.stdout, s.Entry+" ") {
					t.Errorf("without -v the summary lists %s", s.Name)
				}
			}

			// The same binary each time, with the input's mode, behaving
			// as the input does.
			bv, err := os.ReadFile(outV)
			if err != nil {
				t.Fatal(err)
			}
			for _, other := range []string{outJ, outQ} {
				if b, err := os.ReadFile(other); err != nil || !bytes.Equal(b, bv) {
					t.Errorf("%s differs from %s (%v): rewriting is not deterministic", other, outV, err)
				}
			}
			fiIn, err := os.Stat(src)
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(outV); err != nil || fi.Mode().Perm() != fiIn.Mode().Perm() {
				t.Errorf("%s: mode %v, the input's %v (%v)", outV, fi.Mode(), fiIn.Mode(), err)
			}
			if names := listDir(t, dir); len(names) != 3 {
				t.Errorf("rewrite left %q in the output directory, want the three binaries", names)
			}
			wantOut, wantErr, wantCode := runBinary(t, src, []string{"exit"})
			gotOut, gotErr, gotCode := runBinary(t, outV, []string{"exit"}, "BLPP_PROFILE="+filepath.Join(t.TempDir(), "p"))
			if gotCode != wantCode || !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
				t.Errorf("rewritten crash exit: exit %d %q %q, original exit %d %q %q", gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
			}
		})
	}
}

// TestRunCommand: blpp run -- PROG ARGS runs the instrumented program with
// the program's own output and exit status (128+N for a signal, as a
// shell reports it) and prints the hot paths on stderr, or with -o into a
// file.
func TestRunCommand(t *testing.T) {
	prog := fixture.Build(t, "crash.c", gccO2PIE)
	// blpp run caches rewrites in the user cache directory: keep them in
	// the test's own (after Build, which uses it too).
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("BLPP_PROFILE", "")
	dir := t.TempDir()

	tests := []struct {
		name   string
		flags  []string
		args   []string
		code   int
		report string // file the report goes to; "" for stderr
	}{
		{"returns 0", nil, nil, 0, ""},
		{"exit 3", nil, []string{"exit"}, 3, ""},
		{"SIGSEGV", nil, []string{"segv"}, 128 + int(syscall.SIGSEGV), ""},
		{"SIGABRT", nil, []string{"abort"}, 128 + int(syscall.SIGABRT), ""},
		{"-o FILE", []string{"-o", filepath.Join(dir, "report.txt")}, []string{"exit"}, 3, filepath.Join(dir, "report.txt")},
		{"--top 1 -o FILE", []string{"--top", "1", "-o", filepath.Join(dir, "top1.txt")}, nil, 0, filepath.Join(dir, "top1.txt")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOut, wantErr, _ := runBinary(t, prog, tt.args)
			args := append(append(append([]string{"run"}, tt.flags...), "--", prog), tt.args...)
			o, ok := blppWithin(60*time.Second, args...)
			if !ok {
				t.Fatalf("blpp %q did not finish in 60 s", args)
			}
			if o.code != tt.code {
				t.Errorf("blpp %q: exit %d, want %d\n%s", args, o.code, tt.code, o.stderr)
			}
			if p := crashProblem(o.stderr); p != "" {
				t.Errorf("blpp %q: %s", args, p)
			}
			if o.stdout != string(wantOut) {
				t.Errorf("blpp %q: stdout %q, the program's own %q", args, o.stdout, wantOut)
			}
			if !strings.HasPrefix(o.stderr, string(wantErr)) {
				t.Errorf("blpp %q: stderr %q does not start with the program's own %q", args, o.stderr, wantErr)
			}
			rep := strings.TrimPrefix(o.stderr, string(wantErr))
			if tt.report != "" {
				if rep != "" {
					t.Errorf("blpp %q: stderr has %q beyond the program's own", args, rep)
				}
				b, err := os.ReadFile(tt.report)
				if err != nil {
					t.Fatalf("blpp %q: %v", args, err)
				}
				rep = string(b)
			}
			if !strings.Contains(rep, "hottest paths") || !strings.Contains(rep, "work path") {
				t.Errorf("blpp %q: the report lacks the hottest paths of work:\n%s", args, rep)
			}
			if slices.Contains(tt.flags, "--top") && strings.Contains(rep, "\n  2. ") {
				t.Errorf("blpp %q: more than one hot path:\n%s", args, rep)
			}
		})
	}

	t.Run("--profile", func(t *testing.T) {
		prof := filepath.Join(dir, "kept.prof")
		o := blpp("run", "--profile", prof, "--", prog, "segv")
		if o.code != 128+int(syscall.SIGSEGV) {
			t.Fatalf("blpp run --profile: %s", o)
		}
		p, err := cct.ReadFile(prof)
		if err != nil {
			t.Fatalf("the kept profile: %v", err)
		}
		if p.Flags&cct.FlagFatalSignal == 0 {
			t.Errorf("the kept profile's flags are %v, want fatal-signal", p.Flags)
		}
	})
}

// TestRewriteLibrary rewrites a shared object: the summary names the
// module and its tag, the default tag or --module-tag's, in text and
// JSON (decision 81).
func TestRewriteLibrary(t *testing.T) {
	lib := fixture.Build(t, "modules/rw_lib.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-shared", "-fPIC", "-Wl,-soname,librw.so"}})
	dir := t.TempDir()
	out := filepath.Join(dir, "librw.so")
	o := blpp("rewrite", lib, "-o", out)
	want := fmt.Sprintf("  module: shared library librw.so, tag %d\n", rewriter.DefaultModuleTag("librw.so"))
	if o.code != 0 || !strings.Contains(o.stdout, want) {
		t.Errorf("blpp rewrite of a library: %s\nwant the line %q", o, want)
	}
	o = blpp("rewrite", "--json", "--module-tag", "7", "--no-context", lib, "-o", out)
	var sum struct {
		Module    string `json:"module"`
		ModuleTag uint64 `json:"module_tag"`
		Soname    string `json:"soname"`
	}
	if o.code != 0 {
		t.Fatalf("blpp rewrite --json --module-tag 7: %s", o)
	}
	if err := json.Unmarshal([]byte(o.stdout), &sum); err != nil || sum.Module != "shared library" || sum.ModuleTag != 7 || sum.Soname != "librw.so" {
		t.Errorf("--json: %+v, %v; want shared library librw.so, tag 7", sum, err)
	}
	o = blpp("rewrite", "--no-slots", "--no-context", fixture.Build(t, "loops.c", gccO2PIE), "-o", filepath.Join(dir, "loops"))
	if o.code != 0 || !strings.Contains(o.stdout, "  module: executable, tag 0\n") {
		t.Errorf("blpp rewrite --no-slots of an executable: %s", o)
	}
}
