package pathnum

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Overflow splitting (the policy in the package doc): when a procedure has
// more paths than Options.MaxPaths, more edges are made path-breaking, like
// backedges, until the count fits. number.go counts and numbers; this file
// only chooses which edges break.

// split applies the overflow policy described in the package doc: for caps
// C = maxPaths, maxPaths/2, ... it breaks edges so that every node other
// than Entry has at most C paths, and keeps the first result whose total is
// within maxPaths. If no cap works it falls back to greedyPass.
func (b *numberer) split(kind []EdgeKind, maxPaths uint64) ([]EdgeKind, error) {
	if lb := b.lowerBound(kind); lb > maxPaths {
		return nil, fmt.Errorf("%w: %d nodes, %d edges, limit %d: any split has at least %d paths",
			ErrPathLimit, b.g.NumNodes, len(b.from), maxPaths, lb)
	}
	trial := make([]EdgeKind, len(kind))
	for c := maxPaths; c > 0; c = nextCap(c) {
		copy(trial, kind)
		if b.capPass(trial, c) <= maxPaths {
			return trial, nil
		}
	}
	copy(trial, kind)
	if b.greedyPass(trial, maxPaths) {
		return trial, nil
	}
	return nil, fmt.Errorf("%w: %d nodes, %d edges, limit %d: breaking edges cannot bring it down",
		ErrPathLimit, b.g.NumNodes, len(b.from), maxPaths)
}

// lowerBound is a count of paths that no choice of broken edges gets
// under. Every edge into EXIT of the DAG view lies on a path, and each path
// ends with exactly one of them: there is one per real edge into Exit and
// one per backedge, and breaking only adds more. Likewise each out-edge of
// a node starts a different path suffix, broken or not.
func (b *numberer) lowerBound(kind []EdgeKind) uint64 {
	var ends, outdeg uint64
	for e, k := range kind {
		if k != DAGEdge || b.to[e] == b.exit {
			ends++
		}
	}
	for v := range b.g.NumNodes {
		outdeg = max(outdeg, uint64(b.succStart[v+1]-b.succStart[v]))
	}
	return max(ends, outdeg)
}

// greedyRounds bounds the fallback of the overflow policy.
const greedyRounds = 256

// nextCap is the cap ladder: halving, then every value below 64 (small
// limits are where one path more or less decides).
func nextCap(c uint64) uint64 {
	if c <= 64 {
		return c - 1
	}
	return c / 2
}

// markHeads sets b.heads[w] for every head w ≠ Entry: a node that already
// has an ENTRY→w pseudo edge because a backedge or broken edge enters it.
func (b *numberer) markHeads(kind []EdgeKind) {
	if b.heads == nil {
		b.heads = make([]bool, b.g.NumNodes)
	}
	clear(b.heads)
	for e, k := range kind {
		if k.Breaks() && b.to[e] != b.entry {
			b.heads[b.to[e]] = true
		}
	}
}

// capPass breaks edges in kind so that each node other than Entry and Exit
// has at most c paths where possible, and returns Entry's total. With
// c = math.MaxUint64 it breaks nothing and just counts.
func (b *numberer) capPass(kind []EdgeKind, c uint64) uint64 {
	np := b.np
	b.markHeads(kind)
	for _, v := range b.post {
		if v == b.exit {
			np[v] = 1
			continue
		}
		if v == b.entry {
			continue
		}
		// fixed: out-edges worth one path each, which breaking cannot
		// improve (pseudo v→EXIT edges, DAG edges into single-path nodes).
		var fixed, all uint64
		cand := b.candidates[:0]
		for _, e := range b.succ[b.succStart[v]:b.succStart[v+1]] {
			if kind[e] != DAGEdge || np[b.to[e]] <= 1 {
				fixed++
				continue
			}
			cand = append(cand, e)
			all = satAdd(all, np[b.to[e]])
		}
		b.candidates = cand
		all = satAdd(all, fixed)
		if all <= c {
			np[v] = all
			continue
		}
		np[v] = b.breakAt(kind, cand, fixed, c)
	}
	return b.entryTotal(kind)
}

// breakAt chooses which of node v's candidate out-edges to break so that
// v's count fits under c, and returns the count. Edges into existing heads
// come first (their ENTRY→w edge exists, so breaking them adds no path at
// Entry), then the others; within each group the largest target count
// first, ties by lower edge index. The shortest prefix of that order that
// fits is broken; then broken edges into heads that turn out unnecessary
// are restored, smallest first, to keep paths long.
func (b *numberer) breakAt(kind []EdgeKind, cand []int32, fixed, c uint64) uint64 {
	np := b.np
	slices.SortFunc(cand, func(x, y int32) int {
		hx, hy := b.heads[b.to[x]], b.heads[b.to[y]]
		if hx != hy {
			if hx {
				return -1
			}
			return 1
		}
		if r := cmp.Compare(np[b.to[y]], np[b.to[x]]); r != 0 {
			return r
		}
		return cmp.Compare(x, y)
	})
	// suffix[k] = Σ np over cand[k:], saturating; count(k) = fixed + k +
	// suffix[k] falls as k grows since every candidate has np ≥ 2.
	suffix := b.suffix[:0]
	suffix = append(suffix, make([]uint64, len(cand)+1)...)
	b.suffix = suffix
	for k := len(cand) - 1; k >= 0; k-- {
		suffix[k] = satAdd(suffix[k+1], np[b.to[cand[k]]])
	}
	k := 0
	count := satAdd(fixed, suffix[0])
	for ; k < len(cand) && count > c; k++ {
		count = satAdd(satAdd(fixed, uint64(k+1)), suffix[k+1])
	}
	broken := cand[:k]
	// Restore unneeded breaks into heads, smallest target count first
	// (they sit at the end of the head group of broken).
	for i := len(broken) - 1; i >= 0; i-- {
		e := broken[i]
		if !b.heads[b.to[e]] {
			continue
		}
		if next := satAdd(count-1, np[b.to[e]]); next <= c {
			count = next
			broken[i] = -1
		}
	}
	for _, e := range broken {
		if e >= 0 {
			kind[e] = Broken
			b.heads[b.to[e]] = true
		}
	}
	return count
}

// greedyPass is the fallback when no cap fits: repeatedly break the DAG
// edge u→w that removes the most paths from the total, which is
// pre(u)·(np(w)−1) minus np(w) if w is not yet a head (pre(u) counts the
// ways from ENTRY to u). It stops when the total fits (true) or no break
// helps (false). Each round is O(N+E) and breaks one edge; after
// greedyRounds rounds it gives up, which bounds the cost on large graphs
// under tiny limits, where a split is hopeless anyway.
func (b *numberer) greedyPass(kind []EdgeKind, maxPaths uint64) bool {
	pre := make([]uint64, b.g.NumNodes)
	for range min(len(kind), greedyRounds) + 1 {
		total := b.capPass(kind, math.MaxUint64) // counts only; marks heads
		if total <= maxPaths {
			return true
		}
		// Prefix counts in topological order (the reverse postorder).
		clear(pre)
		pre[b.entry] = 1
		for w, h := range b.heads {
			if h {
				pre[w] = 1 // the ENTRY→w pseudo edge
			}
		}
		for i := len(b.post) - 1; i >= 0; i-- {
			v := b.post[i]
			for _, e := range b.succ[b.succStart[v]:b.succStart[v+1]] {
				if kind[e] == DAGEdge {
					w := b.to[e]
					pre[w] = satAdd(pre[w], pre[v])
				}
			}
		}
		best, bestGain := int32(-1), uint64(0)
		for e, k := range kind {
			w := b.to[e]
			if k != DAGEdge || b.np[w] <= 1 {
				continue
			}
			hi, lo := bits.Mul64(pre[b.from[e]], b.np[w]-1)
			gain := lo
			if hi != 0 {
				gain = math.MaxUint64
			}
			if !b.heads[w] {
				if gain <= b.np[w] {
					continue
				}
				gain -= b.np[w]
			}
			if gain > bestGain {
				best, bestGain = int32(e), gain
			}
		}
		if best < 0 {
			return false
		}
		kind[best] = Broken
	}
	return false
}
