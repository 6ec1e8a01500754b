package report

// This file is the latency view (decision 93; the latency work of
// Sharma and Dagenais [2016] asks not only how much time a path takes in
// total but which executions of it were slow): for each hot path of the
// profile's latency metric, its executions, mean, p50, p90, p99 and max,
// from the distribution the runtime kept per path and context (a log2
// histogram and the largest values, cct.Latency).

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/blpp/blpp/cct"
)

// Stats keys the runtime writes with the time-stamp counter: its ticks,
// and the CLOCK_MONOTONIC nanoseconds, between the runtime's start and
// the profile's write. Their ratio is the counter's rate.
const (
	statTSCTotal = "tsc_total"
	statTSCNS    = "tsc_ns"
)

// LatencyQuantiles are the percentiles the latency view shows.
var LatencyQuantiles = []float64{0.5, 0.9, 0.99}

// A LatencyPath is one hot path with its distribution.
type LatencyPath struct {
	HotPath
	Latency *cct.Latency
	// Mean is the metric per execution: the path's sum over its count
	// (exact, not from the histogram).
	Mean float64
	// Quantiles holds, per LatencyQuantiles, the bucket of the
	// histogram that holds that percentile: its value v lies in [2^b,
	// 2^(b+1)).
	Quantiles []uint8
}

// A LatencyView is the latency model of a profile.
type LatencyView struct {
	Hot   *HotPaths // the hot paths of the latency metric
	Paths []LatencyPath
	// TicksPerNS is the time-stamp counter's rate when the latency
	// metric is tsc and the profile says it (the runtime's tsc_total
	// over tsc_ns), else 0: values are then shown in the metric's unit
	// only.
	TicksPerNS float64
}

// MakeLatency builds the latency view of c: the hot paths of its latency
// metric covering share of it, each with its distribution. A profile
// without distributions (written with --no-latency, or without metrics)
// is an error that says so.
func MakeLatency(c *Model, share float64) (*LatencyView, error) {
	if c.LatencyCol <= 0 || c.LatencyCol >= len(c.Columns) {
		return nil, fmt.Errorf("the profile has no latency distributions: they are recorded with metrics (--metrics tsc), unless the program was rewritten with --no-latency")
	}
	col := c.Columns[c.LatencyCol]
	h, err := MakeHotPaths(c, col.Name, share)
	if err != nil {
		return nil, err
	}
	v := &LatencyView{Hot: h}
	if col.Name == "tsc" {
		v.TicksPerNS = TicksPerNS(c.Stats)
	}
	for _, hp := range h.Hot {
		var l *cct.Latency
		for _, p := range c.Nodes[hp.Context].Paths {
			if p.ID == hp.ID {
				l = p.Latency
			}
		}
		if l == nil {
			continue // a path of a run written without distributions
		}
		lp := LatencyPath{HotPath: hp, Latency: l}
		if hp.Count > 0 {
			lp.Mean = float64(hp.Value) / float64(hp.Count)
		}
		for _, q := range LatencyQuantiles {
			b, _ := l.Quantile(q)
			lp.Quantiles = append(lp.Quantiles, b)
		}
		v.Paths = append(v.Paths, lp)
	}
	return v, nil
}

// TicksPerNS is the time-stamp counter's rate the runtime measured
// (stats tsc_total over tsc_ns), 0 when the profile does not say.
// Merged profiles sum both, which gives the runs' mean rate.
func TicksPerNS(stats map[string]uint64) float64 {
	ticks, ns := stats[statTSCTotal], stats[statTSCNS]
	if ticks == 0 || ns == 0 {
		return 0
	}
	return float64(ticks) / float64(ns)
}

// value formats x of the latency metric: a time when the rate is known,
// else the number and the unit.
func (v *LatencyView) value(x float64) string {
	if v.TicksPerNS > 0 {
		return duration(x / v.TicksPerNS)
	}
	return fmt.Sprintf("%.4g %s", x, v.unit())
}

// bucket formats the range of log2 bucket b, [2^b, 2^(b+1)).
func (v *LatencyView) bucket(b uint8) string {
	lo, hi := math.Ldexp(1, int(b)), math.Ldexp(1, int(b)+1)
	if b == 0 {
		lo = 0
	}
	if v.TicksPerNS > 0 {
		a, b := duration(lo/v.TicksPerNS), duration(hi/v.TicksPerNS)
		if i := strings.IndexFunc(b, unicode.IsLetter); i > 0 && strings.HasSuffix(a, b[i:]) && unicode.IsDigit(rune(a[len(a)-len(b[i:])-1])) {
			a = a[:len(a)-len(b[i:])] // one unit for both: 49.3-98.6ns
		}
		return a + "-" + b
	}
	return fmt.Sprintf("%.4g-%.4g %s", lo, hi, v.unit())
}

func (v *LatencyView) unit() string {
	return v.Hot.Model.Columns[v.Hot.Col].Unit()
}

// duration formats ns nanoseconds with three significant digits.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.3gns", ns)
}

// LatencyRule states how the view reads the distributions.
func (v *LatencyView) LatencyRule() string {
	col := v.Hot.Model.Columns[v.Hot.Col]
	s := fmt.Sprintf("per execution of a path, its %s: mean = %s / executions (exact); p50, p90 and p99 are the log2 bucket [2^b, 2^(b+1)) that holds the percentile (bucket resolution: within a factor of two); max is the largest value seen (the runtime keeps each path's %d largest per context)",
		col.Name, col.Name, maxSlowest(v))
	if v.TicksPerNS > 0 {
		s += fmt.Sprintf("; times at %.4g ticks per ns (the run's %s over %s)", v.TicksPerNS, statTSCTotal, statTSCNS)
	}
	return s
}

// maxSlowest is the longest list of largest values of the view's paths.
func maxSlowest(v *LatencyView) int {
	n := 0
	for _, p := range v.Paths {
		n = max(n, len(p.Latency.Slowest))
	}
	return n
}

// LatencyOptions are the options of LatencyText.
type LatencyOptions struct {
	Top int // paths shown; 0: all the hot ones
}

// LatencyText writes the latency view: per hot path (by the latency
// metric's sum), its executions, mean, p50, p90, p99 and max, and its
// histogram's non-empty buckets, slowest first.
func LatencyText(w io.Writer, v *LatencyView, o LatencyOptions) error {
	h := v.Hot
	c := h.Model
	col := c.Columns[h.Col]
	c.writeHeader(w, "latency of the hot paths", h.Col)
	fmt.Fprintf(w, "hot: the %s covering %s of %s (the threshold is %.4g%%) out of %s executed\n",
		plural(uint64(len(h.Hot)), "path", "paths"), pct(h.HotSum, h.Total), col.Name, 100*h.Share, plural(uint64(h.Paths), "path", "paths"))
	fmt.Fprintf(w, "latency: %s\n\n", v.LatencyRule())
	paths := v.Paths
	more := 0
	if o.Top > 0 && len(paths) > o.Top {
		more = len(paths) - o.Top
		paths = paths[:o.Top]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "#\texecutions\tmean\tp50\tp90\tp99\tmax\t  context / path\n")
	for r, p := range paths {
		n := &c.Nodes[p.Context]
		where := ""
		if n.CallSite != 0 {
			where = "  @ " + site(n.CallSite, c.siteLines(n))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t  %s  path %d%s\n", r+1, p.Count, v.value(p.Mean),
			v.bucket(p.Quantiles[0]), v.bucket(p.Quantiles[1]), v.bucket(p.Quantiles[2]), v.value(float64(p.Latency.Max())),
			c.DisplayChain(p.Context), p.ID, where)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for r, p := range paths {
		fmt.Fprintf(w, "\n%3d. %s  path %d: %s\n", r+1, c.DisplayChain(p.Context), p.ID, plural(p.Latency.Count(), "execution", "executions"))
		for i := len(p.Latency.Buckets) - 1; i >= 0; i-- {
			b := p.Latency.Buckets[i]
			fmt.Fprintf(w, "     %-22s %10d  %s\n", v.bucket(b.Log2), b.Count, bar(b.Count, p.Latency.Count(), 40))
		}
		if len(p.Latency.Slowest) > 0 {
			vals := make([]string, len(p.Latency.Slowest))
			for k, x := range p.Latency.Slowest {
				vals[k] = v.value(float64(x))
			}
			fmt.Fprintf(w, "     slowest: %s\n", strings.Join(vals, ", "))
		}
	}
	if more > 0 {
		writeMore(w, "\n", more, "more hot path", "more hot paths")
	}
	if len(h.Hot) == 0 {
		fmt.Fprintf(w, "\nno path has any %s\n", col.Name)
	}
	return nil
}

// bar is a bar of up to width characters for n of total, at least one
// for any n > 0, on a log scale: a histogram's rare slow executions are
// what the view is for, and a linear bar would not show them.
func bar(n, total uint64, width int) string {
	if n == 0 || total == 0 {
		return ""
	}
	k := 1 + int(math.Round(float64(width-1)*math.Log1p(float64(n))/math.Log1p(float64(total))))
	return strings.Repeat("#", min(k, width))
}

// LatencyJSON is a path's distribution in the JSON (ContextPath).
type LatencyJSON struct {
	// Buckets are the non-empty log2 buckets, by increasing log2:
	// count executions had a value in [2^log2, 2^(log2+1)).
	Buckets []LatencyBucketJSON `json:"buckets"`
	// Slowest holds the largest values seen, largest first.
	Slowest []uint64 `json:"slowest"`
}

// LatencyBucketJSON is one bucket of a LatencyJSON.
type LatencyBucketJSON struct {
	Log2  uint8  `json:"log2"`
	Count uint64 `json:"count"`
}

// latencyJSON is l for the JSON, nil for nil.
func latencyJSON(l *cct.Latency) *LatencyJSON {
	if l == nil {
		return nil
	}
	j := &LatencyJSON{Buckets: make([]LatencyBucketJSON, len(l.Buckets)), Slowest: l.Slowest}
	if j.Slowest == nil {
		j.Slowest = []uint64{}
	}
	for i, b := range l.Buckets {
		j.Buckets[i] = LatencyBucketJSON{b.Log2, b.Count}
	}
	return j
}
