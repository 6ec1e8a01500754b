package pathnum

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// minCover is the least number of ENTRY→EXIT paths that cover every edge
// of the DAG view with backedges only (no breaking): a lower bound on
// NumPaths under any split (breaking an edge never lowers it).
func minCover(g *Graph, kind []EdgeKind) int {
	base := make([]EdgeKind, len(kind))
	for i, k := range kind {
		if k == Backedge {
			base[i] = Backedge
		}
	}
	v := buildView(g, base)
	n := v.n
	// Feasible flow: one path per edge through it.
	type arc struct{ from, to int }
	arcs := make([]arc, len(v.edges))
	flow := make([]int, len(v.edges))
	in := make([][]int, n)
	out := make([][]int, n)
	for i, e := range v.edges {
		arcs[i] = arc{e.from, e.to}
		in[e.to] = append(in[e.to], i)
		out[e.from] = append(out[e.from], i)
	}
	order, _ := v.kahn()
	// parent edge from entry (forward) and to exit (backward).
	pin := make([]int, n)
	pout := make([]int, n)
	for i := range pin {
		pin[i], pout[i] = -1, -1
	}
	for _, u := range order {
		if u != v.entry && pin[u] < 0 && len(in[u]) > 0 {
			for _, e := range in[u] {
				if arcs[e].from == v.entry || pin[arcs[e].from] >= 0 {
					pin[u] = e
					break
				}
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		if u == v.exit {
			continue
		}
		for _, e := range out[u] {
			if arcs[e].to == v.exit || pout[arcs[e].to] >= 0 {
				pout[u] = e
				break
			}
		}
	}
	total := 0
	for i := range arcs {
		total++
		flow[i]++
		for u := arcs[i].from; u != v.entry; u = arcs[pin[u]].from {
			flow[pin[u]]++
		}
		for u := arcs[i].to; u != v.exit; u = arcs[pout[u]].to {
			flow[pout[u]]++
		}
	}
	// Push flow back from exit to entry while possible.
	for {
		prev := make([]int, n) // arc index+1, negative for decrease direction
		seen := make([]bool, n)
		q := []int{v.exit}
		seen[v.exit] = true
		for len(q) > 0 && !seen[v.entry] {
			u := q[0]
			q = q[1:]
			for _, e := range in[u] { // decrease e: move from e.to to e.from
				if flow[e] > 1 && !seen[arcs[e].from] {
					seen[arcs[e].from] = true
					prev[arcs[e].from] = -(e + 1)
					q = append(q, arcs[e].from)
				}
			}
			for _, e := range out[u] { // increase e
				if !seen[arcs[e].to] {
					seen[arcs[e].to] = true
					prev[arcs[e].to] = e + 1
					q = append(q, arcs[e].to)
				}
			}
		}
		if !seen[v.entry] {
			return total
		}
		for u := v.entry; u != v.exit; {
			p := prev[u]
			if p < 0 {
				e := -p - 1
				flow[e]--
				u = arcs[e].to
			} else {
				e := p - 1
				flow[e]++
				u = arcs[e].from
			}
		}
		total--
	}
}

func TestLBTmp(t *testing.T) {
	gens := []func(rng *rand.Rand) *Graph{
		func(rng *rand.Rand) *Graph { return randomDAG(rng, 20+rng.IntN(180)) },
		func(rng *rand.Rand) *Graph { return structuredCFG(rng, 20+rng.IntN(180)) },
		func(rng *rand.Rand) *Graph { n := 20 + rng.IntN(100); return randomCFG(rng, n, rng.IntN(n)) },
	}
	for gi, gen := range gens {
		for _, limit := range []uint64{10, 100, 1000} {
			var fails, failsLB, ok int
			ratio := 0.0
			for seed := range uint64(60) {
				g := gen(newRand(seed*13 + uint64(gi)*1000 + limit))
				num0, _ := Number(g, Options{})
				lb := minCover(g, num0.Kind)
				num, err := Number(g, Options{MaxPaths: limit})
				if errors.Is(err, ErrPathLimit) {
					fails++
					if uint64(lb) <= limit {
						failsLB++
						t.Logf("gen %d limit %d: fail with lb %d (nodes %d)", gi, limit, lb, g.NumNodes)
					}
					continue
				}
				ok++
				ratio += float64(num.NumPaths) / float64(lb)
				if num.NumPaths < uint64(lb) {
					t.Errorf("lb broken")
				}
			}
			t.Logf("gen %d limit %d: ok %d fails %d (lb-feasible %d) avg ratio %.2f", gi, limit, ok, fails, failsLB, ratio/float64(max(ok, 1)))
		}
	}
}
