package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRealSuite runs --suite real on two of its programs at a tiny size,
// once per variant, so that the suite cannot rot: lua5.4 (an installed
// program, with its start-up run) and calls (built from source, with
// gcov). A missing lua5.4 skips, or under BLPP_REQUIRE_TOOLS=1 fails,
// naming its Debian package.
func TestRealSuite(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	fixture.RequireTool(t, "lua5.4", "lua5.4")
	fixture.RequireTool(t, "time", "time") // GNU time, for the peak resident sets
	share := "0"
	if _, err := exec.LookPath("valgrind"); err == nil {
		share = "1"
	}
	args := []string{"--suite", "real", "--only", "lua5.4,calls", "--runs", "1", "--warmup", "1", "--layouts", "1", "--scale", "1", "--share-scale", share}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if rep.Suite != "real" || len(rep.Workloads) != 2 || rep.Workloads[0].Name != "lua5.4" || rep.Workloads[1].Name != "calls" {
		t.Fatalf("unexpected report: %s", stdout.String())
	}
	want := map[string][]string{
		"lua5.4": {"native", "flow", "ctx", "ctx+tsc"},
		"calls":  {"native", "gcov", "flow", "ctx", "ctx+tsc"},
	}
	for _, wl := range rep.Workloads {
		var names []string
		for _, v := range wl.Variants {
			names = append(names, v.Name)
			if len(v.WallMS) != 1 || v.Wall <= 0 || v.MaxRSSKB <= 0 {
				t.Errorf("%s %s: runs %v, ratio %v, peak RSS %d KB", wl.Name, v.Name, v.WallMS, v.Wall, v.MaxRSSKB)
			}
		}
		if strings.Join(names, ",") != strings.Join(want[wl.Name], ",") {
			t.Errorf("%s: variants %v, want %v", wl.Name, names, want[wl.Name])
		}
		if !wl.Matched || wl.Instrumented == 0 || wl.Command == "" {
			t.Errorf("%s: matched %v, %d functions instrumented, command %q", wl.Name, wl.Matched, wl.Instrumented, wl.Command)
		}
		if share == "1" && (wl.DynamicShare <= 0 || wl.DynamicShare > 1) {
			t.Errorf("%s: dynamic share %v", wl.Name, wl.DynamicShare)
		}
	}
	// gcov is in one workload: its geometric mean is that one's ratio.
	// (exp(log(x)) may differ from x in the last bit.)
	if g, w := rep.Geomean["gcov"].Wall, rep.Workloads[1].Variants[1].Wall; math.Abs(g-w) > 1e-9*w {
		t.Errorf("gcov geomean %v, want calls' ratio %v", g, rep.Workloads[1].Variants[1].Wall)
	}
	if len(rep.Startup) != 1 || rep.Startup[0].Command != `lua5.4 -e ""` || len(rep.Startup[0].Variants) != 4 {
		t.Fatalf("start-up runs: %+v", rep.Startup)
	}

	// The table, from the same measurements (one run of the suite is
	// enough): the decoded report less the variants' unexported kinds.
	for _, wl := range append(rep.Workloads, rep.Startup...) {
		for _, vr := range wl.Variants {
			for v := native; v < numVariants; v++ {
				if v.String() == vr.Name {
					vr.v = v
				}
			}
		}
	}
	stdout.Reset()
	rep.writeTable(&stdout)
	table := stdout.String()
	for _, s := range []string{"flow/native", "ctx/native", "ctx+tsc/native", "share", "peak RSS", "ctx target", "start-up + exit", `lua5.4 -e ""`, "Only the executable is rewritten"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
}

// TestRealSuiteLuaSource runs --suite real on lua-src (Lua 5.4 built here
// from Debian's source, natively and with gcov) at a tiny size: its
// variants run, gcov's among them, and print the native output. Without
// the source (no deb-src lines for apt-get source, no cached copy) it
// skips, or under BLPP_REQUIRE_TOOLS=1 fails; .ci/run enables deb-src.
func TestRealSuiteLuaSource(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	fixture.RequireTool(t, "time", "time")
	var stdout, stderr bytes.Buffer
	if _, err := luaSource(&config{stderr: &stderr}); err != nil {
		fixture.Missing(t, err.Error())
	}
	args := []string{"--suite", "real", "--only", "lua-src", "--runs", "1", "--warmup", "0", "--layouts", "1", "--scale", "1",
		"--share-scale", "0", "--variants", "gcov,flow,ctx", "--json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if len(rep.Workloads) != 1 || rep.Workloads[0].Name != "lua-src" {
		t.Fatalf("unexpected report: %s", stdout.String())
	}
	wl := rep.Workloads[0]
	var names []string
	for _, v := range wl.Variants {
		names = append(names, v.Name)
		if len(v.WallMS) != 1 || v.Wall <= 0 {
			t.Errorf("%s: runs %v, ratio %v", v.Name, v.WallMS, v.Wall)
		}
	}
	if strings.Join(names, ",") != "native,gcov,flow,ctx" || !wl.Matched || wl.Instrumented < 500 {
		t.Errorf("variants %v, matched %v, %d functions instrumented", names, wl.Matched, wl.Instrumented)
	}
}
