package counters

import (
	"fmt"
	"strconv"
	"strings"
)

// SamplePrefix starts a --metrics item that asks for sampling instead
// of counting at path boundaries: sample:EVENT[@N] (decision 92).
const SamplePrefix = "sample:"

// Sampling is what sample:EVENT[@N] asks for: every thread of the
// program is interrupted every Period events of Event (every Period
// nanoseconds of its CPU time for the clocks), and the runtime charges
// each sample to the running calling context, block and path prefix.
type Sampling struct {
	Event  string // canonical name: cpu-clock, task-clock, or a metric of the table
	Type   uint32 // perf_event_attr.type
	Config uint64 // perf_event_attr.config
	Period uint64 // events per sample; nanoseconds for the clocks
	// Clock says Event is a CPU clock (cpu-clock, task-clock), whose N
	// is a rate in Hz and whose samples each stand for Period ns.
	Clock bool
}

// Clock events: perf's software clocks [linux/perf_event.h, enum
// perf_sw_ids]. Both measure the thread's CPU time here (the runtime
// samples user space only); task-clock is in the table as a probe-only
// metric, cpu-clock only here.
const (
	swCPUClock  = 0
	swTaskClock = 1
)

// Defaults and bounds of sample:EVENT[@N].
const (
	DefaultSampleHz     = 1000    // clocks: samples per second of CPU time
	MaxSampleHz         = 100000  // 10 µs of CPU time per sample at most
	DefaultSamplePeriod = 1000000 // other events: events per sample
)

// ParseSampling reads one sample:EVENT[@N] item: EVENT is cpu-clock or
// task-clock with N a rate in Hz (default DefaultSampleHz, at most
// MaxSampleHz), or a perf event of the table with N events per sample
// (default DefaultSamplePeriod). tsc cannot be sampled (it is not a perf
// event). Whether the machine can sample the event is the runtime's to
// find out: a hardware event it cannot open falls back to cpu-clock.
func ParseSampling(item string) (*Sampling, error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(item), SamplePrefix)
	if !ok {
		return nil, fmt.Errorf("%q is not a sample: item", item)
	}
	name, num, hasNum := strings.Cut(spec, "@")
	var n uint64
	if hasNum {
		var err error
		if n, err = strconv.ParseUint(num, 10, 64); err != nil || n == 0 {
			return nil, fmt.Errorf("%s: %q after @ is not a positive integer", item, num)
		}
	}
	s := &Sampling{Event: name, Type: TypeSoftware, Clock: true}
	switch name {
	case "cpu-clock":
		s.Config = swCPUClock
	case "task-clock":
		s.Config = swTaskClock
	default:
		m, ok := Lookup(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: unknown event %q (cpu-clock, task-clock, or one of %s)", item, name, strings.Join(Names()[1:], ", "))
		case m.TSC:
			return nil, fmt.Errorf("%s: tsc is read, not sampled (sample cpu-clock, or count tsc at every path boundary with --metrics tsc)", item)
		}
		s.Event, s.Type, s.Config, s.Clock = m.Name, m.Type, m.Config, false
	}
	if s.Clock {
		hz := uint64(DefaultSampleHz)
		if hasNum {
			hz = n
		}
		if hz > MaxSampleHz {
			return nil, fmt.Errorf("%s: %d Hz is over %d Hz", item, hz, MaxSampleHz)
		}
		s.Period = 1000000000 / hz
	} else {
		s.Period = DefaultSamplePeriod
		if hasNum {
			s.Period = n
		}
	}
	return s, nil
}

// ParseWithSampling reads a --metrics list that may hold one
// sample:EVENT[@N] item besides the counted metrics (Parse).
func ParseWithSampling(list string) ([]Spec, *Sampling, error) {
	var rest []string
	var s *Sampling
	for _, item := range strings.Split(list, ",") {
		if !strings.HasPrefix(strings.TrimSpace(item), SamplePrefix) {
			rest = append(rest, item)
			continue
		}
		if s != nil {
			return nil, nil, fmt.Errorf("metrics %q: one sample: item at most", list)
		}
		var err error
		if s, err = ParseSampling(item); err != nil {
			return nil, nil, err
		}
	}
	if s != nil && len(rest) == 0 {
		return nil, s, nil
	}
	specs, err := Parse(strings.Join(rest, ","))
	return specs, s, err
}
