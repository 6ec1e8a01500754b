package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestMergeDiff: a profile against itself and against a merge of itself
// with itself is "no change"; a run with more input changes shares, and
// the merge of two runs counts what both counted.
func TestMergeDiff(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "switch.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	prof2 := filepath.Join(dir, "more.prof")
	if _, stderr, code := runBinary(t, inst, strings.Fields("a b c d e f g h i j k l m n o p"), "BLPP_PROFILE="+prof2); code != 0 {
		t.Fatalf("%s: exit %d\n%s", inst, code, stderr)
	}
	same := mustBlpp(t, "diff", prof, prof, "--binary", inst)
	if !strings.Contains(same, "\nno change\n") {
		t.Errorf("diff of a profile with itself:\n%s", same)
	}
	double := filepath.Join(dir, "double.prof")
	mustBlpp(t, "merge", prof, prof, "-o", double)
	if out := mustBlpp(t, "diff", prof, double, "--binary", inst); !strings.Contains(out, "\nno change\n") {
		t.Errorf("diff of a profile with its double:\n%s", out)
	}
	changed := mustBlpp(t, "diff", prof, prof2, "--binary", inst)
	if strings.Contains(changed, "no change") || !strings.Contains(changed, "functions, share of instructions executed") ||
		!strings.Contains(changed, "paths, share of path executions") {
		t.Errorf("diff of runs with different input:\n%s", changed)
	}

	both := filepath.Join(dir, "both.prof")
	mustBlpp(t, "merge", prof, prof2, "-o", both, "--fold-threads")
	a, _ := cct.ReadFile(prof)
	b, _ := cct.ReadFile(prof2)
	m, err := cct.ReadFile(both)
	if err != nil {
		t.Fatalf("merged profile: %v", err)
	}
	if len(m.Threads) != 1 {
		t.Errorf("--fold-threads left %d threads", len(m.Threads))
	}
	total := func(p *cct.Profile) (n uint64) {
		for _, th := range p.Threads {
			for _, r := range th.Records {
				for _, q := range r.Paths {
					n += q.Count
				}
			}
		}
		return n
	}
	if total(m) != total(a)+total(b) {
		t.Errorf("merged profile counts %d paths, inputs %d + %d", total(m), total(a), total(b))
	}
	// Refusals: another binary's profile, a missing -o.
	if o := blpp("merge", prof); refusalProblem(o) != "" || !strings.Contains(o.stderr, "-o") {
		t.Errorf("merge without -o: %s", o)
	}
	if o := blpp("diff", prof, "--binary", inst); refusalProblem(o) != "" {
		t.Errorf("diff with one profile: %s", o)
	}
}

// TestAnnotate: the source of a function with each line's count, and the
// disassembly with each instruction's block count.
func TestAnnotate(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "switch.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	out := mustBlpp(t, "annotate", prof, "--binary", inst, "main")
	if !strings.Contains(out, "switch.c:") || !strings.Contains(out, "int main(int argc, char **argv)") {
		t.Errorf("annotate main: no source of main:\n%s", out)
	}
	// main runs once: its first line with code has count 1.
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "int n = vol_n + argc - 1;") {
			if f := strings.Fields(l); len(f) == 0 || !strings.HasPrefix(f[0], "1") {
				t.Errorf("annotate main: %q, want count 1", l)
			}
		}
	}
	if !strings.Contains(out, "*:") {
		t.Errorf("annotate main: no hot line marked:\n%s", out)
	}
	i := strings.Index(out, "int main")
	if i < 0 || i+20 > len(out) {
		t.Fatalf("annotate main: no source line of main:\n%s", out)
	}
	file := mustBlpp(t, "annotate", prof, "--binary", inst, "switch.c")
	if !strings.Contains(file, out[i:i+20]) {
		t.Errorf("annotate switch.c lacks main")
	}
	dis := mustBlpp(t, "annotate", prof, "--binary", inst, "--disasm", "main")
	if !strings.HasPrefix(dis, "main at 0x") || !strings.Contains(dis, "ret") {
		t.Errorf("annotate --disasm main:\n%s", dis)
	}
	if o := blpp("annotate", prof, "--binary", inst, "no_such_function"); refusalProblem(o) != "" {
		t.Errorf("annotate of an unknown name: %s", o)
	}
}
