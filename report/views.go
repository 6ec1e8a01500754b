package report

// This file renders the calling contexts of the model as text: top-down
// (the tree), bottom-up (callers of each procedure), flat (per
// procedure), and the paths of chosen contexts [Ammons-Ball-Larus 97 §4].

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// ViewOptions are the options of the text views.
type ViewOptions struct {
	Metric int // column
	// Top limits the procedures of the flat and callers views and the
	// contexts and paths of ContextPathsText; 0 shows all.
	Top int
	// All shows the rows of the tree and callers views under
	// 1/HideBelow of the total.
	All bool
}

// HideBelow is the share of the total under which the tree and callers
// views leave a row out unless ViewOptions.All: one in a thousand.
const HideBelow = 1000

// hidden reports whether v is under 1/HideBelow of total.
func hidden(v, total uint64, all bool) bool {
	if all || total == 0 {
		return false
	}
	limit := total / HideBelow
	if total%HideBelow != 0 {
		limit++
	}
	return v < limit
}

func pct(v, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(v)/float64(total))
}

// site says where a context was called from: file:line when the line
// tables know it, else the address.
func site(addr uint64, lines *DebugInfo) string {
	if loc := lines.At(addr); loc != "" {
		return loc
	}
	return hex(addr)
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writeTreeRow writes one row of the tree and callers views: two values
// with their shares of total, calls, and the label indented by depth
// with where it was called from (for a row below the top).
func writeTreeRow(tw io.Writer, col Column, a, b, total, calls uint64, depth int, label string, callSite uint64, below bool, lines *DebugInfo) {
	where := ""
	switch {
	case callSite != 0:
		where = "  @ " + site(callSite, lines)
	case below:
		where = "  (no call site)"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t  %s%s%s\n", col.Format(a), pct(a, total), col.Format(b), pct(b, total), calls, strings.Repeat("  ", depth), label, where)
}

// writeMore says how many rows a --top limit left out.
func writeMore(w io.Writer, prefix string, n int, one, many string) {
	fmt.Fprintf(w, "%s... and %s (--top 0 lists all)\n", prefix, plural(uint64(n), one, many))
}

// startView writes the header of a tabular view and the heading of its
// table (a format given the metric's name twice); it returns the table
// and the metric's total.
func (c *Model) startView(w io.Writer, view string, col int, heading string) (*tabwriter.Writer, uint64) {
	c.writeHeader(w, view, col)
	name := c.Columns[col].Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, heading, name, name)
	return tw, c.Total[col]
}

// writeHeader writes the two lines every view starts with.
func (c *Model) writeHeader(w io.Writer, view string, col int) {
	shape := plural(uint64(len(c.Nodes)), "context", "contexts")
	if c.Threads != 1 {
		shape += fmt.Sprintf(", %d threads merged", c.Threads)
	}
	if c.FlowOnly {
		shape += "; flow-only profile: no calling context, every procedure is a root"
	}
	fmt.Fprintf(w, "%s: %s (%s)\n", c.Binary, view, shape)
	fmt.Fprintf(w, "metric: %s, total %d %s\n\n", c.Columns[col].Label(), c.Total[col], c.Columns[col].Unit())
}

// writeFooter says what the view left out.
func (c *Model) writeFooter(w io.Writer, hiddenRows int, what string) {
	if hiddenRows > 0 {
		fmt.Fprintf(w, "%s under 0.1%% of the total not shown (--all shows them)\n", plural(uint64(hiddenRows), what, what+"s"))
	}
	if c.UnattributedPartials > 0 {
		fmt.Fprintf(w, "%s had no record (the runtime's arena was full); their %d instructions are in no row\n",
			plural(c.UnattributedPartials, "partial activation", "partial activations"), c.UnattributedInsns)
	}
}

// TreeText writes the top-down view: every context under its caller,
// children by inclusive value, with inclusive and exclusive values and
// their share of the total, calls, and where it was called from.
func TreeText(w io.Writer, c *Model, o ViewOptions) error {
	col := o.Metric
	tw, total := c.startView(w, "top-down calling-context tree", col, "incl %s\t%%\texcl %s\t%%\tcalls\t  context\n")
	nHidden := 0
	var walk func(ids []int)
	order := func(ids []int) []int {
		s := append([]int(nil), ids...)
		sort.SliceStable(s, func(i, j int) bool {
			a, b := &c.Nodes[s[i]], &c.Nodes[s[j]]
			if a.Incl[col] != b.Incl[col] {
				return a.Incl[col] > b.Incl[col]
			}
			if a.Excl[col] != b.Excl[col] {
				return a.Excl[col] > b.Excl[col]
			}
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return a.ID < b.ID
		})
		return s
	}
	subtree := func(i int) int {
		k := 0
		var count func(i int)
		count = func(i int) {
			k++
			for _, ch := range c.Nodes[i].Children {
				count(ch)
			}
		}
		count(i)
		return k
	}
	walk = func(ids []int) {
		for _, i := range order(ids) {
			n := &c.Nodes[i]
			if hidden(n.Incl[col], total, o.All) {
				nHidden += subtree(i)
				continue
			}
			writeTreeRow(tw, c.Columns[col], n.Incl[col], n.Excl[col], total, n.Calls, n.Depth, n.Label(c.Names), n.CallSite, n.Parent >= 0, c.siteLines(n))
			walk(n.Children)
		}
	}
	walk(c.Roots)
	if err := tw.Flush(); err != nil {
		return err
	}
	c.writeFooter(w, nHidden, "context")
	return nil
}

// CallersText writes the bottom-up view: per procedure its exclusive and
// inclusive totals, then the chains of callers that reach it, each
// caller with the share of the procedure's values that came through it.
func CallersText(w io.Writer, c *Model, o ViewOptions) error {
	col := o.Metric
	tw, total := c.startView(w, "bottom-up view (callers)", col, "excl %s\t%%\tincl %s\t%%\tcalls\t  procedure / called from\n")
	var walk func(ns []*CallerNode, depth int)
	walk = func(ns []*CallerNode, depth int) {
		for _, n := range ns {
			writeTreeRow(tw, c.Columns[col], n.Excl, n.Incl, total, n.Calls, depth, c.DisplayName(n.Name), n.CallSite, depth > 0, c.debugOf(n.Func))
			walk(n.Children, depth+1)
		}
	}
	// Rows under the threshold are taken out as the tree is built, with
	// the rows below them (callerTree); the footer counts the former.
	tops, nHidden, _ := c.callerTree(col, func(n *CallerNode) bool { return !hidden(max(n.Excl, n.Incl), total, o.All) })
	more := 0
	if o.Top > 0 && len(tops) > o.Top {
		more = len(tops) - o.Top
		tops = tops[:o.Top]
	}
	walk(tops, 0)
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		writeMore(w, "", more, "more procedure", "more procedures")
	}
	if nHidden > 0 {
		fmt.Fprintf(w, "%s under 0.1%% of the total not shown, nor their callers (--all shows them)\n", plural(uint64(nHidden), "row", "rows"))
	}
	c.writeFooter(w, 0, "row")
	return nil
}

// FlatText writes the flat view: per procedure its exclusive value, its
// inclusive value with recursion counted once, calls and number of
// contexts.
func FlatText(w io.Writer, c *Model, o ViewOptions) error {
	col := o.Metric
	tw, total := c.startView(w, "flat view of procedures", col, "excl %s\t%%\tincl %s\t%%\tcalls\tcontexts\t  procedure\n")
	rows := c.Flat(col)
	more := 0
	if o.Top > 0 && len(rows) > o.Top {
		more = len(rows) - o.Top
		rows = rows[:o.Top]
	}
	for _, r := range rows {
		name := c.DisplayName(r.Name)
		if r.Uninstrumented {
			name += "  [" + darkLabel(r.Reason, r.Calls) + "]"
		}
		col := c.Columns[col]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t  %s\n", col.Format(r.Excl), pct(r.Excl, total), col.Format(r.Incl), pct(r.Incl, total), r.Calls, r.Contexts, name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		writeMore(w, "", more, "more procedure", "more procedures")
	}
	c.writeFooter(w, 0, "")
	return nil
}

// ContextPathsText writes the hottest paths of the contexts that match
// pattern (Match), contexts by exclusive value: for each, its chain, call
// site, calls and values, then its paths by the metric with their blocks
// and file:line.
func ContextPathsText(w io.Writer, c *Model, ids []int, pattern string, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, fmt.Sprintf("paths of the %s matching %s", plural(uint64(len(ids)), "context", "contexts"), pattern), col)
	total := c.Total[col]
	ids = append([]int(nil), ids...)
	sort.SliceStable(ids, func(i, j int) bool {
		a, b := &c.Nodes[ids[i]], &c.Nodes[ids[j]]
		if a.Excl[col] != b.Excl[col] {
			return a.Excl[col] > b.Excl[col]
		}
		return a.ID < b.ID
	})
	more := 0
	if o.Top > 0 && len(ids) > o.Top {
		more = len(ids) - o.Top
		ids = ids[:o.Top]
	}
	name := c.Columns[col].Name
	for k, i := range ids {
		n := &c.Nodes[i]
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "context %d: %s", n.ID, c.DisplayChain(i))
		if n.CallSite != 0 {
			fmt.Fprintf(w, "  @ %s", site(n.CallSite, c.siteLines(n)))
		}
		fmt.Fprintf(w, "\n  %s; %s %s exclusive (%s), %s inclusive (%s)\n", plural(n.Calls, "call", "calls"),
			name, c.Columns[col].Format(n.Excl[col]), pct(n.Excl[col], total), c.Columns[col].Format(n.Incl[col]), pct(n.Incl[col], total))
		if s := n.Sampled; s != nil && c.Columns[col].Sampled != nil {
			writeSampledBlocks(w, c, n)
		}
		if n.Uninstrumented {
			fmt.Fprintf(w, "  %s: no paths\n", darkLabel(n.Reason, n.Calls))
		}
		if n.Partial > 0 {
			fmt.Fprintf(w, "  %s stopped mid-path", plural(n.Partial, "activation", "activations"))
			if n.PartialUnknown > 0 {
				fmt.Fprintf(w, ", %d of them at an unknown block", n.PartialUnknown)
			}
			fmt.Fprintf(w, " (the blocks they executed, where known, count in %s)\n", MetricInsns)
		}
		paths := append([]CPath(nil), n.Paths...)
		sort.SliceStable(paths, func(a, b int) bool {
			if paths[a].Metrics[col] != paths[b].Metrics[col] {
				return paths[a].Metrics[col] > paths[b].Metrics[col]
			}
			return paths[a].ID < paths[b].ID
		})
		morePaths := 0
		if o.Top > 0 && len(paths) > o.Top {
			morePaths = len(paths) - o.Top
			paths = paths[:o.Top]
		}
		mf := c.Func(n.FuncID())
		for r, p := range paths {
			fmt.Fprintf(w, "%3d. path %d: %s", r+1, p.ID, plural(p.Metrics[0], "execution", "executions"))
			if col != 0 {
				fmt.Fprintf(w, ", %s %s", name, c.Columns[col].Format(p.Metrics[col]))
			}
			fmt.Fprintf(w, " (%s of the context)\n", pct(p.Metrics[col], n.Excl[col]))
			for _, b := range p.Blocks {
				writeBlockLine(w, "       ", mf.Blocks[b].Addr, c.debugOf(n.FuncID()))
			}
		}
		if morePaths > 0 {
			writeMore(w, "  ", morePaths, "more path", "more paths")
		}
	}
	if more > 0 {
		writeMore(w, "\n", more, "more context", "more contexts")
	}
	return nil
}
