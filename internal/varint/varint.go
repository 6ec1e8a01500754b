package varint

import (
	"encoding/binary"
	"fmt"
)

// Reader is the cursor: B from Off on. Err is the first failure, which
// wraps Corrupt (the caller's sentinel) and says where.
type Reader struct {
	B       []byte
	Off     int
	Err     error
	Corrupt error
}

// Fail records a failure at the current offset, unless one is recorded.
func (r *Reader) Fail(msg string) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w: %s at offset %d", r.Corrupt, msg, r.Off)
	}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B[r.Off:])
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.Off += n
	return v
}

// Varint reads a signed (zig-zag) varint.
func (r *Reader) Varint() int64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Varint(r.B[r.Off:])
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.Off += n
	return v
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if r.Off >= len(r.B) {
		r.Fail("truncated")
		return 0
	}
	c := r.B[r.Off]
	r.Off++
	return c
}

// Bytes reads a length-prefixed byte string, which aliases B.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.Err != nil {
		return nil
	}
	if n > uint64(len(r.B)-r.Off) {
		r.Fail("length past the end")
		return nil
	}
	s := r.B[r.Off : r.Off+int(n)]
	r.Off += int(n)
	return s
}

// Count reads a list length and refuses one that cannot fit in the rest
// of the input, each element taking at least min bytes.
func (r *Reader) Count(min int) int {
	n := r.Uvarint()
	if r.Err != nil {
		return 0
	}
	if n > uint64(len(r.B)-r.Off)/uint64(min) {
		r.Fail("count larger than the data")
		return 0
	}
	return int(n)
}

// End fails on input left after the table and returns the first failure:
// a decoder's last step.
func (r *Reader) End() error {
	if r.Err == nil && r.Off != len(r.B) {
		r.Fail("trailing bytes")
	}
	return r.Err
}

// Header starts every table: its magic string, then its version as a
// little-endian uint32. Encoders write Version; decoders read MinVersion
// to Version.
type Header struct {
	Magic               string
	MinVersion, Version uint32
	// The table's sentinels: for another magic, for a version outside
	// MinVersion..Version, and for the Reader's failures.
	ErrBadMagic, ErrVersion, ErrCorrupt error
}

// Append writes the magic and Version.
func (h *Header) Append(b []byte) []byte {
	b = append(b, h.Magic...)
	return binary.LittleEndian.AppendUint32(b, h.Version)
}

// Open checks the magic and version that start data and returns the
// version and a Reader of what follows.
func (h *Header) Open(data []byte) (*Reader, uint32, error) {
	if len(data) < len(h.Magic)+4 || string(data[:len(h.Magic)]) != h.Magic {
		return nil, 0, h.ErrBadMagic
	}
	v := binary.LittleEndian.Uint32(data[len(h.Magic):])
	if v < h.MinVersion || v > h.Version {
		return nil, 0, fmt.Errorf("%w: %d", h.ErrVersion, v)
	}
	return &Reader{B: data, Off: len(h.Magic) + 4, Corrupt: h.ErrCorrupt}, v, nil
}
