// Package counters names the hardware metrics blpp can record per path,
// maps each name to the perf_event_attr type and config that count it, and
// finds out, by opening the event, whether this machine can count it the
// way instrumented code needs [DESIGN 8].
//
// # Metrics
//
// Metric 0 is always the path frequency (freq), implicit in every profile.
// Up to MaxMetrics more come from --metrics (Parse), named after perf's
// events: cycles, instructions, branches, cache-misses, ... (All lists them;
// a few of perf's longer names are accepted as aliases). tsc is the time
// stamp counter, read with rdtsc, and needs no perf at all. The software
// events (task-clock, page-faults, context-switches) have no hardware
// counter behind them: the kernel updates them, so they can only be read
// with read(2) on the event's file descriptor, far too slow to do at every
// path boundary. They are probe-only (Spec.ProbeOnly): Probe reports them
// and Parse refuses them.
//
// # Sampling
//
// A --metrics item sample:EVENT[@N] (ParseSampling, ParseWithSampling)
// asks for sampling instead of counting (decision 92): cpu-clock or
// task-clock at N Hz of thread CPU time (default 1000, at most 100000),
// or a perf event of the table every N events. Whether the machine can
// sample it is the runtime's to find out; a hardware event it cannot
// open falls back to cpu-clock.
//
// # How the runtime reads a counter
//
// The runtime (runtime/blpp_pmu.h) opens each event on the calling thread
// with perf_event_open (user space only: exclude_kernel, exclude_hv), maps
// the event's first page, and reads the count with rdpmc under the page's
// seqlock: the hardware counter number is index-1, the count is offset
// plus the counter sign-extended from pmc_width bits [linux/perf_event.h,
// struct perf_event_mmap_page]. That works only when the kernel sets
// cap_user_rdpmc and a non-zero index. Where it does not, or where
// perf_event_open refuses the event (no PMU, as in most virtual machines;
// perf_event_paranoid), cycles falls back to rdtsc, labelled tsc in the
// profile, and any other metric is dropped with one warning [DESIGN 8].
// Status.Fallback says which.
//
// # Probe
//
// Probe opens the event the way the runtime will, on the calling OS thread
// (it locks the goroutine to it meanwhile), maps the user page to read
// cap_user_rdpmc and index, reads the count once with read(2) to show it
// counts, and closes everything. It does not execute rdpmc itself: the
// protocol lives in C, once, and is tested there (runtime/pmu_test.go).
// Open gives the same event to callers that want to read it several times.
//
// # What it trusts
//
// The kernel's perf ABI (struct layouts of linux/perf_event.h, x86-64
// only). Names given to Parse and Lookup are user input and checked.
package counters
