package callgrind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configures Run.
type Options struct {
	Args  []string // program arguments, without argv[0]
	Stdin []byte   // standard input; nil means empty
	Env   []string // added to the current environment ("KEY=value")
	Dir   string   // working directory; empty means the current one

	// SeparateThreads passes --separate-threads=yes: callgrind writes one
	// file per thread. Run sums them either way, so it only matters to
	// someone reading the files in OutDir.
	SeparateThreads bool

	// Timeout ends the run (valgrind and everything it started, by process
	// group) with ErrTimeout; 0 means no limit. Callgrind runs programs
	// 10-40 times slower than natively.
	Timeout time.Duration
	// Valgrind is the valgrind executable; empty means "valgrind" from
	// PATH.
	Valgrind string
	// OutDir receives callgrind's output and valgrind's logs and is kept;
	// empty means a temporary directory that Run removes.
	OutDir string

	// SplitAfter names functions of the program (symbols) on whose
	// return callgrind dumps its counters (--dump-after): what each
	// process does after the last such dump is counted in Profile.After
	// instead of the Profile. The same-run exactness oracle passes the
	// runtime's functions that return once a profile is written
	// (blpp_fini, and blpp_rt_leave, which writes the final one again
	// before exit_group).
	SplitAfter []string

	// DumpBefore names more functions before whose calls callgrind dumps
	// its counters (--dump-before), as before the forkFuncs: a fork that
	// the program reaches through code callgrind does not see call the
	// C library's fork (an instrumented static binary enters vfork
	// through the counting stub that calls blpp_dark, decision 70).
	DumpBefore []string

	// Launcher says that prog only starts the program that matters (the
	// dynamic loader running an instrumented copy, as blpp run does): its
	// own unknown code is not folded, and the objects of interest are
	// read afterwards with CollectObject from OutDir.
	Launcher bool
}

// forkFuncs are the C library functions before which Run makes callgrind
// dump and zero its counters. A forked child inherits the parent's
// counters and would otherwise report the parent's work before the fork a
// second time. _Fork (glibc 2.34 and later) is the function that makes the
// system call; fork and __libc_fork cover older libraries, vfork, __vfork
// and __libc_vfork (the name valgrind gives a static glibc's vfork) the
// calls valgrind turns into fork.
var forkFuncs = []string{"fork", "__libc_fork", "_Fork", "vfork", "__vfork", "__libc_vfork"}

// IsForkFunc reports whether Run dumps callgrind's counters before the
// function of this name (one of forkFuncs): a forked child's counts
// then include what the parent ran in it before its system call.
func IsForkFunc(name string) bool { return slices.Contains(forkFuncs, name) }

// ValgrindArgs returns the valgrind options Run passes before the program:
// callgrind with one count per instruction, jumps, PLT code profiled where
// it runs, children traced, and output files named by pid in dir.
func ValgrindArgs(dir string, separateThreads bool) []string {
	sep := "no"
	if separateThreads {
		sep = "yes"
	}
	args := []string{
		"--tool=callgrind",
		"--dump-instr=yes",
		"--collect-jumps=yes",
		// With the default --skip-plt=yes callgrind charges the work of
		// PLT stubs to the call instruction, inflating its count.
		"--skip-plt=no",
		"--separate-threads=" + sep,
		"--compress-pos=no",
		"--compress-strings=no",
		"--trace-children=yes",
		"--callgrind-out-file=" + filepath.Join(dir, "cg.%p"),
		"--log-file=" + filepath.Join(dir, "valgrind.%p.log"),
	}
	for _, fn := range forkFuncs {
		args = append(args, "--dump-before="+fn)
	}
	return args
}

// Run runs prog under callgrind and returns the exact execution counts of
// prog's own code, from every process of prog the run created (forked
// children write their own files; they are summed). prog is found in PATH
// when it has no slash. The program's exit status, signal and output are
// in the Profile; a non-zero exit is not an error. Run fails when valgrind
// cannot be started, when the run times out, or when no callgrind output
// mentions prog.
//
// The profile has been through FoldUnknown, so prog's .init, .plt and
// .fini code is at ELF addresses in Exec when the load bias could be
// established.
func Run(prog string, opts Options) (*Profile, error) {
	progPath := prog
	if !strings.Contains(prog, "/") {
		lp, err := exec.LookPath(prog)
		if err != nil {
			return nil, fmt.Errorf("callgrind: %w", err)
		}
		progPath = lp
	}
	abs, err := filepath.Abs(progPath)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	progInfo, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	// valgrind sees the program as given (it becomes argv[0]) unless a
	// working directory would change what a relative path means.
	arg0 := prog
	if opts.Dir != "" && strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		arg0 = abs
	}

	vg := opts.Valgrind
	if vg == "" {
		vg, err = exec.LookPath("valgrind")
		if err != nil {
			return nil, ErrNoValgrind
		}
	}

	dir := opts.OutDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "blpp-callgrind-")
		if err != nil {
			return nil, fmt.Errorf("callgrind: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}

	ctx := context.Background()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	args := ValgrindArgs(dir, opts.SeparateThreads)
	for _, fn := range opts.SplitAfter {
		args = append(args, "--dump-after="+fn)
	}
	for _, fn := range opts.DumpBefore {
		args = append(args, "--dump-before="+fn)
	}
	args = append(args, "--", arg0)
	cmd := exec.CommandContext(ctx, vg, append(args, opts.Args...)...)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdin = bytes.NewReader(opts.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Own process group, so a timeout also ends traced children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	runErr := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w after %v: %s", ErrTimeout, opts.Timeout, prog)
	}
	exitCode, sig := 0, syscall.Signal(0)
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		exitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
		}
	default:
		return nil, fmt.Errorf("callgrind: start valgrind: %w", runErr)
	}

	p, err := collect(dir, func(ob string) bool {
		fi, err := os.Stat(ob)
		return err == nil && os.SameFile(fi, progInfo)
	}, opts.SplitAfter, "", nil)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("%w: %s (exit status %d)%s", ErrNoProfile, prog, exitCode, diagnostics(dir, stderr.Bytes()))
	}
	if !opts.Launcher {
		if err := p.FoldUnknown(abs); err != nil {
			return nil, err
		}
	}
	p.ExitCode, p.Signal = exitCode, sig
	p.Stdout, p.Stderr = stdout.Bytes(), stderr.Bytes()
	return p, nil
}

// collect parses every callgrind file in dir and sums the profiles of the
// main object; nil when no file mentions it. Empty files are skipped:
// callgrind creates its file at start-up, and a process that dies by
// SIGKILL or replaces itself by exec never fills it. With splitAfter set,
// each process's dumps that follow the last one triggered by --dump-after
// of one of those functions are summed into the profile's After instead.
// With fold set (the object's file), each dump's code under UnknownObject
// is folded (FoldUnknown) before the dumps are summed.
func collect(dir string, match func(string) bool, splitAfter []string, fold string, pids []int) (*Profile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "cg.*"))
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	// Each process's dumps in the order callgrind made them: cg.PID.1,
	// cg.PID.2, ..., then cg.PID, the dump at termination.
	type dump struct {
		name string
		pid  string
		seq  int
	}
	var dumps []dump
	for _, name := range files {
		base := strings.TrimPrefix(filepath.Base(name), "cg.")
		pid, n, numbered := strings.Cut(base, ".")
		seq := int(^uint(0) >> 1)
		if numbered {
			v, err := strconv.Atoi(n)
			if err != nil {
				continue // not callgrind's
			}
			seq = v
		}
		dumps = append(dumps, dump{name, pid, seq})
	}
	sort.Slice(dumps, func(i, j int) bool {
		if dumps[i].pid != dumps[j].pid {
			return dumps[i].pid < dumps[j].pid
		}
		return dumps[i].seq < dumps[j].seq
	})
	type part struct {
		pid  string
		name string
		p    *Profile
	}
	var parts []part
	last := map[string]int{} // each process's last split dump
	for _, d := range dumps {
		if pids != nil {
			if n, err := strconv.Atoi(d.pid); err != nil || !slices.Contains(pids, n) {
				continue
			}
		}
		fi, err := os.Stat(d.name)
		if err != nil {
			return nil, fmt.Errorf("callgrind: %w", err)
		}
		if fi.Size() == 0 {
			continue
		}
		f, err := os.Open(d.name)
		if err != nil {
			return nil, fmt.Errorf("callgrind: %w", err)
		}
		p, seen, err := parse(f, d.name, match)
		f.Close()
		if err != nil {
			return nil, err
		}
		if !seen {
			// Another program: something the run exec'd.
			continue
		}
		if fold != "" {
			if err := p.FoldUnknown(fold); err != nil {
				return nil, fmt.Errorf("%w (%s)", err, d.name)
			}
		}
		for _, fn := range splitAfter {
			if slices.Contains(p.Triggers, "--dump-after="+fn) {
				last[d.pid] = len(parts) + 1
			}
		}
		parts = append(parts, part{d.pid, d.name, p})
	}
	var total, after *Profile
	add := func(into **Profile, p *Profile, name string) error {
		if *into == nil {
			*into = p
			return nil
		}
		if err := (*into).merge(p); err != nil {
			return fmt.Errorf("callgrind: %s: %w", name, err)
		}
		if p.Folded && !(*into).Folded {
			(*into).Bias, (*into).Folded = p.Bias, true
		}
		return nil
	}
	for i, pt := range parts {
		into := &total
		if n, ok := last[pt.pid]; ok && i >= n {
			into = &after
		}
		if err := add(into, pt.p, pt.name); err != nil {
			return nil, err
		}
	}
	if total == nil && after != nil {
		total = newProfile(after.Object)
	}
	if total != nil && len(splitAfter) > 0 {
		if after == nil {
			after = newProfile(total.Object)
		}
		total.After = after
	}
	return total, nil
}

// diagnostics returns the end of valgrind's logs and of the program's
// standard error, for an error message.
func diagnostics(dir string, stderr []byte) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "valgrind.*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err == nil && len(bytes.TrimSpace(data)) > 0 {
			fmt.Fprintf(&b, "\n%s:\n%s", filepath.Base(l), tail(data))
		}
	}
	if len(bytes.TrimSpace(stderr)) > 0 {
		fmt.Fprintf(&b, "\nstderr:\n%s", tail(stderr))
	}
	return b.String()
}

func tail(data []byte) string {
	const n = 2000
	s := strings.TrimSpace(string(data))
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// CollectObject sums the counts of object (a file path: the file callgrind
// names in ob= lines is compared by identity) over every callgrind file of
// a run whose output Options.OutDir kept, split after splitAfter as Run
// does, with the object's .init/.plt/.fini code folded to ELF addresses.
// It is how a run of several instrumented modules (a program and its
// shared objects) is read one module at a time. nil, nil when no file
// mentions object.
func CollectObject(dir, object string, splitAfter []string) (*Profile, error) {
	info, err := os.Stat(object)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	p, err := collect(dir, func(ob string) bool {
		fi, err := os.Stat(ob)
		return err == nil && os.SameFile(fi, info)
	}, splitAfter, "", nil)
	if err != nil || p == nil {
		return nil, err
	}
	if err := p.FoldUnknown(object); err != nil {
		return nil, err
	}
	return p, nil
}

// CollectObjectOf is CollectObject over the processes pids only: a
// library's counts in the processes of one program (its Profile.PIDs),
// not in the children it ran (make's shells, seq). Each process's code
// under UnknownObject is folded alone, before the processes are summed:
// a library sits at its own address in each process. A process that
// shows no load bias keeps that code unfolded, and the result's Bias is
// the first folded process's.
func CollectObjectOf(dir, object string, splitAfter []string, pids []int) (*Profile, error) {
	info, err := os.Stat(object)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	return collect(dir, func(ob string) bool {
		fi, err := os.Stat(ob)
		return err == nil && os.SameFile(fi, info)
	}, splitAfter, object, pids)
}
