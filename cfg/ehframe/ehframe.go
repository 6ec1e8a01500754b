package ehframe

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// FDE is one Frame Description Entry: the code range [Begin, End) it
// describes.
type FDE struct {
	Begin, End uint64
	Off        int // offset of the FDE (its length field) in the section
	CIEOff     int // offset of the CIE it refers to
	// LSDA is the address of the language-specific data area (the C++
	// exception table) when the CIE's augmentation has L and the FDE
	// gives one, else 0. With the DW_EH_PE_indirect flag it is the
	// address of a pointer to the LSDA, not dereferenced here.
	LSDA uint64
}

// Options gives the bases of the relative pointer encodings that need
// more than the section address. Zero means unknown; a pointer that needs
// an unknown base is an error.
type Options struct {
	// DataBase is the base of DW_EH_PE_datarel: the address of .got on
	// x86-64 [LSB 5.0 §10.5.1]. gcc and clang do not use datarel for
	// x86-64 .eh_frame, so it is usually unused.
	DataBase uint64
	// TextBase is the base of DW_EH_PE_textrel (the start of .text).
	TextBase uint64
}

// Sentinel errors; a *FormatError wraps one of them.
var (
	ErrTruncated    = errors.New("truncated")
	ErrOverflow     = errors.New("value overflows")
	ErrVersion      = errors.New("unsupported CIE version")
	ErrAugmentation = errors.New("unsupported augmentation")
	ErrEncoding     = errors.New("unsupported pointer encoding")
	ErrNoBase       = errors.New("relative pointer with unknown base")
	ErrCIEPointer   = errors.New("bad CIE pointer")
)

// FormatError locates a malformed .eh_frame or LSDA.
type FormatError struct {
	// Section names the section Off is in: "" for .eh_frame, else
	// ".gcc_except_table" (ParseLSDA).
	Section string
	Off     int    // section offset of the offending bytes
	Msg     string // what is wrong there
	Err     error  // one of the sentinels above
}

func (e *FormatError) Error() string {
	sec := "eh_frame"
	if e.Section != "" {
		sec = strings.TrimPrefix(e.Section, ".")
	}
	return fmt.Sprintf("%s at offset %#x: %s", sec, e.Off, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Pointer encodings [LSB 5.0 §10.5.1 Tables 10-5 and 10-6].
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSigned  = 0x08 // signed pointer-sized value
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePcrel   = 0x10
	peTextrel = 0x20
	peDatarel = 0x30
	peFuncrel = 0x40
	peAligned = 0x50

	peIndirect = 0x80
	peOmit     = 0xff
)

const ptrSize = 8 // ELFCLASS64

// cie holds what FDEs need from their CIE.
type cie struct {
	fdeEnc  byte // R: encoding of pc_begin/pc_range (absptr without R)
	lsdaEnc byte // L: encoding of the LSDA pointer, peOmit without L
	hasZ    bool // FDEs carry an augmentation-data length
}

// Parse returns the FDEs of an .eh_frame section, in section order. data
// is the section's contents and sectionAddr its virtual address, the base
// of pcrel pointers. Parsing stops at the first zero length (the
// terminator crtend.o appends) or at the end of data.
//
// A malformed section yields nil and a *FormatError; nothing that was
// parsed before the fault is returned.
func Parse(data []byte, sectionAddr uint64, opts Options) ([]FDE, error) {
	p := parser{addr: sectionAddr, opts: opts, cies: map[int]*cie{}}
	fdes, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	return fdes, nil
}

type parser struct {
	addr uint64
	opts Options
	cies map[int]*cie
}

func (p *parser) parse(data []byte) ([]FDE, error) {
	var fdes []FDE
	b := buf{data: data}
	for len(b.data) > 0 {
		start := b.off
		// Length: 4 bytes, or 0xffffffff and 8 bytes [LSB 5.0 §10.6.1.1].
		length := uint64(b.u32("length"))
		if b.err != nil {
			return nil, b.err
		}
		if length == 0 {
			break // terminator
		}
		if length == 0xffffffff {
			length = b.u64("extended length")
		}
		body := b.sub(length, "entry")
		if b.err != nil {
			return nil, b.err
		}
		idOff := body.off
		id := body.u32("CIE id")
		if body.err != nil {
			return nil, body.err
		}
		if id == 0 {
			c, err := p.parseCIE(&body)
			if err != nil {
				return nil, err
			}
			p.cies[start] = c
			continue
		}
		// The CIE pointer counts back from its own field to the CIE
		// [LSB 5.0 §10.6.1.2].
		cieOff := idOff - int(id)
		c := p.cies[cieOff]
		if int64(idOff)-int64(id) < 0 || c == nil {
			return nil, &FormatError{Off: idOff, Msg: fmt.Sprintf("CIE pointer %#x leads to offset %d, where no CIE was read", id, int64(idOff)-int64(id)), Err: ErrCIEPointer}
		}
		f, err := p.parseFDE(&body, c)
		if err != nil {
			return nil, err
		}
		f.Off, f.CIEOff = start, cieOff
		fdes = append(fdes, f)
	}
	return fdes, nil
}

// parseCIE reads a CIE after its id [LSB 5.0 §10.6.1.1]. Only what FDEs
// need is kept; the initial instructions are skipped.
func (p *parser) parseCIE(b *buf) (*cie, error) {
	c := &cie{fdeEnc: peAbsptr, lsdaEnc: peOmit}
	verOff := b.off
	version := b.u8("CIE version")
	if b.err == nil && version != 1 && version != 3 {
		return nil, &FormatError{Off: verOff, Msg: fmt.Sprintf("CIE version %d (want 1 or 3)", version), Err: ErrVersion}
	}
	augOff := b.off
	aug := b.cstring("augmentation string")
	if b.err != nil {
		return nil, b.err
	}
	rest := aug
	if len(rest) >= 2 && rest[:2] == "eh" {
		// Old gcc: a pointer-sized EH data pointer follows.
		b.skip(ptrSize, "eh data pointer")
		rest = rest[2:]
	}
	b.uleb("code alignment factor")
	b.sleb("data alignment factor")
	if version == 1 {
		b.u8("return address register")
	} else {
		b.uleb("return address register")
	}
	if b.err != nil {
		return nil, b.err
	}
	if rest == "" {
		return c, nil
	}
	if rest[0] != 'z' {
		return nil, &FormatError{Off: augOff, Msg: fmt.Sprintf("augmentation %q does not start with z", aug), Err: ErrAugmentation}
	}
	c.hasZ = true
	augLen := b.uleb("augmentation length")
	ad := b.sub(augLen, "augmentation data")
	if b.err != nil {
		return nil, b.err
	}
	for i := 1; i < len(rest); i++ {
		switch rest[i] {
		case 'R':
			c.fdeEnc = ad.u8("FDE pointer encoding")
			if ad.err == nil && c.fdeEnc == peOmit {
				return nil, &FormatError{Off: ad.off - 1, Msg: "FDE pointer encoding is DW_EH_PE_omit", Err: ErrEncoding}
			}
			if ad.err == nil {
				if err := checkEncoding(c.fdeEnc, false); err != nil {
					return nil, &FormatError{Off: ad.off - 1, Msg: err.Error(), Err: ErrEncoding}
				}
			}
		case 'L':
			c.lsdaEnc = ad.u8("LSDA encoding")
			if ad.err == nil && c.lsdaEnc != peOmit {
				if err := checkEncoding(c.lsdaEnc, true); err != nil {
					return nil, &FormatError{Off: ad.off - 1, Msg: err.Error(), Err: ErrEncoding}
				}
			}
		case 'P':
			encOff := ad.off
			enc := ad.u8("personality encoding")
			if ad.err != nil {
				break
			}
			if enc == peOmit {
				break
			}
			if err := checkEncoding(enc, true); err != nil {
				return nil, &FormatError{Off: encOff, Msg: err.Error(), Err: ErrEncoding}
			}
			p.pointer(&ad, enc, "personality")
		case 'S', 'B', 'G':
			// Signal frame; AArch64 pointer-authentication B key; MTE
			// tagged frame. No augmentation data.
		default:
			// z gives the length of the data, so the rest of it can be
			// skipped [LSB 5.0 §10.6.1.1]; but if R or L comes later,
			// where their bytes are is unknown.
			if !hasByte(rest[i:], 'R') && !hasByte(rest[i:], 'L') {
				i = len(rest)
				break
			}
			return nil, &FormatError{Off: augOff, Msg: fmt.Sprintf("augmentation %q: unknown %q before R or L", aug, rest[i]), Err: ErrAugmentation}
		}
		if ad.err != nil {
			return nil, ad.err
		}
	}
	return c, nil
}

func hasByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// parseFDE reads an FDE after its CIE pointer [LSB 5.0 §10.6.1.2].
func (p *parser) parseFDE(b *buf, c *cie) (FDE, error) {
	var f FDE
	beginOff := b.off
	f.Begin = p.pointer(b, c.fdeEnc, "pc_begin")
	// pc_range uses the value format of pc_begin, never its application.
	rng := p.pointer(b, c.fdeEnc&0x0f, "pc_range")
	if b.err != nil {
		return f, b.err
	}
	end, carry := bits.Add64(f.Begin, rng, 0)
	if carry != 0 {
		return f, &FormatError{Off: beginOff, Msg: fmt.Sprintf("range %#x+%#x wraps past 2^64", f.Begin, rng), Err: ErrOverflow}
	}
	f.End = end
	if !c.hasZ {
		return f, nil
	}
	augLen := b.uleb("FDE augmentation length")
	ad := b.sub(augLen, "FDE augmentation data")
	if b.err != nil {
		return f, b.err
	}
	if c.lsdaEnc != peOmit {
		f.LSDA = p.pointer(&ad, c.lsdaEnc, "LSDA")
		if ad.err != nil {
			return f, ad.err
		}
	}
	return f, nil
}

// checkEncoding rejects encodings Parse cannot decode, when the CIE is
// read rather than at the first FDE. indirectOK is set for P and L, the
// pointers that may point at a pointer.
func checkEncoding(enc byte, indirectOK bool) error {
	if enc&peIndirect != 0 && !indirectOK {
		return fmt.Errorf("encoding %#02x: indirect FDE address", enc)
	}
	switch enc & 0x0f {
	case peAbsptr, peUleb128, peUdata2, peUdata4, peUdata8, peSigned,
		peSleb128, peSdata2, peSdata4, peSdata8:
	default:
		return fmt.Errorf("encoding %#02x: unknown value format %#x", enc, enc&0x0f)
	}
	switch enc & 0x70 {
	case 0, pePcrel, peTextrel, peDatarel:
	case peAligned:
		if enc&0x0f != peAbsptr {
			return fmt.Errorf("encoding %#02x: aligned with a value format", enc)
		}
	default:
		// funcrel is relative to the start of the function, which is
		// what pc_begin itself would give; it has no meaning here.
		return fmt.Errorf("encoding %#02x: unsupported application %#x", enc, enc&0x70)
	}
	return nil
}

// pointer decodes one DW_EH_PE-encoded pointer at the cursor. The
// indirect flag is ignored: the result is the address of the pointer,
// not its target.
func (p *parser) pointer(b *buf, enc byte, what string) uint64 {
	if b.err != nil {
		return 0
	}
	off := b.off
	if err := checkEncoding(enc, true); err != nil {
		b.fail(ErrEncoding, "%s: %v", what, err)
		return 0
	}
	fieldAddr := p.addr + uint64(off)
	if enc&0x70 == peAligned {
		// Align the field's address to the pointer size, then read an
		// absolute pointer.
		pad := (ptrSize - fieldAddr%ptrSize) % ptrSize
		b.skip(pad, what+" alignment")
		return b.u64(what)
	}
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8:
		v = b.u64(what)
	case peUleb128:
		v = b.uleb(what)
	case peUdata2:
		v = uint64(b.u16(what))
	case peUdata4:
		v = uint64(b.u32(what))
	case peSigned, peSdata8:
		v = b.u64(what)
	case peSleb128:
		v = uint64(b.sleb(what))
	case peSdata2:
		v = uint64(int64(int16(b.u16(what))))
	case peSdata4:
		v = uint64(int64(int32(b.u32(what))))
	}
	if b.err != nil {
		return 0
	}
	switch enc & 0x70 {
	case pePcrel:
		v += fieldAddr
	case peTextrel:
		if p.opts.TextBase == 0 {
			b.off = off
			b.fail(ErrNoBase, "%s: textrel pointer and Options.TextBase is not set", what)
			return 0
		}
		v += p.opts.TextBase
	case peDatarel:
		if p.opts.DataBase == 0 {
			b.off = off
			b.fail(ErrNoBase, "%s: datarel pointer and Options.DataBase is not set", what)
			return 0
		}
		v += p.opts.DataBase
	}
	return v
}
