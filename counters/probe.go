package counters

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// perf_event_attr as this package encodes it: PERF_ATTR_SIZE_VER5, the
// size every kernel since 4.1 accepts, and the offsets of the fields set
// [linux/perf_event.h, struct perf_event_attr].
const (
	attrSize       = 112 // PERF_ATTR_SIZE_VER5
	attrOffType    = 0
	attrOffSize    = 4
	attrOffConfig  = 8
	attrOffFlags   = 40 // the bitfield word after read_format
	flagExclKernel = 1 << 5
	flagExclHV     = 1 << 6

	perfFlagFDCloexec = 1 << 3 // PERF_FLAG_FD_CLOEXEC
)

// Offsets in struct perf_event_mmap_page, the first page of an event's
// mapping [linux/perf_event.h]; runtime/blpp_pmu.h asserts the same ones.
const (
	pageOffVersion      = 0
	pageOffLock         = 8
	pageOffIndex        = 12
	pageOffCapabilities = 40
	pageOffPMCWidth     = 48

	capUserRdpmc = 1 << 2 // cap_user_rdpmc: bit 2 of capabilities
)

// ParanoidPath is the sysctl that restricts perf_event_open for
// unprivileged users.
const ParanoidPath = "/proc/sys/kernel/perf_event_paranoid"

// RdpmcPath says whether user space may execute rdpmc on x86 (0 never, 1
// while the process maps a perf event, 2 always).
const RdpmcPath = "/sys/bus/event_source/devices/cpu/rdpmc"

// ErrNotPerf is returned by Open for a metric that is not a perf event
// (tsc).
var ErrNotPerf = errors.New("not a perf event")

// OpenError is a failure to open, map or read an event: the system call
// (Op: "perf_event_open", "mmap", "read"), its error, and a hint at the
// likely cause on this machine, or "".
type OpenError struct {
	Op   string
	Err  error
	Hint string
}

func (e *OpenError) Error() string {
	if e.Hint == "" {
		return e.Op + ": " + e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error() + " (" + e.Hint + ")"
}

func (e *OpenError) Unwrap() error { return e.Err }

// Event is a perf event open on the OS thread that opened it (pid 0, cpu
// -1: it counts that thread only, in user space), with its first page
// mapped. A goroutine that wants meaningful counts locks itself to its
// thread (runtime.LockOSThread) while the event is open.
type Event struct {
	Spec Spec
	fd   int
	page []byte
}

// Page is a snapshot of the fields of an event's user page that decide how
// it can be read.
type Page struct {
	Version      uint32
	Lock         uint32 // seqlock
	Index        uint32 // hardware counter + 1, or 0 for none
	Capabilities uint64
	PMCWidth     uint16 // bits of the value rdpmc returns
}

// UserRdpmc reports whether the runtime may read the event with rdpmc:
// cap_user_rdpmc set and a hardware counter assigned.
func (p Page) UserRdpmc() bool { return p.Capabilities&capUserRdpmc != 0 && p.Index != 0 }

// Open opens s with perf_event_open on the calling thread
// (exclude_kernel, exclude_hv, enabled) and maps its user page.
func Open(s Spec) (*Event, error) {
	if s.TSC {
		return nil, ErrNotPerf
	}
	var attr [attrSize]byte
	le := binary.LittleEndian
	le.PutUint32(attr[attrOffType:], s.Type)
	le.PutUint32(attr[attrOffSize:], attrSize)
	le.PutUint64(attr[attrOffConfig:], s.Config)
	le.PutUint64(attr[attrOffFlags:], flagExclKernel|flagExclHV)
	fd, _, errno := syscall.Syscall6(syscall.SYS_PERF_EVENT_OPEN,
		uintptr(unsafe.Pointer(&attr[0])), 0, ^uintptr(0), ^uintptr(0), perfFlagFDCloexec, 0)
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return nil, &OpenError{Op: "perf_event_open", Err: errno, Hint: openHint(s, errno)}
	}
	page, err := syscall.Mmap(int(fd), 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		syscall.Close(int(fd))
		return nil, &OpenError{Op: "mmap", Err: err}
	}
	return &Event{Spec: s, fd: int(fd), page: page}, nil
}

// Read returns the event's count with read(2).
func (e *Event) Read() (uint64, error) {
	var buf [8]byte
	n, err := syscall.Read(e.fd, buf[:])
	if err != nil {
		return 0, &OpenError{Op: "read", Err: err}
	}
	if n != len(buf) {
		return 0, &OpenError{Op: "read", Err: fmt.Errorf("%d bytes, want %d", n, len(buf))}
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// Page reads the user page's fields (each read once, not under the
// seqlock: a snapshot for a probe, not for computing counts).
func (e *Event) Page() Page {
	le := binary.LittleEndian
	return Page{
		Version:      le.Uint32(e.page[pageOffVersion:]),
		Lock:         le.Uint32(e.page[pageOffLock:]),
		Index:        le.Uint32(e.page[pageOffIndex:]),
		Capabilities: le.Uint64(e.page[pageOffCapabilities:]),
		PMCWidth:     le.Uint16(e.page[pageOffPMCWidth:]),
	}
}

// Close unmaps the page and closes the descriptor.
func (e *Event) Close() error {
	var err error
	if e.page != nil {
		err = syscall.Munmap(e.page)
		e.page = nil
	}
	if e.fd >= 0 {
		if cerr := syscall.Close(e.fd); err == nil {
			err = cerr
		}
		e.fd = -1
	}
	return err
}

// Status is what Probe found out about one metric on this machine.
type Status struct {
	// Works: the event opened and counts (read(2), or rdtsc for tsc).
	Works bool
	// ViaRdpmc: the runtime can read it with rdpmc (cap_user_rdpmc and a
	// counter index on the user page).
	ViaRdpmc bool
	// Fallback is what the runtime records instead when it cannot read
	// the metric with rdpmc: "tsc" for cycles (FallbackOf), "" for a
	// metric that is then dropped or that works.
	Fallback string
	// Reason says why the metric does not work, or works but not through
	// rdpmc; "" when it works as the runtime needs.
	Reason string
	// Sample is the count read after a short busy loop since the event
	// was opened (the rdtsc delta across the loop for tsc); valid when
	// Works.
	Sample uint64
}

// Usable reports whether the runtime can record s per path as itself.
func (st Status) Usable(s Spec) bool { return st.Works && (s.TSC || st.ViaRdpmc) }

// Describe says in a few words what the runtime will do with s, given its
// status: "works (rdpmc)", "works (read only)", "not available: <reason>;
// falls back to tsc" or "...; dropped".
func (st Status) Describe(s Spec) string {
	var b strings.Builder
	switch {
	case st.Works && s.TSC:
		return "works (rdtsc)"
	case st.Works && st.ViaRdpmc:
		return "works (rdpmc)"
	case st.Works && s.ProbeOnly():
		return "works (read only)"
	case st.Works:
		b.WriteString("works (read only: " + st.Reason + ")")
	default:
		b.WriteString("not available: " + st.Reason)
	}
	switch {
	case s.ProbeOnly():
	case st.Fallback != "":
		b.WriteString("; falls back to " + st.Fallback)
	default:
		b.WriteString("; dropped")
	}
	return b.String()
}

// FallbackOf names what the runtime counts instead of s where s cannot be
// read with rdpmc: tsc for cycles, nothing (the metric is dropped) for the
// others [DESIGN 8].
func FallbackOf(s Spec) string {
	if s.Name == "cycles" {
		return "tsc"
	}
	return ""
}

// spinSink keeps the busy loop from being optimised away.
var spinSink uint64

// spin does a little user-space work for the counters to see.
func spin() {
	x := spinSink | 1
	for i := 0; i < 200000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink = x
}

// Probe opens s on the calling thread as the runtime would, inspects its
// user page, reads it once with read(2) after a short busy loop, and closes
// it. It never fails: what went wrong is in the Status.
func Probe(s Spec) Status {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s.TSC {
		return probeTSC()
	}
	st := Status{}
	if !s.ProbeOnly() {
		st.Fallback = FallbackOf(s)
	}
	ev, err := Open(s)
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	defer ev.Close()
	spin()
	v, err := ev.Read()
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	st.Works, st.Sample = true, v
	pg := ev.Page()
	switch {
	case pg.UserRdpmc():
		st.ViaRdpmc, st.Fallback = true, ""
	case s.ProbeOnly():
		st.Reason = "software event: read(2) only"
	case pg.Capabilities&capUserRdpmc == 0:
		st.Reason = "cap_user_rdpmc is 0"
		if v, err := os.ReadFile(RdpmcPath); err == nil && strings.TrimSpace(string(v)) == "0" {
			st.Reason += ": " + RdpmcPath + " is 0"
		}
	default:
		st.Reason = "no hardware counter assigned (index 0)"
	}
	return st
}

// probeTSC checks that rdtsc is allowed (prctl PR_GET_TSC) and advances.
func probeTSC() Status {
	const prGetTSC, prTSCSigsegv = 25, 2
	var mode int32
	if _, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prGetTSC, uintptr(unsafe.Pointer(&mode)), 0); errno == 0 && mode == prTSCSigsegv {
		return Status{Reason: "rdtsc is disabled for this process (prctl PR_SET_TSC)"}
	}
	t0, ok := rdtsc()
	if !ok {
		return Status{Reason: "rdtsc needs x86-64"}
	}
	spin()
	t1, _ := rdtsc()
	if t1 <= t0 {
		return Status{Reason: fmt.Sprintf("rdtsc did not advance (%d then %d)", t0, t1)}
	}
	return Status{Works: true, Sample: t1 - t0}
}

// openHint guesses the cause of a perf_event_open failure.
func openHint(s Spec, errno syscall.Errno) string {
	switch errno {
	case syscall.ENOENT, syscall.EOPNOTSUPP, syscall.ENODEV:
		if s.Type == TypeSoftware {
			return "the kernel does not count this software event"
		}
		if !hasCPUPMU() {
			return "no hardware PMU on this machine?"
		}
		return "this CPU's PMU does not count this event"
	case syscall.EACCES, syscall.EPERM:
		h := "not allowed: " + ParanoidPath
		if v, err := os.ReadFile(ParanoidPath); err == nil {
			h += " is " + strings.TrimSpace(string(v))
		}
		h += "; user-space counting needs 2 or less, or CAP_PERFMON"
		if errno == syscall.EPERM {
			h += "; a seccomp filter (containers) may also forbid perf_event_open"
		}
		return h
	case syscall.ENOSYS:
		return "the kernel has no perf events (CONFIG_PERF_EVENTS)"
	case syscall.EINVAL:
		return "the kernel rejects this event"
	case syscall.EBUSY:
		return "the counter is in exclusive use by another event"
	}
	return ""
}

// hasCPUPMU reports whether the kernel registered a CPU PMU: "cpu" on
// Intel and AMD, "cpu_core"/"cpu_atom" on hybrid Intel parts.
func hasCPUPMU() bool {
	for _, d := range []string{"cpu", "cpu_core", "cpu_atom"} {
		if _, err := os.Stat("/sys/bus/event_source/devices/" + d); err == nil {
			return true
		}
	}
	return false
}
