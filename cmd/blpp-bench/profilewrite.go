package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/blpp/blpp/rewriter"
)

// profileWriteSrc is the program --profile-write measures.
//
//go:embed testdata/profile_write.c
var profileWriteSrc []byte

const (
	profileWriteThreads = 4           // threads of the program
	profileWriteLimit   = time.Second // the most a profile write may take
)

// profileWriteReport is the result of --profile-write; --json prints it as
// is. Times are milliseconds.
//
// The instrumented program writes its profile after main returns (the
// runtime's exit hook). The program prints CLOCK_MONOTONIC just before
// main returns; the harness reads the same clock as soon as it has reaped
// the process. The difference, the tail, is the profile write plus the
// rest of exit (atexit handlers, unmapping, the harness waking up): an
// upper bound on the write. The native binary's tail shows how much of it
// is not the write.
type profileWriteReport struct {
	Calls        int64   `json:"calls"`   // calls the program was asked to make, all threads
	Threads      int     `json:"threads"` // threads making them
	Runs         int     `json:"runs"`    // measured runs of each binary, alternately
	Warmup       int     `json:"warmup"`  // unmeasured runs before them
	Output       string  `json:"output"`  // what both binaries printed on stdout
	RewriteMS    float64 `json:"rewrite_ms"`
	Functions    int     `json:"functions"`
	Instrumented int     `json:"instrumented"`

	TailMS       []float64 `json:"tail_ms"`        // instrumented: end of main to process exit, each run
	NativeTailMS []float64 `json:"native_tail_ms"` // the same for the native binary
	// WriteStartMS is, for each instrumented run, how long after the end
	// of main the runtime took the time stamp of the profile header
	// (CLOCK_REALTIME, as it starts encoding the profile).
	WriteStartMS []float64 `json:"write_start_ms"`
	WallMS       []float64 `json:"wall_ms"`        // instrumented: whole run
	NativeWallMS []float64 `json:"native_wall_ms"` // native: whole run

	MedianTailMS       float64 `json:"median_tail_ms"` // the profile write time reported (an upper bound)
	MedianNativeTailMS float64 `json:"median_native_tail_ms"`
	MedianWriteStartMS float64 `json:"median_write_start_ms"`
	MedianWallMS       float64 `json:"median_wall_ms"`
	MedianNativeWallMS float64 `json:"median_native_wall_ms"`

	Profile *profileInfo `json:"profile"` // the last instrumented run's profile
	LimitMS float64      `json:"limit_ms"`
	Passed  bool         `json:"passed"` // MedianTailMS ≤ LimitMS
}

// benchProfileWrite builds testdata/profile_write.c, rewrites it in
// context mode, runs it and its native build alternately, and reports how
// long the instrumented one took from the end of main to its exit. It
// fails when that (the median) exceeds profileWriteLimit.
func benchProfileWrite(c *config) error {
	if err := c.needCC(); err != nil {
		return err
	}
	dir, done, err := c.workDir("blpp-bench-pw-", "build")
	if err != nil {
		return err
	}
	defer done()
	src := filepath.Join(dir, "profile_write.c")
	if err := os.WriteFile(src, profileWriteSrc, 0o644); err != nil {
		return err
	}
	nat, inst := filepath.Join(dir, "profile_write"), filepath.Join(dir, "profile_write.ctx")
	fmt.Fprintln(c.stderr, "profile-write: building")
	if err := compile(c.cc, src, nat, "-pthread"); err != nil {
		return err
	}
	data, err := os.ReadFile(nat)
	if err != nil {
		return err
	}
	rep := &profileWriteReport{Calls: c.calls, Threads: profileWriteThreads, Runs: c.runs, Warmup: c.warmup, LimitMS: ms(profileWriteLimit)}
	start := time.Now()
	out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
	rep.RewriteMS = ms(time.Since(start))
	if err != nil {
		return fmt.Errorf("profile_write: rewrite: %w", err)
	}
	rep.Functions, rep.Instrumented = sum.Functions, sum.Instrumented
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		return err
	}

	args := []string{strconv.FormatInt(c.calls, 10), strconv.Itoa(profileWriteThreads)}
	var want []byte
	for round := 0; round < c.warmup+c.runs; round++ {
		measured := round >= c.warmup
		if measured {
			fmt.Fprintf(c.stderr, "profile-write: round %d/%d\n", round-c.warmup+1, c.runs)
		} else {
			fmt.Fprintf(c.stderr, "profile-write: warm-up %d/%d\n", round+1, c.warmup)
		}
		for _, v := range []variant{native, ctx} {
			bin := nat
			if v == ctx {
				bin = inst
			}
			r, err := runToExit(bin, args, dir, v == ctx)
			if err != nil {
				return fmt.Errorf("profile_write (%s): %w", v, err)
			}
			if want == nil {
				want = r.stdout
				rep.Output = strings.TrimSpace(string(want))
			} else if !bytes.Equal(r.stdout, want) {
				return fmt.Errorf("profile_write (%s): printed %q, native %q", v, r.stdout, want)
			}
			if !measured {
				continue
			}
			if v == native {
				rep.NativeTailMS = append(rep.NativeTailMS, r.tailMS)
				rep.NativeWallMS = append(rep.NativeWallMS, r.wallMS)
				continue
			}
			rep.TailMS = append(rep.TailMS, r.tailMS)
			rep.WallMS = append(rep.WallMS, r.wallMS)
			rep.WriteStartMS = append(rep.WriteStartMS, r.writeStartMS)
			rep.Profile = r.profile
		}
	}
	rep.MedianTailMS = median(rep.TailMS)
	rep.MedianNativeTailMS = median(rep.NativeTailMS)
	rep.MedianWriteStartMS = median(rep.WriteStartMS)
	rep.MedianWallMS = median(rep.WallMS)
	rep.MedianNativeWallMS = median(rep.NativeWallMS)
	rep.Passed = rep.MedianTailMS <= rep.LimitMS
	// Every call of the program's loop must have been counted: a profile
	// that dropped them would be cheaper to write.
	if made := c.calls / 5 / profileWriteThreads * 5 * profileWriteThreads; rep.Profile.Calls < uint64(made) {
		return fmt.Errorf("profile_write: the profile counts %d calls, the program made at least %d", rep.Profile.Calls, made)
	}

	if c.asJSON {
		if err := writeJSON(c.stdout, rep); err != nil {
			return err
		}
	} else {
		rep.write(c)
	}
	if !rep.Passed {
		return fmt.Errorf("profile write took %.0f ms, over the limit of %.0f ms", rep.MedianTailMS, rep.LimitMS)
	}
	return nil
}

func (r *profileWriteReport) write(c *config) {
	w := c.stdout
	p := r.Profile
	fmt.Fprintf(w, "profile write: %.1f ms for %d records (%d threads, %s calls)\n", r.MedianTailMS, p.Records, r.Threads, fmtCount(r.Calls))
	fmt.Fprintf(w, "  end of main to process exit, median of %d runs (%s ms); native build: %.1f ms; the runtime began encoding %.1f ms after main returned\n",
		r.Runs, fmtList(r.TailMS), r.MedianNativeTailMS, r.MedianWriteStartMS)
	fmt.Fprintf(w, "  profile: %.1f KB, %d records, %d paths, %d calls counted, %d bytes/record, arena %.1f MB\n",
		float64(p.Bytes)/1024, p.Records, p.Paths, p.Calls, p.RecordBytes, float64(p.ArenaBytes)/(1<<20))
	fmt.Fprintf(w, "  whole run: %.0f ms instrumented, %.0f ms native; rewrite %.1f ms, %d/%d fns instrumented\n",
		r.MedianWallMS, r.MedianNativeWallMS, r.RewriteMS, r.Instrumented, r.Functions)
	verdict := "ok"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "  limit %.0f ms: %s\n", r.LimitMS, verdict)
}

// exitRun is one run of the profile-write program.
type exitRun struct {
	stdout       []byte
	wallMS       float64
	tailMS       float64 // end of main to process exit
	writeStartMS float64 // end of main to the profile header's time stamp (instrumented runs)
	profile      *profileInfo
}

// runToExit runs bin in a new directory under dir and times the end of its
// main, which it reads from the program's last line on stderr, against the
// moment the process has exited. With wantProfile the run must write a
// valid profile.
func runToExit(bin string, args []string, dir string, wantProfile bool) (*exitRun, error) {
	rundir, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(rundir)
	profile := filepath.Join(rundir, "blpp.out")
	var stdout, stderr bytes.Buffer
	var exited int64
	var start time.Time
	for try := 0; ; try++ {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.Command(bin, args...)
		cmd.Dir = rundir
		cmd.Env = append(os.Environ(), "BLPP_PROFILE="+profile)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start = time.Now()
		err = cmd.Run()
		exited, _ = monotonicNS()
		// Text file busy: see runOnce.
		if err != nil && errors.Is(err, syscall.ETXTBSY) && try < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		break
	}
	r := &exitRun{stdout: stdout.Bytes(), wallMS: ms(time.Since(start))}
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	if exited == 0 {
		return nil, fmt.Errorf("cannot read CLOCK_MONOTONIC")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 3 || f[0] != "end" {
		return nil, fmt.Errorf("no end line on stderr: %q", stderr.String())
	}
	mono, err1 := strconv.ParseInt(f[1], 10, 64)
	real, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("bad end line on stderr: %q", lines[len(lines)-1])
	}
	r.tailMS = float64(exited-mono) / 1e6
	if wantProfile {
		if r.profile, err = readProfile(profile); err != nil {
			return nil, err
		}
		if r.profile.Threads < profileWriteThreads {
			return nil, fmt.Errorf("profile has %d threads, want at least %d", r.profile.Threads, profileWriteThreads)
		}
		r.writeStartMS = float64(int64(r.profile.TimeNS)-real) / 1e6
	}
	return r, nil
}

// monotonicNS reads CLOCK_MONOTONIC, the clock the C program reads (Go's
// monotonic time is relative to an unexported origin).
func monotonicNS() (int64, error) {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, e
	}
	return ts.Nano(), nil
}

// fmtCount prints 10000000 as 10M, 2500000 as 2.5M, 200000 as 200k.
func fmtCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func fmtList(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 1, 64))
	}
	return strings.Join(s, ", ")
}
