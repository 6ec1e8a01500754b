package ehframe

import "github.com/blpp/blpp/internal/cursor"

// buf is a cursor over part of the section whose failures are
// *FormatError; reading past its end is ErrTruncated.
type buf struct{ cursor.Cursor }

func newBuf(data []byte, off int) buf {
	return buf{cursor.Cursor{Data: data, Off: off, Short: ErrTruncated, Located: formatError}}
}

func formatError(off int, msg string, sentinel error) error {
	return &FormatError{Off: off, Msg: msg, Err: sentinel}
}

// sub splits off the next n bytes as a cursor of their own.
func (b *buf) sub(n uint64, what string) buf {
	if b.Err == nil && n > uint64(len(b.Data)) {
		b.Fail(ErrTruncated, "%s of %d bytes runs past the end (%d left)", what, n, len(b.Data))
	}
	return buf{b.Sub(n, what, ErrTruncated)}
}

// uleb reads an unsigned LEB128 number [DWARF5 §7.6]. Values that do not
// fit in 64 bits are an error, not silently truncated.
func (b *buf) uleb(what string) uint64 {
	start := b.Off
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := b.U8(what)
		if b.Err != nil {
			return 0
		}
		low := uint64(c & 0x7f)
		if shift >= 64 && low != 0 || shift == 63 && low > 1 {
			b.Off = start
			b.Fail(ErrOverflow, "%s: uleb128 does not fit in 64 bits", what)
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
	start := b.Off
	var v int64
	var c uint8
	shift := uint(0)
	for {
		c = b.U8(what)
		if b.Err != nil {
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
				b.Off = start
				b.Fail(ErrOverflow, "%s: sleb128 does not fit in 64 bits", what)
				return 0
			}
		} else {
			if shift == 63 && low != 0 && low != 0x7f {
				b.Off = start
				b.Fail(ErrOverflow, "%s: sleb128 does not fit in 64 bits", what)
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
	if b.Err != nil {
		return ""
	}
	for i, c := range b.Data {
		if c == 0 {
			s := string(b.Data[:i])
			b.Bytes(uint64(i+1), what)
			return s
		}
	}
	b.Fail(ErrTruncated, "%s: no NUL terminator", what)
	return ""
}
