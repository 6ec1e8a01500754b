package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

func init() {
	register(&command{name: "run", summary: "rewrite a program (cached), run it with the same arguments and I/O, report its hot paths",
		usage: "[-o REPORT] [--top N] [--profile FILE] [--continuous] [--print-command] [--no-context] [--metrics LIST] [--no-latency] [--shadow-frames N] [--libs all|none|REGEX] [--exclude-lib REGEX] [--lib FILE] [--no-follow] -- PROG [ARGS...]", run: runRun, streams: true})
}

// exitError carries the program's exit status out of runRun.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// cachedRewrite rewrites the executable prog into the user cache
// (cachedModule) and returns the instrumented binary's path. noSlots is
// for a process whose libraries are instrumented too (decision 81).
func cachedRewrite(prog string, mode modeFlags, noSlots bool) (string, error) {
	var opts rewriter.Options
	if err := mode.apply(&opts); err != nil {
		return "", err
	}
	opts.NoSlots = noSlots
	return cachedModule(prog, opts, mode)
}

func runRun(c *ctx, args []string) error {
	fs := c.newFlags()
	reportPath := fs.StringP("output", "o", "", "write the report to this file instead of stderr")
	top := fs.Int("top", 10, "number of hottest paths to show")
	profile := fs.String("profile", "", "keep the profile in this file (default: a temporary file, or $BLPP_PROFILE)")
	continuous := fs.Bool("continuous", false, "continuous mode: the profile file holds every count from the start (BLPP_PROFILE with %c), so that a program killed by SIGKILL leaves its profile")
	mode := addModeFlags(fs)
	sel := addLibFlags(fs)
	printCmd := fs.Bool("print-command", false, "set the program up as run does and print the command that runs it (to time it, or run it under gdb or perf), without running it; the set-up directory it names stays. The command follows execs unless --no-follow: their profiles go beside the profile named now (--profile, $BLPP_PROFILE, or ./blpp.out)")
	extraLibs := fs.StringArray("lib", nil, "instrument this shared object too, one the program dlopen's by name: the loader finds it by its base name (repeatable)")
	noFollow := fs.Bool("no-follow", false, "do not follow execs: a program the program execs (a wrapper script's, a shell's, make's) runs uninstrumented; by default blpp runs it instrumented too, with a profile of its own")
	fs.SetInterspersed(false)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return &usageError{"want -- PROG [ARGS...]"}
	}
	prog, err := exec.LookPath(rest[0])
	if err != nil {
		return err
	}
	prog, argv, interps, err := followScript(prog, rest)
	if err != nil {
		return err
	}
	// Said in the report, not at the start: blpp's own lines stay out
	// of the program's output.
	var notes []string
	if len(interps) > 0 {
		via := ""
		if len(interps) > 1 {
			via = " (by way of " + strings.Join(interps[:len(interps)-1], ", ") + ")"
		}
		notes = append(notes, fmt.Sprintf("%s is a script: profiled its interpreter %s%s", rest[0], interps[len(interps)-1], via))
		rest = argv
	}
	pick, noLibs, err := sel.compile()
	if err != nil {
		return err
	}
	loader, err := wholerun.Interpreter(prog)
	if err != nil {
		return err
	}
	if noLibs && len(*extraLibs) > 0 {
		return &usageError{"--lib with --libs none"}
	}
	// A dynamic program runs under its loader even with --libs none, with
	// the links to its libraries (prepareLibs).
	// Continuous mode keeps no counts in thread blocks: no slot counters.
	inst, err := cachedRewrite(prog, mode, loader != "" && !noLibs || *continuous)
	if err != nil {
		return err
	}
	var wp *wholerun.Process
	if loader != "" {
		if wp, err = prepareLibs(c.stderr, loader, prog, mode, sel, pick, noLibs, *extraLibs); err != nil {
			return err
		}
		if !*printCmd {
			defer wp.Close()
		}
	}
	followArgs := func() []string {
		args := append(append(mode.args(), sel.args()...), "--cache-dir", cacheRoot())
		for _, l := range *extraLibs {
			args = append(args, "--lib", l)
		}
		return args
	}
	if *printCmd {
		// Execs are followed as blpp run follows them, through a follow
		// directory that stays, as the set-up directory does; the
		// followed programs' profiles go beside the profile named now
		// (--profile, $BLPP_PROFILE, or blpp.out here).
		followDir := ""
		if !*noFollow {
			profPath := *profile
			if profPath == "" {
				profPath = os.Getenv("BLPP_PROFILE")
			}
			if profPath == "" {
				profPath = "blpp.out"
			}
			if followDir, _, _, err = startFollow(followArgs(), profPath, *continuous); err != nil {
				return err
			}
		}
		argv := append([]string{inst}, rest[1:]...)
		if wp == nil && followDir != "" {
			argv = append([]string{"env", "BLPP_FOLLOW=" + followDir}, argv...)
		}
		if wp != nil {
			// env(1) unsets the variables blpp sets, then sets them, so
			// that they end the environment in Command's order; argv[0] is
			// the mirror's path (env cannot set it).
			cmd, err := wp.Command(inst, prog, rest[0], rest[1:], nil)
			if err != nil {
				return err
			}
			unset := []string{"LD_LIBRARY_PATH", "LD_AUDIT", "BLPP_AUDIT_ENV", "BLPP_AUDIT_PAD"}
			env := os.Environ()
			if followDir != "" {
				wp.Follow = followDir
				unset = append(unset, "BLPP_FOLLOW")
				env = slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "BLPP_FOLLOW=") })
			}
			_, added := wp.EnvAdded(env, cmd.Path)
			argv = []string{"env"}
			if wp.StaticTLS > 0 {
				unset = append(unset, "GLIBC_TUNABLES")
			}
			for _, v := range unset {
				argv = append(argv, "-u", v)
			}
			argv = append(append(argv, added...), cmd.Path)
			argv = append(argv, rest[1:]...)
		}
		for i, a := range argv {
			if i > 0 {
				fmt.Fprint(c.stdout, " ")
			}
			fmt.Fprint(c.stdout, shellQuote(a))
		}
		fmt.Fprintln(c.stdout)
		return nil
	}
	profPath := *profile
	if profPath == "" {
		profPath = os.Getenv("BLPP_PROFILE")
	}
	keep := profPath != ""
	if !keep {
		d, err := os.MkdirTemp("", "blpp-run-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		profPath = filepath.Join(d, "blpp.out")
	}
	name := profPath // the runtime's BLPP_PROFILE
	if *continuous {
		name += "%c" // decision 94: the runtime takes it out of the name
	}
	var follow followState
	followDir := ""
	if !*noFollow {
		// What the program execs runs instrumented as well, through
		// blpp (decision 167), with these flags.
		var done func()
		if followDir, follow, done, err = startFollow(followArgs(), profPath, *continuous); err != nil {
			return err
		}
		defer done()
	}
	p := exec.Command(inst, rest[1:]...)
	p.Args[0] = rest[0]
	p.Env = append(os.Environ(), "BLPP_PROFILE="+name)
	if followDir != "" {
		p.Env = append(p.Env, "BLPP_FOLLOW="+followDir)
	}
	if wp != nil {
		// The auditor takes the entries out again: the program sees its
		// own environment (decision 140). A static program, which runs
		// without one, sees them.
		wp.Profile, wp.Follow = name, followDir
		if p, err = wp.Command(inst, prog, rest[0], rest[1:], os.Environ()); err != nil {
			return err
		}
	}
	p.Stdin, p.Stdout, p.Stderr = os.Stdin, c.stdout, c.stderr
	// Signals meant for the program (^C) reach it through the process
	// group; blpp waits for it rather than dying first. They are caught,
	// not ignored: an ignored signal stays ignored across exec, and the
	// program would start with SIGINT ignored (decision 94).
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(caught)
	runErr := p.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if runErr != nil {
		return runErr
	}
	if wp != nil {
		for _, s := range wp.Skipped {
			notes = append(notes, "not instrumented: "+s)
		}
	}
	if _, err := os.Stat(profPath); os.IsNotExist(err) {
		// Nothing to report on: say why it may be so, not that a file
		// the user never named is missing.
		fmt.Fprintf(c.stderr, "blpp run: %s wrote no profile (%s)\n", rest[0], noProfileWhy(code, *continuous))
	} else if err := writeRunReport(c, inst, rest[0], notes, profPath, *reportPath, *top); err != nil {
		fmt.Fprintf(c.stderr, "blpp run: %v\n", err)
	}
	if followDir != "" {
		pid := 0
		if p.Process != nil {
			pid = p.Process.Pid
		}
		reportFollowed(c, followDir, follow, keep, *reportPath, *top, pid)
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// noProfileWhy says what may have left a program run by blpp run (exit
// status code, as a shell gives it) without a profile: SIGKILL, which no
// process can catch, another signal before the profile was written, or
// an exit that ran no instrumented code.
func noProfileWhy(code int, continuous bool) string {
	switch {
	case code == 128+int(syscall.SIGKILL) && !continuous:
		return "killed by SIGKILL, which no process can catch; --continuous keeps every count in the file as it runs"
	case code >= 128+32 && code < 128+65:
		return fmt.Sprintf("killed by the real-time signal %d, which blpp leaves to the program; --continuous keeps every count in the file as it runs", code-128)
	case code > 128 && code < 128+32:
		return fmt.Sprintf("killed by signal %d before it wrote one", code-128)
	}
	return fmt.Sprintf("exit status %d: it ended without running its exit hooks, or in code that is not instrumented", code)
}

// writeRunReport writes blpp run's notes (a script followed to its
// interpreter, the libraries left uninstrumented with their reasons) and
// the report: to stderr after the program's own output, or to the file
// out.
func writeRunReport(c *ctx, inst, title string, notes []string, profPath, out string, top int) error {
	var w io.Writer = c.stderr
	if out != "" {
		fh, err := os.Create(out)
		if err != nil {
			return err
		}
		defer fh.Close()
		w = fh
	}
	for _, s := range notes {
		fmt.Fprintf(w, "blpp run: %s\n", s)
	}
	return writeRunReportTo(w, inst, title, profPath, top)
}

// writeRunReportTo writes the hot paths of the profile at profPath of
// the instrumented program inst, titled with the program as the user
// named it (title; "" for inst's path): the cached copy's path means
// nothing to the user.
func writeRunReportTo(w io.Writer, inst, title, profPath string, top int) error {
	prof, err := readProfiles([]string{profPath})
	if err != nil {
		return err
	}
	need := functionsNeeded(prof, true) // the paths view
	tab, f, err := report.LoadMetaOf(inst, 0, need)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, m := range report.RuntimeWarnings(prof.Stats) {
		fmt.Fprintf(w, "blpp: warning: %s\n", m)
	}
	// A wrapper script's interpreter, or `sh -c prog`, ends by exec'ing
	// the program the user meant; a crash or the dump signal ends the
	// profile early: say so, or the report reads as the whole run's.
	name := title
	if name == "" {
		name = inst
	}
	for _, n := range report.EndNotes(prof.Flags) {
		fmt.Fprintf(w, "blpp run: %s: %s\n", name, n)
	}
	// The libraries' copies are where the profile says the process
	// loaded them (the cache).
	libs, err := report.OpenModules(prof, nil, need)
	if err != nil {
		return err
	}
	defer report.CloseModules(libs)
	live := liveOnly(prof)
	m, err := report.NewModelWith(inst, tab, prof, f, report.ModelOptions{Libs: libs, Debug: report.DebugOptions{CacheDir: filepath.Join(cacheRoot(), "dwarf")},
		FunctionsOnly: true}) // the paths view
	if err != nil {
		return err
	}
	if err := liveNote(w, m, live); err != nil {
		return err
	}
	if title != "" {
		m.Binary = title
	}
	return report.PathsText(w, m, report.ViewOptions{Top: top})
}

// shellQuote quotes s for a POSIX shell where it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
