package pathnum

import "strconv"

// Graph is the input of Number: a directed multigraph over nodes
// 0..NumNodes-1. Parallel edges and self loops are allowed.
type Graph struct {
	NumNodes int
	Entry    int // the procedure's first block; must be in range
	// Exit is the single EXIT node. The caller adds it and points every way
	// out of the procedure at it (returns, tail calls, no-return calls)
	// [Ball-Larus 96 §3]. It must differ from Entry and have no out-edges.
	// It may be unreachable (a procedure that loops forever).
	Exit  int
	Edges []Edge
}

// Edge is one control-flow edge of a Graph.
type Edge struct {
	From, To int
	// Weight is a static frequency estimate (e.g. 10^loopdepth); higher
	// means hotter. It only steers the maximum spanning tree, so it changes
	// where increments go, never which paths exist. It must not be NaN;
	// infinities are allowed (10^loopdepth overflows for absurd depths).
	Weight float64
	// Break makes the edge end one path and start another, exactly like a
	// backedge (its Kind is Backedge), though it closes no cycle: used
	// where control can arrive again without passing the edge's source,
	// as after a call to setjmp.
	Break bool
	// Dispatch makes the edge path-breaking too, with one more promise:
	// its path end depends only on its rank among its source's Dispatch
	// edges, ordered by target. Each source's Dispatch pseudo edges to
	// EXIT get consecutive values in target order and the first of them
	// lies on the spanning tree, so ExitInc of a Dispatch edge is that
	// rank, whatever its source (but Entry, whose potential is 0: there
	// it is the rank plus the paths of Entry's DAG out-edges): sources
	// with the same targets (the replicated dispatch jumps of an
	// interpreter) share the code of each path end (decision 134).
	Dispatch bool
}

// DefaultMaxPaths is the path limit used when Options.MaxPaths is 0.
const DefaultMaxPaths uint64 = 1 << 62

// maxPathsLimit caps Options.MaxPaths: the path register is a signed 64-bit
// value at run time, so path numbers must fit in int64.
const maxPathsLimit uint64 = 1<<63 - 1

// maxGraphSize bounds NumNodes and len(Edges) so that every index, of
// input edges and of the up to 2·len(Edges)+NumNodes edges of the DAG view,
// fits in int32.
const maxGraphSize = 1 << 28

// Options tune Number.
type Options struct {
	// MaxPaths limits NumPaths; 0 means DefaultMaxPaths. Values above
	// math.MaxInt64 are treated as math.MaxInt64.
	MaxPaths uint64
	// Lean makes Number return only what instruments a procedure:
	// NumNodes, Entry, Exit, NumPaths, RawPaths, RawOverflow, Split and
	// per edge Kind, Inc, EntryInc and ExitInc. The rest (values, path
	// counts, the DAG view) is computed in arrays Number keeps for its
	// next lean call instead of handing them to the collector. A lean
	// Numbering cannot regenerate paths (Regenerate, PathID, Prefix).
	Lean bool
}

// EdgeKind classifies an input edge after numbering.
type EdgeKind uint8

const (
	// DAGEdge is an edge of the acyclic graph; traversing it adds Inc.
	DAGEdge EdgeKind = iota
	// Backedge closes a cycle found by the DFS from Entry; it ends a path
	// and starts another [Ball-Larus 96 §3.3].
	Backedge
	// Broken is a DAG edge that the overflow policy made path-breaking;
	// it is instrumented exactly like a Backedge.
	Broken
)

var edgeKindNames = [...]string{
	DAGEdge:  "edge",
	Backedge: "backedge",
	Broken:   "broken",
}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) {
		return edgeKindNames[k]
	}
	return "EdgeKind(" + strconv.Itoa(int(k)) + ")"
}

// Breaks reports whether edges of this kind end a path (Backedge, Broken).
func (k EdgeKind) Breaks() bool { return k == Backedge || k == Broken }

// PseudoKind says which edge of the DAG view a Step stands for.
type PseudoKind uint8

const (
	// None: the real DAG edge Step.Edge.
	None PseudoKind = iota
	// FromEntry: the pseudo edge ENTRY→w of the backedge or broken edge
	// Step.Edge (v→w). Only the first step of a path can be one.
	FromEntry
	// ToExit: the pseudo edge v→EXIT of the backedge or broken edge
	// Step.Edge (v→w). Only the last step of a path can be one.
	ToExit
)

var pseudoKindNames = [...]string{
	None:      "none",
	FromEntry: "from-entry",
	ToExit:    "to-exit",
}

func (k PseudoKind) String() string {
	if int(k) < len(pseudoKindNames) {
		return pseudoKindNames[k]
	}
	return "PseudoKind(" + strconv.Itoa(int(k)) + ")"
}

// Step is one edge of a path in the DAG view.
type Step struct {
	Edge   int        // input edge index
	Pseudo PseudoKind // None for a real DAG edge
}

func (s Step) String() string {
	if s.Pseudo == None {
		return strconv.Itoa(s.Edge)
	}
	return strconv.Itoa(s.Edge) + ":" + s.Pseudo.String()
}
