package corpus_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// entry is one program of testdata/corpus/corpus.json; the file's header
// comment documents the fields.
type entry struct {
	Name    string   `json:"name"`
	Path    string   `json:"path"`
	Package string   `json:"package"`
	Args    []string `json:"args"`
	Stdin   string   `json:"stdin"`
	Inputs  []input  `json:"inputs"`
	Writes  []string `json:"writes"`
	CXX     bool     `json:"cxx"`
	Static  bool     `json:"static"`
	Threads bool     `json:"threads"`
	Throws  bool     `json:"throws"`
	Fast    bool     `json:"fast"`
	// Callgrind is "fast" (under a minute: block counts are checked) or
	// "slow" (not checked).
	Callgrind string `json:"callgrind"`
	// CallgrindSeconds is the measured duration of the callgrind run, for
	// the table; the test prints the actual one.
	CallgrindSeconds float64 `json:"callgrind_seconds"`
	TimeoutSeconds   int     `json:"timeout_seconds"`
	// Varies, when set, says why the program's work under valgrind
	// differs from its native work (environment, addresses, time,
	// CPUID, thread schedule): its original's callgrind counts are then
	// not compared with the profile. The same-run oracle compares every
	// block either way.
	Varies string `json:"varies"`
	// MinShare is the least dynamic share the program must reach: the
	// executed instructions of the executable, PLT stubs aside, that
	// lie in instrumented functions (issue 23's target: 0.995).
	MinShare float64 `json:"min_share"`
	// Partial names functions of this program whose activations the
	// runtime records as partial paths of unknown location, with the
	// diagnosis; their blocks are still compared as lower bounds.
	Partial map[string]string `json:"partial"`
	Known   *known            `json:"known_failure"`
	// Env is added to the environment of every run (native, rewritten,
	// callgrind).
	Env map[string]string `json:"env"`
}

// known documents why a program cannot pass yet. The test still runs it;
// it is excused (skipped under BLPP_CORPUS_KNOWN=skip, else failed) only
// when every one of its problems matches one of Symptoms, and fails when
// it passes.
type known struct {
	Reason   string   `json:"reason"`
	Symptoms []string `json:"symptoms"` // regular expressions
	// Intermittent: the failure depends on the run (seeds taken from
	// the time or addresses), so a pass is logged, not an error.
	Intermittent bool `json:"intermittent"`
}

// input is a file created in the work directory: committed (File, relative
// to testdata/corpus/inputs), inline (Text) or generated (Gen).
type input struct {
	Name string `json:"name"`
	File string `json:"file"`
	Text string `json:"text"`
	// Gen "words": Lines lines of ten words drawn by a PCG seeded with
	// Seed; EditEvery > 0 replaces every EditEvery-th line (for diff).
	Gen       string `json:"gen"`
	Lines     int    `json:"lines"`
	Seed      uint64 `json:"seed"`
	EditEvery int    `json:"edit_every"`
}

type corpusFile struct {
	Comment []string `json:"comment"`
	Entries []entry  `json:"programs"`
}

// fixedTime is given to every input file and directory, so that archivers
// that store times write the same bytes in every run.
var fixedTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func loadCorpus(t *testing.T) (entries []entry, root string) {
	root = filepath.Join(fixture.Root(t), "testdata", "corpus")
	data, err := os.ReadFile(filepath.Join(root, "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cf corpusFile
	if err := json.Unmarshal(data, &cf); err != nil {
		t.Fatalf("corpus.json: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range cf.Entries {
		switch {
		case e.Name == "" || e.Path == "" || e.Package == "":
			t.Fatalf("corpus.json: entry %q needs name, path and package", e.Name)
		case seen[e.Name]:
			t.Fatalf("corpus.json: %s listed twice", e.Name)
		case e.Callgrind != "fast" && e.Callgrind != "slow":
			t.Fatalf("corpus.json: %s: callgrind must be fast or slow, not %q", e.Name, e.Callgrind)
		case e.Known != nil && (e.Known.Reason == "" || len(e.Known.Symptoms) == 0):
			t.Fatalf("corpus.json: %s: a known failure needs a reason and symptoms", e.Name)
		}
		if e.Known != nil {
			for _, p := range e.Known.Symptoms {
				if _, err := regexp.Compile(p); err != nil {
					t.Fatalf("corpus.json: %s: symptom: %v", e.Name, err)
				}
			}
		}
		seen[e.Name] = true
	}
	return cf.Entries, root
}

// selectEntries applies BLPP_CORPUS: "fast", "all" (or unset), or a
// comma-separated list of names.
func selectEntries(t *testing.T, all []entry) []entry {
	sel := os.Getenv("BLPP_CORPUS")
	switch sel {
	case "", "all":
		return all
	case "fast":
		var out []entry
		for _, e := range all {
			if e.Fast {
				out = append(out, e)
			}
		}
		return out
	}
	var out []entry
	for _, name := range strings.Split(sel, ",") {
		found := false
		for _, e := range all {
			if e.Name == name {
				out, found = append(out, e), true
			}
		}
		if !found {
			t.Fatalf("BLPP_CORPUS: no corpus entry %q", name)
		}
	}
	return out
}

// result is one row of the corpus table.
type result struct {
	e                   entry
	instrumented, total int
	same                string // behaviour identical: yes, no, -
	exact               string // same-run oracle: yes, no, not checked
	origExact           string // original under callgrind: yes, no, not compared, -
	dynShare            float64
	procShare           float64 // whole process, the loader aside (issue 25's gauge)
	rewriteDur          time.Duration
	nativeDur, instDur  time.Duration
	cgDur               time.Duration
	skipped             int // instrumented functions not compared with callgrind
	verdict             string
}

// TestCorpus rewrites every selected corpus program, runs original and
// rewritten copy on the workload, requires identical stdout, stderr, exit
// status and written files, reports the share of functions instrumented
// (at least 95% required), and compares block counts with callgrind's for
// the programs whose callgrind run is short.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus: long test; not under -short")
	}
	all, root := loadCorpus(t)
	entries := selectEntries(t, all)
	var mu sync.Mutex
	var results []result
	start := time.Now()
	t.Run("programs", func(t *testing.T) {
		for _, e := range entries {
			t.Run(e.Name, func(t *testing.T) {
				t.Parallel()
				r := &result{e: e, same: "-", exact: "not checked", origExact: "-", dynShare: -1, procShare: -1, verdict: "FAIL"}
				defer func() {
					if t.Skipped() && e.Known != nil && r.total > 0 {
						r.verdict = "known failure (skipped)"
					} else if t.Skipped() {
						r.verdict = "skipped"
					}
					mu.Lock()
					results = append(results, *r)
					mu.Unlock()
				}()
				checkEntry(t, e, root, r)
			})
		}
	})
	sort.Slice(results, func(i, j int) bool { return results[i].e.Name < results[j].e.Name })
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "program\tpackage\tkind\tinstrumented\tstatic share\tdynamic share\tprocess share\tsame behaviour\texact (same run)\texact (original)\trewrite\tnative\trewritten\tcallgrind\tresult")
	for _, r := range results {
		var kind []string
		for _, k := range []struct {
			on   bool
			name string
		}{{r.e.CXX, "C++"}, {r.e.Static, "static"}, {r.e.Threads, "threads"}, {r.e.Throws, "throws"}} {
			if k.on {
				kind = append(kind, k.name)
			}
		}
		if len(kind) == 0 {
			kind = []string{"C"}
		}
		share := "-"
		if r.total > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(r.instrumented)/float64(r.total))
		}
		cg := "-"
		if r.cgDur > 0 {
			cg = r.cgDur.Round(100 * time.Millisecond).String()
		} else if r.e.Callgrind == "slow" {
			cg = fmt.Sprintf("~%.0fs (slow)", r.e.CallgrindSeconds)
		}
		dyn := "-"
		if r.dynShare >= 0 {
			dyn = fmt.Sprintf("%.3f%%", 100*r.dynShare)
		}
		proc := "-"
		if r.procShare >= 0 {
			proc = fmt.Sprintf("%.3f%%", 100*r.procShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.e.Name, r.e.Package, strings.Join(kind, ","),
			r.instrumented, r.total, share, dyn, proc, r.same, r.exact, r.origExact, r.rewriteDur.Round(10*time.Millisecond),
			r.nativeDur.Round(time.Millisecond), r.instDur.Round(time.Millisecond), cg, r.verdict)
	}
	tw.Flush()
	fmt.Fprintf(&b, "%d programs in %v\n", len(results), time.Since(start).Round(time.Second))
	t.Logf("corpus:\n%s", b.String())
	if err := writeReport("corpus.txt", b.String()); err != nil {
		t.Error(err)
	}
}

// checkEntry runs one corpus program and fills in its table row r. Problems
// are collected rather than failed at once, so that a known failure can be
// told apart from a new one.
func checkEntry(t *testing.T, e entry, root string, r *result) {
	path := fixture.RequireTool(t, e.Path, e.Package)
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	var problems []string
	defer func() { r.verdict = judge(t, e, problems) }()

	tmp := t.TempDir()
	inst := filepath.Join(tmp, "bin", e.Name+".blpp")
	t0 := time.Now()
	sum, _, err := rewriteFile(path, inst)
	r.rewriteDur = time.Since(t0)
	if err != nil {
		problems = append(problems, "rewrite: "+err.Error())
		return
	}
	r.instrumented, r.total = sum.Instrumented, sum.Functions
	share := float64(sum.Instrumented) / float64(max(sum.Functions, 1))
	t.Logf("%s: %d/%d functions instrumented (%.1f%%), rewrite %v", e.Name, sum.Instrumented, sum.Functions, 100*share, r.rewriteDur.Round(time.Millisecond))
	if share < 0.95 {
		problems = append(problems, fmt.Sprintf("only %.1f%% of functions instrumented (target 95%%)", 100*share))
	}

	work := filepath.Join(tmp, "work")
	home := filepath.Join(tmp, "home")
	profDir := filepath.Join(tmp, "prof")
	for _, d := range []string{filepath.Dir(inst), profDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The same directory and HOME for every run, so that paths a program
	// prints or stores agree.
	env := []string{"HOME=" + home, "LC_ALL=C", "LANG=C", "TZ=UTC", "BLPP_QUIET=1", "PWD=" + work}
	// valgrind adds these to its client's environment, and LD_PRELOAD
	// with its preload library; every run gets them (the rewritten copy's
	// an empty LD_PRELOAD, callgrind's the rewritten copy's BLPP_PROFILE),
	// so that programs that walk their environment (gawk's ENVIRON) do the
	// same work natively and under callgrind.
	env = append(env, "LD_LIBRARY_PATH=/usr/lib/debug", "GLIBCPP_FORCE_NEW=1", "GLIBCXX_FORCE_NEW=1")
	for _, k := range sortedKeys(e.Env) {
		env = append(env, k+"="+e.Env[k])
	}
	timeout := time.Duration(max(e.TimeoutSeconds, 60)) * time.Second
	prepare := func() []byte {
		for _, d := range []string{work, home} {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		stdin, err := makeInputs(work, root, e)
		if err != nil {
			t.Fatalf("inputs: %v", err)
		}
		return stdin
	}
	spec := runSpec{Argv0: path, Args: e.Args, Dir: work, Env: env, Timeout: timeout}

	spec.Bin, spec.Stdin = path, prepare()
	want := run(spec)
	r.nativeDur = want.Dur
	if want.Err != nil || want.TimedOut {
		t.Fatalf("original: %s", want.status())
	}
	wantFiles, err := snapshot(work, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range e.Writes {
		if _, ok := wantFiles[w]; !ok {
			t.Errorf("corpus.json: %s should write %s but did not", e.Name, w)
		}
	}

	// Forked children write blpp.out.PID beside blpp.out.
	prof := filepath.Join(profDir, "blpp.out")
	spec.Bin, spec.Stdin = inst, prepare()
	instEnv := func(prof string) []string {
		return append(env[:len(env):len(env)], "BLPP_PROFILE="+prof, "LD_PRELOAD=")
	}
	spec.Env = instEnv(prof)
	got := run(spec)
	r.instDur = got.Dur
	gotFiles, err := snapshot(work, nil)
	if err != nil {
		t.Fatal(err)
	}
	diffs := append(compareOutcomes(want, got), diffSnapshots(wantFiles, gotFiles)...)
	if len(diffs) > 0 {
		r.same = "no"
		problems = append(problems, diffs...)
		return
	}
	r.same = "yes"
	if _, err := os.Stat(prof); err != nil {
		problems = append(problems, "the rewritten copy wrote no profile")
	}
	t.Logf("%s: same behaviour (%s, %d bytes out, %d bytes err, %d files); native %v, rewritten %v",
		e.Name, want.status(), len(want.Stdout), len(want.Stderr), len(wantFiles), want.Dur.Round(time.Millisecond), got.Dur.Round(time.Millisecond))

	if e.Callgrind != "fast" {
		t.Logf("%s: callgrind takes about %.0f s: block counts not checked", e.Name, e.CallgrindSeconds)
		return
	}
	fixture.RequireTool(t, "valgrind", "valgrind")
	// The same-run oracle: the rewritten copy under callgrind, its
	// profile against callgrind's counts of its own relocated code.
	// Every block of every instrumented function is compared.
	t0 = time.Now()
	sr, scg, err := corpus.RunSameRun(inst, filepath.Join(tmp, "samerun"), callgrind.Options{Args: e.Args, Stdin: prepare(), Env: env, Dir: work, Timeout: 3 * time.Minute})
	r.cgDur = time.Since(t0)
	if err != nil {
		problems = append(problems, "same-run callgrind: "+err.Error())
		return
	}
	if scg.ExitCode != want.Code {
		t.Logf("%s: exit status %d under callgrind, %d natively", e.Name, scg.ExitCode, want.Code)
	}
	t.Logf("%s: same run: %d functions, %d blocks compared, %d differ; %d with partial paths of unknown location (lower bounds, %d executions uncounted) %v; %d profiles of processes that exec'd",
		e.Name, sr.Funcs, sr.Blocks, len(sr.Diffs), len(sr.Partial), sr.Missing, sr.Partial, sr.Execs)
	if len(sr.Late) > 0 {
		problems = append(problems, "same run: ran after the final profile was written (in no profile): "+lateString(sr.Late, 10))
	}
	if sr.Prefix > 0 {
		t.Logf("%s: %d executions of original instructions before moved entry jumps (decision 67; in no block)", e.Name, sr.Prefix)
	}
	if sr.Blocks == 0 {
		problems = append(problems, "same run: no block compared")
	}
	r.exact = "yes"
	if !sr.Exact() {
		r.exact = "no"
		problems = append(problems, diffProblems("same run", sr.Diffs)...)
	}
	for _, f := range sr.Partial {
		_, known := knownPartial[f]
		if why, ok := e.Partial[f]; ok {
			known = true
			t.Logf("%s: %s has partial paths of unknown location (known: %s)", e.Name, f, why)
		}
		if !known {
			problems = append(problems, fmt.Sprintf("same run: %s has partial paths of unknown location", f))
		}
	}

	// The original under callgrind: the dynamic share, and, where the
	// program does the same work natively and under valgrind, the
	// original-vs-callgrind comparison as well.
	cg, err := callgrind.Run(path, callgrind.Options{Args: e.Args, Stdin: prepare(), Env: append(env[:len(env):len(env)], "BLPP_PROFILE="+prof), Dir: work, Timeout: 3 * time.Minute})
	if err != nil {
		problems = append(problems, "callgrind: "+err.Error())
		return
	}
	if tab, f, err := report.LoadMeta(inst); err == nil {
		plt, _ := corpus.PLTRanges(path)
		sh := corpus.DynamicShareOf(tab, cg, plt)
		f.Close()
		r.dynShare = sh.Ratio()
		var b strings.Builder
		sh.Write(&b, 5)
		ps := corpus.ProcessShareOf(sh, cg)
		r.procShare = ps.Ratio()
		ps.Write(&b, 4)
		t.Logf("%s: %s", e.Name, b.String())
		if r.dynShare < e.MinShare {
			problems = append(problems, fmt.Sprintf("dynamic share %.3f%%, below the %.1f%% corpus.json asks: %s", 100*r.dynShare, 100*e.MinShare, strings.TrimSpace(b.String())))
		}
	} else {
		problems = append(problems, "metadata: "+err.Error())
	}
	if e.Varies != "" {
		r.origExact = "not compared"
		t.Logf("%s: the original's callgrind counts are not compared: %s", e.Name, e.Varies)
		return
	}
	files, _ := filepath.Glob(prof + "*")
	ex, err := corpus.CheckExact(path, inst, files, cg, nil)
	if err != nil {
		problems = append(problems, "profile: "+err.Error())
		return
	}
	t.Logf("%s: original under callgrind: %d functions, %d blocks compared, %d differ; not compared: %d with partial paths of unknown location %v, %d reading /proc/self/maps",
		e.Name, ex.Funcs, ex.Blocks, len(ex.Diffs), len(ex.Partial), ex.Partial, len(ex.Env))
	r.skipped = len(ex.Partial) + len(ex.Env)
	if ex.Blocks == 0 {
		problems = append(problems, "original: no block compared with callgrind")
	}
	r.origExact = "yes"
	if !ex.Exact() {
		r.origExact = "no"
		problems = append(problems, diffProblems("original", ex.Diffs)...)
	}
	if r.skipped > 0 {
		r.origExact += fmt.Sprintf(" (%d/%d funcs)", ex.Funcs, ex.Funcs+r.skipped)
	}
}

// diffProblems makes one problem line per function with differing
// blocks: how many, and the first.
func diffProblems(what string, diffs []corpus.BlockDiff) []string {
	type fd struct {
		n     int
		first corpus.BlockDiff
	}
	var order []string
	funcs := map[string]*fd{}
	for _, d := range diffs {
		if funcs[d.Func] == nil {
			funcs[d.Func] = &fd{first: d}
			order = append(order, d.Func)
		}
		funcs[d.Func].n++
	}
	var out []string
	for i, name := range order {
		if i == 15 {
			out = append(out, fmt.Sprintf("inexact (%s): ... %d more functions", what, len(order)-15))
			break
		}
		f := funcs[name]
		out = append(out, fmt.Sprintf("inexact (%s): %s: %d blocks differ, first %s", what, name, f.n, diffString(f.first)))
	}
	return out
}

// judge reports problems as failures unless they are the entry's
// documented known failure, and returns the table's verdict.
func judge(t *testing.T, e entry, problems []string) string {
	t.Helper()
	if len(problems) == 0 {
		if e.Known != nil && e.Known.Intermittent {
			t.Logf("%s passed this time; its known failure (%s) is intermittent", e.Name, e.Known.Reason)
			return "pass (intermittent known failure)"
		}
		if e.Known != nil {
			t.Errorf("%s is listed as a known failure (%s) but passes: remove known_failure from testdata/corpus/corpus.json", e.Name, e.Known.Reason)
			return "FAIL (known failure passes)"
		}
		if t.Failed() {
			return "FAIL"
		}
		return "pass"
	}
	if e.Known != nil && allMatch(problems, e.Known.Symptoms) {
		msg := fmt.Sprintf("known failure (%s):\n  %s", e.Known.Reason, strings.Join(problems, "\n  "))
		if os.Getenv("BLPP_CORPUS_KNOWN") == "skip" {
			t.Log(msg)
			t.Skip("known failure; BLPP_CORPUS_KNOWN=skip")
		}
		t.Error(msg + "\n(BLPP_CORPUS_KNOWN=skip excuses documented known failures)")
		return "KNOWN FAIL"
	}
	if e.Known != nil {
		t.Errorf("%s fails beyond its documented known failure (%s)", e.Name, e.Known.Reason)
	}
	for _, p := range problems {
		t.Error(p)
	}
	return "FAIL"
}

// makeInputs creates e's inputs in work, gives every file and directory
// the fixed time, and returns the standard input (nil: /dev/null).
func makeInputs(work, root string, e entry) ([]byte, error) {
	for _, in := range e.Inputs {
		var data []byte
		switch {
		case in.File != "":
			b, err := os.ReadFile(filepath.Join(root, "inputs", in.File))
			if err != nil {
				return nil, err
			}
			data = b
		case in.Gen == "words":
			data = genWords(in.Lines, in.Seed, in.EditEvery)
		case in.Gen != "":
			return nil, fmt.Errorf("%s: unknown generator %q", in.Name, in.Gen)
		default:
			data = []byte(in.Text)
		}
		p := filepath.Join(work, filepath.FromSlash(in.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
	}
	// Files before their directories: setting a file's time leaves its
	// directory's alone, and the walk visits directories first.
	var paths []string
	err := filepath.Walk(work, func(p string, _ os.FileInfo, err error) error {
		paths = append(paths, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := os.Chtimes(paths[i], fixedTime, fixedTime); err != nil {
			return nil, err
		}
	}
	if e.Stdin == "" {
		return nil, nil
	}
	return os.ReadFile(filepath.Join(work, filepath.FromSlash(e.Stdin)))
}

var words = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
	"iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"}

// genWords makes lines of ten words; with editEvery > 0 every
// editEvery-th line is replaced by another (two files from one seed then
// differ in a few hunks).
func genWords(lines int, seed uint64, editEvery int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x626c7070))
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		line := make([]string, 10)
		for j := range line {
			line[j] = words[rng.IntN(len(words))]
		}
		if editEvery > 0 && i%editEvery == 0 {
			line = []string{"edited", "line", fmt.Sprint(i)}
		}
		b.WriteString(strings.Join(line, " "))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// allMatch reports whether every problem matches one of the patterns.
func allMatch(problems, patterns []string) bool {
	for _, p := range problems {
		ok := false
		for _, pat := range patterns {
			if regexp.MustCompile(pat).MatchString(p) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
