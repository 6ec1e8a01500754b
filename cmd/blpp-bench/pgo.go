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
	"time"
)

// The builds of the --pgo measurement, in the order each round runs
// them.
const (
	pgoPlain   = "plain"
	pgoLines   = "blpp sample-PGO, lines"
	pgoProbes  = "blpp sample-PGO, probes"
	pgoIR      = "clang IR-PGO"
	pgoBolt    = "blpp + BOLT"
	pgoBoltOwn = "BOLT's own + BOLT"
)

// pgoReport is the result of --pgo; --json prints it as is. Times are
// milliseconds; a speedup is the plain build's time over the build's, the
// median of the per-round ratios (above 1: faster than plain).
type pgoReport struct {
	Program    string  `json:"program"`     // lua5.4 or tinyvm
	Version    string  `json:"version"`     // its release, when it has one
	Script     string  `json:"script"`      // the workload script, trained and timed alike
	Scale      int     `json:"scale"`       // its SCALE argument when timed
	TrainScale int     `json:"train_scale"` // and when trained
	CC         string  `json:"cc"`          // the clang command
	LTO        string  `json:"lto"`         // --pgo-lto of every build: none or thin
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
	// Lines and Probes sum up blpp's two LLVM sample profiles.
	Lines  pgoSampleProfile `json:"lines"`
	Probes pgoSampleProfile `json:"probes"`
	// IRWarnings are clang's diagnostics when it used its own profile.
	IRWarnings []string `json:"ir_warnings"`
	// Bolt and BoltOwn are what llvm-bolt said of blpp's profile and of
	// the one its own instrumentation wrote.
	Bolt    boltResult `json:"bolt"`
	BoltOwn boltResult `json:"bolt_own"`

	Output string      `json:"output"` // what every build printed (its last line)
	Builds []*pgoTimes `json:"builds"` // plain first
}

// pgoSampleProfile sums up one of blpp's LLVM sample profiles: its size,
// the top-level functions llvm-profdata reads in it and whether it read it
// as probe-based, clang's diagnostics when it used it (profile mismatches,
// functions not found), and its entry counts against clang's
// instrumentation's.
type pgoSampleProfile struct {
	Bytes      int        `json:"bytes"`
	Functions  int        `json:"functions"`
	ProbeBased bool       `json:"probe_based"`
	Warnings   []string   `json:"warnings"`
	Entries    pgoEntries `json:"entries"`
}

// pgoTimes are the runs of one build.
type pgoTimes struct {
	Name        string    `json:"name"`
	bin         string    // the executable
	Flags       []string  `json:"flags"`   // clang's flags for it (for BOLT's builds, for the binary BOLT optimized)
	CPUMS       []float64 `json:"cpu_ms"`  // user+system time of each measured run
	WallMS      []float64 `json:"wall_ms"` // wall time of each
	MedianCPUMS float64   `json:"median_cpu_ms"`
	SpeedupCPU  float64   `json:"speedup_cpu"`
	// SpeedupQ1 and SpeedupQ3 are the quartiles of the per-round ratios
	// on CPU time: how much the rounds agree.
	SpeedupQ1   float64 `json:"speedup_q1"`
	SpeedupQ3   float64 `json:"speedup_q3"`
	SpeedupWall float64 `json:"speedup_wall"`
	// Share is the build's share of IR-PGO's gain: (speedup - 1) / (IR
	// speedup - 1), on CPU time; 0 when IR-PGO gained nothing.
	Share     float64 `json:"share"`
	ShareWall float64 `json:"share_wall"` // the same on wall time
}

// benchPGO builds the program --pgo-program names (Lua 5.4 built from
// Debian's source, or testdata/pgo/tinyvm.c) five ways: plain; trained by
// blpp and rebuilt with clang -fprofile-sample-use; trained by clang's own
// instrumentation and rebuilt with -fprofile-instr-use; optimized by
// llvm-bolt with blpp's profile; and, for reference, by llvm-bolt with its
// own instrumentation's profile. --pgo-builds picks the builds besides
// plain and IR-PGO, --pgo-lto the link of all of them. It checks that every
// build prints the same and times them in alternating rounds.
func benchPGO(c *config) error {
	if c.pgoLTO == pgoLTOThin {
		if _, err := exec.LookPath("ld.gold"); err != nil {
			return fmt.Errorf("--pgo-lto %s: ld.gold not found (install the Debian package binutils)", pgoLTOThin)
		}
	}
	for _, tool := range []struct{ cmd, pkg string }{{c.clang, "clang-16"}, {c.profdata, "llvm-16"}} {
		if _, err := exec.LookPath(tool.cmd); err != nil {
			return fmt.Errorf("%s not found (install the Debian package %s)", tool.cmd, tool.pkg)
		}
	}
	if c.bolt == "" {
		c.bolt = defaultBolt()
	}
	if _, err := exec.LookPath(c.bolt); err != nil && c.pgoBuilds[pgoBuildBolt] {
		return fmt.Errorf("llvm-bolt not found at %q (install the Debian package bolt-16, or pass --llvm-bolt)", c.bolt)
	}
	dir, done, err := c.workDir("blpp-bench-pgo-", "build")
	if err != nil {
		return err
	}
	defer done()
	prog, err := pgoProgramFor(c, dir)
	if err != nil {
		return err
	}
	rep := &pgoReport{Program: prog.Name, Version: prog.Version, Script: prog.Script, Scale: c.pgoScale, TrainScale: c.trainScale,
		CC: c.clang, LTO: c.pgoLTO, CCVersion: ccVersion(c.clang), Runs: c.runs, Warmup: c.warmup, CPUs: cpuCount(), LoadBefore: loadAvg()}
	builds, err := buildPGO(c, rep, prog, dir)
	if err != nil {
		return err
	}
	rep.Builds = builds
	if err := timePGO(c, rep, prog.Script, dir); err != nil {
		return err
	}
	rep.LoadAfter = loadAvg()
	if c.asJSON {
		return writeJSON(c.stdout, rep)
	}
	rep.writeTable(c)
	return nil
}

// defaultBolt is LLVM 16's llvm-bolt: Debian's llvm-bolt-16 symlink does
// not find BOLT's runtime libraries, which -instrument needs; the binary
// in LLVM's bindir does.
func defaultBolt() string {
	out, err := exec.Command("llvm-config-16", "--bindir").Output()
	if err != nil {
		return "/usr/lib/llvm-16/bin/llvm-bolt"
	}
	return filepath.Join(strings.TrimSpace(string(out)), "llvm-bolt")
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
		// Each round starts with another build, so that no build always
		// runs right after the same one.
		for k := range rep.Builds {
			b := rep.Builds[(k+round)%len(rep.Builds)]
			o, s, err := runTimed(b.bin, script, c.pgoScale, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", b.Name, err)
			}
			if want == nil {
				// The first run of all is plain's (round 0, k 0).
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
		b.SpeedupQ1, b.SpeedupQ3 = speedupQuartiles(plain.CPUMS, b.CPUMS)
	}
	var ir *pgoTimes
	for _, b := range rep.Builds {
		if b.Name == pgoIR {
			ir = b
		}
	}
	for _, b := range rep.Builds {
		if ir != nil {
			b.Share, b.ShareWall = gainShare(b.SpeedupCPU, ir.SpeedupCPU), gainShare(b.SpeedupWall, ir.SpeedupWall)
		}
	}
	return nil
}

// speedupQuartiles are the first and third quartiles of base[i]/xs[i]
// (nearest rank), 0 when there is no pair.
func speedupQuartiles(base, xs []float64) (q1, q3 float64) {
	var rs []float64
	for i := range xs {
		if i < len(base) && xs[i] > 0 {
			rs = append(rs, base[i]/xs[i])
		}
	}
	if len(rs) == 0 {
		return 0, 0
	}
	sort.Float64s(rs)
	return rs[(len(rs)-1)/4], rs[(3*(len(rs)-1)+3)/4]
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
	name := r.Program
	if r.Version != "" {
		name += " (" + r.Version + ")"
	}
	lto := ""
	if r.LTO == pgoLTOThin {
		lto = ", every build with ThinLTO"
	}
	fmt.Fprintf(w, "PGO on %s running %s (SCALE %d; trained at SCALE %d), %s%s\n",
		name, filepath.Base(r.Script), r.Scale, r.TrainScale, r.CCVersion, lto)
	rows := [][]string{{"build", "cpu (median)", "speedup (cpu)", "rounds' quartiles", "speedup (wall)", "share of IR-PGO's gain (cpu)"}}
	for _, b := range r.Builds {
		share, quart := "-", "-"
		if b.Name != pgoPlain && b.Name != pgoIR {
			share = fmt.Sprintf("%.0f%%", 100*b.Share)
		}
		if b.Name != pgoPlain && b.SpeedupQ1 > 0 {
			quart = fmt.Sprintf("%.3f..%.3f", b.SpeedupQ1, b.SpeedupQ3)
		}
		rows = append(rows, []string{b.Name, fmtMS(b.MedianCPUMS), fmtSpeedup(b.SpeedupCPU), quart, fmtSpeedup(b.SpeedupWall), share})
	}
	printRows(w, rows, false)
	fmt.Fprintf(w, "%s, %s of each build alternating; every run printed the plain build's output\n",
		plural(r.Runs, "measured round"), plural(r.Warmup, "warm-up round"))
	built := map[string]bool{}
	for _, b := range r.Builds {
		built[b.Name] = true
	}
	fmt.Fprintf(w, "blpp: %d of %d functions instrumented; clang warnings with IR-PGO's profile: %d\n", r.Instrumented, r.Functions, len(r.IRWarnings))
	for _, k := range []struct {
		name, build string
		sp          pgoSampleProfile
	}{{"lines", pgoLines, r.Lines}, {"probes", pgoProbes, r.Probes}} {
		if !built[k.build] {
			continue
		}
		fmt.Fprintf(w, "sample profile, %s: %d KB, %s, entry counts equal to clang's instrumentation's for %d of %d functions compared; clang warnings with it: %d\n",
			k.name, k.sp.Bytes/1024, plural(k.sp.Functions, "function"), k.sp.Entries.Equal, k.sp.Entries.Compared, len(k.sp.Warnings))
		for _, l := range k.sp.Warnings {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	for _, b := range []struct {
		name string
		b    boltResult
	}{{"blpp's profile", r.Bolt}, {"its own profile", r.BoltOwn}} {
		if !built[pgoBolt] {
			break
		}
		fmt.Fprintf(w, "llvm-bolt with %s: %d of %d functions profiled, %d stale, %d objects ignored\n",
			b.name, b.b.Profiled, b.b.Functions, b.b.Stale, b.b.Ignored)
	}
	fmt.Fprintf(w, "%d CPUs, load %s before, %s after\n", r.CPUs, fmtLoad(r.LoadBefore), fmtLoad(r.LoadAfter))
}

func fmtSpeedup(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f×", x)
}
