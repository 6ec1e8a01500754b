// Package hugeheap asks Linux to back the process's large anonymous
// mappings, the Go heap above all, with transparent huge pages while a
// long piece of work runs (decision 181).
//
// Why: rewriting a large library touches about 2.6 GB of fresh memory
// (libLLVM: 650 thousand minor faults, 9 of its 41 CPU seconds in the
// kernel). Where the kernel's transparent huge pages are enabled only
// for regions that ask for them (/sys/kernel/mm/transparent_hugepage/
// enabled = madvise, Debian's default), the Go runtime does not ask
// [Go 1.21.1 release notes: the runtime no longer calls MADV_HUGEPAGE
// on the heap], so every 4 KiB page of the heap costs a fault. With
// 2 MiB pages the same rewrite takes 30–60 thousand faults and 0.85 of
// the time (docs/performance.md).
//
// How: the runtime maps the heap in pieces as it grows (mmap with
// MAP_FIXED, which makes a fresh region without the advice). So Start
// first has the runtime map as much heap as the work is expected to
// need, by allocating it and giving it straight back to the system
// (never touched: no memory is used), and advises that region once:
// advice stays with a region when its pages are given back, and the
// runtime hands out its lowest free addresses first, so the work's
// allocations land there. A goroutine then reads /proc/self/maps at a
// short interval and advises what the runtime maps beyond it. The
// advice is madvise(MADV_HUGEPAGE) [madvise(2)] on every private
// anonymous read-write mapping of at least 2 MiB; given twice, it
// changes nothing. Where the system's setting is always (the kernel
// does it unasked) or never, or the kernel has no transparent huge
// pages, Start does nothing.
//
// What it trusts: /proc/self/maps's format [proc_pid_maps(5)]. It never
// changes what the program computes, only which pages back its memory;
// any failure leaves the process as it was.
package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const (
	// madvHugepage is MADV_HUGEPAGE [linux/mman-common.h].
	madvHugepage = 14
	// minSize: a region smaller than a huge page cannot hold one.
	minSize = 2 << 20
	// interval is how often the advisor looks. The heap grows by a few
	// megabytes in that time at most; reading the maps costs tens of
	// microseconds.
	interval = 10 * time.Millisecond
)

// MinReserve is the smallest reservation Reserve makes: below it one is
// not worth its collection.
const MinReserve = 64 << 20

// Region is a range of addresses [Start, End).
type Region struct{ Start, End uint64 }

// Start prepares the heap of a process that expects to use about expect
// bytes (Reserve) and advises what the runtime maps later until the
// returned function is called; that function stops the advisor and
// waits for it.
func Start(expect uint64) (stop func()) {
	if !Reserve(expect) {
		return func() {}
	}
	a := &advisor{advised: map[Region]bool{}}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if !a.pass() {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-finished
		})
	}
}

// Reserve has the runtime map the heap a process expects to use (about
// expect bytes; ReserveSize) and advises the process's mappings once,
// for work whose heap grows little beyond it. It reports whether the
// advice was taken.
func Reserve(expect uint64) bool {
	if Mode() != "madvise" {
		return false
	}
	limit := debug.SetMemoryLimit(-1)
	if n := ReserveSize(expect, uint64(max(limit, 0)), memTotal(), overcommit()); n > 0 && !addressLimited() {
		reserve(n)
	}
	a := &advisor{advised: map[Region]bool{}}
	return a.pass()
}

// ReserveSize is how much heap Start has the runtime map for work that
// expects to use expect bytes: no more than the memory limit, nor than
// half the machine's memory (the kernel's heuristic refuses a single
// mapping larger than all of it [proc_sys_vm(5), overcommit_memory]),
// and nothing where the kernel counts every mapping against a strict
// limit (overcommit mode 2) or where it would be too small to matter.
func ReserveSize(expect, limit, memTotal uint64, overcommitMode int) uint64 {
	n := min(expect, limit)
	if memTotal > 0 {
		n = min(n, memTotal/2)
	}
	if overcommitMode == 2 || n < MinReserve {
		return 0
	}
	return n
}

// reserve has the runtime map n bytes of heap, then gives them back to
// the system untouched: the addresses stay mapped, without pages.
func reserve(n uint64) {
	b := make([]byte, n)
	runtime.KeepAlive(b)
	debug.FreeOSMemory()
}

// Mode is the system's transparent huge page setting (always, madvise
// or never), or "" where the kernel has none.
func Mode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	i, j := bytes.IndexByte(b, '['), bytes.IndexByte(b, ']')
	if i < 0 || j < i {
		return ""
	}
	return string(b[i+1 : j])
}

// memTotal is the machine's memory in bytes (0 when unknown).
func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if f := bytes.Fields(l); len(f) >= 2 && string(f[0]) == "MemTotal:" {
			kb, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// addressLimited reports whether the process's address space is limited
// (RLIMIT_AS, ulimit -v): there a reservation could take the room the
// work needs, and a runtime that cannot map its heap stops the process.
func addressLimited() bool {
	var rl syscall.Rlimit
	return syscall.Getrlimit(syscall.RLIMIT_AS, &rl) != nil || rl.Cur != ^uint64(0)
}

// overcommit is vm.overcommit_memory (0 when unknown: the default).
func overcommit() int {
	b, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return 0
	}
	return v
}

// advisor remembers the regions it has advised, as the maps showed them.
type advisor struct {
	buf     bytes.Buffer // the maps' text, its array kept between passes
	advised map[Region]bool
}

// pass advises each candidate region of /proc/self/maps not advised
// before. It reports false when advice cannot be had here: no maps to
// read, or a kernel without transparent huge pages (EINVAL).
func (a *advisor) pass() bool {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false
	}
	a.buf.Reset()
	_, err = a.buf.ReadFrom(f)
	f.Close()
	if err != nil {
		return false
	}
	now := map[Region]bool{}
	for _, r := range Candidates(a.buf.Bytes()) {
		if a.advised[r] {
			now[r] = true
			continue
		}
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(r.Start), uintptr(r.End-r.Start), madvHugepage)
		switch errno {
		case 0:
			now[r] = true
		case syscall.EINVAL:
			return false
		}
		// ENOMEM: the region went away since the maps were read; EAGAIN:
		// the kernel was short of resources. Either way, the next pass.
	}
	a.advised = now
	return true
}

// Candidates lists the regions of a /proc/PID/maps text that advice
// would help: private, read-write, anonymous (no file, no device; a
// name the kernel gives an anonymous region is allowed, the stack is
// not) and at least a huge page long. Lines it cannot parse are passed
// over.
func Candidates(maps []byte) []Region {
	var rs []Region
	for len(maps) > 0 {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		// start-end perms offset dev inode [name]
		f := bytes.Fields(line)
		if len(f) < 5 || string(f[1]) != "rw-p" || string(f[4]) != "0" {
			continue
		}
		if len(f) > 5 && !bytes.HasPrefix(f[5], []byte("[anon:")) {
			continue
		}
		dash := bytes.IndexByte(f[0], '-')
		if dash < 0 {
			continue
		}
		start, err1 := strconv.ParseUint(string(f[0][:dash]), 16, 64)
		end, err2 := strconv.ParseUint(string(f[0][dash+1:]), 16, 64)
		if err1 != nil || err2 != nil || end < start || end-start < minSize {
			continue
		}
		rs = append(rs, Region{start, end})
	}
	return rs
}
