package cct

// Sampled attribution (decision 92): the SAMPLES section, its model,
// its rules, and how merging adds it up.

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// SampleSource says what interrupted the threads.
type SampleSource uint8

const (
	// SourcePerf: a perf event per thread, a signal at each overflow.
	SourcePerf SampleSource = 1
	// SourceTimer: a timer on each thread's CPU clock (perf refused
	// the software clock).
	SourceTimer SampleSource = 2
)

func (s SampleSource) String() string {
	switch s {
	case SourcePerf:
		return "perf"
	case SourceTimer:
		return "timer"
	}
	return fmt.Sprintf("SampleSource(%d)", uint8(s))
}

// Units of Sampling.Unit.
const (
	UnitNanoseconds = "nanoseconds" // the clocks: each sample stands for Period ns of CPU time
	UnitEvents      = "events"
)

// Sampling says what the program sampled and how often; the samples
// themselves are per thread (Thread.Samples).
type Sampling struct {
	Requested string // the event --metrics sample: asked for
	// Event is the event sampled: Requested, or cpu-clock standing in
	// for a hardware event the machine could not sample (Kind fallback).
	Event  string
	Kind   MetricKind // MetricReal or MetricFallback
	Source SampleSource
	Unit   string // UnitNanoseconds or UnitEvents: what Period counts
	Period uint64 // Unit per sample
	Signal uint32 // the real-time signal used
	// Taken is the samples the handler took; Dropped those of them a
	// full sample table could not keep; Missed the signals that found
	// no thread block and the threads whose sampler did not start.
	Taken, Dropped, Missed uint64
	// Objects are the files (or [vdso], [anon]) of the executable
	// mappings that sampled pcs lie in, unique.
	Objects []string
}

// A Sample counts the samples of one thread that found the same running
// record, pc and path register.
type Sample struct {
	Record int // index in Thread.Records; -1 when no record ran
	// Object is the index in Sampling.Objects of the file holding the
	// pc, Offset the pc's offset in that file; Object -1: the pc lay in
	// no mapping, and Offset is the pc itself.
	Object int
	Offset uint64
	Reg    int64  // the path register of the record's function
	Count  uint64 // ≥ 1
}

// Nanoseconds is what n samples stand for when Unit is nanoseconds.
func (s *Sampling) Nanoseconds(n float64) float64 {
	if s.Unit != UnitNanoseconds {
		return 0
	}
	return n * float64(s.Period)
}

func sampleCmp(a, b Sample) int {
	if c := cmp.Compare(a.Record, b.Record); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Object, b.Object); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.Reg, b.Reg)
}

// checkSampling checks the header of the SAMPLES section.
func checkSampling(s *Sampling) string {
	for _, f := range []struct{ what, v string }{{"requested event", s.Requested}, {"sampled event", s.Event}, {"unit", s.Unit}} {
		if msg := checkName("samples: "+f.what, f.v); msg != "" {
			return msg
		}
	}
	switch {
	case s.Kind != MetricReal && s.Kind != MetricFallback:
		return fmt.Sprintf("samples: kind %v (real or fallback)", s.Kind)
	case s.Source != SourcePerf && s.Source != SourceTimer:
		return fmt.Sprintf("samples: unknown source %d", uint8(s.Source))
	case s.Unit != UnitNanoseconds && s.Unit != UnitEvents:
		return fmt.Sprintf("samples: unit %q (%s or %s)", s.Unit, UnitNanoseconds, UnitEvents)
	case s.Period == 0:
		return "samples: period 0"
	case s.Dropped > s.Taken:
		return fmt.Sprintf("samples: %d dropped of %d taken", s.Dropped, s.Taken)
	}
	seen := make(map[string]bool, len(s.Objects))
	for i, o := range s.Objects {
		if o == "" || strings.IndexByte(o, 0) >= 0 {
			return fmt.Sprintf("samples: object %d: empty or with a NUL byte", i)
		}
		if seen[o] {
			return fmt.Sprintf("samples: object %d (%s) listed twice", i, o)
		}
		seen[o] = true
	}
	return ""
}

// sample checks t.Samples[k] given t.Samples[:k].
func (v *validator) sample(t *Thread, k int) string {
	q := &t.Samples[k]
	switch {
	case q.Record < -1 || q.Record >= len(t.Records):
		return fmt.Sprintf("record %d out of range (%d records)", q.Record, len(t.Records))
	case q.Object < -1 || q.Object >= v.nobjects:
		return fmt.Sprintf("object %d out of range (%d objects)", q.Object, v.nobjects)
	case q.Count == 0:
		return "count 0"
	case k > 0 && sampleCmp(t.Samples[k-1], *q) >= 0:
		return "out of order (samples are sorted by record, object, offset, register, each once)"
	}
	s, carry := bits.Add64(v.samples, q.Count, 0)
	if carry != 0 {
		return "the profile's total of samples overflows 64 bits"
	}
	v.samples = s
	return ""
}

// appendSamples encodes the SAMPLES payload of p (which has Sampling).
func appendSamples(e []byte, p *Profile) []byte {
	s := p.Sampling
	e = appendBytes(e, []byte(s.Requested))
	e = appendBytes(e, []byte(s.Event))
	e = append(e, byte(s.Kind))
	e = binary.AppendUvarint(e, uint64(s.Source))
	e = appendBytes(e, []byte(s.Unit))
	for _, x := range []uint64{s.Period, uint64(s.Signal), s.Taken, s.Dropped, s.Missed, uint64(len(s.Objects))} {
		e = binary.AppendUvarint(e, x)
	}
	for _, o := range s.Objects {
		e = appendBytes(e, []byte(o))
	}
	n := 0
	for i := range p.Threads {
		if len(p.Threads[i].Samples) > 0 {
			n++
		}
	}
	e = binary.AppendUvarint(e, uint64(n))
	for i := range p.Threads {
		t := &p.Threads[i]
		if len(t.Samples) == 0 {
			continue
		}
		e = binary.AppendUvarint(e, uint64(i))
		e = binary.AppendUvarint(e, uint64(len(t.Samples)))
		for _, q := range t.Samples {
			e = binary.AppendUvarint(e, uint64(q.Record+1))
			e = binary.AppendUvarint(e, uint64(q.Object+1))
			e = binary.AppendUvarint(e, q.Offset)
			e = binary.AppendVarint(e, q.Reg)
			e = binary.AppendUvarint(e, q.Count)
		}
	}
	return e
}

const minSampleSize = 5 // record, object, offset, reg, count

// samples decodes a SAMPLES payload into d.p.Sampling and the threads'
// Samples; the THREAD sections are decoded already.
func (d *decoder) samples(b *buf) {
	off := b.Off
	s := &Sampling{Requested: string(b.Bytes(b.uv("requested event length"), "requested event")),
		Event: string(b.Bytes(b.uv("sampled event length"), "sampled event"))}
	s.Kind = MetricKind(b.U8("samples kind"))
	s.Source = SampleSource(b.uv("samples source"))
	s.Unit = string(b.Bytes(b.uv("samples unit length"), "samples unit"))
	s.Period = b.uv("sample period")
	s.Signal = b.u32v("sample signal")
	s.Taken, s.Dropped, s.Missed = b.uv("samples taken"), b.uv("samples dropped"), b.uv("samples missed")
	no := b.count(1, "object count")
	for range no {
		s.Objects = append(s.Objects, string(b.Bytes(b.uv("object name length"), "object name")))
	}
	if b.Err != nil {
		return
	}
	if msg := checkSampling(s); msg != "" {
		b.FailAt(off, ErrCorrupt, "%s", msg)
		return
	}
	d.p.Sampling = s
	d.v.nobjects = len(s.Objects)
	nt := b.count(2, "sampled thread count")
	prev := -1
	for range nt {
		toff := b.Off
		ti := b.uv("sampled thread")
		if b.Err != nil {
			return
		}
		if ti >= uint64(len(d.p.Threads)) || int(ti) <= prev {
			b.FailAt(toff, ErrCorrupt, "samples of thread %d: not a thread after %d (%d threads)", ti, prev, len(d.p.Threads))
			return
		}
		prev = int(ti)
		t := &d.p.Threads[ti]
		n := b.count(minSampleSize, "sample count")
		if n == 0 && b.Err == nil {
			b.FailAt(toff, ErrCorrupt, "thread %d: an empty sample list (omitted when empty)", ti)
			return
		}
		t.Samples = make([]Sample, 0, n)
		for k := range n {
			soff := b.Off
			rec, obj := b.uv("sample record"), b.uv("sample object")
			q := Sample{Offset: b.uv("sample offset"), Reg: b.sv("sample register"), Count: b.uv("sample count")}
			if b.Err != nil {
				return
			}
			if rec > uint64(len(t.Records)) || obj > uint64(len(s.Objects)) {
				b.FailAt(soff, ErrCorrupt, "thread %d sample %d: record %d or object %d (index+1) out of range", ti, k, rec, obj)
				return
			}
			q.Record, q.Object = int(rec)-1, int(obj)-1
			t.Samples = append(t.Samples, q)
			if msg := d.v.sample(t, k); msg != "" {
				b.FailAt(soff, ErrCorrupt, "thread %d sample %d: %s", ti, k, msg)
				return
			}
		}
	}
}

// mergeSampling checks that the inputs sampled alike (event, kind,
// unit, period) and returns the merged header: counts summed, objects
// united; objIndex[i][k] is input i's object k in the result.
func mergeSampling(ps []*Profile, name func(int) string) (*Sampling, [][]int, error) {
	var out *Sampling
	objIndex := make([][]int, len(ps))
	where := map[string]int{}
	for i, p := range ps {
		s := p.Sampling
		if s == nil {
			if hasSamples(p) {
				return nil, nil, fmt.Errorf("merge: %s has samples without a sampler", name(i))
			}
			continue
		}
		if out == nil {
			out = &Sampling{Requested: s.Requested, Event: s.Event, Kind: s.Kind, Source: s.Source, Unit: s.Unit, Period: s.Period, Signal: s.Signal}
		} else if s.Event != out.Event || s.Kind != out.Kind || s.Unit != out.Unit || s.Period != out.Period {
			return nil, nil, fmt.Errorf("merge: %s sampled %s every %d %s, another input %s every %d %s: %w",
				name(i), s.Event, s.Period, s.Unit, out.Event, out.Period, out.Unit, ErrIncompatible)
		}
		var c1, c2, c3 uint64
		out.Taken, c1 = bits.Add64(out.Taken, s.Taken, 0)
		out.Dropped, c2 = bits.Add64(out.Dropped, s.Dropped, 0)
		out.Missed, c3 = bits.Add64(out.Missed, s.Missed, 0)
		if c1|c2|c3 != 0 {
			return nil, nil, fmt.Errorf("merge: sample totals overflow 64 bits: %w", ErrIncompatible)
		}
		objIndex[i] = make([]int, len(s.Objects))
		for k, o := range s.Objects {
			j, ok := where[o]
			if !ok {
				j = len(out.Objects)
				where[o] = j
				out.Objects = append(out.Objects, o)
			}
			objIndex[i][k] = j
		}
	}
	return out, objIndex, nil
}

func hasSamples(p *Profile) bool {
	for i := range p.Threads {
		if len(p.Threads[i].Samples) > 0 {
			return true
		}
	}
	return false
}

// sortSamples sorts qs and adds up equal keys.
func sortSamples(qs []Sample) []Sample {
	if len(qs) == 0 {
		return nil
	}
	slices.SortFunc(qs, sampleCmp)
	out := qs[:1]
	for _, q := range qs[1:] {
		if sampleCmp(out[len(out)-1], q) == 0 {
			out[len(out)-1].Count += q.Count
			continue
		}
		out = append(out, q)
	}
	return out
}
