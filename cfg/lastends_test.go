package cfg

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestLastEnds compares lastEnds with the sort of every end it replaced
// (decision 118), over random instructions in unsorted procedures and
// entries among, before, after and on their ends.
func TestLastEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(118, 1))
	// Shares of one procedure: the workers' answers must merge to the
	// single sweep's.
	defer func(n int) { lastEndsShare = n }(lastEndsShare)
	lastEndsShare = 1
	for round := range 300 {
		var insts [][]scanInst
		var ends []uint64
		for range rng.IntN(6) {
			var is []scanInst
			for range rng.IntN(40) {
				in := scanInst{addr: 0x1000 + uint64(rng.IntN(600)), n: uint8(1 + rng.IntN(15))}
				is = append(is, in)
				ends = append(ends, in.end())
			}
			insts = append(insts, is)
		}
		var cand []uint64
		for range rng.IntN(12) {
			a := 0x1000 + uint64(rng.IntN(700))
			if len(ends) > 0 && rng.IntN(3) == 0 {
				a = ends[rng.IntN(len(ends))] // exactly on an end
			}
			if !slices.Contains(cand, a) {
				cand = append(cand, a)
			}
		}
		slices.Sort(cand)
		slices.Sort(ends)
		last, has := lastEnds(cand, insts, 2)
		for i, a := range cand {
			k := sort.Search(len(ends), func(j int) bool { return ends[j] > a }) - 1
			if want := k >= 0; has[i] != want || want && last[i] != ends[k] {
				t.Fatalf("round %d: entry %#x: got %#x (%v), want the last end at or before it among %#x", round, a, last[i], has[i], ends)
			}
		}
	}
}
