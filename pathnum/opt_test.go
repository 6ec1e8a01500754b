package pathnum

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// optimum by brute force over subsets of DAG edges to break.
func optimum(g *Graph, kind []EdgeKind) (best uint64, bestK int) {
	var dagEdges []int
	for i, k := range kind {
		if k == DAGEdge && g.Edges[i].To != g.Exit {
			dagEdges = append(dagEdges, i)
		}
	}
	if len(dagEdges) > 22 {
		return 0, -1
	}
	best = ^uint64(0)
	trial := make([]EdgeKind, len(kind))
	for mask := 0; mask < 1<<len(dagEdges); mask++ {
		copy(trial, kind)
		k := 0
		for j, e := range dagEdges {
			if mask>>j&1 == 1 {
				trial[e] = Broken
				k++
			}
		}
		v := buildView(g, trial)
		order, _ := v.kahn()
		np := v.counts(order)
		if np[g.Entry] < best {
			best, bestK = np[g.Entry], k
		}
	}
	return
}

func TestOptTmp(t *testing.T) {
	gens := []func(rng *rand.Rand) *Graph{
		func(rng *rand.Rand) *Graph { return randomDAG(rng, 8+rng.IntN(14)) },
		func(rng *rand.Rand) *Graph { return structuredCFG(rng, 8+rng.IntN(20)) },
		func(rng *rand.Rand) *Graph { n := 8 + rng.IntN(12); return randomCFG(rng, n, rng.IntN(n)) },
	}
	for gi, gen := range gens {
		for _, limit := range []uint64{6, 10, 20} {
			var fails, feasible, ok, tried int
			for seed := range uint64(200) {
				g := gen(newRand(seed*13 + uint64(gi)*1000 + limit))
				num0, _ := Number(g, Options{})
				if num0.NumPaths <= limit {
					continue
				}
				opt, _ := optimum(g, num0.Kind)
				if opt == 0 {
					continue
				}
				tried++
				_, err := Number(g, Options{MaxPaths: limit})
				if errors.Is(err, ErrPathLimit) {
					fails++
					if opt <= limit {
						feasible++
					}
					continue
				}
				ok++
			}
			t.Logf("gen %d limit %d: tried %d ok %d fails %d (feasible %d)", gi, limit, tried, ok, fails, feasible)
		}
	}
}
