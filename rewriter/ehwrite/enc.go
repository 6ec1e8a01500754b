package ehwrite

import (
	"errors"
	"fmt"
	"math"

	"github.com/blpp/blpp/cfg/ehframe"
)

// Sentinel errors.
var (
	// ErrEncoding: a pointer encoding ehwrite cannot write so that the
	// size stays independent of the address (pcrel LEB128, aligned), or
	// one that needs a base it does not have.
	ErrEncoding = errors.New("unsupported pointer encoding")
	// ErrRange: a value that does not fit its encoding at the new place.
	ErrRange = errors.New("value does not fit its encoding")
	// ErrRows: rows that do not describe the FDE (out of order, outside
	// it, not expressible with the CIE's alignment factors).
	ErrRows = errors.New("bad rows")
	// ErrCallSites: call sites out of order, overlapping, or before the
	// function.
	ErrCallSites = errors.New("bad call sites")
	// ErrAugmentation: a CIE augmentation ehwrite cannot re-emit.
	ErrAugmentation = errors.New("unsupported augmentation")
	// ErrDuplicate: two FDEs for one start address in .eh_frame_hdr.
	ErrDuplicate = errors.New("duplicate FDE start")
)

func appendUleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

func ulebLen(v uint64) int { return len(appendUleb(nil, v)) }

// checkPointerEnc accepts the encodings whose size does not depend on
// where the pointer is written: fixed-size formats with any application
// but aligned, and LEB128 formats that are absolute.
func checkPointerEnc(enc byte) error {
	if enc == ehframe.PEOmit {
		return nil
	}
	switch enc & 0x0f {
	case ehframe.PEAbsptr, ehframe.PEUdata2, ehframe.PEUdata4, ehframe.PEUdata8, ehframe.PESigned, ehframe.PESdata2, ehframe.PESdata4, ehframe.PESdata8:
	case ehframe.PEUleb128, ehframe.PESleb128:
		if enc&0x70 != 0 {
			return fmt.Errorf("%w: %#02x: a relative LEB128 pointer changes size with its address", ErrEncoding, enc)
		}
	default:
		return fmt.Errorf("%w: %#02x: unknown value format", ErrEncoding, enc)
	}
	switch enc & 0x70 {
	case 0, ehframe.PEPcrel, ehframe.PETextrel, ehframe.PEDatarel:
	default:
		return fmt.Errorf("%w: %#02x: application %#x", ErrEncoding, enc, enc&0x70)
	}
	return nil
}

// appendPointer encodes v with enc for a field at fieldAddr [LSB 5.0
// §10.5.1]. nullable pointers (LSDA, personality, type entries) write 0
// as a raw zero, which readers take for a null pointer whatever the
// application. The indirect flag only says what v points at; it does not
// change the encoding.
func appendPointer(b []byte, enc byte, v, fieldAddr uint64, bases ehframe.Options, nullable bool, what string) ([]byte, error) {
	if err := checkPointerEnc(enc); err != nil {
		return b, fmt.Errorf("%s: %w", what, err)
	}
	raw := v
	if !(nullable && v == 0) {
		switch enc & 0x70 {
		case ehframe.PEPcrel:
			raw = v - fieldAddr
		case ehframe.PETextrel:
			if bases.TextBase == 0 {
				return b, fmt.Errorf("%s: %w: textrel with no text base", what, ErrEncoding)
			}
			raw = v - bases.TextBase
		case ehframe.PEDatarel:
			if bases.DataBase == 0 {
				return b, fmt.Errorf("%s: %w: datarel with no data base", what, ErrEncoding)
			}
			raw = v - bases.DataBase
		}
	}
	// Relative values are differences: check them as signed numbers
	// whatever the format, so a target behind the field fits udata4 the
	// way the reader's wrap-around addition takes it back.
	relative := enc&0x70 != 0 && !(nullable && v == 0)
	s := int64(raw)
	fits := func(bitsN uint, signed bool) bool {
		if relative || signed {
			lo, hi := int64(-1)<<(bitsN-1), int64(1)<<(bitsN-1)-1
			if relative && !signed {
				// The reader adds the zero-extended value modulo 2^64:
				// only non-negative differences survive.
				lo = 0
				hi = int64(1)<<bitsN - 1
			}
			return s >= lo && s <= hi
		}
		return raw < 1<<bitsN
	}
	var ok bool
	switch enc & 0x0f {
	case ehframe.PEUleb128:
		b, ok = appendUleb(b, raw), true
	case ehframe.PESleb128:
		b, ok = appendSleb(b, s), true
	default:
		if n := ehframe.FixedSize(enc); n > 0 {
			signed := enc&ehframe.PESigned != 0 // the sdata formats carry the bit
			ok = n == 8 || fits(uint(8*n), signed)
			for i := range n { // the low n bytes, little-endian
				b = append(b, byte(raw>>(8*i)))
			}
		}
	}
	if !ok {
		return b, fmt.Errorf("%s: %w: %#x at %#x in encoding %#02x", what, ErrRange, v, fieldAddr, enc)
	}
	return b, nil
}

// pointerSize is the size appendPointer writes for v (only LEB128
// formats depend on v, and only absolute ones are accepted).
func pointerSize(enc byte, v uint64) int {
	switch enc & 0x0f {
	case ehframe.PEUleb128:
		return ulebLen(v)
	case ehframe.PESleb128:
		return len(appendSleb(nil, int64(v)))
	}
	return ehframe.FixedSize(enc)
}

// fitsInt32 reports whether v-base fits a signed 32-bit field.
func fitsInt32(v, base uint64) bool {
	d := int64(v - base)
	return d >= math.MinInt32 && d <= math.MaxInt32
}
