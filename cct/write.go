package cct

import (
	"encoding/binary"
	"io"
	"slices"

	"github.com/blpp/blpp/internal/outfile"
)

// MarshalBinary encodes p in the file format, after checking it with
// CheckValid. The encoding is canonical: the shortest varints but a
// THREAD section's length and record count (FixedLen bytes each), the
// MODULES section (when there are modules) right after the header,
// threads in order, the SAMPLES section when the program sampled, the STATS section (when Stats is not empty) after the threads
// with its keys sorted. The runtime's writer produces the same bytes.
func (p *Profile) MarshalBinary() ([]byte, error) {
	if err := p.CheckValid(); err != nil {
		return nil, err
	}
	return p.encode(), nil
}

// encode writes p without checking it (tests use it to make bad files).
func (p *Profile) encode() []byte {
	e := make([]byte, 0, 64)
	e = append(e, Magic...)
	e = binary.LittleEndian.AppendUint32(e, p.Version)
	e = binary.LittleEndian.AppendUint32(e, uint32(p.Flags))
	e = appendBytes(e, p.BuildID)
	e = binary.AppendUvarint(e, p.PID)
	e = binary.AppendUvarint(e, p.TimeNS)
	e = binary.AppendUvarint(e, uint64(len(p.Metrics)))
	for _, m := range p.Metrics {
		e = appendBytes(e, []byte(m.Name))
		e = append(e, byte(m.Kind))
	}
	var payload []byte
	if p.Modules != nil {
		payload = binary.AppendUvarint(payload, uint64(len(p.Modules)))
		for _, m := range p.Modules {
			payload = binary.AppendUvarint(payload, uint64(m.Tag))
			payload = binary.AppendUvarint(payload, uint64(m.Flags))
			payload = binary.AppendUvarint(payload, m.Bias)
			payload = appendBytes(payload, []byte(m.Path))
			payload = appendBytes(payload, m.BuildID)
		}
		e = appendSection(e, TagModules, payload)
	}
	for i := range p.Threads {
		payload = appendThread(payload[:0], &p.Threads[i])
		e = append(e, TagThread)
		e = appendFixed(e, uint64(len(payload)))
		e = append(e, payload...)
		// Its latency distributions, when it has any (decision 93).
		if payload = appendLatency(payload[:0], i, &p.Threads[i], p.LatencyMetric); payload != nil {
			e = appendSection(e, TagLatency, payload)
		}
	}
	if p.Sampling != nil {
		e = appendSection(e, TagSamples, appendSamples(payload[:0], p))
	}
	if len(p.Stats) > 0 {
		keys := make([]string, 0, len(p.Stats))
		for k := range p.Stats {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		payload = binary.AppendUvarint(payload[:0], uint64(len(keys)))
		for _, k := range keys {
			payload = appendBytes(payload, []byte(k))
			payload = binary.AppendUvarint(payload, p.Stats[k])
		}
		e = appendSection(e, TagStats, payload)
	}
	e = append(e, TagTrailer)
	return binary.LittleEndian.AppendUint64(e, fnv1a(FNVOffset64, e))
}

// Write writes p to w in the file format (see MarshalBinary). Nothing is
// written when p is not valid.
func (p *Profile) Write(w io.Writer) error {
	data, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// WriteFile writes p to the file name through a temporary file in the same
// directory that is renamed into place, so that no reader ever sees a
// partial profile [DESIGN 11] (internal/outfile; a device or FIFO is
// written in place).
func (p *Profile) WriteFile(name string) error {
	data, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	return outfile.Write(name, data, 0o644)
}

func appendBytes(e, b []byte) []byte {
	e = binary.AppendUvarint(e, uint64(len(b)))
	return append(e, b...)
}

func appendSection(e []byte, tag uint8, payload []byte) []byte {
	e = append(e, tag)
	e = binary.AppendUvarint(e, uint64(len(payload)))
	return append(e, payload...)
}

// FixedLen is the width of the varints a THREAD section's length and
// record count take: the runtime writes a thread's records to the file
// as it makes them and puts the two numbers in place after them
// (decision 142).
const FixedLen = binary.MaxVarintLen64

// appendFixed appends v as a varint of FixedLen bytes: continuation bits
// on all but the last byte, which every LEB128 reader takes.
func appendFixed(e []byte, v uint64) []byte {
	for range FixedLen - 1 {
		e = append(e, byte(v)|0x80)
		v >>= 7
	}
	return append(e, byte(v))
}

// appendThread encodes a THREAD payload.
func appendThread(e []byte, t *Thread) []byte {
	e = binary.AppendUvarint(e, t.TID)
	e = appendFixed(e, uint64(len(t.Records)))
	for i := range t.Records {
		r := &t.Records[i]
		e = binary.AppendUvarint(e, uint64(r.Func))
		e = binary.AppendUvarint(e, uint64(r.Parent+1))
		e = binary.AppendUvarint(e, uint64(r.CallSite))
		e = binary.AppendUvarint(e, r.Calls)
		e = binary.AppendUvarint(e, uint64(len(r.Paths)))
		for _, p := range r.Paths {
			e = binary.AppendUvarint(e, p.ID)
			e = binary.AppendUvarint(e, p.Count)
			for _, x := range p.Metrics {
				e = binary.AppendUvarint(e, x)
			}
		}
	}
	e = appendPartials(e, t.Partials)
	// The folded list is omitted when empty, unless fork prefixes follow.
	if len(t.Folded) > 0 || len(t.Prefixes) > 0 {
		e = binary.AppendUvarint(e, uint64(len(t.Folded)))
		for _, c := range t.Folded {
			e = binary.AppendUvarint(e, uint64(c.From))
			e = binary.AppendUvarint(e, uint64(c.CallSite))
			e = binary.AppendUvarint(e, uint64(c.To))
			e = binary.AppendUvarint(e, c.Count)
		}
	}
	if len(t.Prefixes) > 0 {
		e = appendPartials(e, t.Prefixes)
	}
	return e
}

// appendPartials encodes a partial-shaped list (Thread.Partials or
// Thread.Prefixes) with its length.
func appendPartials(e []byte, qs []Partial) []byte {
	e = binary.AppendUvarint(e, uint64(len(qs)))
	for _, q := range qs {
		e = binary.AppendUvarint(e, uint64(q.Record+1))
		e = binary.AppendUvarint(e, uint64(q.Func))
		e = binary.AppendUvarint(e, uint64(q.Block))
		e = binary.AppendVarint(e, q.Reg) // zigzag, as the format says
		e = binary.AppendUvarint(e, q.Count)
	}
	return e
}
