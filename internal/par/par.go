// Package par runs independent work items on a bounded number of
// goroutines: the one worker pool of the analysis (cfg builds graphs in
// parallel, analysis numbers them).
//
// What it trusts: fn, to touch only what item i owns.
package par

import (
	"runtime"
	"sync"
)

// Each calls fn(i) for every i in [0, n) on workers goroutines
// (GOMAXPROCS when workers <= 0) and returns once every call has.
func Each(n, workers int, fn func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
