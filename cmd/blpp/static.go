package main

import (
	"fmt"
	"os"
	"regexp"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/hugeheap"
	"github.com/blpp/blpp/report"
)

func init() {
	register(&command{name: "cfg", summary: "print control-flow graphs with Ball-Larus increments, backedges and loops",
		usage: "BINARY [--func REGEX] [--max-paths N] [--format text|dot|json] [--profile P --format dot [--hot SHARE]] [--no-demangle]", run: runCFG})
	register(&command{name: "stats", summary: "per-function blocks, edges, loops, paths and instrumentability",
		usage: "BINARY [--func REGEX] [--max-paths N] [--json] [--no-demangle]", run: runStats})
}

// analyse opens a binary and runs the static pipeline on the procedures
// whose name (or an alias) matches re (all when re is empty).
func analyse(path, re string, maxPaths uint64) (*analysis.Result, error) {
	var match func(*cfg.Function) bool
	if re != "" {
		rx, err := regexp.Compile(re)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("--func: %v", err)}
		}
		match = func(f *cfg.Function) bool {
			if rx.MatchString(f.Name) {
				return true
			}
			for _, a := range f.Aliases {
				if rx.MatchString(a) {
					return true
				}
			}
			return false
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a binary", path)
	}
	hugeheap.Reserve(fileSize(path) * analysisHeapFactor)
	b, err := cfg.Open(path)
	if err != nil {
		return nil, err
	}
	return analysis.Run(b, analysis.Options{Match: match, MaxPaths: maxPaths}), nil
}

// analysisHeapFactor is about how much memory the analysis of a binary
// takes at its peak for each byte of the file (blpp stats on
// libLLVM-16: 2.1 GB for 123 MB), for hugeheap.Reserve (decision 181).
const analysisHeapFactor = 24

func oneArg(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", &usageError{fmt.Sprintf("want exactly one %s argument, got %d", what, len(args))}
	}
	return args[0], nil
}

func runCFG(c *ctx, args []string) error {
	fs := c.newFlags()
	re := fs.String("func", "", "only functions whose name matches this regular expression")
	format := fs.String("format", "text", "output format: text, dot or json")
	maxPaths := fs.Uint64("max-paths", 0, "path limit per function before edges are split (0: 2^62)")
	profile := fs.StringSlice("profile", nil, "profiles of BINARY, an instrumented binary: draw its original CFGs with block and edge counts, hot paths' edges in red (--format dot)")
	hotShare := fs.Float64("hot", report.DefaultHotShare, "with --profile: a function's hot paths are the fewest covering this share of its instructions executed")
	noDemangle := noDemangleFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	path, err := oneArg(fs.Args(), "BINARY")
	if err != nil {
		return err
	}
	switch *format {
	case "text", "dot", "json":
	default:
		return &usageError{fmt.Sprintf("--format %q: want text, dot or json", *format)}
	}
	if len(*profile) > 0 || fs.Changed("hot") {
		return runProfiledCFG(c, path, *profile, *re, *format, *hotShare, fs.Changed("max-paths"), names(noDemangle))
	}
	r, err := analyse(path, *re, *maxPaths)
	if err != nil {
		return err
	}
	if *re != "" && len(r.Funcs) == 0 {
		return fmt.Errorf("no function matches %q", *re)
	}
	d := report.MakeCFG(path, r, r.Funcs)
	d.Names = names(noDemangle)
	switch *format {
	case "dot":
		return report.CFGDot(c.stdout, d)
	case "json":
		return report.CFGJSON(c.stdout, d)
	}
	return report.CFGText(c.stdout, d)
}

func runStats(c *ctx, args []string) error {
	fs := c.newFlags()
	re := fs.String("func", "", "only functions whose name matches this regular expression")
	asJSON := fs.Bool("json", false, "write JSON (schema in docs/formats.md)")
	noDemangle := noDemangleFlag(fs)
	maxPaths := fs.Uint64("max-paths", 0, "path limit per function before edges are split (0: 2^62)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	path, err := oneArg(fs.Args(), "BINARY")
	if err != nil {
		return err
	}
	r, err := analyse(path, *re, *maxPaths)
	if err != nil {
		return err
	}
	if *re != "" && len(r.Funcs) == 0 {
		return fmt.Errorf("no function matches %q", *re)
	}
	s := report.MakeStats(path, r)
	s.Names = names(noDemangle)
	if *asJSON {
		return report.StatsJSON(c.stdout, s)
	}
	return report.StatsText(c.stdout, s)
}

// runProfiledCFG draws the CFGs of an instrumented binary's functions
// matching re (all that ran when re is empty) with the profiles' counts.
func runProfiledCFG(c *ctx, binary string, profiles []string, re, format string, share float64, maxPaths bool, o report.NameOptions) error {
	switch {
	case len(profiles) == 0:
		return &usageError{"--hot applies with --profile"}
	case format != "dot":
		return &usageError{"--profile draws the graph: give --format dot"}
	case maxPaths:
		return &usageError{"--max-paths does not apply with --profile (the metadata holds the numbering)"}
	case !(share > 0 && share <= 1):
		return &usageError{fmt.Sprintf("--hot %g: want a share in (0, 1], like 0.9", share)}
	}
	match := func(string) bool { return true }
	if re != "" {
		rx, err := regexp.Compile(re)
		if err != nil {
			return &usageError{fmt.Sprintf("--func: %v", err)}
		}
		match = rx.MatchString
	}
	m, err := loadModel(c, binary, profiles, o)
	if err != nil {
		return err
	}
	defer m.File.Close()
	funcs := m.MatchFuncs(match)
	if re == "" {
		ran := funcs[:0]
		for _, fn := range funcs {
			if m.Profile(fn).Insns > 0 {
				ran = append(ran, fn)
			}
		}
		funcs = ran
	}
	if len(funcs) == 0 {
		if re != "" {
			return fmt.Errorf("no instrumented function of %s matches %q", binary, re)
		}
		return fmt.Errorf("no function of %s ran in the profile", binary)
	}
	return report.CFGProfileDot(c.stdout, m, funcs, report.CFGProfileOptions{Share: share})
}
