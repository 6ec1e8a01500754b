package counters

import (
	"strings"
	"testing"
)

func TestParseSampling(t *testing.T) {
	good := []struct {
		item string
		want Sampling
	}{
		{"sample:cpu-clock", Sampling{Event: "cpu-clock", Type: TypeSoftware, Config: 0, Period: 1000000, Clock: true}},
		{"sample:cpu-clock@10000", Sampling{Event: "cpu-clock", Type: TypeSoftware, Config: 0, Period: 100000, Clock: true}},
		{"sample:task-clock@250", Sampling{Event: "task-clock", Type: TypeSoftware, Config: 1, Period: 4000000, Clock: true}},
		{"sample:cycles@100003", Sampling{Event: "cycles", Type: TypeHardware, Config: 0, Period: 100003}},
		{"sample:cpu-cycles", Sampling{Event: "cycles", Type: TypeHardware, Config: 0, Period: DefaultSamplePeriod}},
		{"sample:l1d-misses@5000", Sampling{Event: "l1d-misses", Type: TypeHWCache, Config: hwCache(cacheL1D, opRead, resMiss), Period: 5000}},
	}
	for _, c := range good {
		s, err := ParseSampling(c.item)
		if err != nil || *s != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.item, s, err, c.want)
		}
	}
	bad := map[string]string{
		"sample:tsc":              "tsc is read",
		"sample:cpu-clock@0":      "not a positive integer",
		"sample:cpu-clock@x":      "not a positive integer",
		"sample:cpu-clock@100001": "Hz is over",
		"sample:bogus":            "unknown event",
		"cpu-clock":               "not a sample: item",
	}
	for item, msg := range bad {
		if _, err := ParseSampling(item); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error saying %q", item, err, msg)
		}
	}
	specs, s, err := ParseWithSampling("tsc, sample:cpu-clock@500")
	if err != nil || len(specs) != 1 || specs[0].Name != "tsc" || s == nil || s.Period != 2000000 {
		t.Errorf("tsc,sample:cpu-clock@500: %v %+v %v", specs, s, err)
	}
	if specs, s, err := ParseWithSampling("sample:cpu-clock"); err != nil || specs != nil || s == nil {
		t.Errorf("sample:cpu-clock alone: %v %+v %v", specs, s, err)
	}
	if _, _, err := ParseWithSampling("sample:cpu-clock,sample:task-clock"); err == nil {
		t.Error("two sample: items accepted")
	}
	if _, _, err := ParseWithSampling("freq"); err != nil {
		t.Errorf("freq: %v", err)
	}
}
