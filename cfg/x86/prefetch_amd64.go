package x86

import "unsafe"

// prefetch asks the processor to bring the cache line at p closer
// (PREFETCHT0). Unlike a load, it retires at once, so a miss it starts
// does not hold up the instructions after it.
//
//go:noescape
func prefetch(p unsafe.Pointer)
