package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	runs, warmup int
	layouts      int
	scale        int
	cc           string
	only         []string
	variants     []variant // native first
	asJSON       bool
	srcDir       string
	keep         bool

	rewritePython bool
	python        string

	profileWrite bool
	calls        int64

	pgo                  bool
	pgoScale, trainScale int
	clang, profdata      string
	pgoProgram, luaSrc   string
	bolt                 string
	pgoLTO               string          // --pgo-lto: none or thin
	pgoBuilds            map[string]bool // --pgo-builds: the optional builds to make

	// shareScale is the workload size of the callgrind run that measures
	// the dynamic share (0: not measured).
	shareScale int
	suite      string // "bench" or "real"

	stdout, stderr io.Writer
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	c := &config{stdout: stdout, stderr: stderr}
	fs := pflag.NewFlagSet("blpp-bench", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.runs, "runs", 6, "measured runs of each variant of each workload")
	fs.IntVar(&c.layouts, "layouts", 3, "code layouts of each blpp variant, taken in turn by the rounds (1: blpp rewrite's own only)")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured runs of each variant before the measured ones")
	fs.IntVar(&c.scale, "scale", 100, "workload size passed to every workload (100: ~0.5 s natively)")
	fs.StringVar(&c.cc, "cc", "gcc", "C compiler (must accept -fprofile-arcs)")
	fs.IntVar(&c.shareScale, "share-scale", 5, "workload size of the callgrind run that measures each workload's dynamic share, the executed instructions in instrumented functions (0: not measured; needs valgrind)")
	fs.StringVar(&c.suite, "suite", "bench", "workloads to measure: bench (the loop kernels of testdata/bench) or real (installed call-heavy programs: lua5.4, gawk, python3, bc, troff, cppcheck, re2c, m4; and, built here natively and with gcov, lua-src, Lua 5.4 from Debian's source, and calls.c)")
	only := fs.String("only", "", "comma-separated workloads to run (default: all)")
	variants := fs.String("variants", "all", "comma-separated variants to measure besides native: gcov, flow, ctx, ctx+tsc, ctx+s1k, ctx+s10k, ctx+tsc-nolat; all (the first five), sampled (ctx+s1k and ctx+s10k)")
	fs.BoolVar(&c.asJSON, "json", false, "print one JSON object instead of the table")
	fs.StringVar(&c.srcDir, "src", "", "directory of the workload sources (default: testdata/bench of the module)")
	fs.BoolVar(&c.keep, "keep", false, "keep the build directory and print its name")
	fs.BoolVar(&c.rewritePython, "rewrite-python", false, "measure rewriting a large real binary instead of running the workloads")
	fs.StringVar(&c.python, "python", "/usr/bin/python3.11", "the binary --rewrite-python rewrites")
	fs.BoolVar(&c.profileWrite, "profile-write", false, "measure how long an instrumented program takes to write its profile at exit instead of running the workloads")
	fs.Int64Var(&c.calls, "calls", 10_000_000, "calls the --profile-write program makes in total")
	fs.BoolVar(&c.pgo, "pgo", false, "measure what a profile feed is worth instead of running the workloads: a program built plain, with blpp's LLVM sample profiles (line- and probe-based), with clang's IR-PGO, and optimized by llvm-bolt with blpp's profile and with BOLT's own, timed alternately")
	fs.StringVar(&c.pgoProgram, "pgo-program", pgoLua, "--pgo: the program: lua (Lua 5.4 from Debian's source, its files compiled one by one as its makefile does, running testdata/pgo/workload.lua), lua-one (the same as one translation unit) or tinyvm (testdata/pgo/tinyvm.c, workload.tl)")
	fs.StringVar(&c.luaSrc, "lua-src", "", "--pgo: Lua 5.4's source directory (default: fetched with apt-get source lua5.4 into the user's cache directory)")
	fs.StringVar(&c.bolt, "llvm-bolt", "", "--pgo: the llvm-bolt command (default: llvm-bolt in llvm-config-16 --bindir)")
	fs.IntVar(&c.pgoScale, "pgo-scale", 40, "--pgo: SCALE of the timed runs of the workload script (40: ~1 s plainly built)")
	fs.IntVar(&c.trainScale, "train-scale", 0, "--pgo: SCALE of the training runs (0: the same as --pgo-scale)")
	fs.StringVar(&c.clang, "clang", "clang-16", "--pgo: the clang command")
	fs.StringVar(&c.profdata, "llvm-profdata", "llvm-profdata-16", "--pgo: the llvm-profdata command")
	fs.StringVar(&c.pgoLTO, "pgo-lto", pgoLTONone, "--pgo: link-time optimization of every build alike: none (each file optimized alone) or thin (clang -flto=thin, linked by gold with LLVM's plugin, which reads the profile again: how sample profiles are used on programs of several files)")
	builds := fs.String("pgo-builds", "all", "--pgo: comma-separated builds to make and time besides plain and clang IR-PGO (the baseline and the reference): lines, probes (blpp's line- and probe-based sample profiles), bolt (llvm-bolt fed by blpp and by its own instrumentation); all")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "blpp-bench: %v (run with --help for the flags)\n", err)
		return 2
	}
	if *help {
		fmt.Fprintf(stdout, "usage: blpp-bench [flags]\n\nflags:\n%s", fs.FlagUsages())
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "blpp-bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if c.runs < 1 || c.warmup < 0 || c.scale < 1 || c.calls < 0 || c.layouts < 1 {
		fmt.Fprintln(stderr, "blpp-bench: --runs, --layouts and --scale must be at least 1, --warmup and --calls at least 0")
		return 2
	}
	if btoi(c.profileWrite)+btoi(c.rewritePython)+btoi(c.pgo) > 1 {
		fmt.Fprintln(stderr, "blpp-bench: --profile-write, --rewrite-python and --pgo exclude each other")
		return 2
	}
	if c.pgoScale < 1 || c.trainScale < 0 {
		fmt.Fprintln(stderr, "blpp-bench: --pgo-scale must be at least 1, --train-scale at least 0")
		return 2
	}
	if c.trainScale == 0 {
		c.trainScale = c.pgoScale
	}
	var err error
	if c.pgoBuilds, err = parsePGOBuilds(*builds); err != nil {
		fmt.Fprintf(stderr, "blpp-bench: %v\n", err)
		return 2
	}
	if c.pgoLTO != pgoLTONone && c.pgoLTO != pgoLTOThin {
		fmt.Fprintf(stderr, "blpp-bench: --pgo-lto: no mode %q (have %s, %s)\n", c.pgoLTO, pgoLTONone, pgoLTOThin)
		return 2
	}
	if c.variants, err = parseVariants(*variants); err != nil {
		fmt.Fprintf(stderr, "blpp-bench: %v\n", err)
		return 2
	}
	for _, name := range strings.Split(*only, ",") {
		if name = strings.TrimSpace(strings.TrimSuffix(name, ".c")); name != "" {
			c.only = append(c.only, name)
		}
	}

	if c.suite != "bench" && c.suite != "real" {
		fmt.Fprintf(stderr, "blpp-bench: --suite: no suite %q (have bench, real)\n", c.suite)
		return 2
	}
	switch {
	case c.suite == "real" && !c.rewritePython && !c.profileWrite:
		err = benchReal(c)
	case c.rewritePython:
		err = benchPython(c)
	case c.profileWrite:
		err = benchProfileWrite(c)
	case c.pgo:
		err = benchPGO(c)
	default:
		err = benchWorkloads(c)
	}
	if err != nil {
		var ue *usageError
		fmt.Fprintf(stderr, "blpp-bench: %v\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// usageError is a command line that names something that does not exist.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
