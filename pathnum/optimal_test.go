package pathnum

import (
	"errors"
	"testing"
)

// bestSplit finds by brute force the fewest paths any choice of broken
// edges gives (edges into Exit excluded: breaking them never helps). ok is
// false when there are too many candidate edges to try every subset.
func bestSplit(g *Graph, kind []EdgeKind, maxCand int) (best uint64, ok bool) {
	var cand []int
	for i, k := range kind {
		if k == DAGEdge && g.Edges[i].To != g.Exit {
			cand = append(cand, i)
		}
	}
	if len(cand) > maxCand {
		return 0, false
	}
	best = ^uint64(0)
	trial := make([]EdgeKind, len(kind))
	for mask := 0; mask < 1<<len(cand); mask++ {
		copy(trial, kind)
		for j, e := range cand {
			if mask>>j&1 == 1 {
				trial[e] = Broken
			}
		}
		v := buildView(g, trial)
		order, _ := v.kahn()
		best = min(best, v.counts(order)[g.Entry])
	}
	return best, true
}

// TestOverflowAgainstOptimum measures the overflow policy against the best
// possible split on small graphs. The policy is a heuristic, so it may miss
// a feasible split, but it must never claim an impossible one and must find
// most feasible ones; the bound guards against regressions.
func TestOverflowAgainstOptimum(t *testing.T) {
	const limit = 10
	feasible, found := 0, 0
	for fi, f := range families {
		for seed := range uint64(600) {
			rng := newRand(seed*101 + uint64(fi) + 5000)
			g := f.gen(rng)
			num0, err := Number(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if num0.NumPaths <= limit {
				continue
			}
			opt, ok := bestSplit(g, num0.Kind, 13)
			if !ok {
				continue
			}
			num, err := Number(g, Options{MaxPaths: limit})
			switch {
			case err == nil:
				if num.NumPaths < opt {
					t.Fatalf("policy found %d paths, brute force says at least %d\n%s", num.NumPaths, opt, graphString(g))
				}
				checkNumbering(t, g, num, checkOpts{maxPaths: limit, prefixes: true})
				found++
			case !errors.Is(err, ErrPathLimit):
				t.Fatal(err)
			}
			if opt <= limit {
				feasible++
			}
		}
	}
	t.Logf("limit %d: policy split %d of %d feasible graphs", limit, found, feasible)
	if feasible < 50 || found*10 < feasible*8 {
		t.Errorf("policy split %d of %d feasible graphs; want at least 80%%", found, feasible)
	}
}
