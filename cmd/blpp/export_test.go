package main

// blpp export on real programs: the pprof export read back by `go tool
// pprof` (top function and stacks of a fixture), and the acceptance of
// the PGO formats by the tools that consume them: llvm-profdata and clang
// -fprofile-sample-use read the LLVM sample profile (and clang turns a
// 95/5 branch into branch weights 95/5), llvm-bolt reads the fdata with
// every branch matched.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// profiled rewrites exe into dir, runs the copy with args and returns the
// instrumented binary, the profile and the program's stdout.
func profiled(t *testing.T, dir, exe string, args ...string) (inst, prof, stdout string) {
	t.Helper()
	inst = filepath.Join(dir, filepath.Base(exe)+".blpp")
	if o := blpp("rewrite", exe, "-o", inst); o.code != 0 {
		t.Fatalf("blpp rewrite: %s", o)
	}
	prof = filepath.Join(dir, filepath.Base(exe)+".prof")
	out, stderr, code := runBinary(t, inst, args, "BLPP_PROFILE="+prof)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", inst, code, stderr)
	}
	return inst, prof, string(out)
}

// mustBlpp runs blpp and fails the test unless it succeeds quietly.
func mustBlpp(t *testing.T, args ...string) string {
	t.Helper()
	o := blpp(args...)
	if o.code != 0 || o.stderr != "" {
		t.Fatalf("blpp %q: %s", args, o)
	}
	return o.stdout
}

func TestExportPprof(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	out := filepath.Join(dir, "loops.pb.gz")
	mustBlpp(t, "export", prof, "--binary", inst, "--format", "pprof", "-o", out)

	// The file is a valid profile whose instruction total is the sum,
	// over blocks, of count × instructions that blpp report gives.
	p := readPprof(t, out)
	idx, err := p.SampleIndexByName("insns")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[idx]
	}
	if want := reportInsns(t, inst, prof); uint64(total) != want {
		t.Errorf("pprof insns total %d, want %d (blocks × instructions of blpp report)", total, want)
	}

	gotool := filepath.Join(runtimeGOROOT(t), "bin", "go")
	top, err := exec.Command(gotool, "tool", "pprof", "-top", "-sample_index=insns", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
	// The first row is the hottest function: step, the loop body every
	// loop calls.
	var first string
	for _, l := range strings.Split(string(top), "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && strings.HasSuffix(f[1], "%") {
			first = f[5]
			break
		}
	}
	if first != "step" {
		t.Errorf("go tool pprof -top: hottest function %q, want step\n%s", first, top)
	}
	traces, err := exec.Command(gotool, "tool", "pprof", "-traces", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -traces: %v\n%s", err, traces)
	}
	// A trace is a block of frames between separator lines; the first
	// frame line carries the value.
	var stacks [][]string
	for _, blk := range strings.Split(string(traces), "-----------+-------------------------------------------------------") {
		var frames []string
		for _, l := range strings.Split(blk, "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && regexp.MustCompile(`^[0-9]+$`).MatchString(f[0]):
				frames = append(frames, f[1])
			case len(f) == 1 && strings.HasPrefix(l, " "):
				frames = append(frames, f[0])
			}
		}
		if len(frames) > 0 {
			stacks = append(stacks, frames)
		}
	}
	if len(stacks) == 0 {
		t.Fatalf("no stacks in go tool pprof -traces:\n%s", traces)
	}
	flowOnly := strings.Contains(string(traces), "flow-only")
	sawStep := false
	for _, s := range stacks {
		if s[0] == "step" {
			sawStep = true
			if !flowOnly && !slicesContains(s, "main") {
				t.Errorf("stack of step does not reach main: %v", s)
			}
		}
		if flowOnly && len(s) != 1 {
			t.Errorf("flow-only profile, but a stack has %d frames: %v", len(s), s)
		}
	}
	if !sawStep {
		t.Errorf("no stack with step as leaf:\n%s", traces)
	}
	// pprof shows source lines from the DWARF the export carries.
	list, err := exec.Command(gotool, "tool", "pprof", "-list", "^step$", out).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "loops.c") {
		t.Errorf("go tool pprof -list step: no loops.c lines (%v)\n%s", err, list)
	}

	// --granularity functions: the same instructions in fewer samples,
	// step still the hottest function for go tool pprof.
	byFunc := filepath.Join(dir, "loops.func.pb.gz")
	mustBlpp(t, "export", prof, "--binary", inst, "--format", "pprof", "--granularity", "functions", "-o", byFunc)
	pf := readPprof(t, byFunc)
	var ftotal int64
	for _, s := range pf.Sample {
		ftotal += s.Value[idx]
	}
	if ftotal != total || len(pf.Sample) >= len(p.Sample) {
		t.Errorf("--granularity functions: %d instructions in %d samples, lines: %d in %d", ftotal, len(pf.Sample), total, len(p.Sample))
	}
	ftop, err := exec.Command(gotool, "tool", "pprof", "-top", "-sample_index=insns", byFunc).CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)%\s+step$`).Match(ftop) {
		t.Errorf("go tool pprof -top of the function-granularity export (%v): no step\n%s", err, ftop)
	}
	if o := blpp("export", prof, "--binary", inst, "--format", "pprof", "--granularity", "blocks", "-o", byFunc); o.code != 2 || !strings.Contains(o.stderr, "--granularity") {
		t.Errorf("--granularity blocks: %s, want a usage error", o)
	}
	if o := blpp("export", prof, "--binary", inst, "--format", "folded", "--granularity", "functions"); o.code != 2 || !strings.Contains(o.stderr, "pprof's") {
		t.Errorf("--granularity with folded: %s, want a usage error", o)
	}
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// runtimeGOROOT is the Go installation running the test.
func runtimeGOROOT(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// reportInsns is Σ block count × block instructions over the blocks of
// blpp report --format json.
func reportInsns(t *testing.T, inst, prof string) uint64 {
	t.Helper()
	m, err := loadModel(nil, inst, []string{prof}, report.NameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.File.Close()
	var sum uint64
	for i, fn := range m.PathDoc().Functions {
		for j, b := range fn.Blocks {
			sum += b.Count * uint64(m.Table.Funcs[i].Blocks[j].Insts)
		}
	}
	return sum
}

// pgoSource has a 95/5 branch in classify: rare() runs for one i in 20.
const pgoSource = `#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__((noinline)) void rare(int x) { sink = x * 3; }
__attribute__((noinline)) void common(int x) { sink = x + 1; }

__attribute__((noinline)) int classify(int x)
{
	if (x % 20 == 0) {
		rare(x);
		return 7;
	}
	common(x);
	return 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += classify(i);
	printf("%ld\n", sum);
	return 0;
}
`

// TestExportPGO feeds the LLVM sample profile to llvm-profdata and clang
// and the BOLT fdata to llvm-bolt.
func TestExportPGO(t *testing.T) {
	clang := fixture.RequireTool(t, "clang-16", "clang-16")
	dir := t.TempDir()
	src := filepath.Join(dir, "pgo.c")
	if err := os.WriteFile(src, []byte(pgoSource), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "pgo")
	if out, err := exec.Command(clang, "-O2", "-g", "-fdebug-info-for-profiling", src, "-o", exe).CombinedOutput(); err != nil {
		t.Fatalf("clang-16: %v\n%s", err, out)
	}
	inst, prof, stdout := profiled(t, dir, exe)
	if stdout != "2600\n" {
		t.Fatalf("instrumented pgo printed %q, want 2600", stdout)
	}

	t.Run("llvm-sample", func(t *testing.T) {
		sample := filepath.Join(dir, "pgo.afdo.txt")
		mustBlpp(t, "export", prof, "--binary", inst, "--format", "llvm-sample", "-o", sample)
		text, _ := os.ReadFile(sample)
		// classify ran 2000 times: its head samples.
		if !regexp.MustCompile(`(?m)^classify:[0-9]+:2000$`).Match(text) {
			t.Errorf("no classify:TOTAL:2000 header in\n%s", text)
		}
		profdata := fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
		show, err := exec.Command(profdata, "show", "--sample", sample).CombinedOutput()
		if err != nil || !strings.Contains(string(show), "Function: classify") {
			t.Fatalf("llvm-profdata-16 show --sample: %v\n%s\nprofile:\n%s", err, show, text)
		}
		// Compiling with the profile: no warning at all.
		obj := filepath.Join(dir, "pgo.o")
		out, err := exec.Command(clang, "-O2", "-g", "-fprofile-sample-use="+sample, "-c", src, "-o", obj).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Fatalf("clang-16 -fprofile-sample-use: %v\n%s", err, out)
		}
		ll := filepath.Join(dir, "pgo.ll")
		if out, err := exec.Command(clang, "-O2", "-g", "-fprofile-sample-use="+sample, "-emit-llvm", "-S", src, "-o", ll).CombinedOutput(); err != nil {
			t.Fatalf("clang-16 -emit-llvm: %v\n%s", err, out)
		}
		ir, _ := os.ReadFile(ll)
		taken, fall := classifyWeights(t, string(ir))
		// x % 20 == 0 holds for 100 of 2000 calls.
		share := float64(taken) / float64(taken+fall)
		if share < 0.04 || share > 0.06 {
			t.Errorf("classify's branch weights %d/%d (taken share %.3f), want 5/95", taken, fall, share)
		}
	})

	t.Run("bolt-fdata", func(t *testing.T) {
		bolt := boltTool(t)
		fdata := filepath.Join(dir, "pgo.fdata")
		mustBlpp(t, "export", prof, "--binary", inst, "--format", "bolt-fdata", "-o", fdata)
		text, _ := os.ReadFile(fdata)
		if !strings.Contains(string(text), "1 classify ") {
			t.Fatalf("no branch of classify in the fdata:\n%s", text)
		}
		out := filepath.Join(dir, "pgo.bolt")
		log, err := exec.Command(bolt, exe, "-o", out, "-data="+fdata, "-reorder-blocks=ext-tsp", "-v=2").CombinedOutput()
		if err != nil {
			t.Fatalf("llvm-bolt: %v\n%s", err, log)
		}
		for _, bad := range []string{"match only", "invalid (possibly stale) profile", "ERROR"} {
			if strings.Contains(string(log), bad) {
				t.Errorf("llvm-bolt says %q:\n%s\nfdata:\n%s", bad, log, text)
			}
		}
		if !regexp.MustCompile(`BOLT-INFO: [1-9][0-9]* out of [0-9]+ functions in the binary .* have non-empty execution profile`).Match(log) {
			t.Errorf("llvm-bolt found no profiled function:\n%s", log)
		}
		got, stderr, code := runBinary(t, out, nil)
		if code != 0 || string(got) != "2600\n" {
			t.Errorf("the BOLTed binary printed %q (exit %d, stderr %q), want 2600", got, code, stderr)
		}
	})
}

// classifyWeights finds the conditional branch of classify in the IR and
// returns its branch weights (true side, false side).
func classifyWeights(t *testing.T, ir string) (uint64, uint64) {
	t.Helper()
	body := ir[strings.Index(ir, "@classify("):]
	body = body[:strings.Index(body, "\n}")]
	m := regexp.MustCompile(`br i1 [^\n]*!prof (![0-9]+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no conditional branch with !prof in classify:\n%s", body)
	}
	w := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + ` = !\{!"branch_weights", i32 (-?[0-9]+), i32 (-?[0-9]+)\}`).FindStringSubmatch(ir)
	if w == nil {
		t.Fatalf("no two-way branch_weights %s in the IR", m[1])
	}
	a, _ := strconv.ParseInt(w[1], 10, 64)
	b, _ := strconv.ParseInt(w[2], 10, 64)
	return uint64(uint32(a)), uint64(uint32(b))
}

// TestExportJSON: --format json writes what blpp report --format json
// writes.
func TestExportJSON(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "switch.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	want := mustBlpp(t, "report", prof, "--binary", inst, "--format", "json")
	if got := mustBlpp(t, "export", prof, "--binary", inst, "--format", "json"); got != want {
		t.Errorf("export --format json differs from report --format json")
	}
	for _, args := range [][]string{
		{"export", prof, "--binary", inst},
		{"export", prof, "--binary", inst, "--format", "gif"},
		{"export", prof, "--binary", inst, "--format", "folded", "--metric", "nope"},
		{"coverage", prof, "--binary", inst, "--format", "xml"},
	} {
		if o := blpp(args...); refusalProblem(o) != "" {
			t.Errorf("blpp %q: %s", args, refusalProblem(o))
		}
	}
	// Without --binary, the binary the profile names, while it is there.
	if got, want := mustBlpp(t, "export", prof, "--format", "folded"), mustBlpp(t, "export", prof, "--binary", inst, "--format", "folded"); got != want {
		t.Errorf("export without --binary differs from export --binary %s", inst)
	}
	if err := os.Rename(inst, inst+".moved"); err != nil {
		t.Fatal(err)
	}
	o := blpp("export", prof, "--format", "folded")
	if p := refusalProblem(o); p != "" || !strings.Contains(o.stderr, inst) {
		t.Errorf("export without --binary, the binary moved: %s (stderr %q should name %s)", p, o.stderr, inst)
	}
}

// TestEdgeCounts: on real profiles, the edge counts the exporters use
// conserve flow: into every block, the counts of its in-edges (plus the
// function's activations for the entry block) add up to its execution
// count, the law BOLT's profile inference and the fdata rest on.
func TestEdgeCounts(t *testing.T) {
	for _, src := range []string{"loops.c", "switch.c", "recursion.c", "irreducible.c"} {
		t.Run(src, func(t *testing.T) {
			dir := t.TempDir()
			inst, prof, _ := profiled(t, dir, fixture.Build(t, src, gccO2PIE))
			m, err := loadModel(nil, inst, []string{prof}, report.NameOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.File.Close()
			checked := 0
			for fi, mf := range m.Table.Funcs {
				fp := m.Profile(report.FuncID{Func: uint32(fi)})
				if !mf.Instrumented || fp.PartialUnknown > 0 {
					continue
				}
				in := make([]uint64, len(mf.Blocks))
				in[0] = fp.Calls
				for k, e := range mf.Edges {
					if e.To >= 0 {
						in[e.To] += fp.Edges[k]
					}
				}
				for b := range in {
					if in[b] != fp.Blocks[b] {
						t.Errorf("%s block %d (%#x): in-edges and entries %d, executions %d", mf.Name, b, mf.Blocks[b].Addr, in[b], fp.Blocks[b])
					}
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no function checked")
			}
		})
	}
}
