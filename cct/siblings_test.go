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

// TestFirstRepeatCollisions: keys chosen so that they all take the same
// home slot of the sibling set (a hostile file's) send firstRepeat to
// its sorted fallback, which gives the definition's answer; so does the
// fallback on random families.
func TestFirstRepeatCollisions(t *testing.T) {
	// Keys k = i * C^-1 (mod 2^64) hash to i * ... = i: products 1..n,
	// whose top bits are all 0, so every key's home is slot 0.
	c := uint64(0x9e3779b97f4a7c15)
	inv := c // Newton's iteration for c's inverse mod 2^64
	for range 6 {
		inv *= 2 - c*inv
	}
	if c*inv != 1 {
		t.Fatal("bad inverse")
	}
	n := 4096
	keys := make([]uint64, n)
	ids := make([]int32, n)
	for i := range keys {
		keys[i] = uint64(i+1) * inv // products 1..n: all in slot 0's run
		ids[i] = int32(10 * i)
	}
	keys[n-1] = keys[n/2] // one repeat, at the end
	var seen keySet
	if got, want := firstRepeat(keys, ids, &seen), int(ids[n-1]); got != want {
		t.Errorf("colliding family: first repeat %d, want %d", got, want)
	}
	seen.reset(n)
	probes := 0
	for a := range keys[:n-1] {
		_, p := seen.add(keys, int32(a))
		probes += p
	}
	if probes <= 8*n {
		t.Errorf("the keys did not collide (%d probes for %d keys): the test checks nothing", probes, n)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 200; round++ {
		m := 17 + rng.IntN(200)
		keys, ids := make([]uint64, m), make([]int32, m)
		for i := range keys {
			keys[i] = uint64(rng.IntN(m * 2))
			ids[i] = int32(i)
		}
		want := -1
		set := map[uint64]bool{}
		for i, k := range keys {
			if set[k] {
				want = i
				break
			}
			set[k] = true
		}
		if got := firstRepeatSorted(keys, ids); got != want {
			t.Fatalf("round %d: sorted fallback %d, want %d", round, got, want)
		}
	}
}
