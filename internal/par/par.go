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

// MaxChunks bounds the number of ranges Chunks makes, so that callers
// can keep the ranges' results in an array.
const MaxChunks = 64

// Chunks splits [0, n) into consecutive ranges of at least minSize items,
// at most MaxChunks of them, and calls fn(c, lo, hi) for the c-th range
// [lo, hi) on workers goroutines. It returns the number of ranges,
// which depends on n and minSize alone: a caller that keeps each range's
// result at index c and merges them in order gets the same answer
// whatever the scheduling.
func Chunks(n, minSize, workers int, fn func(c, lo, hi int)) int {
	if n <= 0 {
		return 0
	}
	size := max(minSize, (n+MaxChunks-1)/MaxChunks, 1)
	k := (n + size - 1) / size
	Each(k, workers, func(c int) { fn(c, c*size, min(n, (c+1)*size)) })
	return k
}
