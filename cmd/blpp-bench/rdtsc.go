package main

import "time"

// rdtscLoop reads the time-stamp counter n (> 0) times back to back.
func rdtscLoop(n int64) uint64

// rdtscNS is the cost of one rdtsc on this machine in nanoseconds: the
// median of five timed loops of a million reads.
func rdtscNS() float64 {
	const n = 1 << 20
	var xs []float64
	for i := 0; i < 5; i++ {
		start := time.Now()
		rdtscLoop(n)
		xs = append(xs, float64(time.Since(start).Nanoseconds())/n)
	}
	return median(xs)
}
