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
	// edges gives each edge's From and To; blocks and adj each block's
	// lists of edge IDs in ascending order, the order of Graph.Succs and
	// Graph.Preds (a Graph's own arrays, or built by NewFlow).
	edges  []Edge
	blocks []Block
	adj    []EdgeID
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
	// A graph of just the shape: link fills the lists, without the
	// edges that cannot be followed, which go back in afterwards.
	g := &Graph{Blocks: make([]Block, n)}
	var bad []int
	for i, e := range edges {
		if e.From < 0 || int(e.From) >= n || int(e.To) >= n {
			bad = append(bad, i)
			continue
		}
		g.Edges = append(g.Edges, Edge{From: e.From, To: e.To})
	}
	g.link()
	if len(bad) > 0 {
		// Renumber the lists to the input's edge IDs.
		ids := make([]EdgeID, 0, len(edges))
		for i := range edges {
			if len(bad) > 0 && bad[0] == i {
				bad = bad[1:]
				continue
			}
			ids = append(ids, EdgeID(i))
		}
		for k, id := range g.adj {
			g.adj[k] = ids[id]
		}
		g.Edges = make([]Edge, len(edges))
		for i, e := range edges {
			g.Edges[i] = Edge{From: e.From, To: e.To}
		}
	}
	return g.flow()
}

// flow returns the Flow of g, sharing its arrays.
func (g *Graph) flow() *Flow { return &Flow{edges: g.Edges, blocks: g.Blocks, adj: g.adj} }

// succs lists the edges leaving block b.
func (f *Flow) succs(b BlockID) []EdgeID {
	blk := &f.blocks[b]
	return f.adj[blk.adj : blk.adj+blk.nsucc]
}

// preds lists the edges entering block b.
func (f *Flow) preds(b BlockID) []EdgeID {
	blk := &f.blocks[b]
	at := blk.adj + blk.nsucc
	return f.adj[at : at+blk.npred]
}

// from and to are the ends of edge e.
func (f *Flow) from(e EdgeID) BlockID { return f.edges[e].From }
func (f *Flow) to(e EdgeID) BlockID   { return f.edges[e].To }

// Len is the number of blocks.
func (f *Flow) Len() int { return len(f.blocks) }
