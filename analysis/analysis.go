package analysis

import (
	"fmt"
	"math"
	"sync"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/pathnum"
)

// Options control Run.
type Options struct {
	Workers int
	// Match selects procedures; nil means all.
	Match func(*cfg.Function) bool
	// MaxPaths is pathnum's limit (0: pathnum.DefaultMaxPaths).
	MaxPaths uint64
	// Lean keeps of each numbering only the path count and the
	// per-edge kinds and increments (pathnum.Numbering.Lean): what code
	// generation reads.
	// A large library's full numberings took hundreds of megabytes.
	Lean bool
}

// Func is one analysed procedure.
type Func struct {
	Func  *cfg.Function
	Graph *cfg.Graph
	// Numbering is nil when the graph could not be numbered (NumErr says
	// why) or was not built.
	Numbering *pathnum.Numbering
	NumErr    error
}

// Instrumentable reports whether the procedure can be instrumented: its
// graph is safe and numbered.
func (f *Func) Instrumentable() bool {
	return f.Graph != nil && f.Graph.Instrumentable() && f.Numbering != nil
}

// Reason explains why the procedure is not instrumentable ("" when it is).
func (f *Func) Reason() string {
	switch {
	case f.Graph == nil:
		return "not analysed"
	case !f.Graph.Instrumentable():
		return f.Graph.Reason.String()
	case f.Numbering == nil:
		return cfg.ReasonPathOverflow.String()
	}
	return ""
}

// Detail is Reason with the location and specifics.
func (f *Func) Detail() string {
	switch {
	case f.Graph == nil:
		return "not analysed"
	case !f.Graph.Instrumentable():
		return f.Graph.Reason.String() + ": " + f.Graph.Detail
	case f.Numbering == nil:
		return fmt.Sprintf("%v: %v", cfg.ReasonPathOverflow, f.NumErr)
	}
	return ""
}

// Result is the analysis of a whole binary.
type Result struct {
	Binary  *cfg.Binary
	Program *cfg.Program
	// Funcs holds the selected procedures in address order.
	Funcs []*Func
}

// Run analyses b.
func Run(b *cfg.Binary, opts Options) *Result {
	p := cfg.Analyze(b, cfg.Options{Workers: opts.Workers, Match: opts.Match})
	r := &Result{Binary: b, Program: p}
	for i, f := range p.Funcs {
		if p.Graphs[i] == nil {
			continue
		}
		r.Funcs = append(r.Funcs, &Func{Func: f, Graph: p.Graphs[i]})
	}
	par.Each(len(r.Funcs), opts.Workers, func(i int) {
		f := r.Funcs[i]
		if len(f.Graph.Blocks) == 0 || !f.Graph.Instrumentable() {
			return
		}
		// A lean numbering is the lean part of the full one, made without
		// handing the rest to the collector (pathnum.Options.Lean).
		f.Numbering, f.NumErr = Number(f.Graph, pathnum.Options{MaxPaths: opts.MaxPaths, Lean: opts.Lean})
	})
	return r
}

// ExitNode is the pathnum node standing for cfg.Exit in g's numbering.
func ExitNode(g *cfg.Graph) int { return len(g.Blocks) }

// Node maps a cfg block ID (or cfg.Exit) to its pathnum node.
func Node(g *cfg.Graph, b cfg.BlockID) int {
	if b == cfg.Exit {
		return len(g.Blocks)
	}
	return int(b)
}

// Weight is the static frequency estimate of an edge leaving a block at
// the given loop depth: 10 per level, as Ball and Larus suggest for chord
// placement without a profile [Ball-Larus 96 §3.4; Ball 94 §5].
func Weight(depth int) float64 {
	if depth > 12 {
		depth = 12
	}
	return math.Pow(10, float64(depth))
}

// Number numbers g's acyclic paths. Where g has Dispatch edges
// (cfg.Graph.MarkDispatch) it numbers first without them, and keeps them
// only when most of them end paths anyway (backedges, or broken by the
// overflow policy): then sharing their path ends costs nothing and saves
// code (CPython's dispatch: 85% of 41,907 edges end paths); where they
// are mostly chords (Lua's: 3 of 249), a path end at every dispatch
// would cost more than the increments it replaces, so the marks are
// cleared (decision 134).
func Number(g *cfg.Graph, opts pathnum.Options) (*pathnum.Numbering, error) {
	// pathnum.Number keeps nothing of its graph, so the edge array serves
	// the next call (decision 118).
	ep := edgePool.Get().(*[]pathnum.Edge)
	defer edgePool.Put(ep)
	if cap(*ep) < len(g.Edges) {
		*ep = make([]pathnum.Edge, len(g.Edges))
	}
	pg := &pathnum.Graph{NumNodes: len(g.Blocks) + 1, Entry: int(cfg.Entry), Exit: len(g.Blocks),
		Edges: (*ep)[:len(g.Edges)]}
	marked := 0
	for i, e := range g.Edges {
		pg.Edges[i] = pathnum.Edge{From: Node(g, e.From), To: Node(g, e.To), Weight: Weight(g.Blocks[e.From].LoopDepth),
			Break: g.BreaksPath(cfg.EdgeID(i))}
		if e.Dispatch {
			marked++
		}
	}
	num, err := pathnum.Number(pg, opts)
	if err != nil || marked == 0 {
		return num, err
	}
	ending := 0
	for i, e := range g.Edges {
		if e.Dispatch && num.Kind[i].Breaks() {
			ending++
		}
	}
	if 2*ending < marked {
		for i := range g.Edges {
			g.Edges[i].Dispatch = false
		}
		return num, nil
	}
	for i, e := range g.Edges {
		pg.Edges[i].Dispatch = e.Dispatch
	}
	return pathnum.Number(pg, opts)
}

var edgePool = sync.Pool{New: func() any { return new([]pathnum.Edge) }}
