package elfw

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// The end-to-end tests rewrite real executables the way the rewriter will:
// a new RX segment holding code, a new RW segment with data and a zero
// tail, a non-loaded metadata section, a new entry point, a patch in the
// original code and, for dynamic binaries, a DT_FINI exit hook. Then they
// run the original and the result and compare what they do.
//
// The RX segment holds:
//   - bad:   exit(99) by raw syscall, reached when a check below fails;
//   - entry: the new e_entry. It checks that the RW segment's first eight
//     bytes hold dataMagic, that the last eight bytes of its zero tail are
//     zero, writes the tail and reads it back, then jumps to the original
//     entry point;
//   - copy:  the first whole instructions (>= 5 bytes) of the original
//     entry, followed by a jump back past them. The original entry's first
//     bytes are patched with a jump to copy, so the program only starts if
//     the patch landed where the loader maps it;
//   - fini:  (dynamic binaries) write(3, "FINI\n", 5), then jump to the
//     original DT_FINI, or return when there is none.
//
// So an unchanged stdout, stderr and exit status proves the new entry and
// the patch ran, and "FINI\n" on file descriptor 3 (a pipe the test
// passes) proves the exit hook ran. The hook writes to descriptor 3, not 2,
// because it runs last: coreutils programs close stderr in an atexit
// handler (close_stdout) that runs before the loader's _dl_fini.

const dataMagic = 0x61746164_70706c62 // "blppdata"

// testRewrite is one rewrite made by rewriteForTest.
type testRewrite struct {
	orig, file []byte
	opts       Options
	out        *Output
	dynamic    bool
	patched    bool
	finiHook   bool
	meta       []byte
}

// rewriteForTest builds the stubs described above for orig and writes.
// maxPad is passed to the layout (defaultMirrorPad normally, -1 for no
// mirroring).
func rewriteForTest(t *testing.T, orig []byte, maxPad int64) testRewrite {
	t.Helper()
	im, err := parse(orig)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	lay := im.plan(maxPad)
	r := testRewrite{orig: orig, dynamic: im.interp}

	rx := lay.FreeAddr
	rw := rx + 2*PageSize
	const memsz = 3*PageSize + 100
	data := binary.LittleEndian.AppendUint64(nil, dataMagic)
	data = append(data, make([]byte, 8)...)
	msg := rw + uint64(len(data))
	data = append(data, "FINI\n"...)
	tail := rw + memsz - 8

	a := &asm{base: rx}
	bad := a.pc()
	a.movEAX(60) // exit
	a.movEDI(99)
	a.syscall()

	entry := a.pc()
	a.loadRAX(rw)
	a.movabsRCX(dataMagic)
	a.cmpRAXRCX()
	a.jne(bad)
	a.loadRAX(tail)
	a.testRAX()
	a.jne(bad)
	a.storeRCX(tail)
	a.loadRAX(tail)
	a.cmpRAXRCX()
	a.jne(bad)
	a.jmp(im.entry)

	var patches []Patch
	if off, _, ok := im.fileOff(im.entry, 16); ok {
		if n, ok := movable(orig[off : off+16]); ok {
			cp := a.pc()
			a.bytes(orig[off : off+uint64(n)]...)
			a.jmp(im.entry + uint64(n))
			j := &asm{base: im.entry}
			j.jmp(cp)
			for len(j.b) < n {
				j.bytes(0xcc)
			}
			patches = append(patches, Patch{Addr: im.entry, Bytes: j.b})
			r.patched = true
		}
	}

	var fini uint64
	if r.dynamic {
		fini = a.pc()
		a.movEAX(1) // write
		a.movEDI(3)
		a.leaRSI(msg)
		a.movEDX(5)
		a.syscall()
		if of, ok := OrigFini(orig); ok {
			a.jmp(of)
		} else {
			a.ret()
		}
		r.finiHook = true
	}

	r.meta = []byte("blpp metadata for " + t.Name())
	r.opts = Options{
		Segments: []Segment{
			{Addr: rx, Data: a.b, Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"},
			{Addr: rw, Data: data, MemSize: memsz, Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
		},
		Patches:  patches,
		Entry:    entry,
		Fini:     fini,
		Sections: []Section{{Name: ".blpp.meta", Data: r.meta}},
	}
	r.out, err = writeFile(orig, r.opts, maxPad)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	r.file = r.out.File
	return r
}

// result is what a run did.
type result struct {
	stdout, stderr []byte
	fd3            []byte // what the program wrote to file descriptor 3
	status         int
}

// run executes path with args and stdin, with a timeout, and retries
// ETXTBSY (a file just written may still be open in a child another test
// is forking). File descriptor 3 of the program is a pipe whose contents
// are returned in result.fd3.
func run(t *testing.T, env []string, stdin []byte, path string, args ...string) result {
	t.Helper()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Env = append([]string{"LC_ALL=C", "PATH=/usr/bin:/bin"}, env...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{pw}
		err = cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			cancel()
			if errors.Is(err, syscall.ETXTBSY) && attempt < 50 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			t.Fatalf("run %s: %v", path, err)
		}
		fd3, rerr := io.ReadAll(pr)
		pr.Close()
		err = cmd.Wait()
		cancel()
		if rerr != nil {
			t.Fatalf("run %s: read fd 3: %v", path, rerr)
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
			return result{out.Bytes(), errb.Bytes(), fd3, 0}
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return result{out.Bytes(), errb.Bytes(), fd3, 128 + int(ws.Signal())}
			}
			return result{out.Bytes(), errb.Bytes(), fd3, ee.ExitCode()}
		default:
			t.Fatalf("run %s: %v", path, err)
		}
	}
}

func writeExe(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// program is an executable to rewrite and how to run it.
type program struct {
	path  string
	args  []string
	stdin []byte
}

// checkProgram rewrites p, runs both versions and checks everything the
// end-to-end tests promise.
func checkProgram(t *testing.T, p program, maxPad int64) testRewrite {
	t.Helper()
	orig, err := os.ReadFile(p.path)
	if err != nil {
		t.Fatal(err)
	}
	r := rewriteForTest(t, orig, maxPad)
	dir := t.TempDir()
	origPath := writeExe(t, dir, "orig", orig)
	outPath := writeExe(t, dir, "rewritten", r.file)

	want := run(t, nil, p.stdin, origPath, p.args...)
	got := run(t, nil, p.stdin, outPath, p.args...)
	wantFd3 := ""
	if r.finiHook {
		wantFd3 = "FINI\n"
	}
	same := func(got result) bool {
		return got.status == want.status && bytes.Equal(got.stdout, want.stdout) &&
			bytes.Equal(got.stderr, want.stderr) && string(got.fd3) == wantFd3
	}
	if !same(got) {
		t.Fatalf("rewritten program differs:\nstatus %d, want %d\nstdout %q\nwant   %q\nstderr %q\nwant   %q\nfd 3   %q, want %q",
			got.status, want.status, trunc(got.stdout), trunc(want.stdout), trunc(got.stderr), trunc(want.stderr), got.fd3, wantFd3)
	}

	// The dynamic loader run as a command maps the program itself
	// (_dl_map_object), not the kernel: it must accept the layout too.
	if r.dynamic {
		ld := interpreter(t, orig)
		got := run(t, nil, p.stdin, ld, append([]string{outPath}, p.args...)...)
		if !same(got) {
			t.Errorf("rewritten program run by %s differs: status %d (want %d), stderr %q, fd 3 %q", ld, got.status, want.status, trunc(got.stderr), got.fd3)
		}
	}

	checkAuxv(t, r, outPath, p)
	checkUnchanged(t, r)
	checkReadBack(t, r)
	checkTools(t, r, origPath, outPath)
	return r
}

func trunc(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

func interpreter(t *testing.T, orig []byte) string {
	f, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return string(bytes.TrimRight(b, "\x00"))
		}
	}
	t.Fatal("no PT_INTERP")
	return ""
}

var (
	auxvLine = regexp.MustCompile(`(?m)^(AT_PHDR|AT_ENTRY|AT_PHNUM):\s+(0x[0-9a-f]+|\d+)$`)
	gdbAuxv  = regexp.MustCompile(`(?m)^\d+\s+(AT_PHDR|AT_ENTRY|AT_PHNUM)\s.*\s(0x[0-9a-f]+|\d+)$`)
)

// checkAuxv reads the auxiliary vector the kernel passed to the rewritten
// program and checks that AT_PHDR is the new table's run-time address: the
// load bias (AT_ENTRY - e_entry) plus Layout.PhdrAddr. Dynamic binaries
// print it themselves (glibc's LD_SHOW_AUXV=1); static ones are stopped at
// their first instruction under gdb ("info auxv").
func checkAuxv(t *testing.T, r testRewrite, outPath string, p program) {
	t.Helper()
	aux := map[string]uint64{}
	collect := func(re *regexp.Regexp, out []byte) {
		for _, m := range re.FindAllSubmatch(out, -1) {
			v, err := strconv.ParseUint(string(m[2]), 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			aux[string(m[1])] = v
		}
	}
	if r.dynamic {
		got := run(t, []string{"LD_SHOW_AUXV=1"}, p.stdin, outPath, p.args...)
		collect(auxvLine, got.stdout)
	} else {
		gdb := fixture.RequireTool(t, "gdb", "gdb")
		got := run(t, nil, nil, gdb, "-nx", "-batch", "-ex", "starti", "-ex", "info auxv", outPath)
		collect(gdbAuxv, got.stdout)
	}
	if len(aux) != 3 {
		t.Fatalf("auxiliary vector lacks AT_PHDR, AT_ENTRY or AT_PHNUM: %v", aux)
	}
	bias := aux["AT_ENTRY"] - r.opts.Entry
	if aux["AT_PHDR"] != bias+r.out.Layout.PhdrAddr {
		t.Errorf("AT_PHDR %#x, want bias %#x + table address %#x", aux["AT_PHDR"], bias, r.out.Layout.PhdrAddr)
	}
	im, _ := parse(r.file)
	if aux["AT_PHNUM"] != uint64(len(im.progs)) {
		t.Errorf("AT_PHNUM %d, want %d", aux["AT_PHNUM"], len(im.progs))
	}
	// What Linux before 5.18 would have reported: the first PT_LOAD's
	// address minus its offset, plus e_phoff.
	first := im.progs[im.loads[0]]
	old := bias + first.Addr - first.Off + im.phoff
	if r.out.Layout.Mirrored != (old == aux["AT_PHDR"]) {
		t.Errorf("Mirrored %v, but the pre-5.18 AT_PHDR would be %#x (actual %#x)", r.out.Layout.Mirrored, old, aux["AT_PHDR"])
	}
}

// checkUnchanged compares the original bytes with their copy in the
// output: only the ELF header, the patches and the DT_FINI entry may
// differ, and in the header only the fields Write owns.
func checkUnchanged(t *testing.T, r testRewrite) {
	t.Helper()
	im, err := parse(r.orig)
	if err != nil {
		t.Fatal(err)
	}
	changed := make([]bool, len(r.orig))
	mark := func(off, n uint64) {
		for i := off; i < off+n; i++ {
			changed[i] = true
		}
	}
	mark(0, ehdrSize)
	for _, p := range r.opts.Patches {
		off, _, ok := im.fileOff(p.Addr, uint64(len(p.Bytes)))
		if !ok {
			t.Fatalf("patch at %#x not file-backed", p.Addr)
		}
		mark(off, uint64(len(p.Bytes)))
	}
	if r.opts.Fini != 0 {
		off, null, err := im.finiSlot()
		if err != nil {
			t.Fatal(err)
		}
		mark(off, dynSize)
		if null {
			mark(off+dynSize, dynSize)
		}
	}
	for i := range r.orig {
		if !changed[i] && r.file[i] != r.orig[i] {
			t.Fatalf("original byte at file offset %#x changed from %#x to %#x", i, r.orig[i], r.file[i])
		}
	}
	// Header: identification, type, machine, version, flags, sizes of
	// the header and of entries stay.
	for _, f := range [][2]int{{0, 24}, {48, 56}, {58, 60}} {
		if !bytes.Equal(r.orig[f[0]:f[1]], r.file[f[0]:f[1]]) {
			t.Errorf("ELF header bytes [%d,%d) changed", f[0], f[1])
		}
	}
}

// checkReadBack opens the output with debug/elf and reads every new or
// changed piece through the program headers, the way the loader sees it.
func checkReadBack(t *testing.T, r testRewrite) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(r.file))
	if err != nil {
		t.Fatalf("debug/elf cannot read the output: %v", err)
	}
	if r.opts.Entry != 0 && f.Entry != r.opts.Entry {
		t.Errorf("e_entry %#x, want %#x", f.Entry, r.opts.Entry)
	}
	// Loader-visible order: PT_PHDR before any PT_LOAD, PT_LOADs sorted.
	var prev uint64
	sawLoad := false
	for i, p := range f.Progs {
		switch p.Type {
		case elf.PT_PHDR:
			if sawLoad {
				t.Errorf("PT_PHDR (entry %d) after a PT_LOAD", i)
			}
			if p.Vaddr != r.out.Layout.PhdrAddr || p.Off != r.out.Layout.PhdrOff || p.Filesz != uint64(len(f.Progs))*phdrSize {
				t.Errorf("PT_PHDR %+v does not describe the new table (%v)", p.ProgHeader, r.out.Layout)
			}
		case elf.PT_LOAD:
			if sawLoad && p.Vaddr < prev {
				t.Errorf("PT_LOAD at %#x after one at %#x", p.Vaddr, prev)
			}
			sawLoad, prev = true, p.Vaddr
		}
	}
	readAt := func(addr uint64, n int) []byte {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+uint64(n) <= p.Vaddr+p.Filesz {
				b := make([]byte, n)
				if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("%#x (+%d) not file-backed in the output", addr, n)
		return nil
	}
	for _, p := range r.opts.Patches {
		if got := readAt(p.Addr, len(p.Bytes)); !bytes.Equal(got, p.Bytes) {
			t.Errorf("patch at %#x reads back % x, want % x", p.Addr, got, p.Bytes)
		}
	}
	for i, s := range r.opts.Segments {
		pl := r.out.Segments[i]
		if got := readAt(pl.Addr, len(s.Data)); !bytes.Equal(got, s.Data) {
			t.Errorf("segment %s reads back wrong", s.Name)
		}
		sec := f.Section(s.Name)
		if sec == nil || sec.Addr != pl.Addr || sec.Size != uint64(len(s.Data)) {
			t.Errorf("section %s missing or wrong: %+v", s.Name, sec)
		}
		if f.Sections[pl.Section].Name != s.Name {
			t.Errorf("Placed.Section %d is %q, want %q", pl.Section, f.Sections[pl.Section].Name, s.Name)
		}
	}
	meta := f.Section(".blpp.meta")
	if meta == nil {
		t.Fatal("no .blpp.meta section")
	}
	if b, err := meta.Data(); err != nil || !bytes.Equal(b, r.meta) || meta.Flags&elf.SHF_ALLOC != 0 {
		t.Errorf(".blpp.meta reads back %q (%v), flags %v", b, err, meta.Flags)
	}
	if r.out.Sections[0] >= len(f.Sections) || f.Sections[r.out.Sections[0]] != meta {
		t.Errorf("Output.Sections[0] = %d does not name .blpp.meta", r.out.Sections[0])
	}
	// Every original section header stays at its index (contents are
	// checked byte by byte by checkUnchanged), except the name table's,
	// which describes the new copy.
	of, err := elf.NewFile(bytes.NewReader(r.orig))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range of.Sections {
		n := f.Sections[i]
		if n.SectionHeader != s.SectionHeader && !(s.Type == elf.SHT_STRTAB && i == int(shstrndxOf(r.orig))) {
			t.Errorf("section %d changed: %+v, was %+v", i, n.SectionHeader, s.SectionHeader)
		}
	}
	if fini, ok := OrigFini(r.file); r.opts.Fini != 0 && (!ok || fini != r.opts.Fini) {
		t.Errorf("DT_FINI in output %#x (%v), want %#x", fini, ok, r.opts.Fini)
	}
}

func shstrndxOf(b []byte) uint16 { return binary.LittleEndian.Uint16(b[offShstrndx:]) }

// checkTools runs readelf -aW (and -lSW), which must say nothing on
// stderr beyond what it says about the original, and objdump -d on the new
// code section, which must disassemble the stub.
func checkTools(t *testing.T, r testRewrite, origPath, outPath string) {
	t.Helper()
	readelf := fixture.RequireTool(t, "readelf", "binutils")
	objdump := fixture.RequireTool(t, "objdump", "binutils")
	for _, flags := range []string{"-aW", "-lSW"} {
		o := run(t, nil, nil, readelf, flags, origPath)
		n := run(t, nil, nil, readelf, flags, outPath)
		if n.status != 0 || string(n.stderr) != string(o.stderr) {
			t.Errorf("readelf %s on the output: status %d, stderr:\n%s", flags, n.status, trunc(n.stderr))
		}
		if bytes.Contains(n.stdout, []byte("Warning")) && !bytes.Contains(o.stdout, []byte("Warning")) {
			t.Errorf("readelf %s prints a warning on the output", flags)
		}
	}
	d := run(t, nil, nil, objdump, "-d", "-j", ".blpp.text", outPath)
	if d.status != 0 || len(d.stderr) != 0 {
		t.Fatalf("objdump -d: status %d, %s", d.status, d.stderr)
	}
	text := string(d.stdout)
	for _, want := range []string{"<.blpp.text>:", "movabs $0x" + strconv.FormatUint(dataMagic, 16) + ",%rcx", "syscall", fmt.Sprintf("jmp    %x", entryTarget(r))} {
		if !strings.Contains(text, want) {
			t.Errorf("objdump -d -j .blpp.text lacks %q:\n%s", want, trunc(d.stdout))
		}
	}
}

// entryTarget is the original entry point, where the stub jumps.
func entryTarget(r testRewrite) uint64 {
	return le.Uint64(r.orig[offEntry:])
}

// testedSources are the fixtures rewritten in every configuration.
var testedSources = []string{"loops.c", "switch.c", "setjmp.c", "recursion.c", "cold.c"}

// extraConfigs are configurations outside fixture.Matrix worth running:
// static-pie has .dynamic but no interpreter and no PT_PHDR; 2 MiB
// p_align (what binutils used before 2.31 and what -z max-page-size gives)
// aligns the load bias to 2 MiB while the new segments use 4 KiB; one R+X
// segment from the ELF header to the end of .text (-z noseparate-code,
// gold) shares file pages between segments.
var extraConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true, Static: true},
	{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-Wl,-z,max-page-size=0x200000"}},
	{CC: "gcc", Opt: "-O2", Extra: []string{"-Wl,-z,max-page-size=0x200000", "-Wl,-z,noseparate-code"}},
	{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-fuse-ld=gold"}},
	{CC: "clang", Opt: "-O2", Extra: []string{"-fuse-ld=gold"}},
}

func TestFixtures(t *testing.T) {
	configs := append(fixture.Matrix(), extraConfigs...)
	for _, cfg := range configs {
		for _, src := range testedSources {
			t.Run(cfg.String()+"/"+src, func(t *testing.T) {
				t.Parallel()
				exe := fixture.Build(t, src, cfg)
				r := checkProgram(t, program{path: exe}, defaultMirrorPad)
				if !r.out.Layout.Mirrored {
					t.Errorf("fixture layout not mirrored: %v", r.out.Layout)
				}
				if !r.patched {
					t.Errorf("entry point instructions not movable; patch not exercised")
				}
				if cfg.Static && r.finiHook {
					t.Errorf("static binary got a DT_FINI hook")
				}
			})
		}
	}
}

// TestUnmirrored places the table where Linux before 5.18 would not find
// it. Linux 5.18+ take AT_PHDR from the PT_LOAD
// that holds e_phoff, so these run here; checkAuxv checks the kernel's
// AT_PHDR is the table's address and differs from the pre-5.18 formula.
func TestUnmirrored(t *testing.T) {
	configs := []fixture.Config{
		{CC: "gcc", Opt: "-O2", PIE: true},
		{CC: "clang", Opt: "-O2"},
		{CC: "gcc", Opt: "-O2", Static: true},
		{CC: "gcc", Opt: "-O2", PIE: true, Static: true},
	}
	for _, cfg := range configs {
		t.Run(cfg.String(), func(t *testing.T) {
			t.Parallel()
			exe := fixture.Build(t, "loops.c", cfg)
			r := checkProgram(t, program{path: exe}, -1)
			if r.out.Layout.Mirrored {
				t.Fatalf("layout mirrored with no padding allowed: %v", r.out.Layout)
			}
		})
	}
}

// TestDebianBinaries rewrites stripped PIE (and one non-PIE) executables
// from the Debian system.
func TestDebianBinaries(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, bytes.Repeat([]byte("blpp path profile\n"), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	progs := []struct {
		pkg string
		program
	}{
		{"coreutils", program{path: "/bin/true"}},
		{"coreutils", program{path: "/bin/ls", args: []string{"/"}}},
		{"python3.11-minimal", program{path: "/usr/bin/python3.11", args: []string{"-c", "print(1+1)"}}},
		{"bash", program{path: "/bin/bash", args: []string{"-c", "echo hi"}}},
		{"gzip", program{path: "/bin/gzip", args: []string{"-c", small}}},
	}
	for _, p := range progs {
		t.Run(filepath.Base(p.path), func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(p.path); err != nil {
				if os.Getenv(fixture.EnvRequireTools) == "1" {
					t.Fatalf("%s missing (install the Debian package %q)", p.path, p.pkg)
				}
				t.Skipf("%s missing (install the Debian package %q)", p.path, p.pkg)
			}
			r := checkProgram(t, p.program, defaultMirrorPad)
			if !r.finiHook {
				t.Errorf("no DT_FINI hook for a dynamic binary")
			}
			t.Logf("%s: %v, patched entry %v, %d -> %d bytes", p.path, r.out.Layout, r.patched, len(r.orig), len(r.file))
		})
	}
}

// TestFiniFromNullSlot removes DT_FINI from a binary (shifting the later
// entries up, so one more DT_NULL is spare) and checks that Write turns a
// DT_NULL slot into DT_FINI that the loader then runs.
func TestFiniFromNullSlot(t *testing.T) {
	exe := fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	orig, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	im, err := parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	off, n, err := im.dynTable()
	if err != nil {
		t.Fatal(err)
	}
	noFini := append([]byte(nil), orig...)
	j := 0
	for i := 0; i < n; i++ {
		if slotTag(orig, off, i) == elf.DT_FINI {
			continue
		}
		copy(noFini[off+uint64(j)*dynSize:], orig[off+uint64(i)*dynSize:off+uint64(i+1)*dynSize])
		j++
	}
	copy(noFini[off+uint64(j)*dynSize:off+uint64(n)*dynSize], make([]byte, (n-j)*dynSize))
	if _, ok := OrigFini(noFini); ok {
		t.Fatal("DT_FINI still present")
	}
	p := writeExe(t, t.TempDir(), "nofini", noFini)
	r := checkProgram(t, program{path: p}, defaultMirrorPad)
	if fini, ok := OrigFini(r.file); !ok || fini != r.opts.Fini {
		t.Errorf("output DT_FINI %#x, %v; want %#x", fini, ok, r.opts.Fini)
	}
}

// TestGDB runs rewritten binaries under gdb, which locates a PIE through
// AT_PHDR/AT_ENTRY and reads the new section headers: a breakpoint set by
// symbol in original code must hit, and gdb must name the new sections.
func TestGDB(t *testing.T) {
	gdb := fixture.RequireTool(t, "gdb", "gdb")
	for _, cfg := range []fixture.Config{{CC: "gcc", Opt: "-O0", PIE: true}, staticCfg} {
		t.Run(cfg.String(), func(t *testing.T) {
			t.Parallel()
			orig := readFixture(t, "loops.c", cfg)
			r := rewriteForTest(t, orig, defaultMirrorPad)
			out := writeExe(t, t.TempDir(), "rewritten", r.file)
			res := run(t, nil, nil, gdb, "-nx", "-batch", "-ex", "break step", "-ex", "run",
				"-ex", "bt 1", "-ex", "info files", "-ex", "kill", out)
			text := string(res.stdout)
			// "Breakpoint 1.1" when libc has a step() too.
			if !regexp.MustCompile(`Breakpoint 1(\.\d+)?, step \(`).MatchString(text) {
				t.Errorf("breakpoint in step not hit:\n%s\n%s", trunc(res.stdout), trunc(res.stderr))
			}
			for _, want := range []string{"is .blpp.text", "is .blpp.data"} {
				if !strings.Contains(text, want) {
					t.Errorf("gdb output lacks %q:\n%s\n%s", want, trunc(res.stdout), trunc(res.stderr))
				}
			}
		})
	}
}
