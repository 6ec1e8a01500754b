package rewriter_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// libCfg builds testdata/modules/rw_lib.c as a shared object, librw.so.
var libCfg = fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-shared", "-fPIC", "-Wl,-soname,librw.so"}}

// rewriteLib rewrites the shared object at path with opts.
func rewriteLib(t *testing.T, path string, opts rewriter.Options) (orig, out []byte, sum *rewriter.Summary) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, sum, err = rewriter.Rewrite(orig, opts)
	if err != nil {
		t.Fatalf("%s: rewrite: %v", path, err)
	}
	return orig, out, sum
}

// TestSharedObject rewrites a small gcc shared library in both modes and
// checks the module's hooks and tables (decision 81): DT_INIT and
// DT_FINI lead to the runtime's blpp_module_init and blpp_fini, the
// configuration names the old DT_INIT and DT_FINI, the library flag and
// the tag, and has no entry and no slot counters; the dynamic symbols and
// their versions are the original's byte for byte; every instrumented
// function's entry jumps into the new code; the output reads back as a
// binary and its address map checks out.
func TestSharedObject(t *testing.T) {
	lib := fixture.Build(t, "modules/rw_lib.c", libCfg)
	for _, m := range procModes {
		t.Run(m.name, func(t *testing.T) {
			orig, out, sum := rewriteLib(t, lib, m.opts)
			if sum.Module != rewriter.ModuleLibrary || sum.Soname != "librw.so" || sum.ModuleTag != uint64(rewriter.DefaultModuleTag("librw.so")) {
				t.Errorf("summary: module %q %q tag %d, want %q librw.so tag %d", sum.Module, sum.Soname, sum.ModuleTag,
					rewriter.ModuleLibrary, rewriter.DefaultModuleTag("librw.so"))
			}
			if sum.Instrumented < 8 {
				t.Errorf("%d of %d functions instrumented", sum.Instrumented, sum.Functions)
			}
			checkLibrary(t, orig, out, sum)
			if n, err := verifyAddrMap(orig, out); err != nil || n == 0 {
				t.Errorf("address map: %d copies checked, %v", n, err)
			}
		})
	}
}

// checkLibrary checks a rewritten shared object against its original.
func checkLibrary(t *testing.T, orig, out []byte, sum *rewriter.Summary) {
	t.Helper()
	of, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Load(out); err != nil {
		t.Errorf("the output does not load: %v", err)
	}
	if f.Entry != of.Entry {
		t.Errorf("e_entry %#x, was %#x", f.Entry, of.Entry)
	}
	// The dynamic symbol tables and versions are untouched: a second
	// definition of an exported name could change what other objects bind
	// to.
	for _, name := range []string{".dynsym", ".dynstr", ".gnu.version", ".gnu.version_d", ".gnu.version_r", ".gnu.hash", ".hash"} {
		was, s := of.Section(name), f.Section(name)
		if was == nil && s == nil {
			continue
		}
		if was == nil || s == nil || was.Addr != s.Addr || was.Size != s.Size {
			t.Errorf("%s: %+v, was %+v", name, s, was)
			continue
		}
		a, _ := was.Data()
		b, _ := s.Data()
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed", name)
		}
	}
	// The hooks and the configuration.
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	rt, data := f.Section(".blpp.rt"), f.Section(".blpp.data")
	if rt == nil || data == nil {
		t.Fatalf("no .blpp.rt or .blpp.data section")
	}
	dyn := func(file *elf.File, tag elf.DynTag) uint64 {
		v, err := file.DynValue(tag)
		if err != nil || len(v) != 1 {
			t.Fatalf("%v: %v, %v", tag, v, err)
		}
		return v[0]
	}
	if got, want := dyn(f, elf.DT_INIT), rt.Addr+img.Symbols[runtime.SymModInit]; got != want {
		t.Errorf("DT_INIT %#x, want blpp_module_init at %#x", got, want)
	}
	if got, want := dyn(f, elf.DT_FINI), rt.Addr+img.Symbols[runtime.SymFini]; got != want {
		t.Errorf("DT_FINI %#x, want blpp_fini at %#x", got, want)
	}
	c := configOf(t, f)
	if c.OrigInit != dyn(of, elf.DT_INIT) || c.OrigFini != dyn(of, elf.DT_FINI) || c.OrigEntry != 0 ||
		c.Flags&runtime.ConfigFlagLibrary == 0 || c.ModuleTag != sum.ModuleTag || c.SlotsSize != 0 ||
		c.NFuncs != uint64(sum.Instrumented) {
		t.Errorf("config %+v: want OrigInit %#x, OrigFini %#x, no entry, the library flag, tag %d, no slots, %d functions",
			c, dyn(of, elf.DT_INIT), dyn(of, elf.DT_FINI), sum.ModuleTag, sum.Instrumented)
	}
	// Every instrumented function's entry jumps into the new code.
	text := f.Section(".blpp.text")
	ms := f.Section(meta.SectionName)
	if text == nil || ms == nil {
		t.Fatal("no .blpp.text or metadata")
	}
	md, _ := ms.Data()
	tab, err := meta.Decode(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tab.Funcs {
		if !fn.Instrumented {
			continue
		}
		b := make([]byte, 5)
		in := false
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS && fn.Entry >= s.Addr && fn.Entry+5 <= s.Addr+s.Size {
				_, err := s.ReadAt(b, int64(fn.Entry-s.Addr))
				in = err == nil
			}
		}
		if !in {
			t.Errorf("%s: entry %#x not in code", fn.Name, fn.Entry)
			continue
		}
		to := fn.Entry + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:]))))
		if b[0] != 0xe9 || to < text.Addr || to >= text.Addr+text.Size {
			t.Errorf("%s: entry %#x holds % x, not a jmp into the new code [%#x,+%#x)", fn.Name, fn.Entry, b, text.Addr, text.Size)
		}
	}
}

// configOf reads the runtime configuration of an instrumented binary.
func configOf(t *testing.T, f *elf.File) runtime.Config {
	t.Helper()
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	data := f.Section(".blpp.data")
	if data == nil {
		t.Fatal("no .blpp.data section")
	}
	d, err := data.Data()
	if err != nil {
		t.Fatal(err)
	}
	c, err := runtime.ParseConfig(d[img.Symbols[runtime.SymConfig]-img.DataOff:])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSharedObjectRuns runs an uninstrumented program with the original
// library and with its rewrite (through LD_LIBRARY_PATH), in both modes,
// then the program rewritten as well (Options.NoSlots), and requires the
// same output and exit status, and a profile.
func TestSharedObjectRuns(t *testing.T) {
	lib := fixture.Build(t, "modules/rw_lib.c", libCfg)
	// Linked against the library's file in the fixture cache, the program
	// needs librw.so (its SONAME), found through LD_LIBRARY_PATH.
	prog := fixture.Build(t, "modules/rw_main.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-Wl,--no-as-needed", lib}})
	dir := t.TempDir()
	origDir := filepath.Join(dir, "orig")
	if err := os.MkdirAll(origDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(origDir, "librw.so"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	want := runProc(t, prog, nil, "LD_LIBRARY_PATH="+origDir)
	if len(want.stdout) == 0 {
		t.Fatalf("the program printed nothing: %s", want)
	}
	for _, m := range procModes {
		t.Run(m.name, func(t *testing.T) {
			_, out, _ := rewriteLib(t, lib, m.opts)
			instDir := filepath.Join(dir, m.name)
			if err := os.MkdirAll(instDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(instDir, "librw.so"), out, 0o755); err != nil {
				t.Fatal(err)
			}
			prof := filepath.Join(dir, m.name+".out")
			got := runProc(t, prog, nil, "LD_LIBRARY_PATH="+instDir, "BLPP_PROFILE="+prof)
			sameBehaviour(t, "rw_main with the rewritten librw.so ("+m.name+")", want, got)
			checkModuleProfile(t, prof, out, nil)
			// The program instrumented too: two modules, one runtime. The
			// library starts first (its DT_INIT), so the executable has
			// no slot counters.
			opts := m.opts
			opts.NoSlots = true
			data, err := os.ReadFile(prog)
			if err != nil {
				t.Fatal(err)
			}
			exe, sum, err := rewriter.Rewrite(data, opts)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Module != rewriter.ModuleExecutable || sum.ModuleTag != 0 || sum.ClosedFunctions != 0 {
				t.Errorf("executable: module %q tag %d, %d closed functions (NoSlots: none)", sum.Module, sum.ModuleTag, sum.ClosedFunctions)
			}
			if f, err := elf.NewFile(bytes.NewReader(exe)); err != nil {
				t.Fatal(err)
			} else if c := configOf(t, f); c.SlotsSize != 0 || c.ModuleTag != 0 || c.Flags&runtime.ConfigFlagLibrary != 0 || c.OrigEntry == 0 {
				t.Errorf("executable's config %+v: want no slots, tag 0, no library flag, an entry", c)
			}
			instProg := filepath.Join(instDir, "rw_main")
			if err := os.WriteFile(instProg, exe, 0o755); err != nil {
				t.Fatal(err)
			}
			prof = filepath.Join(dir, m.name+".both.out")
			got = runProc(t, instProg, nil, "LD_LIBRARY_PATH="+instDir, "BLPP_PROFILE="+prof)
			sameBehaviour(t, "rw_main and librw.so both rewritten ("+m.name+")", want, got)
			checkModuleProfile(t, prof, out, exe)
		})
	}
}

// debianLibs are Debian shared libraries and, for some, a program of
// their package's users with a workload.
var debianLibs = []struct {
	name  string
	prog  string
	args  []string
	stdin string
}{
	{"libbz2.so.1.0", "bzip2", []string{"-c"}, strings.Repeat("pack my box with five dozen liquor jugs\n", 100)},
	{"liblzma.so.5", "xz", []string{"-c"}, strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100)},
	{"libz.so.1", "python3", []string{"-c", "import zlib; d = b'hello world ' * 1000; c = zlib.compress(d); print(len(c), zlib.crc32(d), zlib.decompress(c) == d)"}, ""},
	{"libsqlite3.so.0", "sqlite3", []string{":memory:", "create table t(a,b); insert into t values(1,'x'),(2,'y'),(3,'z'); select a*2, upper(b) from t order by a desc;"}, ""},
	{"libjq.so.1", "jq", []string{"-c", "[.[] | select(.a > 1) | .b]"}, `[{"a":1,"b":"x"},{"a":2,"b":"y"},{"a":3,"b":"z"}]`},
	{"libonig.so.5", "jq", []string{"-c", `[.[] | test("^[a-c]+$")]`}, `["abc","abd","cab"]`},
	{"libstdc++.so.6", "ninja", []string{"--version"}, ""},
}

// checkModuleProfile reads the profile of a run of rw_main with the
// rewritten librw.so (lib) and, when exe is not nil, rw_main rewritten
// too: the modules are listed with their tags, the library's functions
// have the calls rw_main makes, and with both instrumented the callback
// square has its record under rw_apply's, across the module boundary.
func checkModuleProfile(t *testing.T, path string, lib, exe []byte) {
	t.Helper()
	p, err := cct.ReadFile(path)
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	tag := rewriter.DefaultModuleTag("librw.so")
	wantTags := []uint32{tag}
	if exe != nil {
		wantTags = []uint32{0, tag}
	}
	var tags []uint32
	for _, m := range p.Modules {
		tags = append(tags, m.Tag)
	}
	if !slices.Equal(tags, wantTags) {
		t.Fatalf("modules %+v, want tags %v", p.Modules, wantTags)
	}
	// Global function ids by name.
	ids := map[string]uint32{}
	for _, mod := range []struct {
		data []byte
		tag  uint32
	}{{lib, tag}, {exe, 0}} {
		if mod.data == nil {
			continue
		}
		f, err := elf.NewFile(bytes.NewReader(mod.data))
		if err != nil {
			t.Fatal(err)
		}
		md, err := f.Section(meta.SectionName).Data()
		if err != nil {
			t.Fatal(err)
		}
		tab, err := meta.Decode(md)
		if err != nil {
			t.Fatal(err)
		}
		for i, fn := range tab.Funcs {
			ids[fn.Name] = mod.tag<<runtime.FidBits | uint32(i)
		}
	}
	calls := map[uint32]uint64{}
	for _, th := range p.Threads {
		for _, r := range th.Records {
			calls[r.Func] += r.Calls
		}
	}
	want := map[string]uint64{"rw_inits": 1, "rw_sum": 1, "rw_kind": 12, "rw_apply": 1, "rw_sort": 1, "rw_hash": 1}
	if exe != nil {
		want["square"] = 100
		want["main"] = 1
	}
	for name, n := range want {
		if got := calls[ids[name]]; got != n {
			t.Errorf("%s (id %#x): %d calls, want %d", name, ids[name], got, n)
		}
	}
	if exe == nil || p.Flags&cct.FlagFlowOnly != 0 {
		return
	}
	under := false
	for _, th := range p.Threads {
		for _, r := range th.Records {
			if r.Func == ids["square"] && r.Parent >= 0 && th.Records[r.Parent].Func == ids["rw_apply"] {
				under = true
			}
		}
	}
	if !under {
		t.Error("no record of square (rw_main) under rw_apply (librw.so)")
	}
}

// TestDebianLibraries rewrites Debian's shared libraries (those present)
// and checks each as TestSharedObject does, then runs a program that uses
// it, uninstrumented, with the rewritten library (LD_LIBRARY_PATH) and
// requires the original's behaviour; the test log lists how many
// functions each has instrumented.
func TestDebianLibraries(t *testing.T) {
	libs := debianLibs
	if testing.Short() {
		libs = libs[:3]
	}
	for _, dl := range libs {
		t.Run(dl.name, func(t *testing.T) {
			path, err := filepath.EvalSymlinks(filepath.Join("/usr/lib/x86_64-linux-gnu", dl.name))
			if err != nil {
				t.Skipf("%s: not installed", dl.name)
			}
			orig, out, sum := rewriteLib(t, path, rewriter.Options{})
			t.Logf("%s: %d/%d functions instrumented, tag %d, %d bytes of new code", dl.name, sum.Instrumented, sum.Functions, sum.ModuleTag, sum.CodeBytes)
			if sum.Module != rewriter.ModuleLibrary || sum.Instrumented == 0 {
				t.Errorf("module %q, %d instrumented", sum.Module, sum.Instrumented)
			}
			checkLibrary(t, orig, out, sum)
			if dl.prog == "" {
				return
			}
			prog, err := exec.LookPath(dl.prog)
			if err != nil {
				t.Logf("%s: not installed, not run", dl.prog)
				return
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, dl.name), out, 0o755); err != nil {
				t.Fatal(err)
			}
			run := func(env ...string) procResult {
				var o, e bytes.Buffer
				cmd := exec.Command(prog, dl.args...)
				cmd.Stdin = strings.NewReader(dl.stdin)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdout, cmd.Stderr = &o, &e
				code, sig := status(t, prog, cmd.Run())
				return procResult{o.Bytes(), e.Bytes(), code, sig, cmd.Process.Pid}
			}
			want := run()
			prof := filepath.Join(dir, "blpp.out")
			got := run("LD_LIBRARY_PATH="+dir, "BLPP_PROFILE="+prof)
			sameBehaviour(t, dl.prog+" with the rewritten "+dl.name, want, got)
			if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
				t.Errorf("%s: no profile: %v", dl.prog, err)
			}
		})
	}
}

// TestModuleRefusals: the dynamic linker and Go programs (this test's
// own binary) are refused with their own errors, and a tag above
// runtime.MaxModuleTag or on an executable is refused.
func TestModuleRefusals(t *testing.T) {
	for _, c := range []struct {
		path string
		want error
	}{
		{"/lib64/ld-linux-x86-64.so.2", rewriter.ErrDynamicLinker},
	} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			continue
		}
		if _, _, err := rewriter.Rewrite(data, rewriter.Options{}); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.path, err, c.want)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	goexe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rewriter.Rewrite(goexe, rewriter.Options{}); !errors.Is(err, rewriter.ErrGoProgram) {
		t.Errorf("this test's Go binary: %v, want %v", err, rewriter.ErrGoProgram)
	}
	lib, err := os.ReadFile(fixture.Build(t, "modules/rw_lib.c", libCfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rewriter.Rewrite(lib, rewriter.Options{ModuleTag: runtime.MaxModuleTag + 1}); err == nil {
		t.Error("tag above MaxModuleTag accepted")
	}
	exe, err := os.ReadFile(fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rewriter.Rewrite(exe, rewriter.Options{ModuleTag: 3}); err == nil {
		t.Error("tag 3 on an executable accepted")
	}
}

// TestDefaultModuleTag pins the default tag's formula, 1 + FNV-1a 32 of
// the SONAME modulo MaxModuleTag (decision 81), which other tools may
// compute too (values from an independent implementation).
func TestDefaultModuleTag(t *testing.T) {
	for _, c := range []struct {
		soname string
		tag    uint32
	}{{"libz.so.1", 880}, {"librw.so", 831}, {"", 862}} {
		if got := rewriter.DefaultModuleTag(c.soname); got != c.tag {
			t.Errorf("DefaultModuleTag(%q) = %d, want %d", c.soname, got, c.tag)
		}
	}
}

// TestModulesRefusedTogether: modules that cannot share one runtime stop
// the process at load with a message naming the module and why, rather
// than mix up counts (decision 81): a library instrumented flow-only in a
// context-mode program, one reading other metrics, an executable with
// slot counters after a library started the runtime.
func TestModulesRefusedTogether(t *testing.T) {
	lib := fixture.Build(t, "modules/rw_lib.c", libCfg)
	prog := fixture.Build(t, "modules/rw_main.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-Wl,--no-as-needed", lib}})
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	tsc := []rewriter.Metric{{Name: "tsc", Type: runtime.MetricTypeTSC}}
	for _, c := range []struct {
		name          string
		libOpts, exeO rewriter.Options
		want          string
	}{
		{"flow-only library", rewriter.Options{NoContext: true}, rewriter.Options{NoSlots: true}, "another mode"},
		{"other metrics", rewriter.Options{Metrics: tsc}, rewriter.Options{NoSlots: true}, "other metrics"},
		{"slots after a library", rewriter.Options{NoContext: true}, rewriter.Options{NoContext: true}, "slot counters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, out, _ := rewriteLib(t, lib, c.libOpts)
			if err := os.WriteFile(filepath.Join(dir, "librw.so"), out, 0o755); err != nil {
				t.Fatal(err)
			}
			exe, _, err := rewriter.Rewrite(data, c.exeO)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "rw_main")
			if err := os.WriteFile(p, exe, 0o755); err != nil {
				t.Fatal(err)
			}
			got := runProc(t, p, nil, "LD_LIBRARY_PATH="+dir, "BLPP_PROFILE="+filepath.Join(dir, "p.out"))
			if got.code != 127 || !strings.Contains(string(got.stderr), "instrumented module tag 0 cannot join the process's runtime") ||
				!strings.Contains(string(got.stderr), c.want) {
				t.Errorf("exit %d, stderr %q: want 127 and a message with %q", got.code, got.stderr, c.want)
			}
		})
	}
}
