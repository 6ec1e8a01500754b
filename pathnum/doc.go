// Package pathnum numbers the acyclic paths of one procedure's control-flow
// graph the way Ball and Larus do [Ball-Larus 96], chooses where the path
// register is incremented [Ball-Larus 96 §3.4, Ball 94], and turns path
// numbers back into paths.
//
// The package is pure: it knows nothing about x86, ELF or files. Its input
// is a Graph (nodes 0..NumNodes-1, one Entry, one Exit, a list of edges with
// static frequency weights) and its output is a Numbering that the rewriter
// turns into instrumentation and that reports use to regenerate paths.
// Number is a deterministic function of (Graph, Options): metadata can store
// the graph and rebuild the same Numbering later.
//
// # What it trusts
//
// Nothing. Every Graph is validated (ranges, a single Exit with no
// successors, every node other than Exit reachable from Entry, every node
// able to reach Exit in the DAG view) and refused with an error wrapping
// ErrInvalidGraph; no input makes Number panic. Exit itself need not be
// reachable: a procedure that loops forever still has paths, which end at
// its backedges. Arithmetic on path counts and increments is
// overflow-checked.
//
// # From a cyclic graph to a DAG
//
// An iterative depth-first search from Entry visits successors in input
// edge order; an edge whose target is still on the DFS stack is a backedge
// (self loops included). Removing the backedges leaves a DAG for any graph,
// reducible or not. Each backedge v→w is replaced by two pseudo edges,
// ENTRY→w and v→EXIT, so a path may also start at a loop head and end at a
// loop latch [Ball-Larus 96 §3.3]. Two details are our own:
//
//   - Backedges with the same target w share one ENTRY→w pseudo edge. The
//     path that starts at w is the same block sequence whichever backedge
//     ended the previous path, so one edge suffices and the path count does
//     not multiply with every "continue". The shared edge is named by the
//     lowest-numbered backedge (or broken edge) into w; that is the edge
//     Regenerate reports, and PathID accepts any of them.
//   - A backedge into Entry itself needs no ENTRY→Entry pseudo edge: the
//     next path simply starts at Entry, like a fresh activation, and the
//     register is reset to 0 (EntryInc is 0).
//
// Each backedge keeps its own v→EXIT pseudo edge, so a path ending says
// which backedge was taken.
//
// # Path numbers
//
// NodePaths(Exit) = 1 and, in reverse topological order, NodePaths(v) is
// the sum of NodePaths over v's out-edges in the DAG; edge values are the
// running prefix sums of those counts [Ball-Larus 96 §3]. The out-edges of
// a node are ordered as follows, and this order fixes every Val:
//
//  1. real DAG edges, by input edge index;
//  2. v→EXIT pseudo edges of backedges/broken edges leaving v, by input
//     edge index;
//  3. at Entry only, ENTRY→w pseudo edges, by the index of the edge that
//     names them.
//
// The sum of Val along an ENTRY→EXIT path is its number, and the numbers of
// all paths are exactly 0..NumPaths-1. Regenerate inverts this by greedy
// descent: at each node take the out-edge with the largest Val not above the
// remaining number.
//
// # Increments on chords
//
// Instrumenting every edge with r += Val is correct but slow. Instead we
// take the undirected graph of DAG edges, pseudo edges and a fake EXIT→ENTRY
// edge, find a maximum spanning tree by Kruskal's algorithm (the fake edge
// forced in first; heavier edges first; ties by internal edge order: real
// DAG edges by index, then v→EXIT pseudo edges, then ENTRY→w pseudo edges)
// and give each node a potential phi with phi(ENTRY) = phi(EXIT) = 0 and
// phi(v) = phi(u) + Val(u→v) on tree edges. Then
//
//	Inc(u→v) = Val(u→v) + phi(u) - phi(v)
//
// is 0 on every tree edge, so the hot (heavy) edges carry no code, and
// along any ENTRY→EXIT path the phi terms telescope to phi(ENTRY) -
// phi(EXIT) = 0, so the sum of Inc is the path number [Ball 94, Ball-Larus
// 96 §3.4]. Pseudo edges weigh what the backedge they stand for weighs
// (ENTRY→w: the sum over the backedges into w).
//
// The instrumentation that results (DESIGN decision 6):
//
//	at procedure entry:              r = 0
//	on DAG edge i:                   r += Inc[i]
//	on backedge or broken edge i:    count[r + ExitInc[i]]++; r = EntryInc[i]
//	on reaching Exit:                count[r]++
//
// # Partial paths
//
// At node v the register holds Σ Val(prefix) − phi(v). Two different
// prefixes ending at v with the same Val sum would, extended by the same
// suffix, give two paths with one number, which cannot happen; so (v, r)
// names the executed prefix exactly and Prefix recovers it: the path whose
// number is r + phi(v) passes through v with a zero-valued suffix.
//
// # Overflow policy
//
// Path counts must not exceed Options.MaxPaths (default 1<<62, at most
// math.MaxInt64 because the register is a signed 64-bit value). When the
// count of the DAG exceeds it (a uint64 overflow counts as exceeding), more
// edges are made path-breaking: a Broken edge is handled exactly like a
// backedge (pseudo edges ENTRY→w and v→EXIT, a count and a register reset
// at run time). Breaking u→w removes pre(u)·paths(w) paths and adds pre(u)
// ending at u, plus paths(w) starting at w unless w is already a head (has
// an ENTRY→w edge). The choice is deterministic:
//
//  0. If a lower bound that holds for every split (one path per edge
//     into EXIT of the DAG view, i.e. per backedge and per real edge into
//     Exit; one per out-edge of any node) exceeds MaxPaths, fail at once.
//  1. Cap ladder. Try caps C = MaxPaths, MaxPaths/2, MaxPaths/4, ... and,
//     below 64, every value down to 1. For one cap, visit the nodes other
//     than Entry and Exit in reverse topological order; when a node's count
//     (with the edges already broken below it) exceeds C, break its DAG
//     out-edges until the count is at most C: first edges into existing
//     heads (free at Entry), then the others, each group largest target
//     count first (ties: lower edge index); then re-join any broken edge
//     into a head that turns out unnecessary, smallest first. Edges into
//     single-path nodes are never broken (no gain), nor are Entry's
//     out-edges. Then recount Entry, ENTRY→w edges included; the first cap
//     whose total is at most MaxPaths wins. Large caps break few edges, so
//     paths stay long.
//  2. Greedy fallback, only if no cap fits (tiny limits): repeatedly break
//     the edge that removes the most paths from the total, until it fits,
//     no break helps, or 256 edges have been broken this way.
//  3. Otherwise Number returns ErrPathLimit.
//
// The ladder reaches a cap C ≤ MaxPaths/T, T bounding the number of terms
// in Entry's sum (its out-degree plus the number of other nodes); once
// every node fits under such a cap the total fits, and a node fits under
// any cap at least its out-degree. So for realistic limits (the default, or
// any limit of at least 2·T times the largest out-degree) the ladder always
// succeeds and the fallback never runs. Under tiny limits a
// graph may have no numbering at all — every backedge ends a path of its
// own, and a chain of k if/else diamonds needs at least 2k paths however it
// is cut — and the heuristic may also miss a split that exists.
//
// Split is true when any edge was broken; RawOverflow when the unsplit
// count exceeded the limit; RawPaths keeps that count (saturated).
//
// # Errors
//
// ErrInvalidGraph (wrapped in a *GraphError naming the node or edge) for a
// bad Graph; ErrPathLimit when the overflow policy cannot meet MaxPaths;
// ErrIncrementRange when a potential or increment leaves int64; ErrPathRange
// and ErrInvalidPath from the path conversions.
//
// # Cost
//
// Number runs in O(E log E) time for E edges (the spanning tree's sort
// dominates) and O(N + E) space. The cap ladder repeats an O(E log E) pass
// once per cap tried, at most about log2(T) times for realistic limits; the
// greedy fallback (tiny limits only) costs O(E) per broken edge, for at
// most 256 edges. Regenerate, PathID and Prefix take O(L log D) for a path
// of L steps through nodes of out-degree ≤ D.
package pathnum
