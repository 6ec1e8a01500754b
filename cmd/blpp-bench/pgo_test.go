package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestPGOPipeline runs --pgo end to end on tinyvm at the smallest size:
// built plain, through blpp's sample profile, through clang's IR-PGO, and
// through llvm-bolt with blpp's profile and with BOLT's own. blpp's
// sample profiles are both kinds: line-based and probe-based. The harness
// itself refuses a build whose output differs from plain's and a sample
// profile llvm-profdata cannot read; the test adds what holds whatever the
// machine's load: clang used blpp's profile without a diagnostic, the
// profile covers the interpreter, its entry counts equal those of clang's
// own instrumentation (both exact, and tinyvm is deterministic), and BOLT
// matched every function blpp profiled. Timings are not checked: they
// belong to the benchmark, not to tests.
func TestPGOPipeline(t *testing.T) {
	clang := fixture.RequireTool(t, "clang-16", "clang-16")
	fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
	rtDir, err := exec.Command(clang, "--print-runtime-dir").Output()
	if err == nil {
		_, err = os.Stat(filepath.Join(strings.TrimSpace(string(rtDir)), "libclang_rt.profile-x86_64.a"))
	}
	if err != nil {
		requireMissing(t, "clang-16's profile runtime is missing (install the Debian package libclang-rt-16-dev)")
	}
	if _, err := os.Stat(defaultBolt()); err != nil {
		requireMissing(t, "llvm-bolt is missing (install the Debian package bolt-16)")
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--pgo", "--pgo-program", "tinyvm", "--runs", "1", "--warmup", "0", "--pgo-scale", "1", "--json", "--keep"}
	code := run(args, &stdout, &stderr)
	if m := regexp.MustCompile(`build directory: (\S+)`).FindStringSubmatch(stderr.String()); m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
		defer func() {
			if !t.Failed() {
				checkDispatchWeights(t, clang, m[1])
			}
		}()
	}
	if code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep pgoReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	for _, k := range []struct {
		name   string
		sp     pgoSampleProfile
		probes bool
	}{{"lines", rep.Lines, false}, {"probes", rep.Probes, true}} {
		sp := k.sp
		if len(sp.Warnings) > 0 {
			t.Errorf("%s: clang warned about blpp's sample profile:\n%s", k.name, strings.Join(sp.Warnings, "\n"))
		}
		if sp.Functions < 10 || sp.ProbeBased != k.probes {
			t.Errorf("%s: llvm-profdata reads %d functions in blpp's profile, probe-based %v; want the interpreter's (10 or more), probe-based %v",
				k.name, sp.Functions, sp.ProbeBased, k.probes)
		}
		if e := sp.Entries; e.Compared < 10 || e.Equal != e.Compared {
			t.Errorf("%s: entry counts of blpp's sample profile equal clang's instrumentation's for %d of %d functions, want all of 10 or more: %s",
				k.name, e.Equal, e.Compared, strings.Join(e.Differ, "; "))
		}
	}
	if len(rep.IRWarnings) > 0 {
		t.Errorf("clang warned about its own profile:\n%s", strings.Join(rep.IRWarnings, "\n"))
	}
	if rep.Instrumented == 0 || rep.Instrumented*10 < rep.Functions*9 {
		t.Errorf("blpp instrumented %d of %d functions, want nearly all", rep.Instrumented, rep.Functions)
	}
	// BOLT reads blpp's profile as well as its own: nothing stale or
	// ignored, and as many functions profiled give or take the few that
	// run outside what either instruments (BOLT's instrumentation sees
	// _init and its own exit code; blpp's runtime writes its profile from
	// the program's finalizers).
	if b := rep.Bolt; b.Profiled < 10 || b.Stale != 0 || b.Ignored != 0 || b.Profiled+3 < rep.BoltOwn.Profiled {
		t.Errorf("llvm-bolt with blpp's profile: %+v; with its own: %+v", b, rep.BoltOwn)
	}
	want := []string{pgoPlain, pgoLines, pgoProbes, pgoIR, pgoBolt, pgoBoltOwn}
	if len(rep.Builds) != len(want) {
		t.Fatalf("%d builds, want %d: %v", len(rep.Builds), len(want), want)
	}
	for i, b := range rep.Builds {
		if b.Name != want[i] {
			t.Errorf("build %d is %q, want %q", i, b.Name, want[i])
		}
		if len(b.CPUMS) != 1 || b.SpeedupCPU <= 0 {
			t.Errorf("%s: %d runs, speedup %v; want one run and a speedup", b.Name, len(b.CPUMS), b.SpeedupCPU)
		}
	}
	if rep.Output == "" {
		t.Error("the workload printed nothing")
	}
}

// checkDispatchWeights compiles tinyvm with blpp's probe-based profile and
// with clang's own (both left in dir by --keep) and compares the weights
// clang gives the targets of the interpreter's dispatch switch, the first
// switch of vm_run: exact counts both, so equal but for the 1 or 2 clang's
// instrumentation adds to each case. Cases that share a target compare as
// one (from a block count, clang splits the target's count evenly among
// them). The line-based profile cannot match them: the default case's
// code shares the switch's line, and clang gives it the switch's count.
func checkDispatchWeights(t *testing.T, clang, dir string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "testdata", "pgo", "tinyvm.c")
	// weights returns the switch's weight per target, the target named by
	// its case values ("default" for the default).
	weights := func(flags ...string) map[string]uint64 {
		ll := filepath.Join(dir, "check.ll")
		args := append(append([]string(nil), flags...), "-S", "-emit-llvm", "-o", ll, src)
		if out, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", clang, strings.Join(args, " "), err, out)
		}
		ir, _ := os.ReadFile(ll)
		fn := regexp.MustCompile(`(?s)\ndefine [^\n]*@vm_run\(.*?\n}\n`).Find(ir)
		sw := regexp.MustCompile(`(?s)\n  switch i8 %[0-9]+, label (%[0-9]+) \[(.*?)\n  \][^\n]*!prof (![0-9]+)`).FindSubmatch(fn)
		if sw == nil {
			t.Fatalf("no switch with branch weights in vm_run (%v)", flags)
		}
		md := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(sw[3])) + ` = !\{!"branch_weights"((?:, i32 [0-9]+)+)\}`).FindSubmatch(ir)
		if md == nil {
			t.Fatalf("no branch_weights %s", sw[3])
		}
		var w []uint64
		for _, f := range regexp.MustCompile(`i32 ([0-9]+)`).FindAllSubmatch(md[1], -1) {
			n, _ := strconv.ParseUint(string(f[1]), 10, 32)
			w = append(w, n)
		}
		cases := regexp.MustCompile(`i8 (-?[0-9]+), label (%[0-9]+)`).FindAllSubmatch(sw[2], -1)
		if len(w) != len(cases)+1 {
			t.Fatalf("%d weights for %d cases", len(w), len(cases))
		}
		values := map[string][]string{string(sw[1]): {"default"}}
		sum := map[string]uint64{string(sw[1]): w[0]}
		for i, c := range cases {
			values[string(c[2])] = append(values[string(c[2])], string(c[1]))
			sum[string(c[2])] += w[i+1]
		}
		out := map[string]uint64{}
		for label, vs := range values {
			sort.Strings(vs)
			out[strings.Join(vs, ",")] = sum[label]
		}
		return out
	}
	probes := weights(append(pgoProbesBase, "-fprofile-sample-use="+filepath.Join(dir, "blpp.probes.txt"))...)
	ir := weights(append(pgoBase, "-fprofile-instr-use="+filepath.Join(dir, "ir.profdata"))...)
	if len(ir) < 20 || len(probes) != len(ir) {
		t.Fatalf("dispatch switch: %d targets with blpp's probes, %d with IR-PGO", len(probes), len(ir))
	}
	for k, n := range ir {
		p, ok := probes[k]
		if d := int64(n) - int64(p); !ok || d < 0 || d > 2*int64(strings.Count(k, ",")+1) {
			t.Errorf("dispatch switch, case %s: weight %d with blpp's probes, %d with IR-PGO", k, p, n)
		}
	}
}

// requireMissing skips a test for a missing tool, or fails it when
// BLPP_REQUIRE_TOOLS=1.
func requireMissing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv(fixture.EnvRequireTools) == "1" {
		t.Fatalf("%s; %s=1 makes this an error", msg, fixture.EnvRequireTools)
	}
	t.Skip(msg)
}

// TestPGOTable checks the table --pgo prints for people.
func TestPGOTable(t *testing.T) {
	rep := &pgoReport{Program: "lua5.4", Version: "5.4.4", Script: "x/workload.lua", Scale: 40, TrainScale: 40, CCVersion: "clang 16", Runs: 9, Warmup: 1, CPUs: 2,
		Builds: []*pgoTimes{
			{Name: pgoPlain, MedianCPUMS: 1000, SpeedupCPU: 1, SpeedupWall: 1},
			{Name: pgoLines, MedianCPUMS: 950, SpeedupCPU: 1.05, SpeedupQ1: 1.04, SpeedupQ3: 1.062, SpeedupWall: 1.04, Share: gainShare(1.05, 1.1)},
			{Name: pgoProbes, MedianCPUMS: 940, SpeedupCPU: 1.06, SpeedupWall: 1.05, Share: gainShare(1.06, 1.1)},
			{Name: pgoIR, MedianCPUMS: 900, SpeedupCPU: 1.1, SpeedupWall: 1.08, Share: 1},
			{Name: pgoBolt, MedianCPUMS: 980, SpeedupCPU: 1.02, SpeedupWall: 1.02, Share: gainShare(1.02, 1.1)},
		}}
	rep.Lines.Entries = pgoEntries{Compared: 37, Equal: 36}
	rep.Probes.Functions = 12
	rep.Bolt = boltResult{Profiled: 42, Functions: 101}
	var out bytes.Buffer
	rep.writeTable(&config{stdout: &out})
	for _, want := range []string{"lua5.4 (5.4.4)", "clang IR-PGO", "1.100×", "blpp + BOLT", "20%", "9 measured rounds",
		"sample profile, lines: 0 KB, 0 functions, entry counts equal to clang's instrumentation's for 36 of 37 functions",
		"sample profile, probes: 0 KB, 12 functions", "llvm-bolt with blpp's profile: 42 of 101 functions profiled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if row := `(?m)^blpp sample-PGO, lines +950 ms +1\.050× +1\.040\.\.1\.062 +1\.040× +50%$`; !regexp.MustCompile(row).MatchString(out.String()) {
		t.Errorf("table lacks a row matching %s:\n%s", row, out.String())
	}
	// Profiles of builds --pgo-builds left out are not summed up, and
	// --pgo-lto thin is said.
	rep.Builds = append(rep.Builds[:1], rep.Builds[2:4]...)
	rep.LTO = pgoLTOThin
	out.Reset()
	rep.writeTable(&config{stdout: &out})
	for _, bad := range []string{"sample profile, lines", "llvm-bolt"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("table without that build has %q:\n%s", bad, out.String())
		}
	}
	if !strings.Contains(out.String(), "sample profile, probes") || !strings.Contains(out.String(), "every build with ThinLTO") {
		t.Errorf("table lacks the probes' summary or the LTO mode:\n%s", out.String())
	}
	if q1, q3 := speedupQuartiles([]float64{10, 10, 10, 10, 10}, []float64{10, 5, 8, 20, 4}); q1 != 1 || q3 != 2 {
		t.Errorf("quartiles of 1, 2, 1.25, 0.5, 2.5: %v, %v; want 1, 2", q1, q3)
	}
	if g := gainShare(1.2, 1); g != 0 {
		t.Errorf("gainShare with no reference gain = %v, want 0", g)
	}
}

// TestSampleHeads reads the head samples of a text sample profile and the
// functions inlined in it, as compareEntries does.
func TestSampleHeads(t *testing.T) {
	heads, inlined := sampleHeads([]byte(`run:100:1
 1: 10
 2.1: 5 callee:5
 3: helper:20
  1: 20
  2: deep:4
   1: 4
_ZN1a1bEv:7:3
 0: 3
`))
	if len(heads) != 2 || heads["run"] != 1 || heads["_ZN1a1bEv"] != 3 {
		t.Errorf("heads %v", heads)
	}
	if len(inlined) != 2 || !inlined["helper"] || !inlined["deep"] {
		t.Errorf("inlined %v", inlined)
	}
	ir := irFunctionCounts(`Counters:
  run:
    Hash: 0x1
    Counters: 3
    Function count: 1
  tinyvm.c:helper:
    Hash: 0x2
    Counters: 1
    Function count: 20
Instrumentation level: Front-end
`)
	if len(ir) != 2 || ir["run"] != 1 || ir["helper"] != 20 {
		t.Errorf("IR function counts %v", ir)
	}
	// Two static functions of one name are no name to compare by.
	ir = irFunctionCounts("  a.c:save:\n    Function count: 3\n  b.c:save:\n    Function count: 4\n  main:\n    Function count: 1\n")
	if len(ir) != 1 || ir["main"] != 1 {
		t.Errorf("IR function counts with a name twice: %v", ir)
	}
	for name, want := range map[string]string{
		"_ZL7l_allocPvS_mm.__uniq.173548247106061022791662205755080913192": "l_alloc",
		"_ZL14mainpositionTVPK5TablePK6TValue.__uniq.2729":                 "mainpositionTV",
		"luaV_execute":           "luaV_execute",
		"_ZL99short.__uniq.1":    "_ZL99short.__uniq.1",
		"_ZN1a1bEv":              "_ZN1a1bEv",
		"_ZL3fooi.__uniq.1.cold": "foo",
		"_ZLxfoo.__uniq.1":       "_ZLxfoo.__uniq.1",
		"_ZL30tooshort.__uniq.1": "_ZL30tooshort.__uniq.1",
	} {
		if got := plainName(name); got != want {
			t.Errorf("plainName(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestPGOPipelineThinLTO runs --pgo on tinyvm with every build linked by
// ThinLTO and only the probe-based sample profile besides plain and
// IR-PGO: the builds are those asked for, in order, and clang's link-time
// sample loader (gold's LLVM plugin) reads blpp's profile of the LTO-built
// training binary without a warning, its entry counts exact.
func TestPGOPipelineThinLTO(t *testing.T) {
	clang := fixture.RequireTool(t, "clang-16", "clang-16")
	fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
	fixture.RequireTool(t, "ld.gold", "binutils")
	rtDir, err := exec.Command(clang, "--print-runtime-dir").Output()
	if err == nil {
		_, err = os.Stat(filepath.Join(strings.TrimSpace(string(rtDir)), "libclang_rt.profile-x86_64.a"))
	}
	if err != nil {
		requireMissing(t, "clang-16's profile runtime is missing (install the Debian package libclang-rt-16-dev)")
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--pgo", "--pgo-program", "tinyvm", "--pgo-lto", "thin", "--pgo-builds", "probes",
		"--runs", "1", "--warmup", "0", "--pgo-scale", "1", "--json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep pgoReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if rep.LTO != pgoLTOThin {
		t.Errorf("report says LTO %q, want %q", rep.LTO, pgoLTOThin)
	}
	var names []string
	for _, b := range rep.Builds {
		names = append(names, b.Name)
		if f := strings.Join(b.Flags, " "); !strings.Contains(f, "-flto=thin") || (b.Name == pgoProbes) != strings.Contains(f, "-fsample-profile-use-profi") {
			t.Errorf("%s built with %q: want -flto=thin, and profile inference for the probes only", b.Name, f)
		}
	}
	if want := []string{pgoPlain, pgoProbes, pgoIR}; strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("builds %q, want %q", names, want)
	}
	sp := rep.Probes
	if len(sp.Warnings) > 0 || !sp.ProbeBased || sp.Functions < 10 {
		t.Errorf("probes with ThinLTO: %d functions, probe-based %v, clang warnings %q", sp.Functions, sp.ProbeBased, sp.Warnings)
	}
	if e := sp.Entries; e.Compared < 10 || e.Equal != e.Compared {
		t.Errorf("probes with ThinLTO: entry counts equal clang's for %d of %d functions: %s", e.Equal, e.Compared, strings.Join(e.Differ, "; "))
	}
	if rep.Lines.Functions != 0 || rep.Bolt.Functions != 0 {
		t.Errorf("builds not asked for were made: lines %+v, bolt %+v", rep.Lines, rep.Bolt)
	}
}

// TestPGOFlags checks --pgo-builds and --pgo-lto.
func TestPGOFlags(t *testing.T) {
	got, err := parsePGOBuilds(" lines,bolt ")
	if err != nil || len(got) != 2 || !got[pgoBuildLines] || !got[pgoBuildBolt] {
		t.Errorf("parsePGOBuilds(lines,bolt) = %v, %v", got, err)
	}
	if got, err := parsePGOBuilds("all"); err != nil || len(got) != 3 {
		t.Errorf("parsePGOBuilds(all) = %v, %v", got, err)
	}
	if _, err := parsePGOBuilds("lines,ir"); err == nil || !strings.Contains(err.Error(), `"ir"`) {
		t.Errorf("parsePGOBuilds(lines,ir): %v, want an error naming ir", err)
	}
	for _, args := range [][]string{{"--pgo", "--pgo-lto", "full"}, {"--pgo", "--pgo-builds", "gcc"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), args[2]) {
			t.Errorf("%v: exit status %d, stderr %q; want 2 naming %s", args, code, stderr.String(), args[2])
		}
	}
}
