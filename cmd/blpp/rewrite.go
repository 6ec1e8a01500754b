package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blpp/blpp/counters"
	"github.com/blpp/blpp/internal/hugeheap"
	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{name: "rewrite", summary: "write an instrumented copy of an x86-64 executable or shared library",
		usage: "IN -o OUT [-v] [--json] [--code-map FILE] [--include REGEX] [--exclude REGEX] [--no-context] [--metrics LIST] [--no-latency] [--shadow-frames N] [--module-tag N] [--no-slots]", run: runRewrite})
}

// modeFlags are the flags that choose what the instrumented program
// records; rewrite and run share them.
type modeFlags struct {
	noContext    *bool
	metrics      *string
	shadowFrames *uint64
	noLatency    *bool
}

func addModeFlags(fs *pflag.FlagSet) modeFlags {
	return modeFlags{
		noContext: fs.Bool("no-context", false, "flow-only profiles: one record per function, no calling context tree (cheaper)"),
		metrics: fs.String("metrics", "freq", "metrics to record per path, comma separated: freq plus up to 4 of "+
			strings.Join(counters.Names(), ", ")+" (see blpp counters); and sample:cpu-clock[@HZ] (or task-clock, or sample:EVENT[@PERIOD]) samples time per context, block and path instead of reading counters"),
		shadowFrames: fs.Uint64("shadow-frames", 0, fmt.Sprintf("most activations per thread the profile tracks exactly, from 64 up to 2^30 (0: %d); each takes 72 bytes as the stack deepens", runtime.DefaultShadowFrames)),
		noLatency: fs.Bool("no-latency", false, fmt.Sprintf("with --metrics, keep only each path's sums: no distribution of its first metric per execution (a %d-bucket histogram and the %d largest values, %d words per path and context that runs more than once; blpp report --view latency shows them)",
			runtime.LatencyBuckets, runtime.LatencySlowest, runtime.LatencyWords)),
	}
}

// apply sets the mode in opts.
func (m modeFlags) apply(opts *rewriter.Options) error {
	specs, sampling, err := counters.ParseWithSampling(*m.metrics)
	if err != nil {
		return &usageError{fmt.Sprintf("--metrics: %v", err)}
	}
	if n := *m.shadowFrames; n != 0 && (n < 64 || n > 1<<30) {
		return &usageError{fmt.Sprintf("--shadow-frames: %d is not between 64 and 2^30", n)}
	}
	if *m.noLatency && len(specs) == 0 {
		return &usageError{"--no-latency applies with --metrics (freq alone keeps no latency)"}
	}
	opts.NoContext = *m.noContext
	opts.NoLatency = *m.noLatency
	opts.ShadowFrames = *m.shadowFrames
	opts.Metrics = nil
	for _, s := range specs {
		mt := rewriter.Metric{Name: s.Name, Type: uint64(s.Type), Config: s.Config}
		if s.TSC {
			mt.Type = runtime.MetricTypeTSC
		}
		opts.Metrics = append(opts.Metrics, mt)
	}
	opts.Sample = nil
	if sampling != nil {
		opts.Sample = &runtime.Sampler{Type: uint64(sampling.Type), Config: sampling.Config, Period: sampling.Period,
			Name: runtime.MetricName(sampling.Event)}
	}
	return nil
}

// args are the flags that give this mode again (for blpp rewrite-module).
func (m modeFlags) args() []string {
	a := []string{"--metrics", *m.metrics, "--shadow-frames", fmt.Sprint(*m.shadowFrames)}
	if *m.noContext {
		a = append(a, "--no-context")
	}
	if *m.noLatency {
		a = append(a, "--no-latency")
	}
	return a
}

// key is a string naming the mode, for cache keys.
func (m modeFlags) key() string {
	k := fmt.Sprintf("ctx=%v metrics=%s shadow=%d", !*m.noContext, *m.metrics, *m.shadowFrames)
	if *m.noLatency {
		k += " nolatency" // only then: the keys of earlier caches stay valid
	}
	return k
}

func runRewrite(c *ctx, args []string) error {
	fs := c.newFlags()
	out := fs.StringP("output", "o", "", "the instrumented binary to write (required)")
	verbose := fs.BoolP("verbose", "v", false, "list every function left uninstrumented, with its reason")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	include := fs.String("include", "", "instrument only functions whose name matches this regular expression")
	exclude := fs.String("exclude", "", "do not instrument functions whose name matches this regular expression")
	mode := addModeFlags(fs)
	moduleTag := fs.Uint64("module-tag", 0, fmt.Sprintf("a shared library's tag among the modules of a process, 1 to %d (0: derived from its SONAME); instrumented libraries loaded together need distinct tags", runtime.MaxModuleTag))
	codeMap := fs.String("code-map", "", "write the new code's map to this file: a line per stretch, \"start end kind place function\" (addresses in hex; kinds as in -v's table)")
	noSlots := fs.Bool("no-slots", false, "no per-thread slot counters (as in libraries): needed by a --no-context executable whose process loads instrumented libraries")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *moduleTag > runtime.MaxModuleTag {
		return &usageError{fmt.Sprintf("--module-tag: %d is above %d", *moduleTag, runtime.MaxModuleTag)}
	}
	in, err := oneArg(fs.Args(), "IN")
	if err != nil {
		return err
	}
	if *out == "" {
		return &usageError{"-o OUT is required"}
	}
	opts := rewriter.Options{ModuleTag: *moduleTag, NoSlots: *noSlots}
	if err := mode.apply(&opts); err != nil {
		return err
	}
	if *include != "" {
		if opts.Include, err = regexp.Compile(*include); err != nil {
			return &usageError{fmt.Sprintf("--include: %v", err)}
		}
	}
	if *exclude != "" {
		if opts.Exclude, err = regexp.Compile(*exclude); err != nil {
			return &usageError{fmt.Sprintf("--exclude: %v", err)}
		}
	}
	var mapFile *os.File
	if *codeMap != "" {
		if mapFile, err = os.Create(*codeMap); err != nil {
			return fmt.Errorf("--code-map: %w", err)
		}
		opts.CodeMap = mapFile
	}
	sum, err := rewriteAlone(in, *out, opts)
	if mapFile != nil {
		if cerr := mapFile.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("--code-map: %w", cerr)
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	printSummary(c, in, *out, sum, *verbose)
	return nil
}

// rewriteAlone is rewriteFile in a process that rewrites no other
// object: with its heap mapped ahead and given huge pages (decision
// 181). blpp run's own process rewrites a program's start libraries one
// after another; there the heap an earlier library touched serves the
// next, and the advice made its first run of clang-16 no faster and its
// peak 10% higher, so it goes without.
func rewriteAlone(in, out string, opts rewriter.Options) (*rewriter.Summary, error) {
	defer hugeheap.Start(rewriter.HeapFor(fileSize(in)))()
	return rewriteFile(in, out, opts)
}

// rewriteFile rewrites in into out (wholerun.RewriteFile), with progress
// on a terminal.
func rewriteFile(in, out string, opts rewriter.Options) (*rewriter.Summary, error) {
	rewriter.LimitMemory()
	// Progress on a terminal, for rewrites that take more than a second.
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && opts.Progress == nil {
		start := time.Now()
		opts.Progress = func(stage string) {
			if d := time.Since(start); d > time.Second {
				fmt.Fprintf(os.Stderr, "blpp rewrite: %s (%.1f s)\n", stage, d.Seconds())
			}
		}
	}
	return wholerun.RewriteFile(in, out, opts)
}

func printSummary(c *ctx, in, out string, sum *rewriter.Summary, verbose bool) {
	share := 0.0
	if sum.Functions > 0 {
		share = 100 * float64(sum.Instrumented) / float64(sum.Functions)
	}
	fmt.Fprintf(c.stdout, "%s -> %s: %d of %d functions instrumented (%.1f%%), %d bytes of new code\n",
		in, out, sum.Instrumented, sum.Functions, share, sum.CodeBytes)
	if sum.Module == rewriter.ModuleLibrary {
		name := sum.Soname
		if name == "" {
			name = "(no SONAME)"
		}
		fmt.Fprintf(c.stdout, "  module: %s %s, tag %d\n", sum.Module, name, sum.ModuleTag)
	} else {
		fmt.Fprintf(c.stdout, "  module: %s, tag 0\n", sum.Module)
	}
	byReason := map[string]int{}
	for _, s := range sum.Skipped {
		byReason[s.Reason]++
	}
	var reasons []string
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if byReason[reasons[i]] != byReason[reasons[j]] {
			return byReason[reasons[i]] > byReason[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		fmt.Fprintf(c.stdout, "  uninstrumented: %-30s %d\n", r, byReason[r])
	}
	if len(sum.Skipped) > 0 {
		fmt.Fprintf(c.stdout, "  uninstrumented functions whose entries are counted: %d of %d\n", sum.EntriesCounted, len(sum.Skipped))
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(c.stdout, "  warning: %s\n", w)
	}
	if verbose && sum.Instrumented > 0 {
		fmt.Fprintf(c.stdout, "  path register in a general register: %d of %d instrumented functions\n", sum.RegisterPaths, sum.Instrumented)
		if sum.LoopRegisters > 0 {
			fmt.Fprintf(c.stdout, "  loops with a path register of their own: %d (%d swapping it with a program value)\n", sum.LoopRegisters, sum.LoopSwaps)
		}
		if sum.ClosedFunctions > 0 {
			fmt.Fprintf(c.stdout, "  closed functions (calls keep no caller state): %d (%d calling out)\n", sum.ClosedFunctions, sum.ClosedCallingOut)
		}
		if sum.LoopCopies > 0 {
			fmt.Fprintf(c.stdout, "  one-cycle loops counted at the head of a second copy: %d\n", sum.LoopCopies)
		}
	}
	if verbose && len(sum.CodeKinds) > 0 {
		printCodeKinds(c, sum)
	}
	if verbose && len(sum.Skipped) > 0 {
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\n  entry\tfunction\treason\tentries")
		for _, s := range sum.Skipped {
			detail := s.Reason
			if s.Detail != "" {
				detail = s.Detail
			}
			entries := "counted"
			if !s.EntriesCounted {
				entries = "not counted: " + s.NotCounted
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Entry, s.Name, detail, entries)
		}
		tw.Flush()
	}
}

// printCodeKinds prints what the new code is made of: per kind its bytes,
// share of all new code, and where in the functions it lies.
func printCodeKinds(c *ctx, sum *rewriter.Summary) {
	pct := func(n int) string {
		if sum.CodeBytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(sum.CodeBytes))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\n  new code\tbytes\tshare\tinline\ttrampolines\tcold\tloop copies\t")
	for _, k := range sum.CodeKinds {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d\t%d\t%d\t\n", k.Kind, k.Bytes, pct(k.Bytes), k.Inline, k.Trampolines, k.Cold, k.LoopCopies)
	}
	fmt.Fprintf(tw, "  outside functions\t%d\t%s\t\t\t\t\t\n", sum.CodeElsewhere, pct(sum.CodeElsewhere))
	fmt.Fprintf(tw, "  total\t%d\t%s\t\t\t\t\t\n", sum.CodeBytes, pct(sum.CodeBytes))
	tw.Flush()
}
