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
