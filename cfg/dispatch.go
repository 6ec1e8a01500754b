package cfg

import (
	"slices"
	"strconv"
	"strings"
)

// Replicated dispatch (decision 134). An interpreter built with computed
// gotos ends each of its handlers with an indirect jump through the same
// table of handler addresses (CPython's _PyEval_EvalFrameDefault: about
// 200 jumps to the same 200-odd handlers). Numbered like any other
// branch, every one of those 40 thousand edges carried path-end code of
// its own, out of line: 8.5 MB of code for a 70 KB function, and an
// instruction cache that misses on every dispatch. Marked Dispatch, each
// edge ends its path and its path-end code depends only on the target, so
// the jumps share one piece of code per handler.

// MarkDispatch sets Edge.Dispatch on every edge of the indirect jumps
// whose targets, two or more, are exactly those of another indirect jump
// of the graph.
func (g *Graph) MarkDispatch() {
	if len(g.Tables) < 2 {
		return
	}
	var keys map[string][]BlockID
	var key strings.Builder
	var to []BlockID
	for id := range g.Blocks {
		to = to[:0]
		for _, e := range g.Succs(BlockID(id)) {
			if g.Edges[e].Kind == EdgeJumpTable {
				to = append(to, g.Edges[e].To)
			}
		}
		if len(to) < 2 {
			continue
		}
		slices.Sort(to)
		key.Reset()
		for _, b := range to {
			key.WriteString(strconv.Itoa(int(b)))
			key.WriteByte(',')
		}
		if keys == nil {
			keys = map[string][]BlockID{}
		}
		keys[key.String()] = append(keys[key.String()], BlockID(id))
	}
	for _, srcs := range keys {
		if len(srcs) < 2 {
			continue
		}
		for _, id := range srcs {
			for _, e := range g.Succs(id) {
				if g.Edges[e].Kind == EdgeJumpTable {
					g.Edges[e].Dispatch = true
				}
			}
		}
	}
}
