package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportHot checks the hot and procs views and the profiled CFG on a
// real fixture: the hot paths' shares reach the threshold, blocks carry
// file:line, --asm decodes instructions, procs lists every function that
// ran with its source file, and dot accepts the CFG.
func TestReportHot(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)

	hot := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot")
	for _, want := range []string{": hot paths (", "density: a path is dense when", "(the threshold is 90%)", "loops.c:", "executions × "} {
		if !strings.Contains(hot, want) {
			t.Errorf("--view hot lacks %q:\n%s", want, hot)
		}
	}
	m := regexp.MustCompile(`covering ([0-9.]+)% of`).FindStringSubmatch(hot)
	if m == nil {
		t.Errorf("no coverage of the hot paths stated:\n%s", hot)
	} else if share, _ := strconv.ParseFloat(m[1], 64); share < 90 {
		t.Errorf("hot paths cover %s%%, under the 90%% threshold", m[1])
	}
	if testing.Verbose() {
		t.Logf("%s", asm0(t, prof, inst))
	}
	if !regexp.MustCompile(`(?m): (dense|sparse)$`).MatchString(hot) {
		t.Errorf("no path classed dense or sparse:\n%s", hot)
	}
	half := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--hot", "0.5", "--metric", "freq")
	if strings.Count(half, "\n  1. ") != 1 || !strings.Contains(half, "metric: freq") {
		t.Errorf("--hot 0.5 --metric freq:\n%s", half)
	}
	// --top lists the hottest of them and counts the rest.
	all := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--hot", "1", "--top", "0")
	one := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--hot", "1", "--top", "1")
	listed := strings.Count(all, "\n     ") - strings.Count(all, "\n       ")
	m = regexp.MustCompile(`\.\.\. and ([0-9]+) more hot paths? \(--top 0`).FindStringSubmatch(one)
	switch {
	case listed < 2 || strings.Contains(all, "more hot path"):
		t.Errorf("--hot 1 --top 0 lists %d paths:\n%s", listed, all)
	case m == nil || strings.Contains(one, "\n  2. ") || !strings.Contains(one, "\n  1. "):
		t.Errorf("--top 1 lists more or fewer than one path, or does not count the rest:\n%s", one)
	case m[1] != strconv.Itoa(listed-1):
		t.Errorf("--top 1 counts %s more paths; --top 0 lists %d", m[1], listed)
	}
	asm := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--asm")
	if !regexp.MustCompile(`(?m)^ {11}0x[0-9a-f]+  [a-z]`).MatchString(asm) {
		t.Errorf("--asm lists no instruction:\n%s", asm)
	}

	procs := mustBlpp(t, "report", prof, "--binary", inst, "--view", "procs")
	for _, want := range []string{"per-procedure summary", "main (loops.c)", "simple_loop (loops.c)", "per source file", "never entered"} {
		if !strings.Contains(procs, want) {
			t.Errorf("--view procs lacks %q:\n%s", want, procs)
		}
	}

	dot := mustBlpp(t, "cfg", inst, "--profile", prof, "--func", "^simple_loop$", "--format", "dot")
	if !strings.HasPrefix(dot, "digraph blpp {") || !strings.Contains(dot, "color=red") || !strings.Contains(dot, "simple_loop @ 0x") {
		t.Errorf("cfg --profile:\n%s", dot)
	}

	for _, args := range [][]string{
		{"report", prof, "--binary", inst, "--asm"},
		{"report", prof, "--binary", inst, "--view", "tree", "--hot", "0.5"},
		{"report", prof, "--binary", inst, "--view", "hot", "--hot", "1.5"},
		{"report", prof, "--binary", inst, "--view", "hot", "--metric", "nonesuch"},
		{"report", prof, "--binary", inst, "--view", "procs", "--metric", "freq"},
		{"report", prof, "--binary", inst, "--html", dir + "/x.html", "--view", "tree"},
		{"cfg", inst, "--profile", prof, "--format", "text"},
		{"cfg", inst, "--hot", "0.5"},
	} {
		if p := refusalProblem(blpp(args...)); p != "" {
			t.Errorf("blpp %q: %s", args, p)
		}
	}

	dotTool := fixture.RequireTool(t, "dot", "graphviz")
	cmd := exec.Command(dotTool, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v\n%s\n%s", err, stderr.String(), dot)
	}
	if !strings.Contains(out.String(), "<svg") {
		t.Errorf("dot wrote no SVG")
	}
}

// asm0 is the hot view with --asm and the procs view, for -v.
func asm0(t *testing.T, prof, inst string) string {
	return mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--asm") + mustBlpp(t, "report", prof, "--binary", inst, "--view", "procs")
}
