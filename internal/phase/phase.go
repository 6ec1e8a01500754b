// Package phase prints, when BLPP_PHASES is set, the wall and CPU time
// (user + system, of the whole process) since the start and since the
// last mark at each named point of a long run: the serial stretches of
// a rewrite are the marks whose CPU time is no more than their wall
// time (docs/performance.md). It also prints the system time and the
// minor page faults since the last mark: where memory is first touched
// (a fault per fresh 4 KiB page) the kernel's time shows. Unset, a mark
// costs one branch.
//
// What it trusts: nothing; it only reads the clock and getrusage.
package phase

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

var (
	on    = os.Getenv("BLPP_PHASES") != ""
	start = time.Now()
	mu    sync.Mutex
	lastW time.Duration
	lastC float64
	lastS float64
	lastF int64
)

// Mark prints the times at the point called name.
func Mark(name string) {
	if !on {
		return
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	sys := float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
	mu.Lock()
	defer mu.Unlock()
	w := time.Since(start)
	fmt.Fprintf(os.Stderr, "phase %-22s wall %6.2f s (+%5.2f)  cpu %6.2f s (+%5.2f)  sys +%5.2f s  faults +%d\n", name, w.Seconds(), (w - lastW).Seconds(), c, c-lastC, sys-lastS, ru.Minflt-lastF)
	lastW, lastC, lastS, lastF = w, c, sys, ru.Minflt
}
