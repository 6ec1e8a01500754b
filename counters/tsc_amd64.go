package counters

// rdtscAsm executes rdtsc (tsc_amd64.s).
func rdtscAsm() uint64

// rdtsc reads the time stamp counter.
func rdtsc() (uint64, bool) { return rdtscAsm(), true }
