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
