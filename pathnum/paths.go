package pathnum

import (
	"errors"
	"fmt"
	"sort"
)

var errNotNumbered = errors.New("pathnum: numbering not built by Number")

func (n *Numbering) ready() error {
	if n == nil || n.outStart == nil {
		return errNotNumbered
	}
	return nil
}

// step turns a dag index back into the Step that names it.
func (n *Numbering) step(d int32) Step {
	return Step{Edge: int(n.dag[d].edge), Pseudo: n.dag[d].pseudo}
}

// Regenerate returns the path numbered id. It descends greedily from Entry:
// at each node the out-edge with the largest Val not above the remaining
// number is the one the path took [Ball-Larus 96 §3]. A path starting at
// a loop head begins with a FromEntry step named by the lowest-numbered
// backedge or broken edge into that head.
func (n *Numbering) Regenerate(id uint64) ([]Step, error) {
	if err := n.ready(); err != nil {
		return nil, err
	}
	if id >= n.total {
		return nil, fmt.Errorf("%w: %d, procedure has %d paths", ErrPathRange, id, n.total)
	}
	var steps []Step
	rest := id
	v := n.entry
	for v != n.exit {
		outs := n.outList[n.outStart[v]:n.outStart[v+1]]
		// Vals along outs increase strictly (every target has a path), so
		// the first edge with Val > rest follows the one we want.
		k := sort.Search(len(outs), func(j int) bool { return n.dag[outs[j]].val > rest }) - 1
		if k < 0 || len(steps) >= len(n.phi) {
			return nil, fmt.Errorf("pathnum: internal error: regeneration of %d stuck at node %d", id, v)
		}
		d := outs[k]
		rest -= n.dag[d].val
		steps = append(steps, n.step(d))
		v = n.dag[d].to
	}
	if rest != 0 {
		return nil, fmt.Errorf("pathnum: internal error: regeneration of %d left %d at exit", id, rest)
	}
	return steps, nil
}

// dagOf resolves step k of a path to its dag index. ok is false for a step
// that names nothing in the DAG view. skip is true for a FromEntry step of
// an edge into Entry: ENTRY→Entry is the empty edge, accepted and ignored.
func (n *Numbering) dagOf(k int, s Step) (d int32, skip bool, err error) {
	if s.Edge < 0 || s.Edge >= len(n.kind) {
		return -1, false, fmt.Errorf("%w: step %d: edge %d out of range [0,%d)", ErrInvalidPath, k, s.Edge, len(n.kind))
	}
	kind := n.kind[s.Edge]
	switch s.Pseudo {
	case None:
		if kind == DAGEdge {
			return n.realDag[s.Edge], false, nil
		}
	case ToExit:
		if kind.Breaks() {
			return n.exitDag[s.Edge], false, nil
		}
	case FromEntry:
		if kind.Breaks() {
			if k != 0 {
				return -1, false, fmt.Errorf("%w: step %d: %v is not the first step", ErrInvalidPath, k, s)
			}
			w := n.edgeTo[s.Edge]
			if w == n.entry {
				return -1, true, nil
			}
			return n.entryDag[w], false, nil
		}
	default:
		return -1, false, fmt.Errorf("%w: step %d: unknown pseudo kind %v", ErrInvalidPath, k, s.Pseudo)
	}
	return -1, false, fmt.Errorf("%w: step %d: %v names a %v", ErrInvalidPath, k, s, kind)
}

// PathID returns the number of an ENTRY→EXIT path of the DAG view: the sum
// of the Vals of its steps. It inverts Regenerate, and also accepts, for
// the first step, FromEntry of any backedge or broken edge into the same
// head (they share one pseudo edge) or into Entry (an empty step).
func (n *Numbering) PathID(steps []Step) (uint64, error) {
	if err := n.ready(); err != nil {
		return 0, err
	}
	var sum uint64
	v := n.entry
	for k, s := range steps {
		d, skip, err := n.dagOf(k, s)
		if err != nil {
			return 0, err
		}
		if skip {
			continue
		}
		e := &n.dag[d]
		if e.from != v {
			return 0, fmt.Errorf("%w: step %d: %v leaves node %d, path is at node %d", ErrInvalidPath, k, s, e.from, v)
		}
		sum += e.val // < NumPaths throughout: a prefix of a path
		v = e.to
	}
	if v != n.exit {
		return 0, fmt.Errorf("%w: ends at node %d, not at exit %d", ErrInvalidPath, v, n.exit)
	}
	return sum, nil
}

// Nodes returns the nodes a path of the DAG view visits, Entry first and
// Exit last for a whole path. A path that starts with a FromEntry step
// lists Entry and then the loop head. Steps are not checked for continuity
// (use PathID for that); nil is returned if a step names no DAG edge.
func (n *Numbering) Nodes(steps []Step) []int {
	if n.ready() != nil {
		return nil
	}
	nodes := make([]int, 0, len(steps)+1)
	nodes = append(nodes, int(n.entry))
	for k, s := range steps {
		d, skip, err := n.dagOf(k, s)
		if err != nil {
			return nil
		}
		if !skip {
			nodes = append(nodes, int(n.dag[d].to))
		}
	}
	return nodes
}

// Prefix returns the steps from ENTRY to node v that leave the path
// register at r (DESIGN decision 6: a partial path is recorded as the node
// where it stopped and the register value). The register at v is
// Σ Val(prefix) − phi(v), so the prefix has value r + phi(v); the path with
// that number takes a zero-valued suffix from v to EXIT and therefore passes
// through v, and its steps up to v are the answer.
func (n *Numbering) Prefix(v int, r int64) ([]Step, error) {
	if err := n.ready(); err != nil {
		return nil, err
	}
	if v < 0 || v >= len(n.phi) {
		return nil, fmt.Errorf("%w: node %d out of range [0,%d)", ErrInvalidPath, v, len(n.phi))
	}
	want, ok := addInt64(r, n.phi[v])
	if !ok || want < 0 || uint64(want) >= n.total {
		return nil, fmt.Errorf("%w: no prefix ends at node %d with register %d", ErrInvalidPath, v, r)
	}
	path, err := n.Regenerate(uint64(want))
	if err != nil {
		return nil, err
	}
	var sum uint64
	at := n.entry
	for k := 0; ; k++ {
		if at == int32(v) {
			if sum != uint64(want) {
				break
			}
			return path[:k:k], nil
		}
		if k == len(path) {
			break
		}
		d, _, _ := n.dagOf(k, path[k]) // path comes from Regenerate: valid
		sum += n.dag[d].val
		at = n.dag[d].to
	}
	return nil, fmt.Errorf("%w: no prefix ends at node %d with register %d", ErrInvalidPath, v, r)
}
