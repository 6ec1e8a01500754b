package counters

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func names(specs []Spec) string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func TestParse(t *testing.T) {
	tests := []struct {
		list    string
		want    string // canonical names, comma separated
		wantErr string // substring of the error; "" for success
	}{
		{"", "", ""},
		{"  ", "", ""},
		{"freq", "", ""},
		{"cycles", "cycles", ""},
		{"freq,cycles,instructions", "cycles,instructions", ""},
		{"cycles, freq , instructions", "cycles,instructions", ""},
		{"tsc,l1d-misses,llc-misses,branch-misses", "tsc,l1d-misses,llc-misses,branch-misses", ""},
		{"freq,cycles,instructions,branches,cache-misses", "cycles,instructions,branches,cache-misses", ""},
		{"cpu-cycles,LLC-load-misses", "cycles,llc-misses", ""},
		{"cycles,instructions,branches,cache-misses,tsc", "", "at most 4"},
		{"bogus", "", `unknown metric "bogus" (known: freq, cycles,`},
		{"cycles,,tsc", "", "empty metric name"},
		{"cycles,", "", "empty metric name"},
		{"cycles,cycles", "", `metric "cycles" given twice`},
		{"freq,freq", "", `metric "freq" given twice`},
		{"cycles,cpu-cycles", "", `metric "cpu-cycles" (cycles) given twice`},
		{"Cycles", "", "unknown metric"},
		{"task-clock", "", `metric "task-clock" is a software event that only read(2) can read`},
		{"cycles,page-faults", "", "software event"},
		{"context-switches", "", "software event"},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := Parse(tt.list)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %s, want an error containing %q", tt.list, names(got), tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error %q, want it to contain %q", tt.list, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.list, err)
			}
			if names(got) != tt.want {
				t.Errorf("Parse(%q) = %q, want %q", tt.list, names(got), tt.want)
			}
		})
	}
	if _, err := Parse("cycles,instructions,branches,cache-misses,tsc"); !errors.Is(err, ErrTooMany) {
		t.Errorf("five metrics: error %v, want ErrTooMany", err)
	}
	// The list of known names leaves out the probe-only metrics.
	_, err := Parse("nope")
	if strings.Contains(err.Error(), "task-clock") {
		t.Errorf("unknown-metric error offers a probe-only metric: %v", err)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name   string
		ok     bool
		canon  string
		typ    uint32
		config uint64
		tsc    bool
	}{
		{"cycles", true, "cycles", TypeHardware, 0, false},
		{"cpu-cycles", true, "cycles", TypeHardware, 0, false},
		{"instructions", true, "instructions", TypeHardware, 1, false},
		{"cache-references", true, "cache-references", TypeHardware, 2, false},
		{"cache-misses", true, "cache-misses", TypeHardware, 3, false},
		{"branches", true, "branches", TypeHardware, 4, false},
		{"branch-misses", true, "branch-misses", TypeHardware, 5, false},
		{"stalled-cycles-frontend", true, "stalled-cycles-frontend", TypeHardware, 7, false},
		{"stalled-cycles-backend", true, "stalled-cycles-backend", TypeHardware, 8, false},
		// L1D | READ<<8 | MISS<<16 and friends [perf_event_open(2)].
		{"l1d-misses", true, "l1d-misses", TypeHWCache, 0x10000, false},
		{"l1i-misses", true, "l1i-misses", TypeHWCache, 0x10001, false},
		{"llc-misses", true, "llc-misses", TypeHWCache, 0x10002, false},
		{"dtlb-misses", true, "dtlb-misses", TypeHWCache, 0x10003, false},
		{"tsc", true, "tsc", 0, 0, true},
		{"task-clock", true, "task-clock", TypeSoftware, 1, false},
		{"page-faults", true, "page-faults", TypeSoftware, 2, false},
		{"context-switches", true, "context-switches", TypeSoftware, 3, false},
		{"freq", false, "", 0, 0, false},
		{"", false, "", 0, 0, false},
		{"cycle", false, "", 0, 0, false},
	}
	for _, tt := range tests {
		s, ok := Lookup(tt.name)
		if ok != tt.ok {
			t.Errorf("Lookup(%q) ok = %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if s.Name != tt.canon || s.Type != tt.typ || s.Config != tt.config || s.TSC != tt.tsc {
			t.Errorf("Lookup(%q) = %+v, want %s type %d config %#x tsc %v", tt.name, s, tt.canon, tt.typ, tt.config, tt.tsc)
		}
		if s.Desc == "" {
			t.Errorf("Lookup(%q) has no description", tt.name)
		}
	}
}

func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if seen[s.Name] || s.Name == Freq {
			t.Errorf("metric %q repeated or reserved", s.Name)
		}
		seen[s.Name] = true
		if got, ok := Lookup(s.Name); !ok || got != s {
			t.Errorf("Lookup(%q) = %+v, %v; want the table's entry", s.Name, got, ok)
		}
		wantProbeOnly := s.Type == TypeSoftware && !s.TSC
		if s.ProbeOnly() != wantProbeOnly {
			t.Errorf("%s: ProbeOnly = %v", s.Name, s.ProbeOnly())
		}
		if !s.ProbeOnly() {
			if _, err := Parse(s.Name); err != nil {
				t.Errorf("Parse(%q): %v", s.Name, err)
			}
		}
	}
	for alias, canon := range aliases {
		if seen[alias] {
			t.Errorf("alias %q shadows a metric", alias)
		}
		if !seen[canon] {
			t.Errorf("alias %q names unknown metric %q", alias, canon)
		}
	}
	// All returns a copy.
	a := All()
	a[0].Name = "changed"
	if All()[0].Name == "changed" {
		t.Error("All returns the table itself")
	}
}

// TestProbeTaskClock: software events open everywhere perf exists and
// count through read(2), never through rdpmc.
func TestProbeTaskClock(t *testing.T) {
	s, _ := Lookup("task-clock")
	st := Probe(s)
	if !st.Works {
		t.Fatalf("task-clock does not work: %s", st.Reason)
	}
	if st.ViaRdpmc || st.Fallback != "" || st.Sample == 0 {
		t.Errorf("task-clock status %+v, want read(2) only, no fallback, a non-zero sample", st)
	}
	if got := st.Describe(s); got != "works (read only)" {
		t.Errorf("Describe = %q", got)
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ev, err := Open(s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ev.Close(); err != nil {
			t.Error(err)
		}
	}()
	if pg := ev.Page(); pg.UserRdpmc() {
		t.Errorf("task-clock user page offers rdpmc: %+v", pg)
	}
	v0, err := ev.Read()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		spin()
	}
	v1, err := ev.Read()
	if err != nil {
		t.Fatal(err)
	}
	if v1 <= v0 {
		t.Errorf("task-clock did not advance across a busy loop: %d then %d", v0, v1)
	}
	t.Logf("task-clock: %d ns then %d ns", v0, v1)
}

// TestProbeCycles passes with and without a PMU: cycles either works or
// says why not, and then falls back to tsc.
func TestProbeCycles(t *testing.T) {
	s, _ := Lookup("cycles")
	st := Probe(s)
	t.Logf("cycles: %+v: %s", st, st.Describe(s))
	switch {
	case st.Works && st.ViaRdpmc:
		if st.Fallback != "" || st.Reason != "" {
			t.Errorf("cycles via rdpmc with fallback %q, reason %q", st.Fallback, st.Reason)
		}
	default:
		if st.Reason == "" {
			t.Error("cycles not usable through rdpmc but no reason given")
		}
		if st.Fallback != "tsc" {
			t.Errorf("cycles fallback %q, want tsc", st.Fallback)
		}
		if !strings.HasSuffix(st.Describe(s), "; falls back to tsc") {
			t.Errorf("Describe = %q", st.Describe(s))
		}
	}
	// Other hardware events are dropped, not replaced.
	s, _ = Lookup("instructions")
	st = Probe(s)
	if !st.ViaRdpmc && (st.Fallback != "" || !strings.HasSuffix(st.Describe(s), "; dropped")) {
		t.Errorf("instructions: %+v, %q; want dropped", st, st.Describe(s))
	}
}

func TestProbeTSC(t *testing.T) {
	s, _ := Lookup("tsc")
	st := Probe(s)
	if !st.Works || st.Sample == 0 || st.Fallback != "" || st.Reason != "" {
		t.Fatalf("tsc: %+v", st)
	}
	if !st.Usable(s) || st.Describe(s) != "works (rdtsc)" {
		t.Errorf("tsc: usable %v, %q", st.Usable(s), st.Describe(s))
	}
	if _, err := Open(s); !errors.Is(err, ErrNotPerf) {
		t.Errorf("Open(tsc) error %v, want ErrNotPerf", err)
	}
}

// TestOpenErrors checks the hints on the errors this machine or another
// can give, without depending on which one this is.
func TestOpenErrors(t *testing.T) {
	bogus := Spec{Name: "bogus", Type: TypeSoftware, Config: 1 << 40}
	_, err := Open(bogus)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Op != "perf_event_open" {
		t.Fatalf("Open(bogus software event) = %v, want an OpenError from perf_event_open", err)
	}
	if st := Probe(bogus); st.Works || st.Reason != err.Error() {
		t.Errorf("Probe(bogus) = %+v, want the error %q", st, err)
	}
	for _, tt := range []struct {
		errno syscall.Errno
		want  string
	}{
		{syscall.EACCES, ParanoidPath},
		{syscall.EPERM, "seccomp"},
		{syscall.ENOSYS, "CONFIG_PERF_EVENTS"},
	} {
		if h := openHint(Spec{Type: TypeHardware}, tt.errno); !strings.Contains(h, tt.want) {
			t.Errorf("hint for %v = %q, want %q in it", tt.errno, h, tt.want)
		}
	}
	if h := openHint(Spec{Type: TypeHardware}, syscall.ENOENT); hasCPUPMU() != !strings.Contains(h, "no hardware PMU") {
		t.Errorf("hint for ENOENT = %q, CPU PMU present: %v", h, hasCPUPMU())
	}
	e := &OpenError{Op: "perf_event_open", Err: syscall.ENOENT, Hint: "no hardware PMU on this machine?"}
	if got := e.Error(); got != "perf_event_open: no such file or directory (no hardware PMU on this machine?)" {
		t.Errorf("OpenError text %q", got)
	}
}

func TestDescribe(t *testing.T) {
	cycles, _ := Lookup("cycles")
	instr, _ := Lookup("instructions")
	pf, _ := Lookup("page-faults")
	tests := []struct {
		s    Spec
		st   Status
		want string
	}{
		{cycles, Status{Works: true, ViaRdpmc: true}, "works (rdpmc)"},
		{cycles, Status{Works: true, Fallback: "tsc", Reason: "cap_user_rdpmc is 0"}, "works (read only: cap_user_rdpmc is 0); falls back to tsc"},
		{cycles, Status{Fallback: "tsc", Reason: "perf_event_open: x"}, "not available: perf_event_open: x; falls back to tsc"},
		{instr, Status{Reason: "perf_event_open: x"}, "not available: perf_event_open: x; dropped"},
		{pf, Status{Works: true}, "works (read only)"},
		{pf, Status{Reason: "perf_event_open: x"}, "not available: perf_event_open: x"},
	}
	for _, tt := range tests {
		if got := tt.st.Describe(tt.s); got != tt.want {
			t.Errorf("%s %+v: %q, want %q", tt.s.Name, tt.st, got, tt.want)
		}
	}
}
