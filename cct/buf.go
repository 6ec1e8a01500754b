package cct

import (
	"encoding/binary"
	"fmt"
)

// buf is a little-endian cursor over part of a profile file. As in the
// buf of debug/dwarf, the first failure is recorded and every later read
// returns zero, so a decoder reads a whole item and checks b.err once.
type buf struct {
	data []byte // the bytes still to read
	off  int    // file offset of data[0]
	// short is the sentinel for reading past the end: ErrTruncated for
	// the file itself, ErrCorrupt inside a section whose length is known.
	short error
	err   *FormatError
}

func (b *buf) failAt(off int, sentinel error, format string, args ...any) {
	if b.err == nil {
		b.err = &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
	}
	b.data = nil
}

func (b *buf) fail(sentinel error, format string, args ...any) {
	b.failAt(b.off, sentinel, format, args...)
}

func (b *buf) bytes(n uint64, what string) []byte {
	if b.err != nil {
		return nil
	}
	if n > uint64(len(b.data)) {
		b.fail(b.short, "%s: need %d bytes, %d left", what, n, len(b.data))
		return nil
	}
	p := b.data[:n:n]
	b.data = b.data[n:]
	b.off += int(n)
	return p
}

// sub splits the next n bytes off as a cursor of their own, which reports
// running past its end as corruption.
func (b *buf) sub(n uint64, what string) buf {
	start := b.off
	p := b.bytes(n, what)
	if b.err != nil {
		return buf{off: start, short: ErrCorrupt, err: b.err}
	}
	return buf{data: p, off: start, short: ErrCorrupt}
}

func (b *buf) u8(what string) uint8 {
	if p := b.bytes(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (b *buf) u32(what string) uint32 {
	if p := b.bytes(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (b *buf) u64(what string) uint64 {
	if p := b.bytes(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// uv reads an unsigned LEB128 varint of at most MaxVarintLen bytes whose
// value fits in 64 bits. Longer (padded) encodings than needed are
// accepted, as protobuf does; the Go writer never produces them.
func (b *buf) uv(what string) uint64 {
	if b.err != nil {
		return 0
	}
	var v uint64
	for i := 0; ; i++ { // ends by i = MaxVarintLen-1: that byte must be 0 or 1
		if i >= len(b.data) {
			b.fail(b.short, "%s: varint runs past the end", what)
			return 0
		}
		c := b.data[i]
		if i == MaxVarintLen-1 && c > 1 {
			// 9×7 = 63 bits are in; the tenth byte may add only bit 63.
			b.fail(ErrCorrupt, "%s: varint does not fit in 64 bits", what)
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			b.data = b.data[i+1:]
			b.off += i + 1
			return v
		}
	}
}

// sv reads a zigzag-encoded signed varint.
func (b *buf) sv(what string) int64 {
	u := b.uv(what)
	return int64(u>>1) ^ -int64(u&1)
}

// u32v reads a varint that must fit in 32 bits.
func (b *buf) u32v(what string) uint32 {
	start := b.off
	v := b.uv(what)
	if v > 1<<32-1 {
		b.failAt(start, ErrCorrupt, "%s %d does not fit in 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// count reads an item count and checks that the bytes left can hold that
// many items of at least minSize bytes each, so that a hostile count
// cannot make the decoder allocate more than the input justifies.
func (b *buf) count(minSize int, what string) int {
	start := b.off
	n := b.uv(what)
	if b.err != nil {
		return 0
	}
	if n > uint64(len(b.data)/minSize) {
		b.failAt(start, b.short, "%s %d: %d bytes left hold at most %d", what, n, len(b.data), len(b.data)/minSize)
		return 0
	}
	return int(n)
}
