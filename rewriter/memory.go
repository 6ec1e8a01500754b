package rewriter

import (
	"os"
	"runtime/debug"
)

// MemoryLimit is the memory the Go runtime keeps a process under while
// it rewrites (runtime/debug.SetMemoryLimit; LimitMemory). Without a
// limit the heap grows to twice the live data between collections,
// which for the largest library (libLLVM, 120 MB, about a gigabyte
// live) passed 5 GiB; with it the rewrite stays under 2 GiB, at the
// price of more collections while the most is live [decision 91].
const MemoryLimit = 1850 << 20

// LimitMemory sets MemoryLimit for the process, unless its environment
// sets GOMEMLIMIT. Programs whose work is rewriting (blpp rewrite, the
// rewrite children of the test sweeps) call it; it is not Rewrite's to
// set for every caller.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}

// HeapFor is about how much memory the rewrite of an input of size
// bytes uses at its peak, before MemoryLimit holds it: 40 to 100 times
// the input (python3.11 and libLLVM-16 about 43 times, libc 69, troff
// 100). Programs that rewrite size their heap by it (hugeheap.Start).
func HeapFor(size uint64) uint64 { return size * 64 }
