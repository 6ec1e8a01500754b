//go:build !amd64

package counters

// rdtsc is x86 only.
func rdtsc() (uint64, bool) { return 0, false }
