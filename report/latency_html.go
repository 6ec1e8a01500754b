package report

// The latency section of the HTML page (decision 93): the latency
// view's table, and each hot path's histogram drawn as inline SVG bars
// (no script), one bar per log2 bucket from the path's fastest to its
// slowest, heights on a log scale so that a mode of a few slow
// executions shows beside one of thousands.

import (
	"bufio"
	"fmt"
	"html"
	"math"
)

// Geometry of a histogram picture, in SVG user units.
const (
	histBarWidth = 14
	histGap      = 2
	histHeight   = 60
	histLabel    = 14 // the axis labels under the bars
)

// writeLatencyHTML writes the section; nothing when v is nil.
func writeLatencyHTML(bw *bufio.Writer, v *LatencyView) {
	if v == nil {
		return
	}
	e := html.EscapeString
	c := v.Hot.Model
	fmt.Fprintf(bw, "<h2 id=\"latency\">Latency</h2>\n<p>%s.</p>\n", e(v.LatencyRule()))
	if len(v.Paths) == 0 {
		bw.WriteString("<p>No hot path has a distribution.</p>\n")
		return
	}
	bw.WriteString("<table>\n<tr><th>#</th><th class=\"l\">context</th><th>path</th><th>executions</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th class=\"l\">histogram (executions per log2 bucket, log scale)</th></tr>\n")
	for r, p := range v.Paths {
		fmt.Fprintf(bw, "<tr><td>%d</td><td class=\"l\"><code>%s</code></td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"l\">",
			r+1, e(c.DisplayChain(p.Context)), p.ID, p.Count, e(v.value(p.Mean)),
			e(v.bucket(p.Quantiles[0])), e(v.bucket(p.Quantiles[1])), e(v.bucket(p.Quantiles[2])), e(v.value(float64(p.Latency.Max()))))
		writeHistogramSVG(bw, v, p)
		bw.WriteString("</td></tr>\n")
	}
	bw.WriteString("</table>\n")
}

// writeHistogramSVG draws p's histogram: a bar per bucket from its
// first non-empty one to its last, each with a title giving the
// bucket's range and count; the buckets of p50 and p99 are marked under
// the axis.
func writeHistogramSVG(bw *bufio.Writer, v *LatencyView, p LatencyPath) {
	e := html.EscapeString
	l := p.Latency
	lo, hi := l.Buckets[0].Log2, l.Buckets[len(l.Buckets)-1].Log2
	n := int(hi-lo) + 1
	width := n*(histBarWidth+histGap) + histGap
	total := l.Count()
	fmt.Fprintf(bw, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"hist\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">",
		width, histHeight+histLabel, width, histHeight+histLabel)
	fmt.Fprintf(bw, "<title>%s path %d: %d executions in buckets %s to %s</title>", e(v.Hot.Model.DisplayChain(p.Context)), p.ID, total, e(v.bucket(lo)), e(v.bucket(hi)))
	count := map[uint8]uint64{}
	for _, b := range l.Buckets {
		count[b.Log2] = b.Count
	}
	for i := 0; i < n; i++ {
		b := lo + uint8(i)
		x := histGap + i*(histBarWidth+histGap)
		if k := count[b]; k > 0 {
			h := 2 + int(math.Round(float64(histHeight-2)*math.Log1p(float64(k))/math.Log1p(float64(total))))
			fmt.Fprintf(bw, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#c60\"><title>%s: %d</title></rect>",
				x, histHeight-h, histBarWidth, h, e(v.bucket(b)), k)
		}
		mark := ""
		switch {
		case b == p.Quantiles[0] && b == p.Quantiles[2]:
			mark = "50,99"
		case b == p.Quantiles[0]:
			mark = "50"
		case b == p.Quantiles[2]:
			mark = "99"
		}
		if mark != "" {
			fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%s</text>", x+histBarWidth/2, histHeight+histLabel-3, mark)
		}
	}
	fmt.Fprintf(bw, "<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/></svg>", histHeight, width, histHeight)
}
