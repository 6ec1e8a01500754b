package cct

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

func sampleTotal(p *Profile) uint64 {
	var n uint64
	for _, t := range p.Threads {
		for _, q := range t.Samples {
			n += q.Count
		}
	}
	return n
}

// TestSamplesRules: the SAMPLES section round-trips, and each rule of
// the model refuses what breaks it.
func TestSamplesRules(t *testing.T) {
	p := sampledProfile()
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data)
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, p, q)
	}
	bad := []struct {
		name string
		edit func(p *Profile)
	}{
		{"no sampler", func(p *Profile) { p.Sampling = nil }},
		{"out of order", func(p *Profile) { s := p.Threads[0].Samples; s[1], s[2] = s[2], s[1] }},
		{"twice", func(p *Profile) { s := p.Threads[0].Samples; s[2] = s[1] }},
		{"record out of range", func(p *Profile) { p.Threads[0].Samples[2].Record = len(p.Threads[0].Records) }},
		{"object out of range", func(p *Profile) { p.Threads[0].Samples[2].Object = 2 }},
		{"count 0", func(p *Profile) { p.Threads[0].Samples[1].Count = 0 }},
		{"period 0", func(p *Profile) { p.Sampling.Period = 0 }},
		{"unit", func(p *Profile) { p.Sampling.Unit = "seconds" }},
		{"source", func(p *Profile) { p.Sampling.Source = 3 }},
		{"kind", func(p *Profile) { p.Sampling.Kind = MetricUnavailable }},
		{"dropped", func(p *Profile) { p.Sampling.Dropped = p.Sampling.Taken + 1 }},
		{"object twice", func(p *Profile) { p.Sampling.Objects[1] = p.Sampling.Objects[0] }},
		{"event name", func(p *Profile) { p.Sampling.Event = "cpu clock" }},
	}
	for _, c := range bad {
		p := sampledProfile()
		c.edit(p)
		if err := p.CheckValid(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CheckValid %v, want ErrInvalid", c.name, err)
		}
		if _, err := Parse(p.encode()); p.Sampling != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Parse %v, want ErrCorrupt", c.name, err)
		}
	}
	// An older reader skips the section: without it the rest stands.
	p = sampledProfile()
	s := p.Sampling
	p.Sampling, p.Threads[0].Samples = nil, nil
	plain := p.encode()
	p.Sampling = s
	if q, err := Parse(plain); err != nil || q.Sampling != nil {
		t.Fatalf("profile without samples: %v", err)
	}
}

// TestSamplesMerge: merging keeps every sample (objects united and
// renumbered), folding threads too; inputs sampled differently are
// refused.
func TestSamplesMerge(t *testing.T) {
	a := sampledProfile()
	b := sampledProfile()
	b.Sampling.Objects = []string{"[vdso]", "/lib/other.so"}
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sampleTotal(m), sampleTotal(a)+sampleTotal(b); got != want {
		t.Errorf("merged samples %d, want %d", got, want)
	}
	if want := []string{"/bin/prog", "[vdso]", "/lib/other.so"}; !reflect.DeepEqual(m.Sampling.Objects, want) {
		t.Errorf("objects %q, want %q", m.Sampling.Objects, want)
	}
	if q := m.Threads[1].Samples; q[1].Object != 1 || q[2].Object != 2 {
		t.Errorf("b's samples not renumbered: %+v", q)
	}
	if m.Sampling.Taken != a.Sampling.Taken+b.Sampling.Taken {
		t.Errorf("taken %d", m.Sampling.Taken)
	}
	f := m.FoldThreads()
	if sampleTotal(f) != sampleTotal(m) || f.CheckValid() != nil {
		t.Errorf("folded: %d samples of %d, %v", sampleTotal(f), sampleTotal(m), f.CheckValid())
	}
	b.Sampling.Period++
	if _, err := Merge(a, b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("merging other periods: %v", err)
	}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 92))
		p := randProfile(rng)
		if f := p.FoldThreads(); sampleTotal(f) != sampleTotal(p) {
			t.Fatalf("seed %d: folding changed the samples: %d, %d", seed, sampleTotal(f), sampleTotal(p))
		}
	}
}
