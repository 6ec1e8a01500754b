package pathnum

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// families are the random graph shapes of the property tests.
var families = []struct {
	name string
	gen  func(rng *rand.Rand) *Graph
}{
	{"dag", func(rng *rand.Rand) *Graph { return randomDAG(rng, 2+rng.IntN(39)) }},
	{"reducible", func(rng *rand.Rand) *Graph { return structuredCFG(rng, 2+rng.IntN(39)) }},
	{"irreducible", func(rng *rand.Rand) *Graph {
		n := 2 + rng.IntN(39)
		return randomCFG(rng, n, rng.IntN(n/2+1))
	}},
}

// TestProperties numbers 500 random graphs of each family (2..40 nodes)
// and checks every law with the brute-force oracle.
func TestProperties(t *testing.T) {
	const graphs = 500
	for fi, f := range families {
		t.Run(f.name, func(t *testing.T) {
			enumerated := 0
			for seed := range uint64(graphs) {
				// Redraw (a few times) graphs with too many paths to
				// enumerate, which keeps sizes capped where paths explode.
				rng := newRand(seed*31 + uint64(fi))
				var g *Graph
				var num *Numbering
				for try := 0; try < 10 && (num == nil || num.NumPaths > enumLimit); try++ {
					g = f.gen(rng)
					var err error
					if num, err = Number(g, Options{}); err != nil {
						t.Fatalf("seed %d: %v\n%s", seed, err, graphString(g))
					}
				}
				if num.Split || num.RawOverflow {
					t.Fatalf("seed %d: split below the default limit", seed)
				}
				checkNumbering(t, g, num, checkOpts{prefixes: num.NumPaths <= 2000, enumerated: &enumerated})
			}
			// The oracle must really have run on most graphs.
			if enumerated < graphs*95/100 {
				t.Errorf("only %d of %d graphs enumerated", enumerated, graphs)
			}
		})
	}
}

// canonical rewrites a segment the way Regenerate names it: FromEntry by
// the lowest-numbered breaking edge into the same head, and no step at all
// for a head that is Entry.
func canonical(g *Graph, num *Numbering, seg []Step) []Step {
	if len(seg) == 0 || seg[0].Pseudo != FromEntry {
		return seg
	}
	w := g.Edges[seg[0].Edge].To
	if w == g.Entry {
		return seg[1:]
	}
	out := slices.Clone(seg)
	for i, e := range g.Edges {
		if e.To == w && num.Kind[i].Breaks() {
			out[0].Edge = i
			break
		}
	}
	return out
}

// TestSimulation runs the instrumentation of DESIGN decision 6 on random
// walks over the original cyclic graph and compares its counts with the
// path numbers of the walk's acyclic segments, computed by PathID from the
// steps taken. Walks cut short check Prefix on the partial path.
func TestSimulation(t *testing.T) {
	for fi, f := range families {
		t.Run(f.name, func(t *testing.T) {
			for seed := range uint64(500) {
				rng := newRand(seed*77 + uint64(fi) + 1000)
				g := f.gen(rng)
				opts := Options{}
				if seed%3 == 0 {
					opts.MaxPaths = 20 // make broken edges part of the walk
				}
				num, err := Number(g, opts)
				if errors.Is(err, ErrPathLimit) {
					continue
				}
				if err != nil {
					t.Fatalf("seed %d: %v\n%s", seed, err, graphString(g))
				}
				simulate(t, rng, g, num)
			}
		})
	}
}

func simulate(t *testing.T, rng *rand.Rand, g *Graph, num *Numbering) {
	t.Helper()
	succ := make([][]int, g.NumNodes)
	for i, e := range g.Edges {
		succ[e.From] = append(succ[e.From], i)
	}
	counts := map[int64]int{}   // what the instrumented code counts
	expected := map[int64]int{} // what the segments' numbers say
	end := func(seg []Step) {
		t.Helper()
		id, err := num.PathID(seg)
		if err != nil {
			t.Fatalf("PathID(%v): %v\n%s", seg, err, graphString(g))
		}
		expected[int64(id)]++
	}
	for range 40 {
		r := int64(0)
		var seg []Step
		v := g.Entry
		steps := 1 + rng.IntN(200)
		for ; v != g.Exit && steps > 0; steps-- {
			i := succ[v][rng.IntN(len(succ[v]))]
			e := g.Edges[i]
			if num.Kind[i] == DAGEdge {
				r += num.Inc[i]
				seg = append(seg, Step{i, None})
			} else {
				counts[r+num.ExitInc[i]]++
				end(append(seg, Step{i, ToExit}))
				r = num.EntryInc[i]
				seg = []Step{{i, FromEntry}} // PathID accepts any edge into the head
			}
			v = e.To
		}
		if v == g.Exit {
			counts[r]++
			end(seg)
			continue
		}
		// Cut short: (v, r) must name the executed prefix.
		pre, err := num.Prefix(v, r)
		if want := canonical(g, num, seg); err != nil || !slices.Equal(pre, want) {
			t.Fatalf("Prefix(%d, %d) = %v, %v; want %v\n%s", v, r, pre, err, want, graphString(g))
		}
	}
	for id, c := range counts {
		if id < 0 || uint64(id) >= num.NumPaths {
			t.Fatalf("counted path %d outside [0,%d)", id, num.NumPaths)
		}
		if expected[id] != c {
			t.Fatalf("path %d counted %d times, segments say %d\n%s", id, c, expected[id], graphString(g))
		}
	}
	if len(counts) != len(expected) {
		t.Fatalf("instrumentation counted %d distinct paths, segments %d", len(counts), len(expected))
	}
}

// TestOverflowPolicy numbers larger graphs (20-200 nodes) under small
// limits: whenever Number succeeds the path count fits and every law still
// holds. Under a limit of 10 most such graphs have no numbering at all (a
// chain of k diamonds needs at least 2k paths however it is cut; every
// backedge ends a path of its own), so ErrPathLimit is the expected answer
// there and is counted, not failed.
func TestOverflowPolicy(t *testing.T) {
	gens := []struct {
		name string
		gen  func(rng *rand.Rand) *Graph
	}{
		{"dag", func(rng *rand.Rand) *Graph { return randomDAG(rng, 20+rng.IntN(180)) }},
		{"reducible", func(rng *rand.Rand) *Graph { return structuredCFG(rng, 20+rng.IntN(180)) }},
		{"irreducible", func(rng *rand.Rand) *Graph {
			n := 20 + rng.IntN(100)
			return randomCFG(rng, n, rng.IntN(n))
		}},
	}
	for gi, gen := range gens {
		for _, limit := range []uint64{10, 100, 1000, 5000} {
			t.Run(gen.name, func(t *testing.T) {
				ok, split := 0, 0
				const graphs = 60
				for seed := range uint64(graphs) {
					g := gen.gen(newRand(seed*13 + uint64(gi)*1000 + limit))
					num, err := Number(g, Options{MaxPaths: limit})
					if errors.Is(err, ErrPathLimit) {
						continue
					}
					if err != nil {
						t.Fatalf("limit %d seed %d: %v\n%s", limit, seed, err, graphString(g))
					}
					ok++
					if num.Split {
						split++
					}
					checkNumbering(t, g, num, checkOpts{maxPaths: limit, prefixes: num.NumPaths <= 1000})
				}
				t.Logf("limit %d: %d of %d numbered, %d split", limit, ok, graphs, split)
				if limit >= 1000 && ok < graphs*9/10 {
					t.Errorf("limit %d: only %d of %d graphs numbered", limit, ok, graphs)
				}
				if limit >= 100 && split == 0 {
					t.Errorf("limit %d: the policy never ran", limit)
				}
			})
		}
	}
}

func TestOverflowDiamonds(t *testing.T) {
	// 2^3 paths under a limit of 6: splitting must find a numbering (the
	// cap ladder reaches C = 1, which breaks both joins).
	g := diamonds(3)
	num, err := Number(g, Options{MaxPaths: 6})
	if err != nil {
		t.Fatal(err)
	}
	if !num.Split || !num.RawOverflow || num.RawPaths != 8 || num.NumPaths > 6 {
		t.Fatalf("Split=%v RawOverflow=%v RawPaths=%d NumPaths=%d", num.Split, num.RawOverflow, num.RawPaths, num.NumPaths)
	}
	checkNumbering(t, g, num, checkOpts{maxPaths: 6, prefixes: true})

	// Exactly at the limit: no split.
	num, err = Number(g, Options{MaxPaths: 8})
	if err != nil || num.Split || num.RawOverflow || num.NumPaths != 8 {
		t.Fatalf("limit 8: %v, %+v", err, num)
	}

	// 2^70 paths overflow uint64 itself; the default limit splits them.
	g = diamonds(70)
	num, err = Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !num.RawOverflow || !num.Split || num.NumPaths > DefaultMaxPaths || num.RawPaths != 1<<64-1 {
		t.Fatalf("Split=%v RawOverflow=%v RawPaths=%d NumPaths=%d", num.Split, num.RawOverflow, num.RawPaths, num.NumPaths)
	}
	checkNumbering(t, g, num, checkOpts{})
	rng := newRand(1)
	for range 200 {
		checkRoundTrip(t, g, num, rng.Uint64N(num.NumPaths))
	}

	// Unreachable limits fail cleanly: a node with 3 successors cannot
	// have fewer than 3 paths.
	g = &Graph{NumNodes: 5, Entry: 0, Exit: 4, Edges: []Edge{
		{From: 0, To: 1}, {From: 0, To: 2}, {From: 0, To: 3}, {From: 1, To: 4}, {From: 2, To: 4}, {From: 3, To: 4}}}
	if _, err := Number(g, Options{MaxPaths: 2}); !errors.Is(err, ErrPathLimit) {
		t.Fatalf("limit 2 on 3 paths: %v", err)
	}
	// The largest limits are clamped to int64, not refused.
	if num, err := Number(g, Options{MaxPaths: 1<<64 - 1}); err != nil || num.NumPaths != 3 {
		t.Fatalf("MaxUint64 limit: %v", err)
	}
}
