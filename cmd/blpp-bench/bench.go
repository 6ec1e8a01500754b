package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/rewriter"
	blppruntime "github.com/blpp/blpp/runtime"
)

// variant is one way of building a workload.
type variant int

const (
	native  variant = iota // cc -O2
	gcov                   // cc -O2 -fprofile-arcs
	flow                   // the native binary rewritten by blpp --no-context: path frequencies, one record per function
	ctx                    // rewritten by blpp with its defaults: calling context tree and path frequencies
	ctxTSC                 // rewritten by blpp --metrics tsc: calling context tree, frequencies and time-stamp counter sums
	ctxS1k                 // --metrics sample:cpu-clock@1000: ctx, and each thread sampled at 1 kHz of its CPU time (decision 92)
	ctxS10k                // --metrics sample:cpu-clock@10000: the same at 10 kHz
	// ctxTSCNoLat is ctx+tsc without latency distributions (--no-latency,
	// decision 93): the tsc mode before them, to measure what they cost.
	// Only measured when --variants names it ("all" leaves it out).
	ctxTSCNoLat
	numVariants
)

// firstSampled is the first sampled variant: "all" stops before them
// (they take as long again), "sampled" names them.
const firstSampled = ctxS1k

var variantNames = [numVariants]string{"native", "gcov", "flow", "ctx", "ctx+tsc", "ctx+s1k", "ctx+s10k", "ctx+tsc-nolat"}

func (v variant) String() string {
	if v >= 0 && v < numVariants {
		return variantNames[v]
	}
	return "variant(" + strconv.Itoa(int(v)) + ")"
}

// isBlpp says whether the variant is a binary rewritten by blpp.
func (v variant) isBlpp() bool { return v >= flow && v < numVariants }

// options are the rewriter options of a blpp variant (what `blpp rewrite`
// does with --no-context, with no flag, and with --metrics tsc).
func (v variant) options() rewriter.Options {
	switch v {
	case flow:
		return rewriter.Options{NoContext: true}
	case ctxTSC:
		return rewriter.Options{Metrics: []rewriter.Metric{{Name: "tsc", Type: blppruntime.MetricTypeTSC}}}
	case ctxTSCNoLat:
		return rewriter.Options{Metrics: []rewriter.Metric{{Name: "tsc", Type: blppruntime.MetricTypeTSC}}, NoLatency: true}
	case ctxS1k, ctxS10k:
		period := uint64(1000000) // ns of thread CPU time per sample
		if v == ctxS10k {
			period = 100000
		}
		return rewriter.Options{Sample: &blppruntime.Sampler{Type: 1, Config: 0, Period: period, Name: blppruntime.MetricName("cpu-clock")}}
	}
	return rewriter.Options{}
}

// parseVariants reads --variants: names of variants besides native, which
// is always measured (every ratio and output check needs it).
func parseVariants(list string) ([]variant, error) {
	want := map[variant]bool{native: true}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || name == "native" {
			continue
		}
		if name == "all" {
			for v := native; v < firstSampled; v++ {
				want[v] = true
			}
			continue
		}
		if name == "sampled" {
			for v := firstSampled; v <= ctxS10k; v++ {
				want[v] = true
			}
			continue
		}
		found := false
		for v := native; v < numVariants; v++ {
			if v.String() == name {
				want[v], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--variants: no variant %q (have %s)", name, strings.Join(variantNames[1:], ", "))
		}
	}
	var vs []variant
	for v := native; v < numVariants; v++ {
		if want[v] {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// workload is one program measured every way: a program of
// testdata/bench, or one of the real suite (real.go).
type workload struct {
	name string
	src  string // C source built natively and with gcov counters; "" for an installed program
	// cflags are src's own compiler flags, in both builds (after it: its
	// libraries too).
	cflags []string
	// cmd is how the timed runs run it, shareCmd how the callgrind run of
	// the dynamic share does (at --share-scale).
	cmd, shareCmd command
	// bins holds the binary of each variant, "" for one not built (gcov
	// of an installed program).
	bins [numVariants]string
	// layouts holds a blpp variant's binaries by layout seed (bins[v] is
	// layouts[v][0]).
	layouts [numVariants][]string

	rewrite [numVariants]time.Duration
	summary [numVariants]*rewriter.Summary
}

// command is a workload's command line, less the program.
type command struct {
	args  []string
	stdin string   // file for standard input ("": none)
	env   []string // added to the environment
}

// sizeCommand is the command line of a testdata/bench workload: its
// size, the only argument.
func sizeCommand(scale int) command { return command{args: []string{strconv.Itoa(scale)}} }

// sample is what one run of one variant cost.
type sample struct {
	wall, cpu time.Duration
	maxRSSKB  int64
}

// outcome is what a run shows the outside world; every variant must show
// the native one's.
type outcome struct {
	stdout, stderr []byte
	code           int
}

func (o outcome) equal(p outcome) bool {
	return o.code == p.code && bytes.Equal(o.stdout, p.stdout) && bytes.Equal(o.stderr, p.stderr)
}

// needCC checks that the C compiler is there.
func (c *config) needCC() error {
	if _, err := exec.LookPath(c.cc); err != nil {
		return fmt.Errorf("compiler %s not found (install the Debian package gcc, or pass --cc)", c.cc)
	}
	return nil
}

// workDir makes a temporary directory (name prefix) to build and run in.
// With --keep it stays and its name goes to stderr ("<what> directory:
// …"); otherwise done removes it.
func (c *config) workDir(prefix, what string) (dir string, done func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	if c.keep {
		fmt.Fprintf(c.stderr, "%s directory: %s\n", what, dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// benchWorkloads builds, runs and reports every selected workload.
func benchWorkloads(c *config) error {
	srcs, err := findWorkloads(c)
	if err != nil {
		return err
	}
	if err := c.needCC(); err != nil {
		return err
	}
	dir, done, err := c.workDir("blpp-bench-", "build")
	if err != nil {
		return err
	}
	defer done()
	rep := c.newReport("")
	for _, v := range c.variants {
		if v == ctxTSC {
			rep.RdtscNS = rdtscNS()
		}
	}
	for _, v := range c.variants {
		rep.Variants = append(rep.Variants, v.String())
	}
	for _, src := range srcs {
		w, err := buildWorkload(c, src, dir)
		if err != nil {
			return err
		}
		res, err := measure(c, w, dir)
		if err != nil {
			return err
		}
		if res.DynamicShare, err = dynamicShare(c, w); err != nil {
			return err
		}
		rep.Workloads = append(rep.Workloads, res)
	}
	return c.finishReport(rep)
}

// findWorkloads returns the workload sources, restricted to --only.
func findWorkloads(c *config) ([]string, error) {
	dir := c.srcDir
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, fmt.Errorf("%w (or pass --src)", err)
		}
		dir = filepath.Join(root, "testdata", "bench")
	}
	all, err := filepath.Glob(filepath.Join(dir, "*.c"))
	if err != nil {
		return nil, err
	}
	sort.Strings(all)
	if len(all) == 0 {
		return nil, fmt.Errorf("no workloads (*.c) in %s", dir)
	}
	if len(c.only) == 0 {
		return all, nil
	}
	var picked []string
	for _, name := range c.only {
		p := filepath.Join(dir, name+".c")
		found := false
		for _, a := range all {
			if a == p {
				found = true
			}
		}
		if !found {
			var names []string
			for _, a := range all {
				names = append(names, strings.TrimSuffix(filepath.Base(a), ".c"))
			}
			return nil, &usageError{fmt.Sprintf("no workload %q (have %s)", name, strings.Join(names, ", "))}
		}
		picked = append(picked, p)
	}
	return picked, nil
}

// moduleRoot is the nearest directory at or above the working directory
// holding go.mod: where `go run ./cmd/blpp-bench` is started from.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or above", wd)
		}
		dir = parent
	}
}

// buildWorkload compiles src natively and, if selected, with gcov
// counters, and rewrites the native binary once per selected blpp variant.
func buildWorkload(c *config, src, dir string) (*workload, error) {
	name := strings.TrimSuffix(filepath.Base(src), ".c")
	w := &workload{name: name, src: src, cmd: sizeCommand(c.scale), shareCmd: sizeCommand(c.shareScale)}
	fmt.Fprintf(c.stderr, "%s: building\n", name)
	bdir := filepath.Join(dir, name)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return nil, err
	}
	w.bins[native] = filepath.Join(bdir, name)
	if err := compile(c.cc, src, w.bins[native]); err != nil {
		return nil, err
	}
	if err := buildVariants(c, w, bdir); err != nil {
		return nil, err
	}
	return w, nil
}

// buildVariants makes the selected variants of w from its native binary,
// in bdir: the gcov build when w has a source, and each blpp variant's
// rewrites, one per layout.
func buildVariants(c *config, w *workload, bdir string) error {
	name := w.name
	var data []byte
	for _, v := range c.variants {
		switch {
		case v == gcov && w.src != "":
			w.bins[gcov] = filepath.Join(bdir, name+".gcov")
			if err := compile(c.cc, w.src, w.bins[gcov], append([]string{"-fprofile-arcs"}, w.cflags...)...); err != nil {
				return err
			}
		case v.isBlpp():
			if data == nil {
				var err error
				if data, err = os.ReadFile(w.bins[native]); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.stderr, "%s: rewriting (%s)\n", name, v)
			for seed := 0; seed < c.layouts; seed++ {
				opts := v.options()
				opts.LayoutSeed = uint64(seed)
				start := time.Now()
				out, sum, err := rewriter.Rewrite(data, opts)
				took := time.Since(start)
				if err != nil {
					return fmt.Errorf("%s: rewrite (%s, layout %d): %w", name, v, seed, err)
				}
				if sum.Instrumented == 0 {
					return fmt.Errorf("%s: rewrite (%s) instrumented no function", name, v)
				}
				bin := filepath.Join(bdir, fmt.Sprintf("%s.%s.%d", name, strings.ReplaceAll(v.String(), "+", "-"), seed))
				if err := os.WriteFile(bin, out, 0o755); err != nil {
					return err
				}
				w.layouts[v] = append(w.layouts[v], bin)
				if seed == 0 {
					w.rewrite[v], w.summary[v], w.bins[v] = took, sum, bin
				}
			}
		}
	}
	return nil
}

// compile builds one executable at -O2 with the compiler's defaults
// otherwise (on Debian: PIE), as a user's release build would be.
func compile(cc, src, out string, extra ...string) error {
	args := append([]string{"-O2", "-o", out, src}, extra...)
	cmd := exec.Command(cc, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// measure runs the built variants of w in turn, warm-up runs first, and
// checks every run against the native output.
func measure(c *config, w *workload, dir string) (*workloadResult, error) {
	res := &workloadResult{Name: w.name}
	var vs []variant
	for _, v := range c.variants {
		if w.bins[v] != "" {
			vs = append(vs, v)
		}
	}
	for _, v := range vs {
		vr := &variantResult{Name: v.String(), v: v}
		if sum := w.summary[v]; sum != nil {
			vr.RewriteMS = ms(w.rewrite[v])
			if res.Functions == 0 || v == ctx {
				res.Functions, res.Instrumented = sum.Functions, sum.Instrumented
			}
		}
		res.Variants = append(res.Variants, vr)
	}
	timeTool := gnuTime()
	var want *outcome
	total := c.warmup + c.runs
	for round := 0; round < total; round++ {
		measured := round >= c.warmup
		if measured {
			fmt.Fprintf(c.stderr, "%s: round %d/%d\n", w.name, round-c.warmup+1, c.runs)
		} else {
			fmt.Fprintf(c.stderr, "%s: warm-up %d/%d\n", w.name, round+1, c.warmup)
		}
		for i, v := range vs {
			wrap := ""
			if !measured {
				wrap = timeTool
			}
			bin, layout := w.bins[v], 0
			if measured && len(w.layouts[v]) > 0 {
				layout = (round - c.warmup) % len(w.layouts[v])
				bin = w.layouts[v][layout]
			}
			s, out, prof, err := runOnce(bin, w.cmd, v, dir, wrap)
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", w.name, v, err)
			}
			if want == nil {
				if out.code != 0 {
					return nil, fmt.Errorf("%s (native): exit status %d\n%s", w.name, out.code, out.stderr)
				}
				want = &out
				res.Output = strings.TrimSpace(string(out.stdout))
			} else if !out.equal(*want) {
				return nil, fmt.Errorf("%s (%s): output differs from native:\nnative: exit %d, %q %q\n%s: exit %d, %q %q",
					w.name, v, want.code, want.stdout, want.stderr, v, out.code, out.stdout, out.stderr)
			}
			vr := res.Variants[i]
			if prof != nil {
				vr.Profile = prof
			}
			if measured {
				vr.WallMS = append(vr.WallMS, ms(s.wall))
				vr.CPUMS = append(vr.CPUMS, ms(s.cpu))
				if v.isBlpp() {
					vr.Layout = append(vr.Layout, layout)
				}
			} else {
				vr.MaxRSSKB = max(vr.MaxRSSKB, s.maxRSSKB)
			}
		}
	}
	res.Matched = true
	return res, nil
}

// runOnce runs bin with cmd in a new directory under dir, which it then
// removes. A blpp variant must leave a readable profile there (returned
// summed up) and the gcov variant a .gcda file: a run that skipped writing
// them would look cheaper than it is.
//
// With timeTool set the run goes through GNU time, which reports the
// peak resident set. The child's own rusage cannot: Go starts children
// with vfork semantics (CLONE_VM), and the kernel carries the high-water
// RSS of the pre-exec address space, the harness's, into the child's
// maxrss. GNU time forks from its own small address space. Wrapping adds a
// process to the run, so only unmeasured (warm-up) runs are wrapped.
func runOnce(bin string, cmd command, v variant, dir, timeTool string) (sample, outcome, *profileInfo, error) {
	rundir, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return sample{}, outcome{}, nil, err
	}
	defer os.RemoveAll(rundir)
	profile := filepath.Join(rundir, "blpp.out")
	env := append(os.Environ(),
		"BLPP_PROFILE="+profile,
		// libgcov writes <GCOV_PREFIX>/<object path less STRIP leading
		// directories>; stripping them all puts the .gcda in rundir.
		"GCOV_PREFIX="+rundir,
		"GCOV_PREFIX_STRIP=1000",
	)
	env = append(env, cmd.env...)
	var s sample
	var out outcome
	rssFile := rundir + ".rss"
	argv := append([]string{bin}, cmd.args...)
	if timeTool != "" {
		argv = append([]string{timeTool, "-f", "%M", "-o", rssFile}, argv...)
		defer os.Remove(rssFile)
	}
	for try := 0; ; try++ {
		run := exec.Command(argv[0], argv[1:]...)
		run.Dir = rundir
		run.Env = env
		var stdout, stderr bytes.Buffer
		run.Stdout, run.Stderr = &stdout, &stderr
		var in *os.File
		if cmd.stdin != "" {
			if in, err = os.Open(cmd.stdin); err != nil {
				return s, out, nil, err
			}
			run.Stdin = in
		}
		start := time.Now()
		err = run.Run()
		if in != nil {
			in.Close()
		}
		s.wall = time.Since(start)
		// Text file busy: a just-written executable may still be open in a
		// child forked meanwhile; the go command retries the same way.
		if err != nil && errors.Is(err, syscall.ETXTBSY) && try < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return s, out, nil, err
		}
		ps := run.ProcessState
		s.cpu = ps.UserTime() + ps.SystemTime()
		out = outcome{stdout.Bytes(), stderr.Bytes(), ps.ExitCode()}
		break
	}
	if timeTool != "" {
		kb, err := readTimeRSS(rssFile)
		if err != nil {
			return s, out, nil, err
		}
		s.maxRSSKB = kb
	}
	var prof *profileInfo
	switch {
	case v.isBlpp():
		if prof, err = readProfile(profile); err != nil {
			return s, out, nil, err
		}
	case v == gcov:
		if m, _ := filepath.Glob(filepath.Join(rundir, "*.gcda")); len(m) == 0 {
			return s, out, nil, fmt.Errorf("no .gcda file written in the run directory")
		}
	}
	return s, out, prof, nil
}

// readProfile reads and validates the profile file name and sums it up.
func readProfile(name string) (*profileInfo, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	p, err := cct.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	info := &profileInfo{
		Bytes:       fi.Size(),
		TimeNS:      p.TimeNS,
		Threads:     len(p.Threads),
		ArenaBytes:  p.Stats[cct.StatArenaBytes],
		RecordBytes: p.Stats["record_bytes"],
		Stats:       p.Stats,
	}
	for _, t := range p.Threads {
		info.Records += len(t.Records)
		for _, r := range t.Records {
			info.Calls += r.Calls
			info.Paths += len(r.Paths)
			for _, pa := range r.Paths {
				info.PathRuns += pa.Count
			}
		}
	}
	return info, nil
}

// readTimeRSS reads the %M (peak RSS, kilobytes) GNU time wrote to file:
// the last line, after any "Command exited with non-zero status" line.
func readTimeRSS(file string) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("time -o: %w", err)
	}
	lines := strings.Fields(strings.TrimSpace(string(data)))
	if len(lines) == 0 {
		return 0, fmt.Errorf("time -o %s: empty", file)
	}
	kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time -o %s: %q is not a size in kilobytes", file, data)
	}
	return kb, nil
}

// gnuTime is the GNU time program, or "" when it is not installed
// (Debian package time).
func gnuTime() string {
	if p, err := exec.LookPath("/usr/bin/time"); err == nil {
		return p
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ccVersion is the first line of `cc --version`.
func ccVersion(cc string) string {
	out, err := exec.Command(cc, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// loadAvg is the one-minute load average, or -1 when unknown. The table
// prints it: on a busy machine wall times mean less than CPU times.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	x, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return x
}

// newReport starts the report of a timing suite ("": the loop kernels)
// with the run's settings and the load before it.
func (c *config) newReport(suite string) *report {
	return &report{Suite: suite, Runs: c.runs, Layouts: c.layouts, Warmup: c.warmup, Scale: c.scale, CC: c.cc, CCVersion: ccVersion(c.cc), CPUs: cpuCount(), LoadBefore: loadAvg()}
}

// finishReport records the load after a suite, sums it up and prints it
// as --json asks.
func (c *config) finishReport(rep *report) error {
	rep.LoadAfter = loadAvg()
	rep.summarise()
	if c.asJSON {
		return writeJSON(c.stdout, rep)
	}
	rep.writeTable(c.stdout)
	return nil
}
