package cct

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// smallProfile is the profile of testdata/small.hex and small.prof: an
// executable and a library module, records of the executable's functions.
func smallProfile() *Profile {
	return &Profile{
		Version: Version,
		BuildID: []byte{0xde, 0xad, 0xbe, 0xef},
		Modules: []Module{
			{Tag: 0, Flags: ModuleFlagExecutable, Path: "/bin/p", BuildID: []byte{0xde, 0xad, 0xbe, 0xef}},
			{Tag: 5, Bias: 0x7f0000000000, Path: "/lib/libz.so.1", BuildID: []byte{0x0b, 0x1d}},
		},
		PID:     4242,
		TimeNS:  1_000_000_000,
		Metrics: []Metric{{FreqMetric, MetricReal}, {"tsc", MetricFallback}},
		Threads: []Thread{{
			TID: 4242,
			Records: []Record{
				{Func: 0, Parent: -1, Calls: 1, Paths: []Path{
					{ID: 0, Count: 1, Metrics: []uint64{300}},
					{ID: 2, Count: 5, Metrics: []uint64{1000}},
				}},
				{Func: 3, Parent: 0, CallSite: 1, Calls: 5, Paths: []Path{
					{ID: 1, Count: 5, Metrics: []uint64{200}},
				}},
			},
			Partials: []Partial{{Record: 0, Func: 0, Block: 2, Reg: -3, Count: 1}},
		}},
		Stats: map[string]uint64{StatRecords: 2, StatThreads: 1},
	}
}

// readHex reads a testdata hex file: hex pairs, '#' comments.
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// mag returns a random number of random magnitude below 2^bits.
func mag(rng *rand.Rand, bits int) uint64 {
	return rng.Uint64() >> (64 - bits + rng.IntN(bits+1))
}

var metricPool = []string{"tsc", "cycles", "instructions", "cache-misses", "branch-misses", "L1-dcache-load-misses"}

// randProfile makes a valid profile; empty slices and maps are nil, as
// Parse returns them. Values stay below 2^40 so that totals never
// overflow.
func randProfile(rng *rand.Rand) *Profile {
	p := &Profile{
		Version: Version,
		Flags:   Flags(rng.IntN(int(KnownFlags) + 1)),
		PID:     mag(rng, 64),
		TimeNS:  mag(rng, 64),
		Metrics: []Metric{{FreqMetric, MetricReal}},
	}
	if rng.IntN(4) > 0 {
		p.BuildID = make([]byte, 1+rng.IntN(24))
		for i := range p.BuildID {
			p.BuildID[i] = byte(rng.Uint32())
		}
	}
	for _, i := range rng.Perm(len(metricPool))[:rng.IntN(4)] {
		p.Metrics = append(p.Metrics, Metric{metricPool[i], MetricKind(rng.IntN(numMetricKinds))})
	}
	if rng.IntN(2) == 0 { // a process with modules (decision 81)
		exe := rng.IntN(4) > 0
		tag := uint32(0)
		for i := range 1 + rng.IntN(4) {
			if i > 0 || !exe {
				tag += 1 + uint32(rng.IntN(300))
			}
			m := Module{Tag: tag, Bias: mag(rng, 47), Path: fmt.Sprintf("/lib/lib%d.so", tag)}
			if tag == 0 {
				m.Flags, m.Path, m.BuildID = ModuleFlagExecutable, "/bin/prog", p.BuildID
			} else {
				m.Flags = ModuleFlags(rng.IntN(2)) * ModuleFlagUnloaded
				m.BuildID = []byte{byte(tag), byte(tag >> 8), 0x5a}
			}
			p.Modules = append(p.Modules, m)
		}
		if !exe {
			p.BuildID = nil
		}
	}
	if rng.IntN(2) == 0 { // a sampled run (decision 92)
		p.Sampling = &Sampling{Requested: "cycles", Event: "cycles", Kind: MetricReal, Source: SourcePerf, Unit: UnitEvents,
			Period: 1 + mag(rng, 30), Signal: 63, Taken: mag(rng, 40)}
		if rng.IntN(2) == 0 {
			p.Sampling.Event, p.Sampling.Kind, p.Sampling.Unit, p.Sampling.Source = "cpu-clock", MetricFallback, UnitNanoseconds, SourceTimer
		}
		p.Sampling.Dropped = p.Sampling.Taken / 2
		for i := range rng.IntN(4) {
			p.Sampling.Objects = append(p.Sampling.Objects, fmt.Sprintf("/lib/obj%d.so", i))
		}
	}
	randBody(rng, p)
	randLatency(rng, p)
	return p
}

// randLatency gives, half of the time, most paths of p latency
// distributions (decision 93) of its first measured metric (p's
// LatencyMetric when it has one), with bucket counts that add up to the
// path's count as the runtime's do. p keeps no latency metric when no
// path got one.
func randLatency(rng *rand.Rand, p *Profile) {
	m := p.LatencyMetric
	if m == 0 {
		var measured []int
		for i := 1; i < len(p.Metrics); i++ {
			if p.Metrics[i].Kind != MetricUnavailable {
				measured = append(measured, i)
			}
		}
		if len(measured) == 0 || rng.IntN(2) == 0 {
			return
		}
		m = measured[0] // the runtime's choice; profiles of one header agree
	}
	p.LatencyMetric = 0
	for ti := range p.Threads {
		for ri := range p.Threads[ti].Records {
			for pi := range p.Threads[ti].Records[ri].Paths {
				x := &p.Threads[ti].Records[ri].Paths[pi]
				if rng.IntN(4) == 0 {
					continue
				}
				x.Latency = randDist(rng, x.Count)
				p.LatencyMetric = m
			}
		}
	}
}

// randDist is a random distribution of n ≥ 1 executions.
func randDist(rng *rand.Rand, n uint64) *Latency {
	l := &Latency{}
	b := uint8(rng.IntN(LatencyBuckets))
	for left := n; left > 0; {
		c := left
		if b+1 < LatencyBuckets && rng.IntN(2) == 0 {
			c = 1 + rng.Uint64N(left)
		}
		l.Buckets = append(l.Buckets, Bucket{b, c})
		left -= c
		if left > 0 {
			b += 1 + uint8(rng.IntN(int(LatencyBuckets-1-b)))
		}
	}
	top := l.Buckets[len(l.Buckets)-1].Log2
	for range rng.IntN(MaxSlowest + 1) {
		v := uint64(1)<<top | rng.Uint64()&(uint64(1)<<top-1)
		if len(l.Slowest) > 0 {
			v = min(v, l.Slowest[len(l.Slowest)-1])
		}
		l.Slowest = append(l.Slowest, v)
	}
	return l
}

// randBody gives p random threads and stats that fit its header.
func randBody(rng *rand.Rand, p *Profile) {
	nm := len(p.Metrics) - 1
	// fn makes a function id of one of the profile's modules.
	fn := func(local uint32) uint32 {
		if len(p.Modules) == 0 {
			return local
		}
		return Fid(p.Modules[rng.IntN(len(p.Modules))].Tag, local)
	}
	flowOnly := p.Flags&FlagFlowOnly != 0
	for range rng.IntN(4) {
		t := Thread{TID: mag(rng, 64)}
		seen := map[siblingKey]bool{}
		for range rng.IntN(25) {
			r := Record{Func: fn(uint32(mag(rng, 32)) % 40), Parent: -1, Calls: mag(rng, 40)}
			if !flowOnly && len(t.Records) > 0 && rng.IntN(4) > 0 {
				r.Parent = rng.IntN(len(t.Records))
				r.CallSite = uint32(rng.IntN(5))
			}
			k := siblingKey{r.Parent, r.Func, r.CallSite}
			if seen[k] {
				continue
			}
			seen[k] = true
			id := mag(rng, 64) >> rng.IntN(64)
			for range rng.IntN(7) {
				path := Path{ID: id, Count: 1 + mag(rng, 40)}
				for j := range nm {
					x := mag(rng, 40)
					if p.Metrics[1+j].Kind == MetricUnavailable {
						x = 0
					}
					path.Metrics = append(path.Metrics, x)
				}
				r.Paths = append(r.Paths, path)
				gap := 1 + mag(rng, 1+rng.IntN(63))
				if id+gap < id {
					break
				}
				id += gap
			}
			t.Records = append(t.Records, r)
		}
		for range rng.IntN(4) {
			q := Partial{Record: -1, Func: fn(uint32(rng.IntN(40))), Block: uint32(mag(rng, 32)), Reg: int64(mag(rng, 64)), Count: 1 + mag(rng, 40)}
			if len(t.Records) > 0 && rng.IntN(4) > 0 {
				q.Record = rng.IntN(len(t.Records))
				q.Func = t.Records[q.Record].Func
			}
			t.Partials = append(t.Partials, q)
		}
		if rng.IntN(3) == 0 { // a fork child's prefixes
			for range 1 + rng.IntN(3) {
				q := Partial{Record: -1, Func: fn(uint32(rng.IntN(40))), Block: uint32(mag(rng, 32)), Reg: int64(mag(rng, 64)), Count: 1 + mag(rng, 8)}
				if len(t.Records) > 0 && rng.IntN(4) > 0 {
					q.Record = rng.IntN(len(t.Records))
					q.Func = t.Records[q.Record].Func
				}
				t.Prefixes = append(t.Prefixes, q)
			}
		}
		if p.Sampling != nil {
			for range rng.IntN(6) {
				q := Sample{Record: rng.IntN(len(t.Records)+1) - 1, Object: rng.IntN(len(p.Sampling.Objects)+1) - 1,
					Offset: mag(rng, 48), Reg: int64(mag(rng, 64)), Count: 1 + mag(rng, 40)}
				t.Samples = append(t.Samples, q)
			}
			t.Samples = sortSamples(t.Samples)
		}
		p.Threads = append(p.Threads, t)
	}
	if rng.IntN(2) == 0 {
		p.Stats = map[string]uint64{}
		for range 1 + rng.IntN(4) {
			p.Stats[fmt.Sprintf("key%d", rng.IntN(10))] = mag(rng, 62)
		}
	}
}

// randLike makes a random valid profile with the header of p (so that
// the two can be merged).
func randLike(rng *rand.Rand, p *Profile) *Profile {
	q := p.header()
	q.Stats = nil
	q.Flags = q.Flags&FlagFlowOnly | Flags(rng.IntN(4))<<1
	q.PID, q.TimeNS = mag(rng, 64), mag(rng, 64)
	randBody(rng, q)
	randLatency(rng, q)
	return q
}

// rawFile builds files field by field, for inputs the writer cannot make.
type rawFile []byte

func (r rawFile) u8(x uint8) rawFile    { return append(r, x) }
func (r rawFile) u32(x uint32) rawFile  { return binary.LittleEndian.AppendUint32(r, x) }
func (r rawFile) uv(x uint64) rawFile   { return binary.AppendUvarint(r, x) }
func (r rawFile) sv(x int64) rawFile    { return binary.AppendVarint(r, x) }
func (r rawFile) raw(b ...byte) rawFile { return append(r, b...) }
func (r rawFile) str(s string) rawFile  { return append(r.uv(uint64(len(s))), s...) }
func (r rawFile) section(tag uint8, payload rawFile) rawFile {
	return append(r.u8(tag).uv(uint64(len(payload))), payload...)
}

// header is a valid header with metrics freq and tsc (fallback).
func rawHeader() rawFile {
	return rawFile(Magic).u32(Version).u32(0).str("\x01\x02").uv(7).uv(8).
		uv(2).str("freq").u8(0).str("tsc").u8(1)
}

// trailer appends the trailer with the right checksum.
func (r rawFile) trailer() []byte {
	r = r.u8(TagTrailer)
	return binary.LittleEndian.AppendUint64(r, fnv1a(FNVOffset64, r))
}
