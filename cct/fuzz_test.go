package cct

import (
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
)

// FuzzParse: no input makes Parse panic (a recovered panic is
// errInternal, a failure here); a refusal is a located *FormatError with
// one of the sentinels; an accepted profile is valid, survives a round
// trip, and can be folded, flattened and checked against a table.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/small.prof"); err == nil {
		f.Add(data)
	}
	for seed := range uint64(8) {
		f.Add(randProfile(rand.New(rand.NewPCG(seed, 6))).encode())
	}
	for _, c := range rawCases {
		f.Add(c.data)
	}
	f.Add([]byte(rawHeader().section(9, rawFile{}.raw(1)).section(TagThread, emptyThread).trailer()))
	f.Add(libProfile().encode())
	f.Add(sampledProfile().encode())
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, data) })
}

// FuzzParseSealed fuzzes what follows the checksum check: the input gets
// a trailer with the right checksum before parsing, so that mutations
// reach the decoding of sections instead of stopping at ErrChecksum.
func FuzzParseSealed(f *testing.F) {
	add := func(data []byte) {
		if len(data) >= 9 {
			f.Add(data[:len(data)-9]) // without the trailer
		}
	}
	if data, err := os.ReadFile("testdata/small.prof"); err == nil {
		add(data)
	}
	for seed := range uint64(8) {
		add(randProfile(rand.New(rand.NewPCG(seed, 7))).encode())
	}
	for _, c := range rawCases {
		add(c.data)
	}
	add(libProfile().encode())
	add(sampledProfile().encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, rawFile(slices.Clip(data)).trailer())
	})
}

// sampledProfile is the small profile with a SAMPLES section (decision
// 92): a seed for the new parser.
func sampledProfile() *Profile {
	p := smallProfile()
	p.Sampling = &Sampling{Requested: "cycles", Event: "cpu-clock", Kind: MetricFallback, Source: SourcePerf,
		Unit: UnitNanoseconds, Period: 1000000, Signal: 63, Taken: 9, Dropped: 1, Missed: 2, Objects: []string{"/bin/prog", "[vdso]"}}
	p.Threads[0].Samples = []Sample{{Record: -1, Object: -1, Offset: 0x401000, Count: 1}, {Record: 0, Object: 0, Offset: 0x1234, Reg: 3, Count: 5},
		{Record: 0, Object: 1, Offset: 0x10, Reg: -1, Count: 2}}
	return p
}

// libProfile is the small profile with a record of its library module:
// a seed whose MODULES section the mutations have to keep consistent.
func libProfile() *Profile {
	p := smallProfile()
	p.Threads[0].Records[1].Func = Fid(5, 3)
	return p
}

func checkParse(t *testing.T, data []byte) {
	t.Helper()
	p, err := Parse(data)
	if err != nil {
		if errors.Is(err, errInternal) {
			t.Fatalf("panic in Parse: %v", err)
		}
		if p != nil {
			t.Fatal("profile returned with an error")
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Off < 0 || fe.Off > len(data) {
			t.Fatalf("error %v (%T) is not a located *FormatError", err, err)
		}
		known := false
		for _, s := range sentinels {
			known = known || fe.Err == s
		}
		if !known {
			t.Fatalf("%v: unknown sentinel", err)
		}
		return
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("Parse accepted an invalid profile: %v", err)
	}
	out, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(out)
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip: %v", err)
	}
	if err := p.FoldThreads().CheckValid(); err != nil {
		t.Fatalf("folded profile invalid: %v", err)
	}
	p.Flat()
	p.CheckAgainst(smallFuncs())
	for _, m := range p.Modules {
		p.CheckModule(m.Tag, smallFuncs())
	}
	if _, err := Merge(p, p); err != nil && !errors.Is(err, ErrInvalid) {
		t.Fatalf("merging a valid profile with itself: %v", err)
	}
}
