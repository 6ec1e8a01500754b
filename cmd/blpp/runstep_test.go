package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunStepped (decision 163): stepmix.c under blpp run, every library
// instrumented, single-stepped ("1"): a SIGTRAP handler with instrumented
// calls of its own after every instruction of the executable's work and
// of the C library code it runs (qsort and its callbacks, memmove,
// setjmp and longjmp, printf). The handler never calls the work or the
// C library, so the program must print what its plain run ("0", which
// installs the same handler) prints, and the block counts of every other
// function, in the executable and in libc's sort and setjmp code, must
// equal callgrind's counts of the plain run.
func TestRunStepped(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	exe := fixture.Build(t, "stepmix.c", fixture.Config{Opt: "-O2", PIE: true})
	dir := t.TempDir()
	plain := runProc(t, dir, nil, nil, exe, "0")
	if plain.code != 0 {
		t.Fatalf("the original misbehaves: %+v", plain)
	}
	prof := filepath.Join(dir, "blpp.prof")
	got := runProc(t, dir, nil, nil, selfBlpp(t), "run", "--profile", prof, "-o", filepath.Join(dir, "report.txt"), "--", exe, "1")
	if got.code != 0 || got.stdout != plain.stdout || got.stderr != "" {
		t.Fatalf("blpp run, stepped: %+v; the plain run: %+v", got, plain)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dropped_records", "dropped_counts", "no_record", "bad_paths", "exit_mismatch"} {
		if p.Stats[k] != 0 {
			t.Errorf("stats %s = %d, want 0", k, p.Stats[k])
		}
	}
	d := processModel(t, prof).PathDoc()
	// What the two runs do differently: main sets the flag, and the
	// handler's own code runs in the stepped one only. Of libc, the
	// functions the work reaches (qsort's, setjmp's): the rest differ
	// under valgrind anyway (its CPU picks other IFUNC variants, its
	// preloaded objects run start-up and exit code of their own).
	handler := map[string]bool{"main": true, "on_trap": true, "probe_loop": true, "probe_leaf": true, "trap_flag": true}
	libcWork := regexp.MustCompile(`sort|jmp`)
	work := *d
	work.Functions = nil
	for _, fn := range d.Functions {
		if fn.Module == "libc.so.6" && !libcWork.MatchString(fn.Name) || handler[fn.Name] {
			continue
		}
		work.Functions = append(work.Functions, fn)
	}
	cgDir := filepath.Join(dir, "callgrind")
	cg, err := callgrind.Run(exe, callgrind.Options{Args: []string{"0"}, OutDir: cgDir, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if string(cg.Stdout) != plain.stdout {
		t.Fatalf("under callgrind: %q, natively %q", cg.Stdout, plain.stdout)
	}
	compared := map[string]bool{}
	for _, m := range d.Modules {
		obj := cg
		if !m.Executable {
			if m.Name != "libc.so.6" {
				continue
			}
			o := systemObject(m.Name, cg)
			if o == "" {
				t.Fatalf("callgrind names no object for %s", m.Name)
			}
			obj = cgObject(t, cgDir, o)
		}
		funcs, blocks, diffs := blockDiffs(&work, m.Name, !m.Executable, obj)
		t.Logf("module %-12s %4d functions, %5d blocks compared, %d differ", m.Name, funcs, blocks, len(diffs))
		if funcs < 2 || len(diffs) > 0 {
			t.Log(diffFuncs(diffs))
			if len(diffs) > 20 {
				diffs = diffs[:20]
			}
			t.Errorf("module %s: %d functions compared; block counts differ from callgrind's:\n  %s", m.Name, funcs, strings.Join(diffs, "\n  "))
		}
		compared[m.Name] = true
	}
	if !compared["libc.so.6"] || len(compared) != 2 {
		t.Errorf("modules compared: %v, want the executable and libc.so.6 (modules: %v)", compared, moduleNames(d))
	}
	var ran bool
	for _, fn := range d.Functions {
		ran = ran || fn.Name == "probe_loop" && len(fn.Blocks) > 0 && fn.Blocks[0].Count > 0
	}
	if !ran {
		t.Error("the handler's code never ran")
	}
}

// diffFuncs names the functions blockDiffs's lines are about.
func diffFuncs(diffs []string) string {
	seen := map[string]bool{}
	var out []string
	for _, l := range diffs {
		f, _, _ := strings.Cut(l, " block ")
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}
