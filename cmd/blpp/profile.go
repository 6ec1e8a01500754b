package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/hugeheap"
	"github.com/blpp/blpp/report"
)

func init() {
	register(&command{name: "report", summary: "hot paths and calling-context views (tree, callers, flat) from profiles of an instrumented binary",
		usage: "PROFILE... [--binary B] [--debug-dir DIR] [--lib FILE]... [--module RE] [--view paths|tree|callers|flat|loops|hot|procs|latency] [--metric M] [--context CHAIN] [--top N] [--all] [--hot SHARE] [--asm] [--format text|json] [--html OUT] [--no-demangle]", run: runReport})
}

// liveNote writes report.LiveNote's lines for a profile read from a live
// file, "blpp: note: " first.
func liveNote(w io.Writer, m *report.Model, prof *cct.Profile) error {
	if prof == nil {
		return nil
	}
	lines, err := report.LiveNote(m, prof)
	for _, l := range lines {
		fmt.Fprintf(w, "blpp: note: %s\n", l)
	}
	return err
}

// liveOnly is prof when it is a live profile, which liveNote reads
// after the model is built, else nil: then nothing holds the profile
// once NewModelWith has folded it, and the collector frees a
// whole-process profile's records while the model is built (decision
// 137).
func liveOnly(prof *cct.Profile) *cct.Profile {
	if report.IsLive(prof) {
		return prof
	}
	return nil
}

// functionsNeeded is the set of functions whose graphs a view of prof
// needs (report.LoadMetaOf): every one (nil) unless ranOnly (the view
// shows only functions that ran) and prof has no samples (attributed by
// address) and is not live (whose in-flight frames liveNote expands).
func functionsNeeded(prof *cct.Profile, ranOnly bool) report.FuncSet {
	if !ranOnly || prof.Sampling != nil || report.IsLive(prof) {
		return nil
	}
	return report.ProfileFuncs(prof)
}

// profileHeapFactor is about how much memory a report or an export
// takes at its peak for each byte of the profiles it reads, the
// modules' tables included: 18.5 for the 28 MB profile of a whole
// clang-16 compile (519 MB), which is where it matters.
const profileHeapFactor = 24

// moduleHeapDivisor: the model takes about a fifth of the size of the
// instrumented modules' files (their tables, names and line tables) for
// the functions a profile names: 200 MB for clang-16 --version's 1.1 GB
// of modules.
const moduleHeapDivisor = 4

// fileSize is the size of the file at path, 0 when it cannot be had:
// for sizing the heap ahead, never for deciding what to read.
func fileSize(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return uint64(fi.Size())
}

// readProfiles reads and merges the profiles (several runs or processes
// of the same instrumented binary).
func readProfiles(paths []string) (*cct.Profile, error) {
	var size uint64
	for _, p := range paths {
		size += fileSize(p)
	}
	// A large profile's reading is the first large work (decision 181).
	expect := size * profileHeapFactor
	if expect >= hugeheap.MinReserve {
		hugeheap.Reserve(expect)
	}
	var ps []*cct.Profile
	for _, p := range paths {
		prof, err := cct.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ps = append(ps, prof)
	}
	// The modules' tables come next, and a small whole-process profile
	// can name large modules: a cached blpp run of clang-16 --version
	// writes 1 MB, and the tables of its 1.1 GB of instrumented
	// libraries take the report to 200 MB. (After a large profile's
	// reservation, a second one's collection would cost more than it
	// saves.)
	if expect < hugeheap.MinReserve && len(ps) > 0 {
		var mods uint64
		for _, m := range ps[0].Modules {
			if m.Path != "" {
				mods += fileSize(m.Path)
			}
		}
		hugeheap.Reserve(expect + mods/moduleHeapDivisor)
	}
	if len(ps) == 1 {
		return ps[0], nil
	}
	return cct.MergeNamed(paths, ps)
}

func runReport(c *ctx, args []string) error {
	fs := c.newFlags()
	binary := binaryFlag(fs)
	debugDirFlag(fs)
	libFlags(fs)
	view := fs.String("view", "paths", "text view: paths (hottest paths), tree (top-down calling contexts), callers (bottom-up), flat (per procedure), loops (loop nests in each calling context), hot (hot paths), procs (per procedure), latency (per hot path: mean, p50, p90, p99, max and histogram of its time per execution)")
	metric := fs.String("metric", "", "metric of the tree, callers, flat, loops, hot and --context views: freq (default), insns, any metric of the profile, or its sampled event (cpu-clock: sampled time, shown with its samples)")
	context := fs.String("context", "", "show the hottest paths of the contexts whose chain of functions ends with CHAIN (main/parse/next; a leading / anchors at a root)")
	top := fs.Int("top", 20, "number of hottest paths (paths, hot, --context, latency), procedures (flat, callers) or contexts (--context) to show; 0 shows all")
	all := fs.Bool("all", false, "tree and callers: also show rows under 0.1% of the total")
	format := fs.String("format", "text", "output format: text or json (json holds every view's data: functions, paths and contexts)")
	hotShare := fs.Float64("hot", report.DefaultHotShare, "hot and latency views and --html: the hot paths are the fewest covering this share of the metric")
	asm := fs.Bool("asm", false, "hot view: list each block's instructions")
	noDemangle := noDemangleFlag(fs)
	htmlOut := fs.String("html", "", "write one self-contained HTML page (hot paths, procedures, calling-context tree, CFGs) to this file")
	if err := c.parse(fs, args); err != nil {
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
	case "paths", "tree", "callers", "flat", "loops", "hot", "procs", "latency":
	default:
		return &usageError{fmt.Sprintf("--view %q: want paths, tree, callers, flat, loops, hot, procs or latency", *view)}
	}
	if *htmlOut != "" && (fs.Changed("view") || fs.Changed("format") || fs.Changed("context")) {
		return &usageError{"--html writes its own page: it does not combine with --view, --format or --context"}
	}
	if fs.Changed("hot") && *view != "hot" && *view != "latency" && *htmlOut == "" {
		return &usageError{"--hot applies to --view hot, --view latency and --html"}
	}
	if fs.Changed("hot") && !(*hotShare > 0 && *hotShare <= 1) {
		return &usageError{fmt.Sprintf("--hot %g: want a share in (0, 1], like 0.9", *hotShare)}
	}
	if *asm && *view != "hot" {
		return &usageError{"--asm applies to --view hot"}
	}
	if *view == "procs" && fs.Changed("metric") {
		return &usageError{"--metric does not apply to --view procs (it counts instructions)"}
	}
	if *view == "latency" && fs.Changed("metric") {
		return &usageError{"--metric does not apply to --view latency (it shows the metric the profile keeps distributions of)"}
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
	if *view == "paths" && *context == "" && *metric != "" && *htmlOut == "" {
		return &usageError{"--metric applies to --view tree, callers, flat and loops, and to --context"}
	}
	if *all && *view != "tree" && *view != "callers" && *view != "loops" {
		return &usageError{"--all applies to --view tree, callers and loops"}
	}
	if *top < 0 {
		return &usageError{fmt.Sprintf("--top %d: want 0 (all) or more", *top)}
	}
	prof, err := readProfiles(fs.Args())
	if err != nil {
		return err
	}
	// The paths view reads only functions. It and the views of
	// contexts read only the functions the profile names; the procs
	// view, the JSON and the page also show the ones that never ran.
	functionsOnly := *format == "text" && *view == "paths" && *context == "" && *htmlOut == ""
	need := functionsNeeded(prof, *format == "text" && *view != "procs" && *htmlOut == "")
	bin, tab, f, err := openBinary(*binary, prof, fs.Args()[0], need)
	if err != nil {
		return err
	}
	*binary = bin
	defer f.Close()
	for _, w := range report.RuntimeWarnings(prof.Stats) {
		fmt.Fprintf(c.stderr, "blpp: warning: %s\n", w)
	}
	if len(fs.Args()) == 1 { // merged profiles' flags are every file's
		for _, n := range report.EndNotes(prof.Flags) {
			fmt.Fprintf(c.stderr, "blpp: note: %s\n", n)
		}
	}
	mo := modelOptions(c)
	if mo.Libs, err = openLibs(c, prof, need); err != nil {
		return fmt.Errorf("%s: %w", fs.Args()[0], err)
	}
	mo.FunctionsOnly = functionsOnly
	defer report.CloseModules(mo.Libs)
	live := liveOnly(prof)
	m, err := report.NewModelWith(*binary, tab, prof, f, mo)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Args()[0], err)
	}
	if err := liveNote(c.stderr, m, live); err != nil {
		return fmt.Errorf("%s: %w", fs.Args()[0], err)
	}
	if err := moduleFilter(c, m); err != nil {
		return err
	}
	m.Names = names(noDemangle)
	debugNotes(c, m)
	if *format == "text" && *view == "latency" && *htmlOut == "" {
		v, err := report.MakeLatency(m, *hotShare)
		if err != nil {
			return fmt.Errorf("--view latency: %s: %w", fs.Args()[0], err)
		}
		return report.LatencyText(c.stdout, v, report.LatencyOptions{Top: *top})
	}
	if *htmlOut != "" || (*format == "text" && (*view == "hot" || *view == "procs")) {
		return reportMore(c, m, *view, *metric, *hotShare, *asm, *top, *htmlOut)
	}
	if *format == "json" {
		return report.PathsJSON(c.stdout, m)
	}
	o := report.ViewOptions{Top: *top, All: *all}
	if *format == "text" && *view == "paths" && *context == "" {
		return report.PathsText(c.stdout, m, o)
	}
	if *metric != "" {
		if o.Metric, err = m.Column(*metric); err != nil {
			return &usageError{fmt.Sprintf("--metric: %v", err)}
		}
	}
	switch {
	case *context != "":
		ids, err := m.Match(*context)
		if err != nil {
			return &usageError{fmt.Sprintf("--context: %v", err)}
		}
		if len(ids) == 0 {
			return fmt.Errorf("--context %s: no context's chain of functions ends so (--view tree lists them)", *context)
		}
		return report.ContextPathsText(c.stdout, m, ids, *context, o)
	case *view == "tree":
		return report.TreeText(c.stdout, m, o)
	case *view == "callers":
		return report.CallersText(c.stdout, m, o)
	case *view == "loops":
		return report.LoopsText(c.stdout, m, o)
	}
	return report.FlatText(c.stdout, m, o)
}

// reportMore writes the hot and procs views and the HTML page.
func reportMore(c *ctx, m *report.Model, view, metric string, share float64, asm bool, top int, htmlOut string) error {
	if htmlOut == "" && view == "procs" {
		return report.ProcsText(c.stdout, report.MakeProcs(m))
	}
	h, err := report.MakeHotPaths(m, metric, share)
	if err != nil {
		return &usageError{fmt.Sprintf("--metric: %v", err)}
	}
	if htmlOut == "" {
		return report.HotText(c.stdout, h, report.HotOptions{Asm: asm, Top: top})
	}
	o := report.HTMLOptions{Hot: h}
	if m.LatencyCol > 0 {
		if o.Latency, err = report.MakeLatency(m, share); err != nil {
			return err
		}
	}
	if dot, err := exec.LookPath("dot"); err == nil {
		o.Render = func(in []byte) ([]byte, error) {
			cmd := exec.Command(dot, "-Tsvg")
			cmd.Stdin = bytes.NewReader(in)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("dot: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
			}
			return out.Bytes(), nil
		}
	}
	var page bytes.Buffer
	if err := report.HTML(&page, m, o); err != nil {
		return err
	}
	return os.WriteFile(htmlOut, page.Bytes(), 0o644)
}
