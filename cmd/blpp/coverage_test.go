package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestCoverage checks blpp coverage on a real fixture: the text and lcov
// forms agree, main ran once, every line of a function that never ran is
// listed as never executed, and genhtml accepts the tracefile.
func TestCoverage(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "early.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	text := mustBlpp(t, "coverage", prof, "--binary", inst)
	info := filepath.Join(dir, "early.info")
	mustBlpp(t, "coverage", prof, "--binary", inst, "--format", "lcov", "-o", info)
	data, err := os.ReadFile(info)
	if err != nil {
		t.Fatal(err)
	}
	lcov := string(data)
	if !strings.HasPrefix(lcov, "TN:\nSF:") || !strings.HasSuffix(lcov, "end_of_record\n") {
		t.Fatalf("not an lcov tracefile:\n%s", lcov)
	}
	if !regexp.MustCompile(`(?m)^FNDA:1,main$`).MatchString(lcov) {
		t.Errorf("lcov: main did not run once:\n%s", lcov)
	}
	// Totals: Σ LH / Σ LF of the tracefile is the text's line coverage.
	var lf, lh int
	for _, m := range regexp.MustCompile(`(?m)^L([FH]):([0-9]+)$`).FindAllStringSubmatch(lcov, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "F" {
			lf += n
		} else {
			lh += n
		}
	}
	if want := "lines " + strconv.Itoa(lh) + "/" + strconv.Itoa(lf) + " "; !strings.Contains(strings.SplitN(text, "\n", 2)[0], want) {
		t.Errorf("text summary %q does not say %q", strings.SplitN(text, "\n", 2)[0], want)
	}
	// Every DA line with count 0 is listed as never executed, and no other.
	var zero []int
	for _, m := range regexp.MustCompile(`(?m)^DA:([0-9]+),0$`).FindAllStringSubmatch(lcov, -1) {
		n, _ := strconv.Atoi(m[1])
		zero = append(zero, n)
	}
	never := regexp.MustCompile(`never executed: (.*)`).FindAllStringSubmatch(text, -1)
	var listed []string
	for _, m := range never {
		listed = append(listed, m[1])
	}
	if got := strings.Join(listed, ", "); got != lineRangesForTest(zero) {
		t.Errorf("never executed %q, lcov's zero lines give %q", got, lineRangesForTest(zero))
	}

	genhtml := fixture.RequireTool(t, "genhtml", "lcov")
	out, err := exec.Command(genhtml, "-q", "-o", filepath.Join(dir, "html"), info).CombinedOutput()
	if err != nil {
		t.Fatalf("genhtml: %v\n%s\n%s", err, out, lcov)
	}
	if _, err := os.Stat(filepath.Join(dir, "html", "index.html")); err != nil {
		t.Errorf("genhtml wrote no index.html: %v", err)
	}
}

func lineRangesForTest(ls []int) string {
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ls[i])+"-"+strconv.Itoa(ls[j]))
		} else {
			parts = append(parts, strconv.Itoa(ls[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
