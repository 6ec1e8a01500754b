package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"blpp/internal/testsupport/callgrind"
	"blpp/internal/testsupport/corpus"
	"blpp/internal/testsupport/fixture"
	"blpp/report"
)

// libProgram is a Debian program whose work is in its libraries, with a
// small workload of our own (issue 25, acceptance 2).
type libProgram struct {
	name string // the row's name
	prog string // absolute path
	pkg  string // the Debian package
	args []string
	// stdin, or input: a file "input" in the run's directory made by
	// input(dir) before the run.
	stdin []byte
	input func(dir string) error
}

// text is a deterministic text of about n bytes: words, numbers, lines.
func text(n int) []byte {
	words := []string{"alpha", "running", "beta", "singing", "gamma", "delta", "testing", "epsilon", "zeta", "thing"}
	var b bytes.Buffer
	x := uint32(12345)
	for i := 0; b.Len() < n; i++ {
		x = x*1103515245 + 12345
		fmt.Fprintf(&b, "%s %d", words[x>>16%uint32(len(words))], x>>20)
		if i%9 == 8 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

func writeInput(n int) func(dir string) error {
	return func(dir string) error { return os.WriteFile(filepath.Join(dir, "input"), text(n), 0o644) }
}

func libPrograms() []libProgram {
	var sql strings.Builder
	sql.WriteString("create table t(a integer, b text);\n")
	sql.WriteString("with recursive c(x) as (select 1 union all select x+1 from c where x < 3000) insert into t select x, printf('row %d', x*7 % 1000) from c;\n")
	sql.WriteString("create index tb on t(b);\nselect count(*), sum(a), max(b) from t where a % 3 = 0;\n")
	sql.WriteString("select b, count(*) from t group by b order by count(*) desc, b limit 5;\n")
	var js bytes.Buffer
	js.WriteString("[")
	for i := 0; i < 600; i++ {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"a":%d,"s":"item %d","t":[%d,%d]}`, i*37%1000, i, i%7, i%11)
	}
	js.WriteString("]")
	return []libProgram{
		{name: "sqlite3", prog: "/usr/bin/sqlite3", pkg: "sqlite3", args: []string{":memory:"}, stdin: []byte(sql.String())},
		{name: "jq", prog: "/usr/bin/jq", pkg: "jq", args: []string{"-c", `[.[] | select(.a % 3 == 0) | {k: .s, v: (.a * 2 + (.t | add))}] | sort_by(.v) | .[0:5]`}, stdin: js.Bytes()},
		{name: "bzip2", prog: "/usr/bin/bzip2", pkg: "bzip2", args: []string{"-c", "input"}, input: writeInput(200 << 10)},
		{name: "xz -T2", prog: "/usr/bin/xz", pkg: "xz-utils", args: []string{"-T2", "-3", "-c", "input"}, input: writeInput(300 << 10)},
		{name: "pigz", prog: "/usr/bin/pigz", pkg: "pigz", args: []string{"-p", "2", "-c", "input"}, input: writeInput(300 << 10)},
		{name: "sed", prog: "/usr/bin/sed", pkg: "sed", args: []string{"-E", `s/([a-z]+) ([0-9]+)/\2:\1/g`, "input"}, input: writeInput(40 << 10)},
		{name: "grep -o", prog: "/usr/bin/grep", pkg: "grep", args: []string{"-o", "[a-z]*ing [0-9]*", "input"}, input: writeInput(60 << 10)},
		{name: "python3 decimal", prog: "/usr/bin/python3", pkg: "python3", args: []string{"-I", "-c",
			"import decimal\nc = decimal.getcontext(); c.prec = 60\nx = sum(decimal.Decimal(1) / decimal.Decimal(k) for k in range(1, 400))\nprint(x, x.sqrt())"}},
	}
}

// shareRow is a line of the table TestRunLibPrograms prints.
type shareRow struct {
	name                string
	before, now         float64
	executed, instrMods int
}

// TestRunLibPrograms (issue 25, acceptance 2): real programs whose work
// is in their libraries behave under `blpp run` as they do alone (stdout,
// stderr, exit status), and callgrind on the original measures the
// process share (instructions of instrumented functions over every
// instruction outside ld.so and the vDSO): before (the executable's
// functions only) and now (every module's). Absent programs are skipped.
func TestRunLibPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real programs under callgrind")
	}
	var mu sync.Mutex
	var rows []shareRow
	t.Cleanup(func() { writeShareTable(t, rows) })
	for _, lp := range libPrograms() {
		lp := lp
		t.Run(strings.ReplaceAll(lp.name, " ", "_"), func(t *testing.T) {
			if _, err := os.Stat(lp.prog); err != nil {
				msg := fmt.Sprintf("%s not installed (install the Debian package %q)", lp.prog, lp.pkg)
				if os.Getenv(fixture.EnvRequireTools) == "1" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			dir := t.TempDir()
			if lp.input != nil {
				if err := lp.input(dir); err != nil {
					t.Fatal(err)
				}
			}
			want := runProc(t, dir, nil, lp.stdin, lp.prog, lp.args...)
			got, prof := blppRun(t, dir, lp.stdin, nil, lp.prog, lp.args...)
			sameBehaviour(t, "blpp run "+lp.name, want, got)
			if t.Failed() {
				return
			}
			row, err := measureShare(t, dir, lp, prof)
			if err != nil {
				t.Logf("share not measured: %v", err)
				return
			}
			mu.Lock()
			rows = append(rows, row)
			mu.Unlock()
		})
	}
}

// measureShare runs the original under callgrind and computes the share
// of its instructions in the instrumented functions of the profile's
// modules.
func measureShare(t *testing.T, dir string, lp libProgram, prof string) (shareRow, error) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	m := processModel(t, prof)
	cgDir := filepath.Join(dir, "callgrind")
	cg, err := callgrind.Run(lp.prog, callgrind.Options{Args: lp.args, Stdin: lp.stdin, Dir: dir, OutDir: cgDir, Timeout: 5 * time.Minute})
	if err != nil {
		return shareRow{}, err
	}
	var exe *report.Module
	for k := range m.Modules {
		if m.Modules[k].Tag == 0 {
			exe = &m.Modules[k]
		}
	}
	if exe == nil {
		return shareRow{}, fmt.Errorf("no executable module")
	}
	plt, err := corpus.PLTRanges(lp.prog)
	if err != nil {
		return shareRow{}, err
	}
	s := corpus.DynamicShareOf(exe.Table, cg, plt)
	ps := corpus.ProcessShareOf(s, cg)
	row := shareRow{name: lp.name, before: ps.Ratio(), executed: int(ps.Executed - ps.PLT)}
	counted, pltAll := s.Counted, ps.PLT
	for k := range m.Modules {
		md := &m.Modules[k]
		if md.Tag == 0 {
			continue
		}
		row.instrMods++
		ob := objectOf(md.Name, cg)
		if ob == "" {
			t.Logf("module %s: callgrind names no such object", md.Name)
			continue
		}
		lcg := cgObject(t, cgDir, ob)
		if lcg == nil {
			continue
		}
		lplt, _ := corpus.PLTRanges(ob)
		ls := corpus.DynamicShareOf(md.Table, lcg, lplt)
		counted += ls.Counted
		pltAll += ls.PLT
	}
	if ps.Executed > pltAll {
		row.now = float64(counted) / float64(ps.Executed-pltAll)
		row.executed = int(ps.Executed - pltAll)
	}
	t.Logf("%s: process share before %.2f%%, now %.2f%% (%d instrumented libraries)", lp.name, 100*row.before, 100*row.now, row.instrMods)
	if row.now < row.before {
		t.Errorf("%s: the share went down: %.2f%% → %.2f%%", lp.name, 100*row.before, 100*row.now)
	}
	return row, nil
}

// objectOf finds callgrind's object for a module: by file name (a copy
// keeps its original's), or as a system library name's target.
func objectOf(name string, cg *callgrind.Profile) string {
	for ob := range cg.ObjectIr {
		if filepath.Base(ob) == name {
			return ob
		}
	}
	return systemObject(name, cg)
}

// writeShareTable prints the table, and writes it to $BLPP_CORPUS_REPORT
// (the CI script prints the files there).
func writeShareTable(t *testing.T, rows []shareRow) {
	if len(rows) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %14s %10s %10s %s\n", "program", "instructions", "before", "now", "instrumented libraries")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-18s %14d %9.2f%% %9.2f%% %d\n", r.name, r.executed, 100*r.before, 100*r.now, r.instrMods)
	}
	t.Logf("process share (instructions of instrumented functions / all outside ld.so and the vDSO):\n%s", b.String())
	if d := os.Getenv("BLPP_CORPUS_REPORT"); d != "" {
		os.WriteFile(filepath.Join(d, "whole-process-share.txt"), []byte(b.String()), 0o644)
	}
}
