package main

// Profiles of several modules (decision 81) through every command that
// reads them. The runtime does not write such profiles yet for real
// libraries, so the test makes them: two real fixture executables are
// rewritten and run, and the Go writer joins their profiles into one
// process profile in which the second program stands for a library
// module with tag 5 (a report needs only its metadata and debug info).
// Its contexts hang under the first program's root, as a callback would.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

const libTag = 5

// joinProfiles makes the process profile of exe profile a (tag 0, file
// instA) and "library" profile b (tag libTag, file instB).
func joinProfiles(t *testing.T, a, b *cct.Profile, instA, instB string, idA, idB []byte) *cct.Profile {
	t.Helper()
	fa, fb := a.FoldThreads(), b.FoldThreads()
	p := &cct.Profile{Version: cct.Version, Flags: fa.Flags, BuildID: idA, PID: fa.PID, TimeNS: fa.TimeNS, Metrics: fa.Metrics,
		Modules: []cct.Module{
			{Tag: 0, Flags: cct.ModuleFlagExecutable, Path: instA, BuildID: idA},
			{Tag: libTag, Bias: 0x7f0000000000, Path: instB, BuildID: idB},
		}}
	th := fa.Threads[0]
	tb := fb.Threads[0]
	off := len(th.Records)
	flow := fa.Flags&cct.FlagFlowOnly != 0
	for _, r := range tb.Records {
		r.Func = cct.Fid(libTag, r.Func)
		if r.Parent >= 0 {
			r.Parent += off
		} else if !flow {
			r.Parent, r.CallSite = 0, 0 // entered from the exe's first root
		}
		th.Records = append(th.Records, r)
	}
	for _, q := range tb.Partials {
		q.Func = cct.Fid(libTag, q.Func)
		if q.Record >= 0 {
			q.Record += off
		}
		th.Partials = append(th.Partials, q)
	}
	for _, c := range tb.Folded {
		c.From += off
		c.To += off
		th.Folded = append(th.Folded, c)
	}
	p.Threads = []cct.Thread{th}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

// moduleSetup builds, rewrites and runs two fixtures and writes their
// joined profile; it returns the files and each program's own report.
type moduleSetup struct {
	dir, instA, instB, profA, profB, joined string
	idA, idB                                []byte
}

func setupModules(t *testing.T) *moduleSetup {
	t.Helper()
	s := &moduleSetup{dir: t.TempDir()}
	exeA := fixture.Build(t, "loops.c", gccO2PIE)
	exeB := fixture.Build(t, "switch.c", gccO2PIE)
	s.instA, s.profA, _ = profiled(t, s.dir, exeA)
	s.instB, s.profB, _ = profiled(t, s.dir, exeB, "3")
	a, err := cct.ReadFile(s.profA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cct.ReadFile(s.profB)
	if err != nil {
		t.Fatal(err)
	}
	tabA, fA, err := report.LoadMeta(s.instA)
	if err != nil {
		t.Fatal(err)
	}
	fA.Close()
	tabB, fB, err := report.LoadMeta(s.instB)
	if err != nil {
		t.Fatal(err)
	}
	fB.Close()
	s.idA, s.idB = tabA.InstrID, tabB.InstrID
	p := joinProfiles(t, a, b, s.instA, s.instB, s.idA, s.idB)
	s.joined = filepath.Join(s.dir, "process.prof")
	if err := p.WriteFile(s.joined); err != nil {
		t.Fatal(err)
	}
	return s
}

type jsonDoc struct {
	Modules []struct {
		Name, Path, BuildID string
		Tag                 uint32
		Instrumented        bool
	} `json:"modules"`
	Functions []struct {
		Name, Module string
		Blocks       []struct{ Count uint64 }
		Executions   uint64
	} `json:"functions"`
	Contexts []struct {
		Function, Module string
		Parent           *int
	} `json:"contexts"`
}

func reportJSON(t *testing.T, args ...string) *jsonDoc {
	t.Helper()
	out := mustBlpp(t, append([]string{"report", "--format", "json"}, args...)...)
	var d jsonDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// executions sums the functions' path executions by module.
func (d *jsonDoc) executions() map[string]uint64 {
	out := map[string]uint64{}
	for _, f := range d.Functions {
		out[f.Module] += f.Executions
	}
	return out
}

func TestModulesReport(t *testing.T) {
	s := setupModules(t)
	nameA, nameB := filepath.Base(s.instA), filepath.Base(s.instB)

	// The JSON: both modules, each function's module, and each module's
	// counts exactly those of its program's own profile.
	d := reportJSON(t, s.joined, "--binary", s.instA)
	if len(d.Modules) != 2 || d.Modules[0].Name != nameA || d.Modules[1].Name != nameB || d.Modules[1].Tag != libTag || !d.Modules[1].Instrumented || d.Modules[1].Path != s.instB {
		t.Fatalf("modules %+v", d.Modules)
	}
	docA, docB := reportJSON(t, s.profA, "--binary", s.instA), reportJSON(t, s.profB, "--binary", s.instB)
	alone, aloneB := docA.executions()[nameA], docB.executions()[nameB]
	// Every block count of every function is its program's own.
	want := map[string]string{}
	for _, doc := range []*jsonDoc{docA, docB} {
		for _, f := range doc.Functions {
			want[f.Module+"!"+f.Name] = fmt.Sprint(f.Blocks)
		}
	}
	for _, f := range d.Functions {
		if got := fmt.Sprint(f.Blocks); got != want[f.Module+"!"+f.Name] {
			t.Errorf("%s!%s: block counts %s, its program alone %s", f.Module, f.Name, got, want[f.Module+"!"+f.Name])
		}
	}
	got := d.executions()
	if got[nameA] != alone || got[nameB] != aloneB || alone == 0 || aloneB == 0 {
		t.Fatalf("path executions by module %v, want %s %d and %s %d", got, nameA, alone, nameB, aloneB)
	}
	crossed := false
	for _, c := range d.Contexts {
		if c.Module == nameB && c.Parent != nil && d.Contexts[*c.Parent].Module == nameA {
			crossed = true
		}
	}
	if !crossed {
		t.Error("no context of the library module under one of the executable")
	}

	// Every text view names functions module!func.
	for _, view := range []string{"paths", "tree", "callers", "flat", "loops", "hot", "procs"} {
		all := []string{}
		if view == "tree" || view == "callers" || view == "loops" {
			all = []string{"--all"}
		}
		out := mustBlpp(t, append([]string{"report", s.joined, "--binary", s.instA, "--view", view}, all...)...)
		if !strings.Contains(out, nameA+"!") || !strings.Contains(out, nameB+"!") {
			t.Errorf("--view %s: no %s! or %s! names:\n%s", view, nameA, nameB, out)
		}
		// --module keeps one module's functions.
		out = mustBlpp(t, append([]string{"report", s.joined, "--binary", s.instA, "--view", view, "--module", "^switch"}, all...)...)
		if strings.Contains(out, nameA+"!") || !strings.Contains(out, nameB+"!") {
			t.Errorf("--view %s --module ^switch: shows %s functions or none of %s:\n%s", view, nameA, nameB, out)
		}
	}
	f := reportJSON(t, s.joined, "--binary", s.instA, "--module", "^switch")
	for _, fn := range f.Functions {
		if fn.Module != nameB {
			t.Fatalf("--module ^switch: function %s of %s", fn.Name, fn.Module)
		}
	}
	if o := blpp("report", s.joined, "--binary", s.instA, "--module", "^nomatch"); o.code == 0 || !strings.Contains(o.stderr, "matches none of the profile's modules") {
		t.Errorf("--module matching nothing: %s", o)
	}
	// A single-module profile is shown without module names.
	if out := mustBlpp(t, "report", s.profA, "--binary", s.instA, "--view", "flat"); strings.Contains(out, nameA+"!") {
		t.Errorf("executable-only profile shows module names:\n%s", out)
	}
	// coverage, lcov and annotate read the modules too, each module's
	// lines from its own DWARF.
	if out := mustBlpp(t, "coverage", s.joined, "--binary", s.instA); !strings.Contains(out, nameB+"!") {
		t.Errorf("coverage: no function of %s:\n%s", nameB, out)
	}
	lcov := mustBlpp(t, "coverage", s.joined, "--binary", s.instA, "--format", "lcov")
	if !strings.Contains(lcov, "loops.c\n") || !strings.Contains(lcov, "switch.c\n") {
		t.Errorf("lcov: want records of loops.c and switch.c:\n%s", lcov)
	}
	if out := mustBlpp(t, "annotate", s.joined, "--binary", s.instA, "switch.c"); !strings.Contains(out, "switch") {
		t.Errorf("annotate switch.c: %s", out)
	}
	// The HTML page and diff too.
	page := filepath.Join(s.dir, "p.html")
	mustBlpp(t, "report", s.joined, "--binary", s.instA, "--html", page)
	if data, err := os.ReadFile(page); err != nil || !strings.Contains(string(data), nameB+"!") {
		t.Errorf("HTML page: no %s! names (%v)", nameB, err)
	}
	if out := mustBlpp(t, "diff", s.joined, s.joined, "--binary", s.instA); !strings.Contains(out, "no change") {
		t.Errorf("diff of a profile with itself:\n%s", out)
	}
	// --context matches bare and qualified names.
	for _, chain := range []string{"main/dense", nameB + "!main/" + nameB + "!dense"} {
		if out := mustBlpp(t, "report", s.joined, "--binary", s.instA, "--context", chain); !strings.Contains(out, nameB+"!dense") {
			t.Errorf("--context %s: no %s!dense:\n%s", chain, nameB, out)
		}
	}
}

// TestModulesFiles: a library module's file is found by --lib when the
// recorded path is gone; a missing file or one of another build is
// refused naming the module; a version-2 file is refused saying to run
// again.
func TestModulesFiles(t *testing.T) {
	s := setupModules(t)
	nameB := filepath.Base(s.instB)
	moved := filepath.Join(s.dir, "moved.blpp")
	if err := os.Rename(s.instB, moved); err != nil {
		t.Fatal(err)
	}
	o := blpp("report", s.joined, "--binary", s.instA)
	if o.code == 0 || !strings.Contains(o.stderr, "module "+nameB+" (tag 5") || !strings.Contains(o.stderr, "--lib") {
		t.Errorf("missing module file: %s", o)
	}
	mustBlpp(t, "report", s.joined, "--binary", s.instA, "--lib", moved)
	// Another build at the recorded path: refused, naming the module.
	if err := os.Link(s.instA, s.instB); err != nil {
		t.Fatal(err)
	}
	o = blpp("report", s.joined, "--binary", s.instA)
	if o.code == 0 || !strings.Contains(o.stderr, "module "+nameB+" (tag 5)") || !strings.Contains(o.stderr, "build-id") {
		t.Errorf("module of another build: %s", o)
	}
	// --lib wins over the recorded path.
	mustBlpp(t, "report", s.joined, "--binary", s.instA, "--lib", moved)

	data, err := os.ReadFile(s.profA)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(data[8:], 2)
	h := fnv.New64a()
	h.Write(data[:len(data)-8])
	binary.LittleEndian.PutUint64(data[len(data)-8:], h.Sum64())
	old := filepath.Join(s.dir, "v2.prof")
	if err := os.WriteFile(old, data, 0o644); err != nil {
		t.Fatal(err)
	}
	o = blpp("report", old, "--binary", s.instA)
	if o.code == 0 || !strings.Contains(o.stderr, "written by an older blpp: run the program again instrumented by this one") {
		t.Errorf("version-2 profile: %s", o)
	}
}

// TestModulesMerge: two process profiles merge per module, and every
// count doubles.
func TestModulesMerge(t *testing.T) {
	s := setupModules(t)
	merged := filepath.Join(s.dir, "merged.prof")
	mustBlpp(t, "merge", s.joined, s.joined, "-o", merged)
	one := reportJSON(t, s.joined, "--binary", s.instA).executions()
	two := reportJSON(t, merged, "--binary", s.instA).executions()
	for mod, n := range one {
		if two[mod] != 2*n {
			t.Errorf("merged: module %s has %d path executions, want %d", mod, two[mod], 2*n)
		}
	}
	// A module of another build under the same tag is refused.
	p, err := cct.ReadFile(s.joined)
	if err != nil {
		t.Fatal(err)
	}
	p.Modules[1].BuildID = []byte{1, 2, 3}
	other := filepath.Join(s.dir, "other.prof")
	if err := p.WriteFile(other); err != nil {
		t.Fatal(err)
	}
	o := blpp("merge", s.joined, other, "-o", merged+"2")
	if o.code == 0 || !strings.Contains(o.stderr, "module "+filepath.Base(s.instB)+" (tag 5)") {
		t.Errorf("merge of another build of a module: %s", o)
	}
}

// TestModulesExport: pprof has one mapping per module with its build-id;
// folded stacks cross modules.
func TestModulesExport(t *testing.T) {
	s := setupModules(t)
	nameA, nameB := filepath.Base(s.instA), filepath.Base(s.instB)
	out := filepath.Join(s.dir, "p.pb.gz")
	mustBlpp(t, "export", s.joined, "--binary", s.instA, "--format", "pprof", "-o", out)
	p := readPprof(t, out)
	files := map[string]bool{}
	for _, m := range p.Mapping {
		files[filepath.Base(m.File)] = m.BuildID != ""
	}
	if len(p.Mapping) != 2 || !files[nameA] || !files[nameB] {
		t.Errorf("pprof mappings %v, want %s and %s with build-ids", files, nameA, nameB)
	}
	for _, smp := range p.Sample {
		for _, loc := range smp.Location {
			if loc.Mapping == nil {
				t.Fatalf("location %#x without a mapping", loc.Address)
			}
		}
	}
	gotool := filepath.Join(runtimeGOROOT(t), "bin", "go")
	raw, err := exec.Command(gotool, "tool", "pprof", "-raw", out).CombinedOutput()
	if err != nil || !strings.Contains(string(raw), nameA) || !strings.Contains(string(raw), nameB) {
		t.Errorf("go tool pprof -raw: %v, want mappings of %s and %s:\n%s", err, nameA, nameB, raw)
	}
	folded := mustBlpp(t, "export", s.joined, "--binary", s.instA, "--format", "folded")
	cross := false
	for _, l := range strings.Split(folded, "\n") {
		if strings.Contains(l, nameA+"!") && strings.Contains(l, ";"+nameB+"!") {
			cross = true
		}
	}
	if !cross {
		t.Errorf("no folded stack from %s into %s:\n%s", nameA, nameB, folded)
	}

	// BOLT fdata and LLVM sample profiles: one file per module in -o DIR.
	for _, format := range []string{"bolt-fdata", "llvm-sample"} {
		dir := filepath.Join(s.dir, format)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustBlpp(t, "export", s.joined, "--binary", s.instA, "--format", format, "-o", dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if len(data) == 0 || strings.Contains(string(data), "!") {
				t.Errorf("%s %s: empty or module-qualified names", format, e.Name())
			}
		}
		if len(names) != 2 || !strings.HasPrefix(names[0], nameA) && !strings.HasPrefix(names[1], nameA) {
			t.Errorf("%s: files %v, want one per module", format, names)
		}
		// Each module's file is what its program's own profile gives:
		// the library module was entered with no call site, as a root.
		for _, own := range [][2]string{{s.profA, s.instA}, {s.profB, s.instB}} {
			want := mustBlpp(t, "export", own[0], "--binary", own[1], "--format", format)
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(own[1])+perModule[format]))
			if err != nil || string(got) != want {
				t.Errorf("%s of module %s differs from its program's own export (%v):\n%s\nwant\n%s", format, filepath.Base(own[1]), err, got, want)
			}
		}
		if format == "llvm-sample" {
			profdata := fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
			for _, n := range names {
				show, err := exec.Command(profdata, "show", "--sample", filepath.Join(dir, n)).CombinedOutput()
				if err != nil || !strings.Contains(string(show), "main") {
					t.Errorf("llvm-profdata show --sample %s: %v\n%s", n, err, show)
				}
			}
		}
		if o := blpp("export", s.joined, "--binary", s.instA, "--format", format); o.code == 0 || !strings.Contains(o.stderr, "-o DIR") {
			t.Errorf("%s of several modules to standard output: %s", format, o)
		}
	}

	// A module without line tables (most system libraries) gets no LLVM
	// sample profile, and stderr says so; the others get theirs. With
	// none, the export fails.
	objcopy := fixture.RequireTool(t, "objcopy", "binutils")
	bare := filepath.Join(s.dir, "bare", filepath.Base(s.instB))
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(objcopy, "--strip-debug", s.instB, bare).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --strip-debug: %v\n%s", err, out)
	}
	dir := filepath.Join(s.dir, "partial")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := blpp("export", s.joined, "--binary", s.instA, "--lib", bare, "--format", "llvm-sample", "-o", dir)
	ents, _ := os.ReadDir(dir)
	if o.code != 0 || len(ents) != 1 || ents[0].Name() != filepath.Base(s.instA)+perModule["llvm-sample"] ||
		!strings.Contains(o.stderr, "no DWARF line information") || !strings.Contains(o.stderr, filepath.Base(s.instB)) {
		t.Errorf("llvm-sample with %s stripped: %s, files %v", filepath.Base(s.instB), o, ents)
	}
	bareA := filepath.Join(s.dir, "bare", filepath.Base(s.instA))
	if out, err := exec.Command(objcopy, "--strip-debug", s.instA, bareA).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --strip-debug: %v\n%s", err, out)
	}
	if o := blpp("export", s.joined, "--binary", bareA, "--lib", bare, "--format", "llvm-sample", "-o", dir); o.code == 0 || !strings.Contains(o.stderr, "no module has DWARF") {
		t.Errorf("llvm-sample with both modules stripped: %s", o)
	}
}
