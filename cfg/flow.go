package cfg

// Flow is the shape of a control-flow graph and nothing else: blocks 0 to
// n-1, Entry first, and edges numbered in order, each from a block to a
// block or out of the procedure (a negative To, like Exit). Loop analysis
// (loops.go) and the depth-first numbering (dom.go) need no more, so they
// run on a Flow, which a Graph supplies (Graph.flow) and so does any graph
// stored elsewhere, such as the metadata of an instrumented binary that the
// reports read (NewFlow). Both then find the same loops: one loop forest,
// not two that drift [STYLE rule 10].
type Flow struct {
	from, to []BlockID // per edge
	// succs and preds list each block's edges in ascending ID order, the
	// order of Block.Succs and Block.Preds in a Graph.
	succs, preds [][]EdgeID
}

// FlowEdge is one edge of a Flow. To is negative for an edge that leaves
// the procedure.
type FlowEdge struct {
	From, To BlockID
}

// NewFlow returns the Flow of n blocks with the given edges; edge i is
// EdgeID(i). An edge whose From is not a block, or whose To is neither a
// block nor negative, keeps its ID but is in no block's lists: the input
// may come from a file, and such an edge cannot be followed.
func NewFlow(n int, edges []FlowEdge) *Flow {
	f := &Flow{
		from:  make([]BlockID, len(edges)),
		to:    make([]BlockID, len(edges)),
		succs: make([][]EdgeID, n),
		preds: make([][]EdgeID, n),
	}
	for i, e := range edges {
		f.from[i], f.to[i] = e.From, e.To
		if e.From < 0 || int(e.From) >= n || int(e.To) >= n {
			continue
		}
		f.succs[e.From] = append(f.succs[e.From], EdgeID(i))
		if e.To >= 0 {
			f.preds[e.To] = append(f.preds[e.To], EdgeID(i))
		}
	}
	return f
}

// flow returns the Flow of g, sharing its blocks' edge lists.
func (g *Graph) flow() *Flow {
	f := &Flow{
		from:  make([]BlockID, len(g.Edges)),
		to:    make([]BlockID, len(g.Edges)),
		succs: make([][]EdgeID, len(g.Blocks)),
		preds: make([][]EdgeID, len(g.Blocks)),
	}
	for i := range g.Edges {
		f.from[i], f.to[i] = g.Edges[i].From, g.Edges[i].To
	}
	for b := range g.Blocks {
		f.succs[b], f.preds[b] = g.Blocks[b].Succs, g.Blocks[b].Preds
	}
	return f
}

// Len is the number of blocks.
func (f *Flow) Len() int { return len(f.succs) }
