package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestOneWorkload runs the harness on one workload at a tiny size, once per
// variant, and checks the table and the JSON report.
func TestOneWorkload(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	var stdout, stderr bytes.Buffer
	args := []string{"--runs", "1", "--warmup", "0", "--scale", "1", "--only", "sort"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	table := stdout.String()
	lines := strings.Split(table, "\n")
	for _, col := range []string{"workload", "native", "gcov/native", "flow/native", "ctx/native", "ctx+tsc/native"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %q:\n%s", col, lines[0])
		}
	}
	var rows, geos [][]string
	cct := ""
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "sort" {
			if len(f) > 1 && f[1] == "CCT:" {
				cct = l
			} else {
				rows = append(rows, f)
			}
		}
		if len(f) > 0 && f[0] == "geomean" {
			geos = append(geos, f)
		}
	}
	if len(rows) != 2 || len(geos) != 2 {
		t.Fatalf("want two sort rows and two geomean rows (wall; cpu, rss):\n%s", table)
	}
	ratios := 0
	for _, cell := range rows[0] {
		if strings.HasSuffix(cell, "×") {
			ratios++
		}
	}
	if ratios != 4 {
		t.Errorf("sort row has %d ratio cells, want 4 (gcov, flow, ctx, ctx+tsc):\n%s", ratios, table)
	}
	if len(geos[0]) != 5 {
		t.Errorf("geomean row %q: want 4 ratios", geos[0])
	}
	if !strings.Contains(table, "rewrite") {
		t.Errorf("no rewrite column:\n%s", table)
	}
	if !strings.Contains(cct, "records") || !strings.Contains(cct, "bytes/record, arena") || !strings.Contains(cct, "KB") {
		t.Errorf("CCT line %q, want \"CCT: N records, B bytes/record, arena X MB, profile Y KB\"", cct)
	}
	if !strings.Contains(table, "printed exactly the native output") {
		t.Errorf("table does not say the outputs matched:\n%s", table)
	}

	stdout.Reset()
	stderr.Reset()
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("--json: exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if len(rep.Workloads) != 1 || !rep.Workloads[0].Matched || len(rep.Workloads[0].Variants) != int(firstSampled) {
		t.Fatalf("unexpected report: %s", stdout.String())
	}
	for i, v := range rep.Workloads[0].Variants {
		if v.Name != variant(i).String() || len(v.WallMS) != 1 || v.Wall <= 0 || v.MedianWallMS <= 0 {
			t.Errorf("variant %d %s: runs %v, ratio %v", i, v.Name, v.WallMS, v.Wall)
		}
		if !variant(i).isBlpp() {
			continue
		}
		p := v.Profile
		if v.RewriteMS <= 0 || p == nil || p.Records == 0 || p.Bytes == 0 || p.RecordBytes == 0 || p.ArenaBytes == 0 || p.Calls == 0 {
			t.Errorf("variant %s: rewrite %v ms, profile %+v", v.Name, v.RewriteMS, p)
		}
	}
	for _, name := range []string{"gcov", "flow", "ctx", "ctx+tsc"} {
		if g, ok := rep.Geomean[name]; !ok || g.Wall <= 0 {
			t.Errorf("no %s geometric mean: %+v", name, rep.Geomean)
		}
	}
	// The counter-only estimate: one rdtsc per path end and entry; the
	// sort workload runs many of both, so it is above 1.
	tsc := rep.Workloads[0].Variants[ctxTSC] // (JSON has no v: by position)
	if rep.RdtscNS <= 0 || tsc.Profile.PathRuns == 0 || tsc.CounterOnly <= 1 || math.Abs(rep.CounterOnlyGeomean-tsc.CounterOnly) > 1e-9 {
		t.Errorf("counter-only estimate: rdtsc %v ns, %d path runs, estimate %v, geomean %v", rep.RdtscNS, tsc.Profile.PathRuns, tsc.CounterOnly, rep.CounterOnlyGeomean)
	}
	if !strings.Contains(table, "counter reads alone") {
		t.Errorf("table has no counter-only line:\n%s", table)
	}
}

// TestLayouts checks that --layouts rewrites each blpp variant that many
// times and that the rounds take the layouts in turn, with a ratio per
// layout in the JSON report and the table.
func TestLayouts(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	var stdout, stderr bytes.Buffer
	args := []string{"--runs", "3", "--warmup", "0", "--scale", "1", "--only", "sort", "--variants", "flow", "--layouts", "2"}
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if rep.Layouts != 2 || len(rep.Workloads) != 1 || len(rep.Workloads[0].Variants) != 2 {
		t.Fatalf("unexpected report: %s", stdout.String())
	}
	flowRes := rep.Workloads[0].Variants[1]
	if fmt.Sprint(flowRes.Layout) != "[0 1 0]" || len(flowRes.LayoutRatios) != 2 || flowRes.LayoutRatios[0] <= 0 || flowRes.LayoutRatios[1] <= 0 {
		t.Errorf("flow: layouts %v, layout ratios %v; want [0 1 0] and two ratios", flowRes.Layout, flowRes.LayoutRatios)
	}
	stdout.Reset()
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "by layout") {
		t.Errorf("table has no per-layout ratios:\n%s", stdout.String())
	}
}

// TestVariantsFlag checks that --variants measures native and the named
// variants only.
func TestVariantsFlag(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	var stdout, stderr bytes.Buffer
	args := []string{"--runs", "1", "--warmup", "0", "--scale", "1", "--only", "sort", "--variants", "ctx", "--json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	vs := rep.Workloads[0].Variants
	if len(vs) != 2 || vs[0].Name != "native" || vs[1].Name != "ctx" || len(rep.Geomean) != 1 {
		t.Errorf("variants %v, geomeans %v: want native and ctx", rep.Variants, rep.Geomean)
	}
}

// TestProfileWrite runs --profile-write with few calls.
func TestProfileWrite(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	var stdout, stderr bytes.Buffer
	args := []string{"--profile-write", "--calls", "200000", "--runs", "1", "--warmup", "0"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "profile write: ") || !strings.Contains(out, " records (4 threads, 200k calls)") {
		t.Errorf("unexpected output:\n%s", out)
	}

	stdout.Reset()
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("--json: exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep profileWriteReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	// 4 threads × (worker, l1, 4 l2, 16 l3, 64 l4, 256 l5) records at least.
	if !rep.Passed || rep.MedianTailMS <= 0 || rep.Profile == nil || rep.Profile.Records < 4*342 || rep.Profile.Calls < 200000 {
		t.Errorf("unexpected report: %s", stdout.String())
	}
}

// TestBadFlags checks that command-line mistakes exit with status 2.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--runs", "0"},
		{"--no-such-flag"},
		{"extra"},
		{"--only", "no-such-workload"},
		{"--suite", "no-such-suite"},
		{"--suite", "real", "--only", "no-such-program"},
		{"--variants", "gcov,blpp"},
		{"--calls", "-1", "--profile-write"},
		{"--profile-write", "--rewrite-python"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit status %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}

// TestSampledVariants: "all" is the variants before the sampled ones,
// "sampled" those, and each sampled variant rewrites with a sampler at
// its rate and no counted metric (decision 92).
func TestSampledVariants(t *testing.T) {
	for _, c := range []struct {
		list string
		want []variant
	}{
		{"all", []variant{native, gcov, flow, ctx, ctxTSC}},
		{"sampled", []variant{native, ctxS1k, ctxS10k}},
		{"ctx,ctx+s10k", []variant{native, ctx, ctxS10k}},
	} {
		got, err := parseVariants(c.list)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("--variants %s: %v, %v; want %v", c.list, got, err, c.want)
		}
	}
	for v, period := range map[variant]uint64{ctxS1k: 1000000, ctxS10k: 100000} {
		o := v.options()
		if o.Sample == nil || o.Sample.Period != period || o.Sample.Type != 1 || o.Sample.Config != 0 || len(o.Metrics) != 0 || o.NoContext {
			t.Errorf("%s: options %+v, sampler %+v", v, o, o.Sample)
		}
	}
}
