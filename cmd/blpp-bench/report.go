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
	Runs       int     `json:"runs"`        // measured runs per variant and workload
	Warmup     int     `json:"warmup"`      // unmeasured runs before them
	Scale      int     `json:"scale"`       // the size argument every workload got
	CC         string  `json:"cc"`          // compiler command
	CCVersion  string  `json:"cc_version"`  // first line of its --version
	CPUs       int     `json:"cpus"`        // logical CPUs of the machine
	LoadBefore float64 `json:"load_before"` // 1-minute load average at the start (-1: unknown)
	LoadAfter  float64 `json:"load_after"`  // and at the end

	Workloads []*workloadResult `json:"workloads"`
	// Geomean holds the geometric means over the workloads of each
	// variant's ratios, keyed by variant name ("blpp", "gcov").
	Geomean map[string]ratios `json:"geomean"`
}

// workloadResult is one workload's measurements.
type workloadResult struct {
	Name         string           `json:"name"`         // file name without .c
	Output       string           `json:"output"`       // what every variant printed
	Matched      bool             `json:"matched"`      // every run printed the native output (always true in a report: a mismatch is an error)
	RewriteMS    float64          `json:"rewrite_ms"`   // wall time of rewriter.Rewrite, in-process
	Functions    int              `json:"functions"`    // functions the rewriter saw
	Instrumented int              `json:"instrumented"` // and instrumented
	Variants     []*variantResult `json:"variants"`     // native, blpp, gcov in that order
}

// variantResult is one build of one workload.
type variantResult struct {
	Name     string    `json:"name"`       // native, blpp or gcov
	WallMS   []float64 `json:"wall_ms"`    // each measured run, in order
	CPUMS    []float64 `json:"cpu_ms"`     // user+system time of each run
	MaxRSSKB int64     `json:"max_rss_kb"` // largest peak resident set of the warm-up runs, by GNU time (0: not measured)

	MedianWallMS float64 `json:"median_wall_ms"`
	MedianCPUMS  float64 `json:"median_cpu_ms"`
	ratios
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
	for _, w := range r.Workloads {
		base := w.Variants[native]
		for _, v := range w.Variants {
			v.MedianWallMS = median(v.WallMS)
			v.MedianCPUMS = median(v.CPUMS)
			v.Wall = pairedRatio(v.WallMS, base.WallMS)
			v.CPU = pairedRatio(v.CPUMS, base.CPUMS)
			if base.MaxRSSKB > 0 {
				v.RSS = float64(v.MaxRSSKB) / float64(base.MaxRSSKB)
			}
			if v.Name == native.String() {
				continue
			}
			l := logs[v.Name]
			if l == nil {
				l = &ratios{}
				logs[v.Name] = l
			}
			l.Wall += math.Log(v.Wall)
			l.CPU += math.Log(v.CPU)
			l.RSS += math.Log(v.RSS) // -Inf when not measured: exp gives 0, "not measured"
		}
	}
	r.Geomean = map[string]ratios{}
	n := float64(len(r.Workloads))
	for name, l := range logs {
		r.Geomean[name] = ratios{Wall: math.Exp(l.Wall / n), CPU: math.Exp(l.CPU / n), RSS: math.Exp(l.RSS / n)}
	}
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

// writeTable prints the report for people: one row per workload, a
// geometric-mean row, and the conditions of the measurement.
func (r *report) writeTable(w io.Writer) {
	head := []string{"workload", "native", "blpp", "blpp/native", "gcov", "gcov/native", "blpp cpu", "gcov cpu", "blpp rss", "rewrite", "instrumented"}
	rows := [][]string{head}
	for _, wl := range r.Workloads {
		n, b, g := wl.Variants[native], wl.Variants[blpp], wl.Variants[gcov]
		rows = append(rows, []string{
			wl.Name,
			fmt.Sprintf("%.0f ms", n.MedianWallMS),
			fmt.Sprintf("%.0f ms", b.MedianWallMS),
			fmtRatio(b.Wall),
			fmt.Sprintf("%.0f ms", g.MedianWallMS),
			fmtRatio(g.Wall),
			fmtRatio(b.CPU),
			fmtRatio(g.CPU),
			fmtRatio(b.RSS),
			fmt.Sprintf("%.1f ms", wl.RewriteMS),
			fmt.Sprintf("%d/%d fns", wl.Instrumented, wl.Functions),
		})
	}
	gb, gg := r.Geomean[blpp.String()], r.Geomean[gcov.String()]
	rows = append(rows, []string{"geomean", "", "", fmtRatio(gb.Wall), "", fmtRatio(gg.Wall), fmtRatio(gb.CPU), fmtRatio(gg.CPU), fmtRatio(gb.RSS), "", ""})

	widths := make([]int, len(head))
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
		if ri == 0 || ri == len(rows)-2 {
			total := len(widths)*2 - 2
			for _, x := range widths {
				total += x
			}
			fmt.Fprintln(w, strings.Repeat("-", total))
		}
	}
	runs := 0
	for _, wl := range r.Workloads {
		for _, v := range wl.Variants {
			runs += len(v.WallMS)
		}
	}
	fmt.Fprintf(w, "\ntimes: median wall time of %d runs per variant (after %d warm-up), scale %d; ratios: median of per-round ratios to native\n", r.Runs, r.Warmup, r.Scale)
	fmt.Fprintf(w, "cpu: user+system time ratio; rss: peak resident set ratio (warm-up runs, GNU time); rewrite: rewriter.Rewrite in-process\n")
	fmt.Fprintf(w, "outputs: all %d measured runs (and warm-ups) printed exactly the native output\n", runs)
	fmt.Fprintf(w, "machine: %d CPUs, load average %s at start, %s at end; %s\n", r.CPUs, fmtLoad(r.LoadBefore), fmtLoad(r.LoadAfter), r.CCVersion)
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) || x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}

func fmtLoad(x float64) string {
	if x < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", x)
}
