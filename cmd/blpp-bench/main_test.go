package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"blpp/internal/fixture"
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
	for _, col := range []string{"workload", "native", "blpp/native", "gcov/native", "rewrite"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %q:\n%s", col, lines[0])
		}
	}
	var row, geo []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "sort" {
			row = f
		}
		if len(f) > 0 && f[0] == "geomean" {
			geo = f
		}
	}
	if row == nil || geo == nil {
		t.Fatalf("no sort row or no geomean row:\n%s", table)
	}
	ratios := 0
	for _, cell := range row {
		if strings.HasSuffix(cell, "×") {
			ratios++
		}
	}
	if ratios < 2 {
		t.Errorf("sort row has %d ratio cells, want at least 2 (blpp, gcov):\n%s", ratios, table)
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
	if len(rep.Workloads) != 1 || !rep.Workloads[0].Matched || len(rep.Workloads[0].Variants) != int(numVariants) {
		t.Fatalf("unexpected report: %s", stdout.String())
	}
	for _, v := range rep.Workloads[0].Variants {
		if len(v.WallMS) != 1 || v.Wall <= 0 || v.MedianWallMS <= 0 {
			t.Errorf("variant %s: runs %v, ratio %v", v.Name, v.WallMS, v.Wall)
		}
	}
	if g, ok := rep.Geomean["blpp"]; !ok || g.Wall <= 0 {
		t.Errorf("no blpp geometric mean: %+v", rep.Geomean)
	}
}

// TestBadFlags checks that command-line mistakes exit with status 2.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--runs", "0"},
		{"--no-such-flag"},
		{"extra"},
		{"--only", "no-such-workload"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit status %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}
