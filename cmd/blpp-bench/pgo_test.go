package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestPGOPipeline runs --pgo end to end at the smallest size: tinyvm built
// plain, through blpp's sample profile and through clang's IR-PGO. The
// harness itself refuses a build whose output differs from plain's and a
// sample profile llvm-profdata cannot read; the test adds that clang used
// blpp's profile without a diagnostic and that the profile covers the
// interpreter's hot functions. Timings are not checked: they belong to the
// benchmark, not to tests.
func TestPGOPipeline(t *testing.T) {
	clang := fixture.RequireTool(t, "clang-16", "clang-16")
	fixture.RequireTool(t, "llvm-profdata-16", "llvm-16")
	rtDir, err := exec.Command(clang, "--print-runtime-dir").Output()
	if err == nil {
		_, err = os.Stat(filepath.Join(strings.TrimSpace(string(rtDir)), "libclang_rt.profile-x86_64.a"))
	}
	if err != nil {
		msg := "clang-16's profile runtime is missing (install the Debian package libclang-rt-16-dev)"
		if os.Getenv(fixture.EnvRequireTools) == "1" {
			t.Fatalf("%s; %s=1 makes this an error", msg, fixture.EnvRequireTools)
		}
		t.Skip(msg)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--pgo", "--runs", "1", "--warmup", "0", "--pgo-scale", "1", "--json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep pgoReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if len(rep.SampleProfile.Warnings) > 0 {
		t.Errorf("clang warned about blpp's sample profile:\n%s", strings.Join(rep.SampleProfile.Warnings, "\n"))
	}
	if len(rep.IRWarnings) > 0 {
		t.Errorf("clang warned about its own profile:\n%s", strings.Join(rep.IRWarnings, "\n"))
	}
	if rep.Instrumented == 0 || rep.Instrumented*10 < rep.Functions*9 {
		t.Errorf("blpp instrumented %d of %d functions, want nearly all", rep.Instrumented, rep.Functions)
	}
	if rep.SampleProfile.Functions < 10 {
		t.Errorf("llvm-profdata reads %d functions in blpp's profile, want the interpreter's (10 or more)", rep.SampleProfile.Functions)
	}
	if len(rep.Builds) != 3 || rep.Builds[1].Name != pgoSample || rep.Builds[2].Name != pgoIR {
		t.Fatalf("builds %+v, want plain, %s, %s", rep.Builds, pgoSample, pgoIR)
	}
	for _, b := range rep.Builds {
		if len(b.CPUMS) != 1 || b.SpeedupCPU <= 0 {
			t.Errorf("%s: %d runs, speedup %v; want one run and a speedup", b.Name, len(b.CPUMS), b.SpeedupCPU)
		}
	}
	if rep.Output == "" {
		t.Error("the workload printed nothing")
	}
}

// TestPGOTable checks the table --pgo prints for people.
func TestPGOTable(t *testing.T) {
	rep := &pgoReport{Program: "x/tinyvm.c", Script: "x/workload.tl", Scale: 40, TrainScale: 40, CCVersion: "clang 16", Runs: 9, Warmup: 1, CPUs: 2,
		Builds: []*pgoTimes{
			{Name: pgoPlain, MedianCPUMS: 1000, SpeedupCPU: 1, SpeedupWall: 1},
			{Name: pgoSample, MedianCPUMS: 950, SpeedupCPU: 1.05, SpeedupWall: 1.04},
			{Name: pgoIR, MedianCPUMS: 900, SpeedupCPU: 1.1, SpeedupWall: 1.08},
		}}
	rep.Share, rep.ShareWall = gainShare(1.05, 1.1), gainShare(1.04, 1.08)
	var out bytes.Buffer
	rep.writeTable(&config{stdout: &out})
	for _, want := range []string{"blpp sample-PGO", "1.050×", "clang IR-PGO", "1.100×", "share of IR-PGO's gain: 50% on cpu time, 50% on wall time", "9 measured rounds"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if g := gainShare(1.2, 1); g != 0 {
		t.Errorf("gainShare with no reference gain = %v, want 0", g)
	}
}
