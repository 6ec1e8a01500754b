package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// procResult is what a process did.
type procResult struct {
	stdout, stderr string
	code           int
}

// runProc runs name with args and stdin, in dir ("" for the current one),
// with the test's environment plus env, and returns what it did; it fails
// the test when the process cannot start or runs longer than five minutes.
func runProc(t *testing.T, dir string, env []string, stdin []byte, name string, args ...string) procResult {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	timer := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	r := procResult{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// selfBlpp is this test binary, which is blpp when given a command
// (TestMain).
func selfBlpp(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// sameBehaviour fails the test when got differs from want.
func sameBehaviour(t *testing.T, what string, want, got procResult) {
	t.Helper()
	if got.code != want.code {
		t.Errorf("%s: exit status %d, the original's %d (stderr %q)", what, got.code, want.code, clip(got.stderr))
	}
	if got.stdout != want.stdout {
		t.Errorf("%s: stdout differs:\n%s\nthe original's:\n%s", what, clip(got.stdout), clip(want.stdout))
	}
	if got.stderr != want.stderr {
		t.Errorf("%s: stderr differs:\n%s\nthe original's:\n%s", what, clip(got.stderr), clip(want.stderr))
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// blppRun runs `blpp run` (this binary) with flags on prog and args,
// keeping the profile and the report in dir; the first run fills the
// rewrite cache (and may print progress), so it runs twice and returns
// the second.
func blppRun(t *testing.T, dir string, stdin []byte, flags []string, prog string, args ...string) (procResult, string) {
	t.Helper()
	prof := filepath.Join(dir, "blpp.prof")
	a := append([]string{"run", "--profile", prof, "-o", filepath.Join(dir, "report.txt")}, flags...)
	a = append(append(a, "--", prog), args...)
	runProc(t, dir, nil, stdin, selfBlpp(t), a...)
	os.Remove(prof)
	return runProc(t, dir, nil, stdin, selfBlpp(t), a...), prof
}

// processModel reads the profile blpp run wrote and every module's
// instrumented file, at the path the process loaded it from.
func processModel(t *testing.T, prof string) *report.Model {
	t.Helper()
	p, err := readProfiles([]string{prof})
	if err != nil {
		t.Fatal(err)
	}
	inst := ""
	for _, e := range p.Modules {
		if e.Tag == 0 {
			inst = e.Path
		}
	}
	if inst == "" {
		t.Fatalf("%s: no executable module: %+v", prof, p.Modules)
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	libs, err := report.OpenModules(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { report.CloseModules(libs) })
	m, err := report.NewModelWith(inst, tab, p, f, report.ModelOptions{Libs: libs})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// moduleNames lists a document's modules by name.
func moduleNames(d *report.PathDoc) []string {
	var s []string
	for _, m := range d.Modules {
		s = append(s, m.Name)
	}
	return s
}

// TestRunModulesBehaviour (issue 25, acceptance 1): blpp run on the
// modules fixture — a DT_NEEDED library found through $ORIGIN, a C++
// library dlopen'ed and dlclose'd twice, callbacks both ways, exceptions
// thrown in the library and caught in the executable, threads made in a
// library — prints what the original prints and exits as it does, with
// every library instrumented and with none; with all, the profile has the
// fixture's three modules, and the calling context tree has the
// executable's comparator inside the library's sort inside main, and the
// C++ library's functions inside the executable's contexts.
func TestRunModulesBehaviour(t *testing.T) {
	fx := fixture.BuildModules(t)
	want := runProc(t, "", nil, nil, fx.Exe, fx.Args()...)
	if want.code != 3 || !strings.Contains(want.stdout, "threw: negative") || !strings.Contains(want.stdout, "parallel = ") {
		t.Fatalf("the fixture itself: status %d, stdout:\n%s\nstderr:\n%s", want.code, want.stdout, want.stderr)
	}
	for _, libs := range []string{"all", "none"} {
		t.Run(libs, func(t *testing.T) {
			dir := t.TempDir()
			got, prof := blppRun(t, dir, nil, []string{"--libs", libs}, fx.Exe, fx.Args()...)
			sameBehaviour(t, "blpp run --libs "+libs, want, got)
			if t.Failed() {
				return
			}
			m := processModel(t, prof)
			d := m.PathDoc()
			names := strings.Join(moduleNames(d), " ")
			if libs == "none" {
				if names != "mod_main" {
					t.Errorf("--libs none: modules %s, want the executable only", names)
				}
				return
			}
			for _, n := range []string{"mod_main", "libmoda.so", "libmodb.so"} {
				if !strings.Contains(" "+names+" ", " "+n+" ") {
					t.Errorf("module %s missing: %s", n, names)
				}
			}
			for _, md := range d.Modules {
				if md.Name == "libmodb.so" && !md.Unloaded {
					t.Errorf("libmodb.so is not flagged unloaded (the fixture dlclose's it)")
				}
			}
			// The runtime copies a library's tables when it is finalised
			// by dlclose (twice here), not when the process's exit
			// finalises the others, which stay mapped (decision 145).
			if p, err := cct.ReadFile(prof); err != nil {
				t.Error(err)
			} else if k := p.Stats["tables_kept"]; k != 2 {
				t.Errorf("tables of %d modules copied at their finalisers, want 2 (the dlclose's of libmodb.so)", k)
			}
			checkContexts(t, d)
		})
	}
}

// checkContexts finds the cross-module chains of the fixture in the
// calling context tree.
func checkContexts(t *testing.T, d *report.PathDoc) {
	t.Helper()
	byID := map[int]report.Context{}
	for _, c := range d.Contexts {
		byID[c.ID] = c
	}
	// chain is a context's functions from the root, module!function.
	chain := func(c report.Context) []string {
		var s []string
		for {
			s = append([]string{c.Module + "!" + report.RawName(c.Function)}, s...)
			if c.Parent == nil {
				return s
			}
			c = byID[*c.Parent]
		}
	}
	// has tells whether the chain s holds the functions sub in this
	// order (by name prefix), the last one as its own function.
	has := func(s []string, sub ...string) bool {
		k := 0
		for i := 0; i < len(s) && k < len(sub); i++ {
			if strings.HasPrefix(s[i], sub[k]) {
				k++
			}
		}
		return k == len(sub) && strings.HasPrefix(s[len(s)-1], sub[len(sub)-1])
	}
	found := map[string]uint64{}
	for _, c := range d.Contexts {
		ch := chain(c)
		switch {
		case has(ch, "mod_main!main", "libmoda.so!moda_sort", "mod_main!_ZL12by_digit_sum"):
			found["comparator under moda_sort under main"] += c.Calls
		case has(ch, "libmoda.so!work"):
			found["work (a thread of libmoda)"] += c.Calls
		case has(ch, "mod_main!main", "libmodb.so!modb_map", "mod_main!_ZL3mixi"):
			found["mix under modb_map under main"] += c.Calls
		case has(ch, "mod_main!main", "libmodb.so!modb_check"):
			found["modb_check under main"] += c.Calls
		}
	}
	for _, k := range []string{"comparator under moda_sort under main", "mix under modb_map under main", "modb_check under main", "work (a thread of libmoda)"} {
		if found[k] == 0 {
			t.Errorf("no context %s; contexts:\n%s", k, contextList(d, chain))
		}
	}
	t.Logf("cross-module contexts: %v", found)
}

func contextList(d *report.PathDoc, chain func(report.Context) []string) string {
	var b strings.Builder
	for i, c := range d.Contexts {
		if i == 200 {
			b.WriteString("...\n")
			break
		}
		fmt.Fprintf(&b, "  %s (%d calls)\n", strings.Join(chain(c), " > "), c.Calls)
	}
	return b.String()
}

// cgObject parses callgrind's files in dir for object (the path callgrind
// names it by) and sums them; nil when no file names it.
func cgObject(t *testing.T, dir, object string) *callgrind.Profile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "cg.*"))
	if err != nil {
		t.Fatal(err)
	}
	var sum *callgrind.Profile
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			continue
		}
		p, err := callgrind.ParseFile(f, object)
		if errors.Is(err, callgrind.ErrNoProfile) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if sum == nil {
			sum = p
			continue
		}
		for a, n := range p.Exec {
			sum.Exec[a] += n
		}
		for k, n := range p.Calls {
			sum.Calls[k] += n
		}
		for k, n := range p.External {
			sum.External[k] += n
		}
	}
	return sum
}

// blockDiffs compares the block counts of module's instrumented functions
// in d with cg's execution counts: the functions compared, the blocks, and
// the differences (at most 20 described).
//
// A library's _init and _fini (.init and .fini) are left out: callgrind
// files that code under "???" at run-time addresses, and only the
// executable's is folded back (callgrind.Profile.FoldUnknown).
func blockDiffs(d *report.PathDoc, module string, library bool, cg *callgrind.Profile) (funcs, blocks int, diffs []string) {
	for _, fn := range d.Functions {
		if fn.Module != module || !fn.Instrumented || fn.PartialUnknown > 0 || library && (fn.Name == "_init" || fn.Name == "_fini") {
			continue
		}
		funcs++
		for _, b := range fn.Blocks {
			addr, err := strconv.ParseUint(strings.TrimPrefix(b.Addr, "0x"), 16, 64)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: block address %q", fn.Name, b.Addr))
				continue
			}
			blocks++
			if w := cg.Exec[addr]; w != b.Count {
				diffs = append(diffs, fmt.Sprintf("%s!%s block %s: blpp %d, callgrind %d", module, fn.Name, b.Addr, b.Count, w))
			}
		}
	}
	return funcs, blocks, diffs
}

// entryCalls sums the calls of fn's contexts and returns its entry.
func entryCalls(d *report.PathDoc, module, fn string) (entry uint64, calls uint64) {
	for _, f := range d.Functions {
		if f.Module == module && f.Name == fn {
			entry, _ = strconv.ParseUint(strings.TrimPrefix(f.Entry, "0x"), 16, 64)
		}
	}
	for _, c := range d.Contexts {
		if c.Module == module && report.RawName(c.Function) == fn {
			calls += c.Calls
		}
	}
	return entry, calls
}

// TestRunModulesCallgrind (issue 25, acceptance 1): the block counts of
// every instrumented function of the fixture's three modules, from the
// profile of `blpp run`, equal callgrind's counts of the original
// program's instructions; calls across module boundaries (the library's
// sort calling the executable's comparator, the executable calling the
// libraries) equal callgrind's. The system libraries' differences are
// logged, not failed: valgrind runs libc's start-up differently (CPU
// features, its own preloads).
func TestRunModulesCallgrind(t *testing.T) {
	fx := fixture.BuildModules(t)
	fixture.RequireTool(t, "valgrind", "valgrind")
	dir := t.TempDir()
	got, prof := blppRun(t, dir, nil, nil, fx.Exe, fx.Args()...)
	if got.code != 3 {
		t.Fatalf("blpp run: status %d: %s", got.code, got.stderr)
	}
	d := processModel(t, prof).PathDoc()
	cgDir := filepath.Join(dir, "callgrind")
	cg, err := callgrind.Run(fx.Exe, callgrind.Options{Args: fx.Args(), OutDir: cgDir, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if cg.ExitCode != 3 {
		t.Fatalf("under callgrind: status %d: %s", cg.ExitCode, cg.Stderr)
	}
	objects := map[string]*callgrind.Profile{"mod_main": cg}
	for _, m := range d.Modules {
		if m.Executable {
			continue
		}
		// The copy keeps the original's file name; callgrind names an
		// object by its path with links resolved.
		for ob := range cg.ObjectIr {
			if filepath.Base(ob) == m.Name || resolve(ob) == resolve(filepath.Join(fx.Dir, m.Name)) {
				objects[m.Name] = cgObject(t, cgDir, ob)
			}
		}
		if objects[m.Name] == nil {
			if p := systemObject(m.Name, cg); p != "" {
				objects[m.Name] = cgObject(t, cgDir, p)
			}
		}
	}
	for _, m := range d.Modules {
		p := objects[m.Name]
		if p == nil {
			t.Logf("module %s: callgrind names no such object", m.Name)
			continue
		}
		funcs, blocks, diffs := blockDiffs(d, m.Name, !m.Executable, p)
		ours := m.Name == "mod_main" || m.Name == "libmoda.so" || m.Name == "libmodb.so"
		t.Logf("module %-16s %4d functions, %5d blocks compared, %d differ", m.Name, funcs, blocks, len(diffs))
		if ours && (funcs == 0 || len(diffs) > 0) {
			if len(diffs) > 20 {
				diffs = diffs[:20]
			}
			t.Errorf("module %s: %d functions compared; block counts differ from callgrind's:\n  %s", m.Name, funcs, strings.Join(diffs, "\n  "))
		}
	}
	// _init and _fini, which callgrind does not place, run once per load
	// and unload (DT_INIT and DT_FINI, behind blpp_module_init and
	// blpp_fini): libmodb is loaded twice.
	t.Run("init_fini_per_load", func(t *testing.T) {
		for _, c := range []struct {
			module string
			loads  uint64
		}{{"libmoda.so", 1}, {"libmodb.so", 2}} {
			for _, fn := range d.Functions {
				if fn.Module == c.module && (fn.Name == "_init" || fn.Name == "_fini") && fn.Instrumented && len(fn.Blocks) > 0 && fn.Blocks[0].Count != c.loads {
					t.Errorf("%s!%s: entered %d times, want %d (once per load)", c.module, fn.Name, fn.Blocks[0].Count, c.loads)
				}
			}
		}
	})
	// Calls across module boundaries.
	for _, c := range []struct{ module, fn string }{
		{"mod_main", "_ZL12by_digit_sumPKiS0_"}, // called by libmoda's moda_sort
		{"mod_main", "_ZL3mixi"},                // by moda_apply and modb_map
		{"libmoda.so", "moda_sort"},             // by main, through the PLT
		{"libmoda.so", "moda_parallel"},
		{"libmodb.so", "modb_check"}, // through a dlsym pointer
		{"libmodb.so", "modb_map"},
	} {
		entry, calls := entryCalls(d, c.module, c.fn)
		p := objects[c.module]
		if entry == 0 || p == nil {
			t.Errorf("%s!%s: not in the profile (entry %#x)", c.module, c.fn, entry)
			continue
		}
		if w := p.CallsTo(entry); w != calls || calls == 0 {
			t.Errorf("%s!%s: %d calls in the profile's contexts, callgrind %d", c.module, c.fn, calls, w)
		}
	}
}

// resolve is path with its links resolved, or path.
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// systemObject finds the object callgrind names for a system library
// module (libc.so.6: /usr/lib/x86_64-linux-gnu/libc.so.6).
func systemObject(name string, cg *callgrind.Profile) string {
	for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"} {
		r := resolve(filepath.Join(dir, name))
		for ob := range cg.ObjectIr {
			if resolve(ob) == r {
				return ob
			}
		}
	}
	return ""
}

// TestRunModulesLib: a library the program dlopen's by its bare name,
// found natively through the executable's $ORIGIN run path, is found and
// instrumented under blpp run when --lib names it (the loader starts the
// copy in the cache, whose $ORIGIN is the cache).
func TestRunModulesLib(t *testing.T) {
	fx := fixture.BuildModules(t)
	want := runProc(t, "", nil, nil, fx.Exe, "libmodb.so")
	if want.code != 3 {
		t.Fatalf("the fixture with libmodb.so by name: status %d: %s", want.code, want.stderr)
	}
	dir := t.TempDir()
	got, prof := blppRun(t, dir, nil, []string{"--lib", fx.LibB}, fx.Exe, "libmodb.so")
	sameBehaviour(t, "blpp run --lib", want, got)
	if t.Failed() {
		return
	}
	if names := " " + strings.Join(moduleNames(processModel(t, prof).PathDoc()), " ") + " "; !strings.Contains(names, " libmodb.so ") {
		t.Errorf("libmodb.so is not a module:%s", names)
	}
}

// TestRunEnvironment: a program under blpp run sees the environment it
// was given, entry for entry and in order: neither the loader's
// variables nor the profile's name, which blpp run passes to the runtime
// in an entry the auditor takes out (decision 140), with the libraries
// instrumented or not; the runtime still writes the profile there. A
// BLPP_PROFILE of the program's own stays, and names the profile.
func TestRunEnvironment(t *testing.T) {
	const envProg = "/usr/bin/env"
	if _, err := os.Stat(envProg); err != nil {
		t.Skipf("no %s (Debian package coreutils)", envProg)
	}
	t.Setenv("BLPP_PROFILE", "")
	os.Unsetenv("BLPP_PROFILE")
	extra := []string{"BLPP_TEST_ENV=1"}
	want := runProc(t, "", extra, nil, envProg)
	for _, libs := range []string{"all", "none"} {
		dir := t.TempDir()
		prof := filepath.Join(dir, "blpp.prof")
		got := runProc(t, dir, extra, nil, selfBlpp(t), "run", "--profile", prof, "-o", filepath.Join(dir, "report.txt"), "--libs", libs, "--", envProg)
		sameBehaviour(t, "blpp run --libs "+libs+" -- env", want, got)
		if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
			t.Errorf("--libs %s: no profile at %s (%v)", libs, prof, err)
		}
	}
	dir := t.TempDir()
	own := append(extra, "BLPP_PROFILE="+filepath.Join(dir, "own.prof"))
	want = runProc(t, "", own, nil, envProg)
	got := runProc(t, dir, own, nil, selfBlpp(t), "run", "-o", filepath.Join(dir, "report.txt"), "--", envProg)
	sameBehaviour(t, "blpp run -- env with BLPP_PROFILE set", want, got)
	if _, err := os.Stat(filepath.Join(dir, "own.prof")); err != nil {
		t.Errorf("BLPP_PROFILE set: no profile there (%v)", err)
	}
}
