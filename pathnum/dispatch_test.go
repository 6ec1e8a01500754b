package pathnum

import (
	"cmp"
	"slices"
	"testing"
)

// TestDispatch marks every out-edge of some nodes of random graphs
// Dispatch and checks every law of the numbering, and that each Dispatch
// edge's ExitInc is its rank among its source's Dispatch edges, ordered
// by target (Entry aside): what lets sources with the same targets share
// path ends.
func TestDispatch(t *testing.T) {
	marked := 0
	for fi, f := range families {
		t.Run(f.name, func(t *testing.T) {
			for seed := range uint64(300) {
				rng := newRand(seed*37 + uint64(fi) + 1000)
				var g *Graph
				var num *Numbering
				for try := 0; try < 10 && (num == nil || num.NumPaths > enumLimit); try++ {
					g = f.gen(rng)
					for v := range g.NumNodes {
						if v == g.Exit || rng.IntN(3) != 0 {
							continue
						}
						for i := range g.Edges {
							if g.Edges[i].From == v && g.Edges[i].To != g.Exit {
								g.Edges[i].Dispatch = true
							}
						}
					}
					var err error
					if num, err = Number(g, Options{}); err != nil {
						t.Fatalf("seed %d: %v\n%s", seed, err, graphString(g))
					}
				}
				checkNumbering(t, g, num, checkOpts{prefixes: num.NumPaths <= 2000})
				bySource := map[int][]int{}
				for i, e := range g.Edges {
					if e.Dispatch {
						if !num.Kind[i].Breaks() {
							t.Fatalf("seed %d: Dispatch edge %d is a %v\n%s", seed, i, num.Kind[i], graphString(g))
						}
						bySource[e.From] = append(bySource[e.From], i)
						marked++
					}
				}
				for src, es := range bySource {
					if src == g.Entry {
						continue // its potential is 0 (Edge.Dispatch)
					}
					slices.SortFunc(es, func(x, y int) int {
						if c := cmp.Compare(g.Edges[x].To, g.Edges[y].To); c != 0 {
							return c
						}
						return cmp.Compare(x, y)
					})
					for rank, e := range es {
						if num.ExitInc[e] != int64(rank) {
							t.Fatalf("seed %d: Dispatch edge %d (rank %d) has ExitInc %d\n%s", seed, e, rank, num.ExitInc[e], graphString(g))
						}
					}
				}
			}
		})
	}
	if marked < 1000 {
		t.Errorf("only %d Dispatch edges marked", marked)
	}
}

// TestDispatchShared: two dispatch jumps to the same three targets get
// the same path end code per target.
func TestDispatchShared(t *testing.T) {
	// 0 -> 1, 0 -> 2; 1 and 2 dispatch to 3, 4, 5; those go to 1, 2 or exit 6.
	g := &Graph{NumNodes: 7, Entry: 0, Exit: 6}
	add := func(from, to int, dispatch bool) {
		g.Edges = append(g.Edges, Edge{From: from, To: to, Weight: 1, Dispatch: dispatch})
	}
	add(0, 1, false)
	add(0, 2, false)
	for _, src := range []int{2, 1} {
		for _, to := range []int{5, 3, 4} {
			add(src, to, true)
		}
	}
	add(3, 1, false)
	add(4, 2, false)
	add(5, 6, false)
	num, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkNumbering(t, g, num, checkOpts{prefixes: true})
	end := map[int][2]int64{}
	for i, e := range g.Edges {
		if !e.Dispatch {
			continue
		}
		got := [2]int64{num.ExitInc[i], num.EntryInc[i]}
		if prev, ok := end[e.To]; ok && prev != got {
			t.Errorf("target %d: path end %v from one source, %v from the other", e.To, prev, got)
		}
		end[e.To] = got
	}
}
