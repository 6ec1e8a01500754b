package report

// This file writes one self-contained HTML page of a profile: the hot
// paths, the per-procedure summary, the calling-context tree as nested
// <details> elements (no script), and the profiled CFGs of the hottest
// functions as inline SVG when a renderer (Graphviz dot) is given. The
// page is XHTML-style (every element closed, attributes quoted), so XML
// parsers read it as well as browsers.

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
)

// HTMLOptions are the inputs of HTML besides the model.
type HTMLOptions struct {
	Hot *HotPaths
	// Render turns dot into SVG; nil leaves the CFGs out (the page says
	// so).
	Render func(dot []byte) ([]byte, error)
	// CFGs is how many functions get a CFG picture: those of the hot
	// paths first, then by instructions executed; 0 means 4.
	CFGs int
	// Latency, when the profile has latency distributions (decision
	// 93), adds their section: the latency view with each hot path's
	// histogram drawn.
	Latency *LatencyView
}

const htmlStyle = `body{font-family:sans-serif;margin:1.5em;max-width:80em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.15em .5em;text-align:right;vertical-align:top}
td.l,th.l{text-align:left}
code,pre{font-family:monospace;font-size:90%}
details{margin-left:1.2em}
summary{cursor:pointer;font-family:monospace}
div.leaf{margin-left:2.4em;font-family:monospace}
.dense{color:#b00}
.sparse{color:#06c}
.svg{overflow:auto;border:1px solid #ddd;margin:.5em 0}`

// HTML writes the page.
func HTML(w io.Writer, m *Model, o HTMLOptions) error {
	h := o.Hot
	c := h.Model
	col := c.Columns[h.Col]
	e := html.EscapeString
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>blpp: %s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n", e(c.Binary), htmlStyle)
	fmt.Fprintf(bw, "<h1>blpp profile of <code>%s</code></h1>\n", e(c.Binary))
	shape := plural(uint64(len(c.Nodes)), "context", "contexts")
	if c.Threads != 1 {
		shape += fmt.Sprintf(", %d threads merged", c.Threads)
	}
	if c.FlowOnly {
		shape += "; flow-only profile: no calling context"
	}
	fmt.Fprintf(bw, "<p>%s; metric %s, total %d %s; %d instructions executed.</p>\n", e(shape), e(col.Label()), h.Total, e(col.Unit()), m.TotalInsns())
	bw.WriteString("<ul><li><a href=\"#hot\">Hot paths</a></li>")
	if o.Latency != nil {
		bw.WriteString("<li><a href=\"#latency\">Latency</a></li>")
	}
	bw.WriteString("<li><a href=\"#procs\">Procedures</a></li><li><a href=\"#cct\">Calling-context tree</a></li><li><a href=\"#cfg\">Control-flow graphs</a></li></ul>\n")

	// Hot paths.
	fmt.Fprintf(bw, "<h2 id=\"hot\">Hot paths</h2>\n<p>The %s covering %s of %s (threshold %.4g%%) out of %s executed. Density: %s.</p>\n",
		plural(uint64(len(h.Hot)), "path", "paths"), pct(h.HotSum, h.Total), e(col.Name), 100*h.Share, plural(uint64(h.Paths), "path", "paths"), e(h.DensityRule()))
	fmt.Fprintf(bw, "<table>\n<tr><th>#</th><th class=\"l\">context</th><th>path</th><th>executions</th><th>insns/execution</th><th>%s</th><th>%%</th><th>cumulative</th><th>%s/insn</th><th class=\"l\">class</th><th class=\"l\">blocks</th></tr>\n", e(col.Name), e(col.Name))
	var cum uint64
	for r, hp := range h.Hot {
		cum += hp.Value
		class := "sparse"
		if hp.Dense {
			class = "dense"
		}
		mf := c.Func(hp.Func)
		var blocks []string
		for _, b := range hp.Blocks {
			blk := &mf.Blocks[b]
			s := fmt.Sprintf("B%d %s (%d)", b, hex(blk.Addr), blk.Insts)
			if loc := c.debugOf(hp.Func).Span(blk.Addr, blk.End); loc != "" {
				s += " " + loc
			}
			blocks = append(blocks, e(s))
		}
		fmt.Fprintf(bw, "<tr><td>%d</td><td class=\"l\"><code>%s</code></td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%.4g</td><td class=\"l %s\">%s</td><td class=\"l\"><details><summary>%d blocks</summary><code>%s</code></details></td></tr>\n",
			r+1, e(c.DisplayChain(hp.Context)), hp.ID, hp.Count, hp.Insns, hp.Value, pct(hp.Value, h.Total), pct(cum, h.Total), hp.Rate, class, class, len(hp.Blocks), strings.Join(blocks, "<br/>"))
	}
	bw.WriteString("</table>\n")
	writeLatencyHTML(bw, o.Latency)

	// Procedures.
	s := MakeProcs(m)
	bw.WriteString("<h2 id=\"procs\">Procedures</h2>\n<table>\n<tr><th class=\"l\">procedure</th><th class=\"l\">file</th><th>insns executed</th><th>%</th><th>calls</th><th>static insns</th><th>never run</th><th>blocks</th><th>never entered</th></tr>\n")
	for _, r := range s.Funcs {
		fmt.Fprintf(bw, "<tr><td class=\"l\"><code>%s</code></td><td class=\"l\">%s</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			e(r.Name), e(shortFile(r.File)), r.Executed, pct(r.Executed, s.Total), r.Calls, r.Static, r.NeverInsns, r.Blocks, r.NeverBlocks)
	}
	bw.WriteString("</table>\n<table>\n<tr><th class=\"l\">file</th><th>procedures</th><th>insns executed</th><th>%</th><th>calls</th><th>static insns</th><th>never run</th><th>blocks</th><th>never entered</th></tr>\n")
	for _, r := range s.Files {
		name := r.File
		if name == "" {
			name = "(no line information)"
		}
		fmt.Fprintf(bw, "<tr><td class=\"l\">%s</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			e(name), r.Procs, r.Executed, pct(r.Executed, s.Total), r.Calls, r.Static, r.NeverInsns, r.Blocks, r.NeverBlocks)
	}
	bw.WriteString("</table>\n")

	// The calling-context tree.
	fmt.Fprintf(bw, "<h2 id=\"cct\">Calling-context tree</h2>\n<p>Each context: inclusive and exclusive %s (share of the total), calls, call site. Contexts under 0.1%% of the total are left out.</p>\n", e(col.Name))
	nHidden := 0
	var walk func(ids []int, depth int)
	walk = func(ids []int, depth int) {
		ids = append([]int(nil), ids...)
		sort.SliceStable(ids, func(i, j int) bool {
			a, b := &c.Nodes[ids[i]], &c.Nodes[ids[j]]
			if a.Incl[h.Col] != b.Incl[h.Col] {
				return a.Incl[h.Col] > b.Incl[h.Col]
			}
			return a.ID < b.ID
		})
		for _, i := range ids {
			n := &c.Nodes[i]
			if hidden(n.Incl[h.Col], c.Total[h.Col], false) {
				nHidden++
				continue
			}
			text := fmt.Sprintf("%s  incl %d (%s)  excl %d (%s)  %s", c.DisplayName(n.Name), n.Incl[h.Col], pct(n.Incl[h.Col], c.Total[h.Col]),
				n.Excl[h.Col], pct(n.Excl[h.Col], c.Total[h.Col]), plural(n.Calls, "call", "calls"))
			if n.CallSite != 0 {
				text += "  @ " + site(n.CallSite, c.siteLines(n))
			}
			if len(n.Children) == 0 {
				fmt.Fprintf(bw, "<div class=\"leaf\">%s</div>\n", e(text))
				continue
			}
			open := ""
			if depth < 3 {
				open = " open=\"open\""
			}
			fmt.Fprintf(bw, "<details%s><summary>%s</summary>\n", open, e(text))
			walk(n.Children, depth+1)
			bw.WriteString("</details>\n")
		}
	}
	walk(c.Roots, 0)
	if nHidden > 0 {
		fmt.Fprintf(bw, "<p>%s under 0.1%% not shown.</p>\n", plural(uint64(nHidden), "subtree", "subtrees"))
	}

	// CFGs.
	bw.WriteString("<h2 id=\"cfg\">Control-flow graphs</h2>\n")
	funcs := htmlCFGFuncs(m, h, s, o.CFGs)
	if o.Render == nil {
		bw.WriteString("<p>Graphviz <code>dot</code> was not found: no pictures (install the Debian package graphviz; <code>blpp cfg BINARY --profile P --func F --format dot</code> writes the graphs).</p>\n")
	}
	for _, fn := range funcs {
		mf := m.Func(fn)
		fmt.Fprintf(bw, "<h3>%s</h3>\n", e(m.DisplayName(mf.Name)))
		if o.Render == nil {
			continue
		}
		var dot bytes.Buffer
		if err := CFGProfileDot(&dot, m, []FuncID{fn}, CFGProfileOptions{Share: h.Share}); err != nil {
			return err
		}
		svg, err := o.Render(dot.Bytes())
		if err != nil {
			fmt.Fprintf(bw, "<p>dot failed: %s</p>\n", e(err.Error()))
			continue
		}
		if k := bytes.Index(svg, []byte("<svg")); k >= 0 {
			svg = svg[k:]
		}
		bw.WriteString("<div class=\"svg\">\n")
		bw.Write(bytes.TrimSpace(svg))
		bw.WriteString("\n</div>\n")
	}
	bw.WriteString("</body>\n</html>\n")
	return bw.Flush()
}

// htmlCFGFuncs picks the functions drawn: those of the hot paths, then the
// procedures by instructions executed, n in all.
func htmlCFGFuncs(m *Model, h *HotPaths, s *Procs, n int) []FuncID {
	if n <= 0 {
		n = 4
	}
	var out []FuncID
	seen := map[FuncID]bool{}
	add := func(fn FuncID) {
		if len(out) < n && !seen[fn] && m.Func(fn).Instrumented && m.Profile(fn).Insns > 0 {
			seen[fn] = true
			out = append(out, fn)
		}
	}
	for _, hp := range h.Hot {
		add(hp.Func)
	}
	for _, r := range s.Funcs {
		add(r.Func)
	}
	return out
}
