package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blpp/blpp/cct"
	blppreport "github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// The three builds of the --pgo measurement, in the order each round runs
// them.
const (
	pgoPlain  = "plain"
	pgoSample = "blpp sample-PGO"
	pgoIR     = "clang IR-PGO"
)

// pgoReport is the result of --pgo; --json prints it as is. Times are
// milliseconds; a speedup is the plain build's time over the build's, the
// median of the per-round ratios (above 1: faster than plain).
type pgoReport struct {
	Program    string  `json:"program"`     // the source compiled
	Script     string  `json:"script"`      // the workload script, trained and timed alike
	Scale      int     `json:"scale"`       // its SCALE argument when timed
	TrainScale int     `json:"train_scale"` // and when trained
	CC         string  `json:"cc"`          // the clang command
	CCVersion  string  `json:"cc_version"`
	Runs       int     `json:"runs"`   // measured rounds
	Warmup     int     `json:"warmup"` // unmeasured rounds before them
	CPUs       int     `json:"cpus"`
	LoadBefore float64 `json:"load_before"`
	LoadAfter  float64 `json:"load_after"`

	// Functions and Instrumented are the training build's functions and
	// those blpp rewrite instrumented.
	Functions    int `json:"functions"`
	Instrumented int `json:"instrumented"`
	// SampleProfile sums up blpp's LLVM sample profile: its size, the
	// top-level functions with samples, and clang's diagnostics when it
	// used it (profile mismatches, functions not found).
	SampleProfile struct {
		Bytes     int      `json:"bytes"`
		Functions int      `json:"functions"`
		Warnings  []string `json:"warnings"`
	} `json:"sample_profile"`
	// IRWarnings are clang's diagnostics when it used its own profile.
	IRWarnings []string `json:"ir_warnings"`

	Output string      `json:"output"` // what every build printed (its last line)
	Builds []*pgoTimes `json:"builds"` // plain first
	// Share is blpp's share of IR-PGO's gain: (sample speedup - 1) /
	// (IR speedup - 1), on CPU time; 0 when IR-PGO gained nothing.
	Share     float64 `json:"share"`
	ShareWall float64 `json:"share_wall"` // the same on wall time
}

// pgoTimes are the runs of one build.
type pgoTimes struct {
	Name        string    `json:"name"`
	bin         string    // the executable
	CPUMS       []float64 `json:"cpu_ms"`  // user+system time of each measured run
	WallMS      []float64 `json:"wall_ms"` // wall time of each
	MedianCPUMS float64   `json:"median_cpu_ms"`
	SpeedupCPU  float64   `json:"speedup_cpu"`
	SpeedupWall float64   `json:"speedup_wall"`
}

// pgoFlags are the clang flags of each step. The sample-PGO builds add
// -fdebug-info-for-profiling (discriminators and the line tables a
// sample profile is matched against) to the training build and the
// build that uses the profile alike, as AutoFDO documents.
var (
	pgoBase       = []string{"-O2", "-g"}
	pgoSampleBase = []string{"-O2", "-g", "-fdebug-info-for-profiling"}
)

// benchPGO builds testdata/pgo/tinyvm.c three ways (plain; trained
// by blpp and rebuilt with -fprofile-sample-use; trained by clang's own
// instrumentation and rebuilt with -fprofile-instr-use), checks that every
// build prints the same, and times them in alternating rounds.
func benchPGO(c *config) error {
	for _, tool := range []struct{ cmd, pkg string }{{c.clang, "clang-16"}, {c.profdata, "llvm-16"}} {
		if _, err := exec.LookPath(tool.cmd); err != nil {
			return fmt.Errorf("%s not found (install the Debian package %s)", tool.cmd, tool.pkg)
		}
	}
	src, script, err := pgoSources(c)
	if err != nil {
		return err
	}
	dir, done, err := c.workDir("blpp-bench-pgo-", "build")
	if err != nil {
		return err
	}
	defer done()
	rep := &pgoReport{Program: src, Script: script, Scale: c.pgoScale, TrainScale: c.trainScale, CC: c.clang,
		CCVersion: ccVersion(c.clang), Runs: c.runs, Warmup: c.warmup, CPUs: cpuCount(), LoadBefore: loadAvg()}
	builds, err := buildPGO(c, rep, src, script, dir)
	if err != nil {
		return err
	}
	rep.Builds = builds
	if err := timePGO(c, rep, script, dir); err != nil {
		return err
	}
	rep.LoadAfter = loadAvg()
	if c.asJSON {
		return writeJSON(c.stdout, rep)
	}
	rep.writeTable(c)
	return nil
}

// pgoSources finds the program and its workload script under
// testdata/pgo of the module (or --src).
func pgoSources(c *config) (src, script string, err error) {
	dir := c.srcDir
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", "", fmt.Errorf("%w (or pass --src)", err)
		}
		dir = filepath.Join(root, "testdata", "pgo")
	}
	src, script = filepath.Join(dir, "tinyvm.c"), filepath.Join(dir, "workload.tl")
	for _, f := range []string{src, script} {
		if _, err := os.Stat(f); err != nil {
			return "", "", &usageError{fmt.Sprintf("--pgo: %v", err)}
		}
	}
	return src, script, nil
}

// buildPGO makes the three builds.
func buildPGO(c *config, rep *pgoReport, src, script, dir string) ([]*pgoTimes, error) {
	bin := func(name string) string { return filepath.Join(dir, name) }
	fmt.Fprintln(c.stderr, "pgo: building plain")
	if _, err := clang(c, src, bin("plain"), pgoBase); err != nil {
		return nil, err
	}

	// blpp: rewrite the training build, run the script, export.
	fmt.Fprintln(c.stderr, "pgo: training with blpp")
	if _, err := clang(c, src, bin("train"), pgoSampleBase); err != nil {
		return nil, err
	}
	prof, err := blppTrain(c, rep, bin("train"), script, dir)
	if err != nil {
		return nil, err
	}
	rep.SampleProfile.Bytes = len(prof)
	profFile := bin("blpp.sample.txt")
	if err := os.WriteFile(profFile, prof, 0o644); err != nil {
		return nil, err
	}
	if rep.SampleProfile.Functions, err = sampleFunctions(c, profFile); err != nil {
		return nil, err
	}
	warn, err := clang(c, src, bin("sample"), append(pgoSampleBase, "-fprofile-sample-use="+profFile))
	if err != nil {
		return nil, err
	}
	rep.SampleProfile.Warnings = warn

	// clang's own instrumentation.
	fmt.Fprintln(c.stderr, "pgo: training with clang -fprofile-instr-generate")
	if _, err := clang(c, src, bin("irgen"), append(pgoBase, "-fprofile-instr-generate")); err != nil {
		return nil, err
	}
	raw := bin("ir.profraw")
	if _, err := runPGOScript(bin("irgen"), script, c.trainScale, dir, "LLVM_PROFILE_FILE="+raw); err != nil {
		return nil, fmt.Errorf("IR-PGO training run: %w", err)
	}
	data := bin("ir.profdata")
	if msg, err := exec.Command(c.profdata, "merge", "-o", data, raw).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s merge: %v\n%s", c.profdata, err, msg)
	}
	if rep.IRWarnings, err = clang(c, src, bin("irpgo"), append(pgoBase, "-fprofile-instr-use="+data)); err != nil {
		return nil, err
	}
	return []*pgoTimes{{Name: pgoPlain, bin: bin("plain")}, {Name: pgoSample, bin: bin("sample")}, {Name: pgoIR, bin: bin("irpgo")}}, nil
}

// blppTrain rewrites train as blpp rewrite does, runs the script under it,
// and exports the profile as blpp export --format llvm-sample does. The
// sample profile names source lines, which the rewritten binary's DWARF
// (the original's, kept) gives; no address of the rewritten code is in it.
func blppTrain(c *config, rep *pgoReport, train, script, dir string) ([]byte, error) {
	data, err := os.ReadFile(train)
	if err != nil {
		return nil, err
	}
	out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", train, err)
	}
	rep.Functions, rep.Instrumented = sum.Functions, sum.Instrumented
	inst := train + ".blpp"
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		return nil, err
	}
	profile := filepath.Join(dir, "blpp.out")
	if _, err := runPGOScript(inst, script, c.trainScale, dir, "BLPP_PROFILE="+profile); err != nil {
		return nil, fmt.Errorf("blpp training run: %w", err)
	}
	p, err := cct.ReadFile(profile)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	tab, f, err := blppreport.LoadMeta(inst)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := blppreport.NewModel(inst, tab, p, f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := blppreport.ExportLLVMSample(&buf, m, blppreport.ExportOptions{}); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return buf.Bytes(), nil
}

// sampleFunctions reads a sample profile with llvm-profdata show, as
// clang's reader does, and counts its top-level functions.
func sampleFunctions(c *config, file string) (int, error) {
	out, err := exec.Command(c.profdata, "show", "--sample", file).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s show --sample %s: %v\n%s", c.profdata, file, err, trim(out))
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Function: ") {
			n++
		}
	}
	return n, nil
}

// clang compiles src into out with flags and returns its diagnostics, one
// per line that says "warning:".
func clang(c *config, src, out string, flags []string) ([]string, error) {
	args := append(append([]string(nil), flags...), "-o", out, src)
	cmd := exec.Command(c.clang, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", c.clang, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var warn []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "warning:") {
			warn = append(warn, strings.TrimSpace(l))
		}
	}
	return warn, nil
}

// runPGOScript runs bin on the script at scale in dir with env added, and
// returns what it printed; a failure exit is an error.
func runPGOScript(bin, script string, scale int, dir string, env ...string) (outcome, error) {
	o, _, err := runTimed(bin, script, scale, dir, env...)
	if err == nil && o.code != 0 {
		err = fmt.Errorf("%s: exit status %d: %s", filepath.Base(bin), o.code, trim(o.stderr))
	}
	return o, err
}

// runTimed runs bin on the script and returns what it showed and what it
// cost.
func runTimed(bin, script string, scale int, dir string, env ...string) (outcome, sample, error) {
	cmd := exec.Command(bin, script, strconv.Itoa(scale))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	var s sample
	s.wall = time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return outcome{}, s, err
	}
	ps := cmd.ProcessState
	s.cpu = ps.UserTime() + ps.SystemTime()
	return outcome{stdout.Bytes(), stderr.Bytes(), ps.ExitCode()}, s, nil
}

// timePGO runs the builds in turn, round after round, and checks that
// each prints what plain printed.
func timePGO(c *config, rep *pgoReport, script, dir string) error {
	var want *outcome
	for round := 0; round < c.warmup+c.runs; round++ {
		measured := round >= c.warmup
		if measured {
			fmt.Fprintf(c.stderr, "pgo: round %d/%d\n", round-c.warmup+1, c.runs)
		} else {
			fmt.Fprintf(c.stderr, "pgo: warm-up %d/%d\n", round+1, c.warmup)
		}
		for _, b := range rep.Builds {
			o, s, err := runTimed(b.bin, script, c.pgoScale, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", b.Name, err)
			}
			if want == nil {
				if o.code != 0 {
					return fmt.Errorf("%s: exit status %d: %s", b.Name, o.code, trim(o.stderr))
				}
				want = &o
				rep.Output = lastLine(o.stdout)
			} else if !o.equal(*want) {
				return fmt.Errorf("%s: output differs from plain's: exit %d, stdout %q; plain: exit %d, stdout %q",
					b.Name, o.code, trim(o.stdout), want.code, trim(want.stdout))
			}
			if measured {
				b.CPUMS = append(b.CPUMS, ms(s.cpu))
				b.WallMS = append(b.WallMS, ms(s.wall))
			}
		}
	}
	plain := rep.Builds[0]
	for _, b := range rep.Builds {
		b.MedianCPUMS = median(b.CPUMS)
		// speedup = plain/b: the reciprocal of b's ratio to plain.
		if r := pairedRatio(b.CPUMS, plain.CPUMS); r > 0 {
			b.SpeedupCPU = 1 / r
		}
		if r := pairedRatio(b.WallMS, plain.WallMS); r > 0 {
			b.SpeedupWall = 1 / r
		}
	}
	rep.Share = gainShare(rep.Builds[1].SpeedupCPU, rep.Builds[2].SpeedupCPU)
	rep.ShareWall = gainShare(rep.Builds[1].SpeedupWall, rep.Builds[2].SpeedupWall)
	return nil
}

// gainShare is (s-1)/(ref-1): how much of ref's gain s has; 0 when ref
// gained nothing.
func gainShare(s, ref float64) float64 {
	if ref <= 1 {
		return 0
	}
	return (s - 1) / (ref - 1)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func (r *pgoReport) writeTable(c *config) {
	w := c.stdout
	fmt.Fprintf(w, "PGO on %s running %s (SCALE %d; trained at SCALE %d), %s\n",
		filepath.Base(r.Program), filepath.Base(r.Script), r.Scale, r.TrainScale, r.CCVersion)
	rows := [][]string{{"build", "cpu (median)", "speedup (cpu)", "speedup (wall)"}}
	for _, b := range r.Builds {
		rows = append(rows, []string{b.Name, fmtMS(b.MedianCPUMS), fmtSpeedup(b.SpeedupCPU), fmtSpeedup(b.SpeedupWall)})
	}
	printRows(w, rows, false)
	fmt.Fprintf(w, "blpp's share of IR-PGO's gain: %.0f%% on cpu time, %.0f%% on wall time\n", 100*r.Share, 100*r.ShareWall)
	fmt.Fprintf(w, "%s, %s of each build alternating; every run printed the plain build's output\n",
		plural(r.Runs, "measured round"), plural(r.Warmup, "warm-up round"))
	fmt.Fprintf(w, "blpp: %d of %d functions instrumented; sample profile %d KB, %s; clang warnings with it: %d (IR-PGO: %d)\n",
		r.Instrumented, r.Functions, r.SampleProfile.Bytes/1024, plural(r.SampleProfile.Functions, "function"),
		len(r.SampleProfile.Warnings), len(r.IRWarnings))
	for _, l := range r.SampleProfile.Warnings {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "%d CPUs, load %s before, %s after\n", r.CPUs, fmtLoad(r.LoadBefore), fmtLoad(r.LoadAfter))
}

func fmtSpeedup(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f×", x)
}
