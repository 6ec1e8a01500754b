package cct

import "github.com/blpp/blpp/internal/cursor"

// buf is a cursor over part of a profile file whose failures are
// *FormatError. Short is ErrTruncated for the file itself, ErrCorrupt
// inside a section whose length is known.
type buf struct{ cursor.Cursor }

func newBuf(data []byte, off int, short error) *buf {
	return &buf{cursor.Cursor{Data: data, Off: off, Short: short, Located: formatError}}
}

func formatError(off int, msg string, sentinel error) error {
	return &FormatError{Off: off, Msg: msg, Err: sentinel}
}

// failure is the recorded failure, nil while all is well.
func (b *buf) failure() *FormatError {
	fe, _ := b.Err.(*FormatError)
	return fe
}

// sub splits the next n bytes off as a cursor of their own, which reports
// running past its end as corruption.
func (b *buf) sub(n uint64, what string) buf {
	return buf{b.Sub(n, what, ErrCorrupt)}
}

// uv reads an unsigned LEB128 varint of at most MaxVarintLen bytes whose
// value fits in 64 bits. Longer (padded) encodings than needed are
// accepted, as protobuf does; the Go writer never produces them.
//
// It is the reader's innermost loop (a whole-process profile has tens of
// millions of varints, most of them one byte), hence the fast path first
// and a loop over the bytes that the compiler can check once.
func (b *buf) uv(what string) uint64 {
	d := b.Data
	if len(d) > 0 && d[0] < 0x80 && b.Err == nil {
		b.Data = d[1:]
		b.Off++
		return uint64(d[0])
	}
	if b.Err != nil {
		return 0
	}
	var v uint64
	for i, c := range d { // ends by i = MaxVarintLen-1: that byte must be 0 or 1
		if i == MaxVarintLen-1 && c > 1 {
			// 9×7 = 63 bits are in; the tenth byte may add only bit 63.
			b.Fail(ErrCorrupt, "%s: varint does not fit in 64 bits", what)
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			b.Data = d[i+1:]
			b.Off += i + 1
			return v
		}
	}
	b.Fail(b.Short, "%s: varint runs past the end", what)
	return 0
}

// sv reads a zigzag-encoded signed varint.
func (b *buf) sv(what string) int64 {
	u := b.uv(what)
	return int64(u>>1) ^ -int64(u&1)
}

// u32v reads a varint that must fit in 32 bits.
func (b *buf) u32v(what string) uint32 {
	start := b.Off
	v := b.uv(what)
	if v > 1<<32-1 {
		b.FailAt(start, ErrCorrupt, "%s %d does not fit in 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// count reads an item count and checks that the bytes left can hold that
// many items of at least minSize bytes each, so that a hostile count
// cannot make the decoder allocate more than the input justifies.
func (b *buf) count(minSize int, what string) int {
	start := b.Off
	n := b.uv(what)
	if b.Err != nil {
		return 0
	}
	if n > uint64(len(b.Data)/minSize) {
		b.FailAt(start, b.Short, "%s %d: %d bytes left hold at most %d", what, n, len(b.Data), len(b.Data)/minSize)
		return 0
	}
	return int(n)
}
