package main

// Following execs under blpp run (decision 167): the runtime of a program
// blpp run started execs `DIR/blpp __follow-exec PATH ARGV...` in place of
// an execve of PATH (runtime/blpp_follow.c), DIR being the run's follow
// directory; blpp sets the new program up as blpp run does and execs it.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/wholerun"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{name: followCmd, hidden: true, streams: true,
		summary: "exec a program instrumented, for a blpp run whose program execs it (called by the runtime)",
		usage:   "SIGNALS PATH ARGV0 [ARGS...]",
		run:     runFollowExec})
}

// followCmd is the command the runtime names (blpp_follow.c).
const followCmd = "__follow-exec"

// followState is what blpp run leaves in its follow directory for the
// execs it follows: its flags (mode, libraries, cache) and where their
// profiles go.
type followState struct {
	Args []string `json:"args"`
	// Profiles is the pattern of the followed programs' profiles: a
	// directory and a file name prefix (os.CreateTemp's).
	ProfileDir, ProfilePrefix string
	// Continuous: the followed programs' profiles hold every count as
	// they run, as the first program's (blpp run --continuous).
	Continuous bool
}

// followed is the note beside each followed program's profile, for blpp
// run's report.
type followed struct {
	Prog, Inst, Argv0 string
	Pid               int
}

const followStateFile = "follow.json"

// startFollow makes blpp run's follow directory: a link to blpp, the
// state, and the list of set-up directories the followed execs made
// (removed with it by the returned function).
func startFollow(args []string, profPath string, continuous bool) (dir string, st followState, done func(), err error) {
	self, err := selfPath()
	if err != nil {
		return "", st, nil, err
	}
	dir, err = os.MkdirTemp("", "blpp-follow-")
	if err != nil {
		return "", st, nil, err
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	done = func() {
		if b, err := os.ReadFile(filepath.Join(dir, "dirs")); err == nil {
			for _, d := range strings.Split(string(b), "\n") {
				if d != "" && filepath.IsAbs(d) {
					os.RemoveAll(d)
				}
			}
		}
		os.RemoveAll(dir)
	}
	// Absolute: the program may exec from another directory. A name
	// the runtime would expand (%p, %h) cannot be the followed ones'
	// prefix: theirs are reserved before the runtime writes them.
	if abs, err := filepath.Abs(profPath); err == nil {
		profPath = abs
	}
	prefix := filepath.Base(profPath)
	if strings.Contains(prefix, "%") {
		prefix = "blpp"
	}
	st = followState{Args: args, ProfileDir: filepath.Dir(profPath), ProfilePrefix: prefix + ".exec-", Continuous: continuous}
	b, err := json.Marshal(st)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, followStateFile), b, 0o644)
	}
	if err == nil {
		err = os.Symlink(self, filepath.Join(dir, "blpp"))
	}
	if err != nil {
		done()
		return "", st, nil, err
	}
	return dir, st, done, nil
}

// runFollowExec is the exec the runtime sent through blpp: args are the
// process's signal masks (parseSignals), the program's path (as execve
// got it) and its argv. Whatever happens, the
// process goes on as the program: when it cannot be set up instrumented,
// it is exec'd as it is.
func runFollowExec(c *ctx, args []string) error {
	if len(args) < 3 {
		// A person asking for help: the runtime passes two arguments at
		// least, the program's own arguments never parsed.
		fs := c.newFlags()
		if err := c.parse(fs, args); err != nil {
			return err
		}
		return &usageError{"want SIGNALS PATH ARGV0 [ARGS...]"}
	}
	sigs, path, argv, env := parseSignals(args[0]), args[1], args[2:], os.Environ()
	if err := followSetUp(sigs, path, argv, env); err != nil {
		// Said by blpp run after its report, not on the program's
		// stderr, which stays the program's own.
		if f, ferr := os.OpenFile(filepath.Join(filepath.Dir(os.Args[0]), "skipped"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); ferr == nil {
			fmt.Fprintf(f, "%s: %s\n", path, oneLine(err))
			f.Close()
		}
	}
	err := execKeepingSignals(sigs, path, argv, env)
	fmt.Fprintf(c.stderr, "blpp: exec %s: %v\n", path, err)
	return &exitError{127}
}

// followSetUp execs the program at path instrumented as the run whose
// follow directory holds this blpp link would have run it; it returns
// only with what stopped it.
func followSetUp(sigs signalState, path string, argv, env []string) (err error) {
	defer func() {
		// A bug in blpp must not keep the program from running.
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	dir := filepath.Dir(os.Args[0])
	b, err := os.ReadFile(filepath.Join(dir, followStateFile))
	if err != nil {
		return err
	}
	var st followState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", followStateFile, err)
	}
	fs := pflag.NewFlagSet(followCmd, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mode := addModeFlags(fs)
	sel := addLibFlags(fs)
	extraLibs := fs.StringArray("lib", nil, "")
	cache := fs.String("cache-dir", "", "")
	if err := fs.Parse(st.Args); err != nil {
		return err
	}
	cacheOverride = *cache
	pick, noLibs, err := sel.compile()
	if err != nil {
		return err
	}
	// A program that execs itself by /proc/self/exe execs its
	// instrumented copy, in the cache: its original is the program.
	prog := path
	if real, err := filepath.EvalSymlinks(path); err == nil && strings.HasPrefix(real, filepath.Join(cacheRoot(), "modules")+string(filepath.Separator)) {
		if o := wholerun.Origin(real); o != "" {
			prog = o
		}
	}
	prog, pargv, _, err := followScript(prog, argv)
	if err != nil {
		return err
	}
	loader, err := wholerun.Interpreter(prog)
	if err != nil {
		return err
	}
	inst, err := cachedRewrite(prog, mode, loader != "" && !noLibs)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(st.ProfileDir, st.ProfilePrefix+"*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	shown := prog // relative to the program's directory, not blpp run's
	if abs, err := filepath.Abs(prog); err == nil {
		shown = abs
	}
	note, _ := json.Marshal(followed{Prog: shown, Inst: inst, Argv0: pargv[0], Pid: os.Getpid()})
	if err := os.WriteFile(noteName(name), note, 0o644); err != nil {
		return err
	}
	runtimeName := name
	if st.Continuous {
		runtimeName += "%c" // decision 94: the runtime takes it out of the name
	}
	// A static program (no auditor) sees blpp's two entries, as under
	// blpp run: one of each, the program's own (from blpp run) replaced.
	var nenv []string
	for _, e := range env {
		if !strings.HasPrefix(e, "BLPP_PROFILE=") && !strings.HasPrefix(e, "BLPP_FOLLOW=") {
			nenv = append(nenv, e)
		}
	}
	exe, nenv := inst, append(nenv, "BLPP_PROFILE="+runtimeName, "BLPP_FOLLOW="+dir)
	if loader != "" {
		wp, err := prepareLibs(io.Discard, loader, prog, mode, sel, pick, noLibs, *extraLibs)
		if err != nil {
			return err
		}
		if lf, err := os.OpenFile(filepath.Join(dir, "dirs"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(lf, wp.Dir)
			lf.Close()
		}
		wp.Profile, wp.Follow = runtimeName, dir
		cmd, err := wp.Command(inst, prog, pargv[0], pargv[1:], env)
		if err != nil {
			return err
		}
		exe, nenv = cmd.Path, cmd.Env
	}
	return execKeepingSignals(sigs, exe, pargv, nenv)
}

// signalState is what the runtime passes of the process's signals: the
// ones it ignores and the ones it blocks, bit s-1 for signal s.
type signalState struct {
	ok               bool
	ignored, blocked uint64
}

// parseSignals reads the runtime's "IGNORED:BLOCKED" (16 hexadecimal
// digits each); not ok when it is not that.
func parseSignals(s string) signalState {
	a, b, found := strings.Cut(s, ":")
	if !found || len(a) != 16 || len(b) != 16 {
		return signalState{}
	}
	i, err1 := strconv.ParseUint(a, 16, 64)
	k, err2 := strconv.ParseUint(b, 16, 64)
	return signalState{ok: err1 == nil && err2 == nil, ignored: i, blocked: k}
}

// execKeepingSignals execs as syscall.Exec does, with the signals the
// process that exec'd blpp ignored and blocked ignored and blocked again:
// an exec keeps both, and the program the runtime sent here had its own
// exec's (`trap "" PIPE; exec prog`, nohup). Go's runtime handles most
// signals from its start, and a handled signal reverts to its default
// action at an exec; it unblocks a few on its threads.
func execKeepingSignals(sigs signalState, path string, argv, env []string) error {
	if !sigs.ok {
		return syscall.Exec(path, argv, env)
	}
	runtime.LockOSThread() // the mask is the thread's that execs
	for s := 1; s <= 64; s++ {
		if sigs.ignored&(1<<(s-1)) != 0 && s != int(syscall.SIGKILL) && s != int(syscall.SIGSTOP) {
			signal.Ignore(syscall.Signal(s))
		}
	}
	mask := sigs.blocked
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0); e != 0 {
		return e
	}
	err := syscall.Exec(path, argv, env)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 2, uintptr(unsafe.Pointer(&zeroMask)), 0, 8, 0, 0)
	return err
}

// zeroMask unblocks every signal again when an exec fails.
var zeroMask uint64

// noteName is where the note of the followed profile at name goes: a
// hidden file beside it, which `blpp report P.exec-*` does not take for
// a profile.
func noteName(name string) string {
	return filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".json")
}

// followedProfiles lists the profiles the execs blpp run followed wrote,
// oldest first, with their notes: those whose program wrote one.
func followedProfiles(st followState) (names []string, notes []followed) {
	m, _ := filepath.Glob(filepath.Join(st.ProfileDir, "."+st.ProfilePrefix+"*.json"))
	type one struct {
		name string
		t    int64
		n    followed
	}
	var all []one
	for _, j := range m {
		name := filepath.Join(filepath.Dir(j), strings.TrimSuffix(strings.TrimPrefix(filepath.Base(j), "."), ".json"))
		fi, err := os.Stat(name)
		if err != nil || fi.Size() == 0 {
			continue
		}
		b, err := os.ReadFile(j)
		var n followed
		if err != nil || json.Unmarshal(b, &n) != nil {
			continue
		}
		all = append(all, one{name, fi.ModTime().UnixNano(), n})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].t < all[j].t })
	for _, o := range all {
		names = append(names, o.name)
		notes = append(notes, o.n)
	}
	return names, notes
}

// reportFollowed says, after blpp run's report, which execs it followed:
// every profile with --profile (kept), else how many of each program.
// The program the first one ended as (the last exec of its process: a
// wrapper script's or a shell's exec, pid mainPid) is reported in full;
// where that process exec'd nothing, a single followed program is.
func reportFollowed(c *ctx, dir string, st followState, kept bool, out string, top, mainPid int) {
	if b, err := os.ReadFile(filepath.Join(dir, "skipped")); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fmt.Fprintf(c.stderr, "blpp run: an exec ran uninstrumented: %s\n", l)
		}
	}
	names, notes := followedProfiles(st)
	if len(names) == 0 {
		return
	}
	var order []string
	count := map[string]int{}
	for i, name := range names {
		n := notes[i]
		if kept {
			fmt.Fprintf(c.stderr, "blpp run: followed the exec of %s (pid %d)%s, profile %s\n", n.Prog, n.Pid, followedExecs(name), name)
		}
		if count[n.Prog] == 0 {
			order = append(order, n.Prog)
		}
		count[n.Prog]++
	}
	if !kept {
		var parts []string
		for _, p := range order {
			if count[p] > 1 {
				parts = append(parts, fmt.Sprintf("%s (%d times)", p, count[p]))
			} else {
				parts = append(parts, p)
			}
		}
		fmt.Fprintf(c.stderr, "blpp run: followed %d exec%s: %s (--profile keeps their profiles)\n", len(names), plural(len(names)), strings.Join(parts, ", "))
	}
	last := -1
	for i := range names {
		if notes[i].Pid == mainPid {
			last = i
		}
	}
	if last < 0 && len(names) == 1 {
		last = 0
	}
	if last < 0 || out != "" {
		return
	}
	fmt.Fprintf(c.stderr, "blpp run: the program it exec'd, %s (pid %d):\n", notes[last].Prog, notes[last].Pid)
	if err := writeRunReport(c, notes[last].Inst, notes[last].Argv0, nil, names[last], "", top); err != nil {
		fmt.Fprintf(c.stderr, "blpp run: %v\n", err)
	}
}

// followedExecs is ": N path executions" for the profile at name, or ""
// when it cannot be read.
func followedExecs(name string) string {
	p, err := cct.ReadFile(name)
	if err != nil {
		return ""
	}
	var total uint64
	for _, t := range p.Threads {
		for _, r := range t.Records {
			for _, x := range r.Paths {
				total += x.Count
			}
		}
	}
	return fmt.Sprintf(": %d path executions", total)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
