package ehframe

import (
	"encoding/binary"
	"fmt"
)

// buf is a little-endian byte cursor over part of the section. Like the
// buf of debug/dwarf, the first failure is recorded and every later read
// returns zero, so a parser reads a whole record and checks b.err once.
type buf struct {
	data []byte // the bytes still to read
	off  int    // section offset of data[0]
	err  error
}

func (b *buf) fail(err error, format string, args ...any) {
	if b.err == nil {
		b.err = &FormatError{Off: b.off, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	b.data = nil
}

// sub splits off the next n bytes as a cursor of their own.
func (b *buf) sub(n uint64, what string) buf {
	if b.err != nil {
		return buf{err: b.err}
	}
	if n > uint64(len(b.data)) {
		b.fail(ErrTruncated, "%s of %d bytes runs past the end (%d left)", what, n, len(b.data))
		return buf{err: b.err}
	}
	s := buf{data: b.data[:n], off: b.off}
	b.data = b.data[n:]
	b.off += int(n)
	return s
}

func (b *buf) bytes(n int, what string) []byte {
	if b.err != nil {
		return nil
	}
	if n < 0 || n > len(b.data) {
		b.fail(ErrTruncated, "%s: need %d bytes, %d left", what, n, len(b.data))
		return nil
	}
	p := b.data[:n]
	b.data = b.data[n:]
	b.off += n
	return p
}

func (b *buf) skip(n uint64, what string) {
	if n > uint64(len(b.data)) {
		b.fail(ErrTruncated, "%s: need %d bytes, %d left", what, n, len(b.data))
		return
	}
	b.bytes(int(n), what)
}

func (b *buf) u8(what string) uint8 {
	p := b.bytes(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (b *buf) u16(what string) uint16 {
	p := b.bytes(2, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (b *buf) u32(what string) uint32 {
	p := b.bytes(4, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (b *buf) u64(what string) uint64 {
	p := b.bytes(8, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// uleb reads an unsigned LEB128 number [DWARF5 §7.6]. Values that do not
// fit in 64 bits are an error, not silently truncated.
func (b *buf) uleb(what string) uint64 {
	start := b.off
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := b.u8(what)
		if b.err != nil {
			return 0
		}
		low := uint64(c & 0x7f)
		if shift >= 64 && low != 0 || shift == 63 && low > 1 {
			b.off = start
			b.fail(ErrOverflow, "%s: uleb128 does not fit in 64 bits", what)
			return 0
		}
		if shift < 64 {
			v |= low << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

// sleb reads a signed LEB128 number [DWARF5 §7.6].
func (b *buf) sleb(what string) int64 {
	start := b.off
	var v int64
	var c uint8
	shift := uint(0)
	for {
		c = b.u8(what)
		if b.err != nil {
			return 0
		}
		low := int64(c & 0x7f)
		if shift >= 64 {
			// Only sign-extension padding may follow the 64th bit.
			sign := int64(0)
			if v < 0 {
				sign = 0x7f
			}
			if low != sign {
				b.off = start
				b.fail(ErrOverflow, "%s: sleb128 does not fit in 64 bits", what)
				return 0
			}
		} else {
			if shift == 63 && low != 0 && low != 0x7f {
				b.off = start
				b.fail(ErrOverflow, "%s: sleb128 does not fit in 64 bits", what)
				return 0
			}
			v |= low << shift
		}
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}

// cstring reads a NUL-terminated string.
func (b *buf) cstring(what string) string {
	if b.err != nil {
		return ""
	}
	for i, c := range b.data {
		if c == 0 {
			s := string(b.data[:i])
			b.bytes(i+1, what)
			return s
		}
	}
	b.fail(ErrTruncated, "%s: no NUL terminator", what)
	return ""
}
