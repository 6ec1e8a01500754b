package counters

import (
	"errors"
	"fmt"
	"strings"
)

// perf_event_attr.type values [linux/perf_event.h, enum perf_type_id].
const (
	TypeHardware   uint32 = 0 // PERF_TYPE_HARDWARE
	TypeSoftware   uint32 = 1 // PERF_TYPE_SOFTWARE
	TypeTracepoint uint32 = 2 // PERF_TYPE_TRACEPOINT
	TypeHWCache    uint32 = 3 // PERF_TYPE_HW_CACHE
	TypeRaw        uint32 = 4 // PERF_TYPE_RAW
)

// TypeName is the perf name of an event type ("hardware", "hw-cache", ...).
func TypeName(t uint32) string {
	switch t {
	case TypeHardware:
		return "hardware"
	case TypeSoftware:
		return "software"
	case TypeTracepoint:
		return "tracepoint"
	case TypeHWCache:
		return "hw-cache"
	case TypeRaw:
		return "raw"
	}
	return fmt.Sprintf("type-%d", t)
}

// Freq is the name of metric 0, the path frequency, which every profile
// has.
const Freq = "freq"

// MaxMetrics is how many metrics besides freq one profile may record: the
// runtime keeps that many counters open per thread and that many sums per
// path.
const MaxMetrics = 4

// Spec says how to count one metric: perf_event_open with Type and Config,
// or rdtsc when TSC is set (Type and Config are then 0 and unused).
type Spec struct {
	Name   string
	Type   uint32
	Config uint64
	TSC    bool
	Desc   string
}

// ProbeOnly reports whether s can only be read with read(2) (a software
// event: there is no hardware counter for rdpmc), so the runtime cannot
// read it at path boundaries and Parse refuses it.
func (s Spec) ProbeOnly() bool { return !s.TSC && s.Type == TypeSoftware }

// Event describes how s is counted: "rdtsc", or perf's type and config
// ("hardware 0x0", "hw-cache 0x10000").
func (s Spec) Event() string {
	if s.TSC {
		return "rdtsc"
	}
	return fmt.Sprintf("%s %#x", TypeName(s.Type), s.Config)
}

// hwCache is a PERF_TYPE_HW_CACHE config: cache | op<<8 | result<<16
// [perf_event_open(2)].
func hwCache(cache, op, result uint64) uint64 { return cache | op<<8 | result<<16 }

// Cache ids, operations and results of PERF_TYPE_HW_CACHE
// [linux/perf_event.h, enum perf_hw_cache_id, _op_id, _op_result_id].
const (
	cacheL1D  = 0
	cacheL1I  = 1
	cacheLL   = 2
	cacheDTLB = 3
	opRead    = 0
	resMiss   = 1
)

// table lists the metrics in the order All returns them. Configs of
// PERF_TYPE_HARDWARE are enum perf_hw_id, of PERF_TYPE_SOFTWARE enum
// perf_sw_ids [linux/perf_event.h].
var table = []Spec{
	{Name: "cycles", Type: TypeHardware, Config: 0, Desc: "CPU cycles (falls back to tsc)"},
	{Name: "instructions", Type: TypeHardware, Config: 1, Desc: "instructions retired"},
	{Name: "cache-references", Type: TypeHardware, Config: 2, Desc: "last-level cache accesses"},
	{Name: "cache-misses", Type: TypeHardware, Config: 3, Desc: "last-level cache misses"},
	{Name: "branches", Type: TypeHardware, Config: 4, Desc: "branch instructions retired"},
	{Name: "branch-misses", Type: TypeHardware, Config: 5, Desc: "mispredicted branches"},
	{Name: "stalled-cycles-frontend", Type: TypeHardware, Config: 7, Desc: "cycles the front end issued nothing"},
	{Name: "stalled-cycles-backend", Type: TypeHardware, Config: 8, Desc: "cycles the back end retired nothing"},
	{Name: "ref-cycles", Type: TypeHardware, Config: 9, Desc: "reference cycles (unaffected by frequency scaling)"},
	{Name: "l1d-misses", Type: TypeHWCache, Config: hwCache(cacheL1D, opRead, resMiss), Desc: "L1 data cache read misses"},
	{Name: "l1i-misses", Type: TypeHWCache, Config: hwCache(cacheL1I, opRead, resMiss), Desc: "L1 instruction cache read misses"},
	{Name: "llc-misses", Type: TypeHWCache, Config: hwCache(cacheLL, opRead, resMiss), Desc: "last-level cache read misses"},
	{Name: "dtlb-misses", Type: TypeHWCache, Config: hwCache(cacheDTLB, opRead, resMiss), Desc: "data TLB read misses"},
	{Name: "tsc", TSC: true, Desc: "time stamp counter (rdtsc; constant rate, counts while descheduled)"},
	{Name: "task-clock", Type: TypeSoftware, Config: 1, Desc: "thread CPU time in ns (software: read(2) only)"},
	{Name: "page-faults", Type: TypeSoftware, Config: 2, Desc: "page faults (software: read(2) only)"},
	{Name: "context-switches", Type: TypeSoftware, Config: 3, Desc: "context switches (software: read(2) only)"},
}

// aliases are perf's other names for metrics of the table.
var aliases = map[string]string{
	"cpu-cycles":            "cycles",
	"branch-instructions":   "branches",
	"L1-dcache-load-misses": "l1d-misses",
	"L1-icache-load-misses": "l1i-misses",
	"LLC-load-misses":       "llc-misses",
	"dTLB-load-misses":      "dtlb-misses",
	"cs":                    "context-switches",
	"faults":                "page-faults",
	"idle-cycles-frontend":  "stalled-cycles-frontend",
	"idle-cycles-backend":   "stalled-cycles-backend",
}

// All returns every metric of the table (freq excepted), in a fixed order.
func All() []Spec { return append([]Spec(nil), table...) }

// Lookup finds a metric by name or perf alias; the Spec carries the
// canonical name. freq is not in the table (it needs no counter).
func Lookup(name string) (Spec, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, s := range table {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the names --metrics accepts: freq, then the table's
// metrics that the runtime can read.
func Names() []string {
	names := []string{Freq}
	for _, s := range table {
		if !s.ProbeOnly() {
			names = append(names, s.Name)
		}
	}
	return names
}

// ErrTooMany is returned by Parse for more than MaxMetrics metrics.
var ErrTooMany = errors.New("too many metrics")

// Parse reads a --metrics list: names separated by commas, freq allowed
// anywhere and dropped (it is implicit). It refuses empty and unknown
// names, repeats (aliases included), probe-only metrics and more than
// MaxMetrics counters. An empty list means freq alone (no Spec).
func Parse(list string) ([]Spec, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var specs []Spec
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		name := strings.TrimSpace(item)
		if name == "" {
			return nil, fmt.Errorf("metrics %q: empty metric name", list)
		}
		canon := name
		var s Spec
		if name != Freq {
			var ok bool
			s, ok = Lookup(name)
			if !ok {
				return nil, fmt.Errorf("unknown metric %q (known: %s)", name, strings.Join(Names(), ", "))
			}
			canon = s.Name
		}
		if seen[canon] {
			if canon != name {
				return nil, fmt.Errorf("metric %q (%s) given twice", name, canon)
			}
			return nil, fmt.Errorf("metric %q given twice", name)
		}
		seen[canon] = true
		if name == Freq {
			continue
		}
		if s.ProbeOnly() {
			return nil, fmt.Errorf("metric %q is a software event that only read(2) can read, not rdpmc: it cannot be counted per path (blpp counters shows what works)", name)
		}
		specs = append(specs, s)
	}
	if len(specs) > MaxMetrics {
		return nil, fmt.Errorf("%w: %d besides freq, at most %d", ErrTooMany, len(specs), MaxMetrics)
	}
	return specs, nil
}
