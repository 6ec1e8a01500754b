package cct

import (
	"math/rand/v2"
	"testing"
)

// siblingKey is a context: a record's parent, function and call site.
type siblingKey struct {
	parent   int
	fn, site uint32
}

// TestSecondSibling compares secondSibling with the definition, a set of
// contexts filled in list order, on random record lists: few parents with
// many children (the sorted lists) and many with few (the pairwise ones),
// with and without repeats.
func TestSecondSibling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	repeats := 0
	for trial := range 3000 {
		n := 1 + rng.IntN(200)
		parents := 1 + rng.IntN(n)
		funcs := uint32(1 + rng.IntN(60))
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{Func: uint32(rng.IntN(int(funcs))), Parent: -1}
			if i > 0 && rng.IntN(8) > 0 {
				recs[i].Parent = rng.IntN(min(i, parents))
				recs[i].CallSite = uint32(rng.IntN(4))
			}
		}
		want := -1
		seen := map[siblingKey]bool{}
		for i, r := range recs {
			k := siblingKey{r.Parent, r.Func, r.CallSite}
			if seen[k] {
				want = i
				break
			}
			seen[k] = true
		}
		got, msg := secondSibling(recs)
		switch {
		case want < 0 && msg != "":
			t.Fatalf("trial %d: no repeat, but record %d: %s", trial, got, msg)
		case want >= 0 && (msg == "" || got != want):
			t.Fatalf("trial %d: first repeat is record %d, got %d %q", trial, want, got, msg)
		}
		if want >= 0 {
			repeats++
		}
	}
	if repeats < 300 || repeats > 2700 {
		t.Errorf("%d of 3000 trials had a repeat: the test does not try both cases", repeats)
	}
}
