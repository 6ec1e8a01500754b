package main

import (
	"fmt"

	"blpp/cct"
	"blpp/report"
)

func init() {
	register(&command{name: "report", summary: "hot paths and calling-context views (tree, callers, flat) from profiles of an instrumented binary",
		usage: "PROFILE... [--binary B] [--view paths|tree|callers|flat] [--metric M] [--context CHAIN] [--top N] [--all] [--format text|json]", run: runReport})
}

// readProfiles reads and merges the profiles (several runs or processes
// of the same instrumented binary).
func readProfiles(paths []string) (*cct.Profile, error) {
	var ps []*cct.Profile
	for _, p := range paths {
		prof, err := cct.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ps = append(ps, prof)
	}
	if len(ps) == 1 {
		return ps[0], nil
	}
	return cct.Merge(ps...)
}

func runReport(c *ctx, args []string) error {
	cmd := find("report")
	fs := c.newFlags(cmd)
	binary := fs.String("binary", "", "the instrumented binary the profile came from (default: from the profile's directory, see docs)")
	view := fs.String("view", "paths", "text view: paths (hottest paths), tree (top-down calling contexts), callers (bottom-up), flat (per procedure)")
	metric := fs.String("metric", "", "metric of the tree, callers, flat and --context views: freq (default), insns, or any metric of the profile")
	context := fs.String("context", "", "show the hottest paths of the contexts whose chain of functions ends with CHAIN (main/parse/next; a leading / anchors at a root)")
	top := fs.Int("top", 20, "number of hottest paths (paths, --context), procedures (flat, callers) or contexts (--context) to show; 0 shows all")
	all := fs.Bool("all", false, "tree and callers: also show rows under 0.1% of the total")
	format := fs.String("format", "text", "output format: text or json (json holds every view's data: functions, paths and contexts)")
	if err := c.parse(cmd, fs, args); err != nil {
		return err
	}
	if len(fs.Args()) == 0 {
		return &usageError{"want at least one PROFILE argument"}
	}
	switch *format {
	case "text", "json":
	default:
		return &usageError{fmt.Sprintf("--format %q: want text or json", *format)}
	}
	switch *view {
	case "paths", "tree", "callers", "flat":
	default:
		return &usageError{fmt.Sprintf("--view %q: want paths, tree, callers or flat", *view)}
	}
	if *format == "json" {
		for _, name := range []string{"view", "metric", "context", "all"} {
			if fs.Changed(name) {
				return &usageError{fmt.Sprintf("--%s applies to text output (the JSON holds every view's data)", name)}
			}
		}
	}
	if *context != "" && *view != "paths" {
		return &usageError{fmt.Sprintf("--context shows paths: it does not combine with --view %s", *view)}
	}
	if *view == "paths" && *context == "" && *metric != "" {
		return &usageError{"--metric applies to --view tree, callers and flat, and to --context"}
	}
	if *all && *view != "tree" && *view != "callers" {
		return &usageError{"--all applies to --view tree and callers"}
	}
	if *top < 0 {
		return &usageError{fmt.Sprintf("--top %d: want 0 (all) or more", *top)}
	}
	if *binary == "" {
		return &usageError{"--binary is required: the instrumented binary that wrote the profile"}
	}
	prof, err := readProfiles(fs.Args())
	if err != nil {
		return err
	}
	tab, f, err := report.LoadMeta(*binary)
	if err != nil {
		return err
	}
	defer f.Close()
	lines := report.NewLineTable(f)
	if *format == "text" && *view == "paths" && *context == "" {
		d, err := report.MakePaths(*binary, tab, prof, lines)
		if err != nil {
			return fmt.Errorf("%s: %w", fs.Args()[0], err)
		}
		return report.PathsText(c.stdout, d, *top, lines)
	}
	tree, err := report.MakeContextTree(*binary, tab, prof)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Args()[0], err)
	}
	if *format == "json" {
		d, err := report.MakePaths(*binary, tab, prof, lines)
		if err != nil {
			return fmt.Errorf("%s: %w", fs.Args()[0], err)
		}
		d.Contexts = tree.Contexts()
		return report.PathsJSON(c.stdout, d)
	}
	o := report.ViewOptions{Top: *top, All: *all, Lines: lines}
	if *metric != "" {
		if o.Metric, err = tree.Column(*metric); err != nil {
			return &usageError{fmt.Sprintf("--metric: %v", err)}
		}
	}
	switch {
	case *context != "":
		ids, err := tree.Match(*context)
		if err != nil {
			return &usageError{fmt.Sprintf("--context: %v", err)}
		}
		if len(ids) == 0 {
			return fmt.Errorf("--context %s: no context's chain of functions ends so (--view tree lists them)", *context)
		}
		return report.ContextPathsText(c.stdout, tree, ids, *context, o)
	case *view == "tree":
		return report.TreeText(c.stdout, tree, o)
	case *view == "callers":
		return report.CallersText(c.stdout, tree, o)
	}
	return report.FlatText(c.stdout, tree, o)
}
