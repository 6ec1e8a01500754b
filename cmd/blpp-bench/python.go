package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blpp/blpp/rewriter"
)

// pythonReport is the result of --rewrite-python; --json prints it as is.
// Times are milliseconds, memory kilobytes.
type pythonReport struct {
	Binary    string `json:"binary"`
	SizeBytes int64  `json:"size_bytes"`

	// The rewrite done inside this process: wall time of rewriter.Rewrite,
	// and the process's peak resident set (VmHWM) before and after it.
	InProcess struct {
		WallMS       float64 `json:"wall_ms"`
		CPUMS        float64 `json:"cpu_ms"` // user+system time of this process during the rewrite (all goroutines)
		HWMBeforeKB  int64   `json:"vm_hwm_before_kb"`
		HWMAfterKB   int64   `json:"vm_hwm_after_kb"`
		Functions    int     `json:"functions"`
		Instrumented int     `json:"instrumented"`
		CodeBytes    int     `json:"code_bytes"`
	} `json:"in_process"`

	// The same rewrite by a separately built `blpp rewrite` process, from
	// its rusage. Absent when the go command is not available.
	Child *childRun `json:"child,omitempty"`

	// The rewritten interpreter running a small script next to the
	// original (alternately, Runs times each; medians): the overhead on a
	// large real program, and a check that it still works.
	Script struct {
		Runs     int     `json:"runs"`
		Matched  bool    `json:"matched"` // stdout, stderr and exit status equal in every run
		NativeMS float64 `json:"native_ms"`
		BlppMS   float64 `json:"blpp_ms"`
		Ratio    float64 `json:"ratio"` // median of per-round ratios
		Error    string  `json:"error,omitempty"`
	} `json:"script"`
}

// childRun is a rewrite by a `blpp rewrite` process.
type childRun struct {
	WallMS   float64 `json:"wall_ms"`
	CPUMS    float64 `json:"cpu_ms"`
	MaxRSSKB int64   `json:"max_rss_kb"` // rusage maxrss of the child
	// HarnessHWMKB is this process's peak RSS when it started the child,
	// a floor under MaxRSSKB (see benchPython).
	HarnessHWMKB int64 `json:"harness_hwm_kb"`
}

// pyScript exercises the interpreter's common paths (bytecode dispatch,
// dicts, strings, the json and re modules) for a fraction of a second.
const pyScript = `import collections, json, re
d = collections.Counter()
for i in range(1000000):
    d[str(i % 1000)] += i
s = json.dumps(sorted(d.items()))
print(len(s), sum(d.values()), len(re.findall(r'"[0-9]+"', s)))
`

// benchPython rewrites a large real binary (python3.11: several thousand
// functions) and reports time and memory.
func benchPython(c *config) error {
	rep := &pythonReport{Binary: c.python}
	fi, err := os.Stat(c.python)
	if err != nil {
		return &usageError{fmt.Sprintf("--python: %v", err)}
	}
	rep.SizeBytes = fi.Size()
	dir, done, err := c.workDir("blpp-bench-py-", "work")
	if err != nil {
		return err
	}
	defer done()

	// The child first, while the harness is small: the kernel folds the
	// high-water RSS of the address space the child starts from (the
	// harness's, as Go starts children with CLONE_VM) into its maxrss, so
	// the harness's peak at that moment is a floor of the measurement.
	if err := childRewrite(c, rep, dir); err != nil {
		return err
	}
	// In-process second: VmHWM then shows the rewrite's peak over the
	// small harness.
	fmt.Fprintf(c.stderr, "rewriting %s in-process\n", c.python)
	data, err := os.ReadFile(c.python)
	if err != nil {
		return err
	}
	rep.InProcess.HWMBeforeKB = vmHWM()
	cpu0 := selfCPU()
	start := time.Now()
	out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
	rep.InProcess.WallMS = ms(time.Since(start))
	rep.InProcess.CPUMS = ms(selfCPU() - cpu0)
	rep.InProcess.HWMAfterKB = vmHWM()
	if err != nil {
		return fmt.Errorf("%s: rewrite: %w", c.python, err)
	}
	rep.InProcess.Functions, rep.InProcess.Instrumented, rep.InProcess.CodeBytes = sum.Functions, sum.Instrumented, sum.CodeBytes
	inst := filepath.Join(dir, filepath.Base(c.python)+".blpp")
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		return err
	}

	runScript(c, rep, inst, dir)

	if c.asJSON {
		err = writeJSON(c.stdout, rep)
	} else {
		writePythonTable(c, rep)
	}
	if err == nil && !rep.Script.Matched {
		err = fmt.Errorf("rewritten %s: %s", c.python, rep.Script.Error)
	}
	return err
}

// childRewrite builds cmd/blpp and times `blpp rewrite` on the binary in
// a process of its own, whose rusage gives an exact peak RSS. A missing go
// command only leaves the measurement out.
func childRewrite(c *config, rep *pythonReport, dir string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(c.stderr, "go command not found: skipping the child-process measurement")
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, "building cmd/blpp")
	tool := filepath.Join(dir, "blpp")
	build := exec.Command(goCmd, "build", "-o", tool, "./cmd/blpp")
	build.Dir = root
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/blpp: %v\n%s", err, msg)
	}
	fmt.Fprintf(c.stderr, "rewriting %s with blpp rewrite\n", c.python)
	cmd := exec.Command(tool, "rewrite", c.python, "-o", filepath.Join(dir, "child.blpp"))
	hwm := vmHWM()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("blpp rewrite %s: %v\n%s", c.python, err, stderr.String())
	}
	ps := cmd.ProcessState
	rep.Child = &childRun{WallMS: ms(wall), CPUMS: ms(ps.UserTime() + ps.SystemTime()), HarnessHWMKB: hwm}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rep.Child.MaxRSSKB = ru.Maxrss
	}
	return nil
}

// runScript runs pyScript under the original and the rewritten
// interpreter in turn. PYTHONHOME is set for both because the rewritten
// copy lives outside /usr, where the interpreter would otherwise look for
// its library. A failure is recorded in the report, not returned: the
// rewrite measurements stand on their own.
func runScript(c *config, rep *pythonReport, inst, dir string) {
	sc := &rep.Script
	sc.Runs = c.runs
	sc.Matched = true
	home := filepath.Dir(filepath.Dir(c.python))
	var nat, ins []float64
	var want *outcome
	for round := 0; round < c.warmup+c.runs; round++ {
		fmt.Fprintf(c.stderr, "python script: round %d/%d\n", round+1, c.warmup+c.runs)
		for _, v := range []variant{native, ctx} {
			bin := c.python
			if v == ctx {
				bin = inst
			}
			rundir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				sc.Error = err.Error()
				return
			}
			cmd := exec.Command(bin, "-c", pyScript)
			cmd.Dir = rundir
			cmd.Env = append(os.Environ(), "PYTHONHOME="+home, "PYTHONDONTWRITEBYTECODE=1", "BLPP_PROFILE="+filepath.Join(rundir, "blpp.out"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err = cmd.Run()
			wall := time.Since(start)
			os.RemoveAll(rundir)
			if cmd.ProcessState == nil {
				sc.Error = fmt.Sprintf("%s: %v", v, err)
				sc.Matched = false
				return
			}
			o := outcome{stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode()}
			if want == nil {
				want = &o
			} else if !o.equal(*want) {
				sc.Matched = false
				sc.Error = fmt.Sprintf("%s: exit %d, stdout %q, stderr %q; native: exit %d, stdout %q", v, o.code, trim(o.stdout), trim(o.stderr), want.code, trim(want.stdout))
				return
			}
			if round >= c.warmup {
				if v == native {
					nat = append(nat, ms(wall))
				} else {
					ins = append(ins, ms(wall))
				}
			}
		}
	}
	if want.code != 0 {
		sc.Matched = false
		sc.Error = fmt.Sprintf("the script failed under the original interpreter: exit %d: %s", want.code, trim(want.stderr))
		return
	}
	sc.NativeMS, sc.BlppMS, sc.Ratio = median(nat), median(ins), pairedRatio(ins, nat)
}

func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// selfCPU is the user+system time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM reads this process's peak resident set from /proc/self/status, in
// kilobytes (0 when unavailable).
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

func writePythonTable(c *config, rep *pythonReport) {
	w := c.stdout
	p := &rep.InProcess
	share := 0.0
	if p.Functions > 0 {
		share = 100 * float64(p.Instrumented) / float64(p.Functions)
	}
	fmt.Fprintf(w, "rewrite of %s (%.1f MB): %d of %d functions instrumented (%.1f%%), %d KB of new code\n",
		rep.Binary, float64(rep.SizeBytes)/(1<<20), p.Instrumented, p.Functions, share, p.CodeBytes/1024)
	fmt.Fprintf(w, "  in-process rewriter.Rewrite: %8.0f ms wall, %.0f ms cpu, peak RSS (VmHWM) %d MB (%d MB before)\n",
		p.WallMS, p.CPUMS, p.HWMAfterKB/1024, p.HWMBeforeKB/1024)
	if ch := rep.Child; ch != nil {
		fmt.Fprintf(w, "  child `blpp rewrite`:         %8.0f ms wall, %.0f ms cpu, max RSS %d MB (harness %d MB at spawn)\n",
			ch.WallMS, ch.CPUMS, ch.MaxRSSKB/1024, ch.HarnessHWMKB/1024)
	}
	sc := &rep.Script
	if !sc.Matched {
		fmt.Fprintf(w, "  rewritten interpreter: FAILED: %s\n", sc.Error)
		return
	}
	fmt.Fprintf(w, "  rewritten interpreter on a script: output identical; native %.0f ms, blpp %.0f ms (%s), median of %d runs\n",
		sc.NativeMS, sc.BlppMS, fmtRatio(sc.Ratio), sc.Runs)
}
