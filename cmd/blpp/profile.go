package main

import (
	"fmt"

	"blpp/cct"
	"blpp/report"
)

func init() {
	register(&command{name: "report", summary: "hot paths and per-function path counts from profiles of an instrumented binary",
		usage: "PROFILE... [--binary B] [--top N] [--format text|json]", run: runReport})
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
	top := fs.Int("top", 20, "number of hottest paths to show (text)")
	format := fs.String("format", "text", "output format: text or json")
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
	d, err := report.MakePaths(*binary, tab, prof, lines)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Args()[0], err)
	}
	if *format == "json" {
		return report.PathsJSON(c.stdout, d)
	}
	return report.PathsText(c.stdout, d, *top, lines)
}
