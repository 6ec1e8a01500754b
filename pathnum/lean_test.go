package pathnum

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
)

// TestLeanEqualsFull numbers graphs of every shape and alternating sizes
// (a large one leaves stale values in the shared arrays for the small one
// after it), with limits that make the overflow policy run, on several
// goroutines at once, and wants every lean numbering to equal the lean
// part of the full one, errors alike.
func TestLeanEqualsFull(t *testing.T) {
	gens := []func(rng *rand.Rand, size int) *Graph{
		func(rng *rand.Rand, size int) *Graph { return randomDAG(rng, size) },
		func(rng *rand.Rand, size int) *Graph { return structuredCFG(rng, size) },
		func(rng *rand.Rand, size int) *Graph { return randomCFG(rng, size, rng.IntN(size)) },
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range uint64(150) {
				rng := newRand(seed*7 + uint64(w)*100003)
				size := 3 + rng.IntN(12)
				if seed%2 == 0 {
					size = 100 + rng.IntN(300)
				}
				g := gens[int(seed)%len(gens)](rng, size)
				limit := []uint64{0, 10, 1000}[int(seed/3)%3]
				full, ferr := Number(g, Options{MaxPaths: limit})
				lean, lerr := Number(g, Options{MaxPaths: limit, Lean: true})
				if (ferr == nil) != (lerr == nil) || ferr != nil && ferr.Error() != lerr.Error() {
					t.Errorf("worker %d seed %d: full error %v, lean error %v", w, seed, ferr, lerr)
					continue
				}
				if ferr != nil {
					if !errors.Is(ferr, ErrPathLimit) {
						t.Errorf("worker %d seed %d: %v", w, seed, ferr)
					}
					continue
				}
				if want := full.Lean(); !reflect.DeepEqual(lean, want) {
					t.Errorf("worker %d seed %d (%d nodes, limit %d): lean numbering differs\nlean %+v\nfull %+v", w, seed, g.NumNodes, limit, lean, want)
				}
			}
		}()
	}
	wg.Wait()
}
