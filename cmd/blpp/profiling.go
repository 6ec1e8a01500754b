package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiling blpp itself: BLPP_CPUPROFILE=FILE writes a CPU profile of the
// command, BLPP_MEMPROFILE=FILE a heap profile at its end (go tool pprof
// reads both). For measuring the rewriter on large libraries
// (docs/performance.md); unset, they cost nothing.
func startProfiling() (stop func()) {
	cpu, mem := os.Getenv("BLPP_CPUPROFILE"), os.Getenv("BLPP_MEMPROFILE")
	var stops []func()
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "blpp: BLPP_CPUPROFILE: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 64 << 10
		stops = append(stops, func() {
			f, err := os.Create(mem)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "blpp: BLPP_MEMPROFILE: %v\n", err)
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
