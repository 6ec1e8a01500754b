package par

import (
	"sync/atomic"
	"testing"
)

func TestEach(t *testing.T) {
	for _, workers := range []int{-1, 0, 1, 3, 64} {
		for _, n := range []int{0, 1, 5, 100} {
			calls := make([]int32, n)
			var total atomic.Int32
			Each(n, workers, func(i int) {
				atomic.AddInt32(&calls[i], 1)
				total.Add(1)
			})
			if int(total.Load()) != n {
				t.Errorf("n %d, workers %d: %d calls", n, workers, total.Load())
			}
			for i, c := range calls {
				if c != 1 {
					t.Errorf("n %d, workers %d: item %d called %d times", n, workers, i, c)
				}
			}
		}
	}
}

func TestChunks(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000, 100003} {
		for _, minSize := range []int{0, 1, 7, 4096} {
			seen := make([]int32, n)
			var got atomic.Int32
			k := Chunks(n, minSize, 3, func(c, lo, hi int) {
				got.Add(1)
				if lo >= hi {
					t.Errorf("n %d: empty range %d", n, c)
				}
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&seen[i], 1)
				}
			})
			if int(got.Load()) != k {
				t.Errorf("n %d, minSize %d: %d calls for %d ranges", n, minSize, got.Load(), k)
			}
			for i, s := range seen {
				if s != 1 {
					t.Errorf("n %d, minSize %d: item %d in %d ranges", n, minSize, i, s)
				}
			}
		}
	}
}
