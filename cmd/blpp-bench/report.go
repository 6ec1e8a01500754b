package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"
)

// report is the result of a workload benchmark; --json prints it as is.
// Times are milliseconds, memory kilobytes; a ratio is relative to the
// native build (1.0 = no overhead).
type report struct {
	// Suite is "bench" (the loop kernels of testdata/bench) or "real"
	// (installed programs, real.go).
	Suite      string   `json:"suite"`
	Runs       int      `json:"runs"`        // measured runs per variant and workload
	Layouts    int      `json:"layouts"`     // code layouts per blpp variant, taken in turn by the rounds
	Warmup     int      `json:"warmup"`      // unmeasured runs before them
	Scale      int      `json:"scale"`       // the size argument every workload got
	CC         string   `json:"cc"`          // compiler command
	CCVersion  string   `json:"cc_version"`  // first line of its --version
	CPUs       int      `json:"cpus"`        // logical CPUs of the machine
	LoadBefore float64  `json:"load_before"` // 1-minute load average at the start (-1: unknown)
	LoadAfter  float64  `json:"load_after"`  // and at the end
	Variants   []string `json:"variants"`    // the variants measured, in the order they ran in each round: native first

	// RdtscNS is what one rdtsc costs on this machine, in nanoseconds
	// (a loop of dependent reads, measured before the workloads).
	RdtscNS float64 `json:"rdtsc_ns"`

	Workloads []*workloadResult `json:"workloads"`
	// Geomean holds the geometric means over the workloads of each
	// variant's ratios, keyed by variant name ("gcov", "flow", "ctx",
	// "ctx+tsc").
	Geomean map[string]ratios `json:"geomean"`
	// CounterOnlyGeomean is the geometric mean of the ctx+tsc
	// variant's CounterOnly values (0: not measured).
	CounterOnlyGeomean float64 `json:"counter_only_geomean,omitempty"`

	// The real suite only (real.go). Startup holds the runs of programs
	// that start and exit doing nothing (what the runtime costs a short
	// run); they are not in the geometric means. Skipped names the
	// programs left out because they are not installed, with the Debian
	// package that installs them.
	Startup []*workloadResult `json:"startup,omitempty"`
	Skipped []string          `json:"skipped,omitempty"`
}

// workloadResult is one workload's measurements.
type workloadResult struct {
	Name         string `json:"name"`         // file name without .c; in the real suite the program's name
	Output       string `json:"output"`       // what every variant printed
	Matched      bool   `json:"matched"`      // every run printed the native output (always true in a report: a mismatch is an error)
	Functions    int    `json:"functions"`    // functions the rewriter saw
	Instrumented int    `json:"instrumented"` // and instrumented (by the ctx rewrite, else the first blpp one)
	// Command is, in the real suite, the command line measured (inputs
	// without their directories).
	Command string `json:"command,omitempty"`
	// DynamicShare is the share of the native binary's executed
	// instructions (callgrind, PLT stubs aside) that lie in functions
	// that rewrite instrumented; -1 when not measured (--share-scale 0,
	// no valgrind).
	DynamicShare float64          `json:"dynamic_share"`
	Variants     []*variantResult `json:"variants"` // as report.Variants
}

// variant is the result of variant v, nil when it was not measured.
func (w *workloadResult) variant(v variant) *variantResult {
	for _, vr := range w.Variants {
		if vr.v == v {
			return vr
		}
	}
	return nil
}

// variantResult is one build of one workload.
type variantResult struct {
	Name      string    `json:"name"`                 // native, gcov, flow, ctx or ctx+tsc
	RewriteMS float64   `json:"rewrite_ms,omitempty"` // blpp variants: wall time of rewriter.Rewrite, in-process
	WallMS    []float64 `json:"wall_ms"`              // each measured run, in order
	CPUMS     []float64 `json:"cpu_ms"`               // user+system time of each run
	Layout    []int     `json:"layout,omitempty"`     // blpp variants: the layout seed of each run
	MaxRSSKB  int64     `json:"max_rss_kb"`           // largest peak resident set of the warm-up runs, by GNU time (0: not measured)
	// Profile sums up the profile the last run of a blpp variant wrote.
	Profile *profileInfo `json:"profile,omitempty"`

	MedianWallMS float64 `json:"median_wall_ms"`
	// CounterOnly, for the ctx+tsc variant, estimates the ratio to
	// native the counter reads alone cost: native time plus one rdtsc
	// per path end and one per activation entry (where a path starts
	// without another ending), RdtscNS each, over native time. Reads
	// overlap with other work, so a measured ratio can be a little
	// lower; it shows how much of the overhead is the reads themselves.
	CounterOnly float64 `json:"counter_only,omitempty"`
	MedianCPUMS float64 `json:"median_cpu_ms"`
	ratios
	// LayoutRatios are, for a blpp variant, the median per-round wall
	// ratio of each layout seed's runs (0: it had none).
	LayoutRatios []float64 `json:"layout_ratios,omitempty"`

	v variant
}

// profileInfo sums up one profile file.
type profileInfo struct {
	Bytes       int64             `json:"bytes"`        // size of the file
	TimeNS      uint64            `json:"time_ns"`      // the header's time stamp (CLOCK_REALTIME as the runtime began writing)
	Threads     int               `json:"threads"`      // thread sections
	Records     int               `json:"records"`      // call records, all threads (one per function and thread in a flow-only profile)
	Paths       int               `json:"paths"`        // path entries, all records
	Calls       uint64            `json:"calls"`        // activations counted, all records
	PathRuns    uint64            `json:"path_runs"`    // path executions counted (the sum of the path counts), all records
	ArenaBytes  uint64            `json:"arena_bytes"`  // the runtime's stat: bytes its allocator mapped
	RecordBytes uint64            `json:"record_bytes"` // the runtime's stat: bytes a record takes before its counters
	Stats       map[string]uint64 `json:"stats"`        // all the runtime's stats
}

// ratios compare a variant with native: the median over the rounds of the
// per-round ratio (the runs of a round are back to back, so they share the
// machine's load). Native's are 1.
type ratios struct {
	Wall float64 `json:"ratio"`
	CPU  float64 `json:"cpu_ratio"`
	RSS  float64 `json:"rss_ratio"` // of MaxRSSKB (0: not measured)
}

// summarise fills in medians, ratios and the geometric means.
func (r *report) summarise() {
	logs := map[string]*ratios{}
	counts := map[string]float64{} // workloads that measured each variant (gcov needs a source)
	estLog, ests := 0.0, 0
	for _, w := range r.Startup {
		w.summarise()
	}
	for _, w := range r.Workloads {
		w.summarise()
		base := w.variant(native)
		for _, v := range w.Variants {
			if v.v == native {
				continue
			}
			if v.v == ctxTSC && v.Profile != nil && base.MedianWallMS > 0 {
				reads := float64(v.Profile.PathRuns + v.Profile.Calls)
				v.CounterOnly = 1 + reads*r.RdtscNS/1e6/base.MedianWallMS
				estLog += math.Log(v.CounterOnly)
				ests++
			}
			l := logs[v.Name]
			if l == nil {
				l = &ratios{}
				logs[v.Name] = l
			}
			counts[v.Name]++
			l.Wall += math.Log(v.Wall)
			l.CPU += math.Log(v.CPU)
			l.RSS += math.Log(v.RSS) // -Inf when not measured: exp gives 0, "not measured"
		}
	}
	r.Geomean = map[string]ratios{}
	for name, l := range logs {
		n := counts[name]
		r.Geomean[name] = ratios{Wall: math.Exp(l.Wall / n), CPU: math.Exp(l.CPU / n), RSS: math.Exp(l.RSS / n)}
	}
	if ests > 0 && ests == len(r.Workloads) {
		r.CounterOnlyGeomean = math.Exp(estLog / float64(ests))
	}
}

// summarise fills in the medians and ratios of w's variants.
func (w *workloadResult) summarise() {
	base := w.variant(native)
	for _, v := range w.Variants {
		v.MedianWallMS = median(v.WallMS)
		v.MedianCPUMS = median(v.CPUMS)
		v.Wall = pairedRatio(v.WallMS, base.WallMS)
		v.CPU = pairedRatio(v.CPUMS, base.CPUMS)
		v.LayoutRatios = layoutRatios(v, base)
		if base.MaxRSSKB > 0 {
			v.RSS = float64(v.MaxRSSKB) / float64(base.MaxRSSKB)
		}
	}
}

// layoutRatios is the median per-round wall ratio of each of v's layouts.
func layoutRatios(v, base *variantResult) []float64 {
	n := 0
	for _, l := range v.Layout {
		n = max(n, l+1)
	}
	if n < 2 {
		return nil
	}
	out := make([]float64, n)
	for l := range out {
		var xs, bs []float64
		for i, li := range v.Layout {
			if li == l && i < len(v.WallMS) && i < len(base.WallMS) {
				xs, bs = append(xs, v.WallMS[i]), append(bs, base.WallMS[i])
			}
		}
		out[l] = pairedRatio(xs, bs)
	}
	return out
}

// median is the middle value of xs, 0 for none (JSON has no NaN).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatio is the median of xs[i]/base[i], 0 (unknown) when no base is
// positive: CPU times of very short runs can be 0 at the kernel's
// accounting granularity.
func pairedRatio(xs, base []float64) float64 {
	var rs []float64
	for i := range xs {
		if i < len(base) && base[i] > 0 {
			rs = append(rs, xs[i]/base[i])
		}
	}
	return median(rs)
}

func cpuCount() int { return runtime.NumCPU() }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTable prints the report for people: a table of wall times and
// ratios, one of CPU and memory ratios and rewrite times (one row per
// workload and a geometric-mean row each), the calling context trees the
// richest blpp variant built, and the conditions of the measurement.
func (r *report) writeTable(w io.Writer) {
	measured := r.measuredVariants()
	others := measured[1:]   // the variants compared with native
	rewritten := variant(-1) // the blpp variant whose rewrite the second table shows
	for _, v := range []variant{ctx, ctxTSC, flow} {
		if rewritten < 0 && r.Workloads[0].variant(v) != nil {
			rewritten = v
		}
	}
	// The real suite shows the dynamic share beside the times: an
	// uninstrumented hot loop makes an overhead look small.
	shareFirst := r.Suite == "real" && rewritten >= 0

	head := []string{"workload", "native"}
	for _, v := range others {
		head = append(head, v.String(), v.String()+"/native")
	}
	if shareFirst {
		head = append(head, "share")
	}
	rows := [][]string{head}
	for _, wl := range r.Workloads {
		row := []string{wl.Name, fmtMS(wl.variant(native).MedianWallMS)}
		for _, v := range others {
			if vr := wl.variant(v); vr != nil {
				row = append(row, fmtMS(vr.MedianWallMS), fmtRatio(vr.Wall))
			} else {
				row = append(row, "-", "-")
			}
		}
		if shareFirst {
			row = append(row, fmtShare(wl.DynamicShare))
		}
		rows = append(rows, row)
	}
	geo := []string{"geomean", ""}
	for _, v := range others {
		geo = append(geo, "", fmtRatio(r.Geomean[v.String()].Wall))
	}
	writeRows(w, append(rows, geo))

	head = []string{"workload"}
	for _, v := range others {
		head = append(head, v.String()+" cpu")
	}
	for _, v := range others {
		head = append(head, v.String()+" rss")
	}
	if rewritten >= 0 {
		head = append(head, "rewrite", "instrumented", "executed in them")
	}
	rows = [][]string{head}
	for _, wl := range r.Workloads {
		row := []string{wl.Name}
		for _, v := range others {
			row = append(row, fmtRatio(wl.variant(v).cpu()))
		}
		for _, v := range others {
			row = append(row, fmtRatio(wl.variant(v).rss()))
		}
		if rewritten >= 0 {
			row = append(row, fmt.Sprintf("%.1f ms", wl.variant(rewritten).RewriteMS), fmt.Sprintf("%d/%d fns", wl.Instrumented, wl.Functions), fmtShare(wl.DynamicShare))
		}
		rows = append(rows, row)
	}
	geo = []string{"geomean"}
	for _, v := range others {
		geo = append(geo, fmtRatio(r.Geomean[v.String()].CPU))
	}
	for _, v := range others {
		geo = append(geo, fmtRatio(r.Geomean[v.String()].RSS))
	}
	if rewritten >= 0 {
		geo = append(geo, "", "", "")
	}
	fmt.Fprintln(w)
	writeRows(w, append(rows, geo))

	r.writeLayouts(w, others)

	if r.CounterOnlyGeomean > 0 {
		// What reading the counter costs by itself, whatever the code
		// around the reads.
		fmt.Fprintf(w, "\nctx+tsc counter reads alone, estimated (native time + one rdtsc of %.1f ns per path end and per entry):", r.RdtscNS)
		for _, wl := range r.Workloads {
			fmt.Fprintf(w, " %s %s,", wl.Name, fmtRatio(wl.variant(ctxTSC).CounterOnly))
		}
		fmt.Fprintf(w, " geomean %s\n", fmtRatio(r.CounterOnlyGeomean))
	}

	// The calling context trees: those of ctx+tsc, else of the richest
	// blpp variant measured.
	for _, v := range []variant{ctxTSC, ctx, flow} {
		if r.Workloads[0].variant(v) == nil {
			continue
		}
		fmt.Fprintf(w, "\nprofiles written by %s (last run):\n", v)
		width := 0
		for _, wl := range r.Workloads {
			width = max(width, len(wl.Name))
		}
		for _, wl := range r.Workloads {
			p := wl.variant(v).Profile
			fmt.Fprintf(w, "%-*s  CCT: %d records, %d bytes/record, arena %.1f MB, profile %.1f KB (%d paths, %d calls, %s)\n",
				width, wl.Name, p.Records, p.RecordBytes, float64(p.ArenaBytes)/(1<<20), float64(p.Bytes)/1024, p.Paths, p.Calls, plural(p.Threads, "thread"))
		}
		break
	}

	if r.Suite == "real" {
		r.writeReal(w, others)
	}

	runs := 0
	for _, wl := range r.Workloads {
		for _, v := range wl.Variants {
			runs += len(v.WallMS)
		}
	}
	fmt.Fprintf(w, "\ntimes: median wall time of %d runs per variant (after %d warm-up), scale %d; ratios: median of per-round ratios to native\n", r.Runs, r.Warmup, r.Scale)
	if r.Layouts > 1 {
		fmt.Fprintf(w, "layouts: each blpp variant rewritten with %d layout seeds (0 = blpp rewrite's own), taken in turn by the rounds; \"by layout\" gives each seed's median ratio\n", r.Layouts)
	}
	fmt.Fprintf(w, "variants, run in this order each round:\n%s", variantLegend(measured))
	fmt.Fprintf(w, "cpu: user+system time ratio; rss: peak resident set ratio (warm-up runs, GNU time)")
	if rewritten >= 0 {
		fmt.Fprintf(w, "; rewrite: rewriter.Rewrite in-process (%s)", rewritten)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "outputs: all %d measured runs (and warm-ups) printed exactly the native output\n", runs)
	fmt.Fprintf(w, "machine: %d CPUs, load average %s at start, %s at end; %s\n", r.CPUs, fmtLoad(r.LoadBefore), fmtLoad(r.LoadAfter), r.CCVersion)
}

// measuredVariants are the variants some workload measured, native first.
func (r *report) measuredVariants() []variant {
	var vs []variant
	for v := native; v < numVariants; v++ {
		for _, wl := range r.Workloads {
			if wl.variant(v) != nil {
				vs = append(vs, v)
				break
			}
		}
	}
	return vs
}

// cpu and rss are v's ratios, 0 (printed "-") for a variant not measured.
func (v *variantResult) cpu() float64 {
	if v == nil {
		return 0
	}
	return v.CPU
}

func (v *variantResult) rss() float64 {
	if v == nil {
		return 0
	}
	return v.RSS
}

// writeLayouts prints each blpp variant's ratio per code layout, when
// there was more than one: how much of a ratio is where the code landed.
func (r *report) writeLayouts(w io.Writer, others []variant) {
	var vs []variant
	for _, v := range others {
		if v.isBlpp() && len(r.Workloads[0].variant(v).LayoutRatios) > 1 {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return
	}
	head := []string{"by layout"}
	for _, v := range vs {
		head = append(head, v.String())
	}
	rows := [][]string{head}
	for _, wl := range r.Workloads {
		row := []string{wl.Name}
		for _, v := range vs {
			var cells []string
			for _, x := range wl.variant(v).LayoutRatios {
				cells = append(cells, strings.TrimSuffix(fmtRatio(x), "×"))
			}
			row = append(row, strings.Join(cells, " "))
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w)
	printRows(w, rows, false)
}

// variantLegend says what each measured variant is, one line each.
func variantLegend(vs []variant) string {
	what := [numVariants]string{
		native:  "cc -O2",
		gcov:    "cc -O2 -fprofile-arcs",
		flow:    "blpp rewrite --no-context: path frequencies, one record per function",
		ctx:     "blpp rewrite: calling context tree + path frequencies",
		ctxTSC:  "blpp rewrite --metrics tsc: calling context tree + path frequencies + time-stamp counter",
		ctxS1k:  "blpp rewrite --metrics sample:cpu-clock@1000: calling context tree + path frequencies + samples at 1 kHz",
		ctxS10k: "blpp rewrite --metrics sample:cpu-clock@10000: the same, samples at 10 kHz",
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-8s %s\n", v, what[v])
	}
	return b.String()
}

// writeRows prints rows as a table: the first is the head, the last the
// geometric means; a rule separates them from the rest.
func writeRows(w io.Writer, rows [][]string) { printRows(w, rows, true) }

// printRows prints rows as a table, a rule under the head and, when
// total says so, one above the last row.
func printRows(w io.Writer, rows [][]string, total bool) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for ri, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 { // names left, numbers right
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if ri == 0 || total && ri == len(rows)-2 {
			width := len(widths)*2 - 2
			for _, x := range widths {
				width += x
			}
			fmt.Fprintln(w, strings.Repeat("-", width))
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func fmtMS(x float64) string { return fmt.Sprintf("%.0f ms", x) }

func fmtRatio(x float64) string {
	if math.IsNaN(x) || x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}

// fmtShare prints a dynamic share, "-" when not measured.
func fmtShare(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f%%", 100*x)
}

func fmtLoad(x float64) string {
	if x < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", x)
}
