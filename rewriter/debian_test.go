package rewriter_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// debianCase is a real, stripped Debian program and a small workload.
type debianCase struct {
	prog, pkg string
	args      []string
	stdin     string
}

var debianCases = []debianCase{
	{"gzip", "gzip", []string{"-9", "-c"}, strings.Repeat("the quick brown fox jumps over the lazy dog\n", 200)},
	{"bzip2", "bzip2", []string{"-c"}, strings.Repeat("pack my box with five dozen liquor jugs\n", 100)},
	{"sed", "sed", []string{"-e", "s/o/0/g", "-e", "/box/d"}, strings.Repeat("one two box three\nfour five\n", 100)},
	{"grep", "grep", []string{"-c", "-E", "fo+x|do[gz]"}, strings.Repeat("a fox here\nno dogs\nnothing\n", 100)},
	{"sqlite3", "sqlite3", []string{":memory:", "create table t(a,b); insert into t values(1,'x'),(2,'y'),(3,'z'); select a*2, upper(b) from t order by a desc;"}, ""},
	// xz is left out: its reader polls stdin, so which of its blocks run
	// depends on pipe timing, and no two runs agree.
	{"mawk", "mawk", []string{"{ n[$2]++; s += length($0) } END { for (k in n) c++; print s, c, NR }"}, strings.Repeat("alpha beta gamma\ndelta epsilon\n", 100)},
}

// TestDebianBinaries rewrites real stripped Debian programs, runs them on a
// workload and requires identical output and exit status, then compares
// every block count with callgrind's count on the original.
func TestDebianBinaries(t *testing.T) {
	vg := fixture.RequireTool(t, "valgrind", "valgrind")
	_ = vg
	for _, dc := range debianCases {
		dc := dc
		t.Run(dc.prog, func(t *testing.T) {
			path := fixture.RequireTool(t, dc.prog, dc.pkg)
			path, _ = filepath.EvalSymlinks(path)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// callgrind once; the image in both modes (flow-only has
			// closed functions, decision 57).
			cg, err := callgrind.Run(path, callgrind.Options{Args: dc.args, Stdin: []byte(dc.stdin)})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, m := range procModes {
				out, sum, err := rewriter.Rewrite(data, m.opts)
				if err != nil {
					t.Fatalf("rewrite: %v", err)
				}
				inst := filepath.Join(dir, dc.prog+"."+m.name)
				if err := os.WriteFile(inst, out, 0o755); err != nil {
					t.Fatal(err)
				}
				run := func(bin string, env ...string) ([]byte, int) {
					var o bytes.Buffer
					var code int
					for try := 0; try < 20; try++ {
						cmd := exec.Command(bin, dc.args...)
						// The same argv[0] for both: programs scan their own
						// name (basename), which would change the counts.
						cmd.Args[0] = path
						cmd.Stdin = strings.NewReader(dc.stdin)
						cmd.Env = append(os.Environ(), env...)
						o.Reset()
						cmd.Stdout, cmd.Stderr = &o, &o
						err := cmd.Run()
						if err != nil && strings.Contains(err.Error(), "text file busy") {
							continue
						}
						code = cmd.ProcessState.ExitCode()
						break
					}
					return o.Bytes(), code
				}
				want, wcode := run(path)
				prof := filepath.Join(dir, m.name+".out")
				got, gcode := run(inst, "BLPP_PROFILE="+prof)
				if !bytes.Equal(got, want) || gcode != wcode {
					t.Fatalf("%s: behaviour differs: original exit %d, %d bytes; rewritten exit %d, %d bytes", m.name, wcode, len(want), gcode, len(got))
				}
				p, err := cct.ReadFile(prof)
				if err != nil {
					t.Fatal(err)
				}
				tab, f, err := report.LoadMeta(inst)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				doc, err := report.MakePaths(inst, tab, p)
				if err != nil {
					t.Fatal(err)
				}
				checked, bad, partial := 0, 0, 0
				envDependent := readsProcMaps(t, path)
				for _, fn := range doc.Functions {
					if !fn.Instrumented {
						continue
					}
					if envDependent[fn.Entry] {
						// Parses /proc/self/maps: the instrumented process has
						// more mappings, and valgrind's differ again.
						t.Logf("%s: reads /proc/self/maps, not compared", fn.Name)
						continue
					}
					if fn.PartialUnknown > 0 {
						partial++
						continue
					}
					for _, b := range fn.Blocks {
						var addr uint64
						fmtSscan(b.Addr, &addr)
						checked++
						if w := cg.Exec[addr]; w != b.Count {
							bad++
							if bad <= 10 {
								t.Errorf("%s: %s block %s: blpp %d, callgrind %d", m.name, fn.Name, b.Addr, b.Count, w)
							}
						}
					}
				}
				t.Logf("%s %s: %d/%d functions instrumented (%d closed); %d blocks compared, %d differ; %d functions with partial paths of unknown location not compared",
					dc.prog, m.name, sum.Instrumented, sum.Functions, sum.ClosedFunctions, checked, bad, partial)
				if checked == 0 {
					t.Errorf("%s: no block compared with callgrind", m.name)
				}
			}
		})
	}
}

// readsProcMaps is corpus.ReadsProcMaps: the functions of a binary that
// parse /proc/self/maps, whose counts depend on the memory map.
func readsProcMaps(t *testing.T, path string) map[string]bool {
	m, err := corpus.ReadsProcMaps(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
