package ehframe

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
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

// Pointer encodings (DW_EH_PE_*) [LSB 5.0 §10.5.1 Tables 10-5 and 10-6],
// shared with the writer (rewriter/ehwrite).
const (
	PEAbsptr  = 0x00
	PEUleb128 = 0x01
	PEUdata2  = 0x02
	PEUdata4  = 0x03
	PEUdata8  = 0x04
	PESigned  = 0x08 // signed pointer-sized value
	PESleb128 = 0x09
	PESdata2  = 0x0a
	PESdata4  = 0x0b
	PESdata8  = 0x0c

	PEPcrel   = 0x10
	PETextrel = 0x20
	PEDatarel = 0x30
	PEFuncrel = 0x40
	PEAligned = 0x50

	PEIndirect = 0x80
	PEOmit     = 0xff
)

const ptrSize = 8 // ELFCLASS64

// CIE is a Common Information Entry [LSB 5.0 §10.6.1.1]: what the FDEs
// that refer to it share.
type CIE struct {
	Off          int    // offset of the CIE (its length field) in the section
	Version      uint8  // 1 or 3
	Augmentation string // e.g. "zR", "zPLR"
	CodeAlign    uint64 // code alignment factor: advance_loc deltas are multiplied by it
	DataAlign    int64  // data alignment factor: register offsets are multiplied by it
	RAReg        uint64 // the return-address column (16 on x86-64)
	// Pointer encodings from the augmentation: FDEEnc of pc_begin and
	// pc_range (absptr without R), LSDAEnc of the FDEs' LSDA pointers,
	// PersonalityEnc of Personality. 0xff (DW_EH_PE_omit) when absent.
	FDEEnc, LSDAEnc, PersonalityEnc byte
	// Personality is the decoded personality pointer. With
	// DW_EH_PE_indirect it is the address of the slot holding the
	// routine's address, not dereferenced.
	Personality uint64
	Signal      bool   // S: the frames are signal trampolines
	Initial     []byte // initial instructions (CFA program run before each FDE's)
	Raw         []byte // the CIE's bytes, from its length field to its end

	hasZ     bool    // FDEs carry an augmentation-data length
	persOff  int     // offset of the personality pointer in Raw, -1 without one
	opts     Options // the bases its pointers were decoded with
	dataAddr uint64  // address of the section the CIE was read from
}

// Bases returns the Options the CIE's section was parsed with: the bases
// of its datarel and textrel pointers, which a writer needs to encode
// pointers the same way.
func (c *CIE) Bases() Options { return c.opts }

// Entry is one FDE with its CIE and call frame program.
type Entry struct {
	FDE
	CIE     *CIE
	Program []byte // the FDE's call frame instructions [DWARF5 §6.4.2]

	raw      []byte // the FDE's bytes, from its length field to its end
	idOff    int    // offset of the CIE pointer in raw
	beginOff int    // offset of pc_begin in raw
	lsdaOff  int    // offset of the LSDA pointer in raw, -1 without one
}

// Raw returns the FDE's bytes, from its length field to its end.
func (e *Entry) Raw() []byte { return e.raw }

// Frame is a whole .eh_frame section.
type Frame struct {
	Addr    uint64   // the section's address
	CIEs    []*CIE   // in section order
	Entries []*Entry // sorted by Begin (then End, then section offset)

	// byPC indexes the entries with a non-empty range, sorted by Begin,
	// and maxEnd[i] is the largest End among byPC[:i+1], so that Find
	// stops walking back as soon as no earlier entry can cover pc.
	byPC   []*Entry
	maxEnd []uint64
}

// Parse returns the FDEs of an .eh_frame section, in section order. data
// is the section's contents and sectionAddr its virtual address, the base
// of pcrel pointers. Parsing stops at the first zero length (the
// terminator crtend.o appends) or at the end of data.
//
// A malformed section yields nil and a *FormatError; nothing that was
// parsed before the fault is returned.
func Parse(data []byte, sectionAddr uint64, opts Options) ([]FDE, error) {
	p := parser{addr: sectionAddr, opts: opts, cies: map[int]*CIE{}}
	entries, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	var fdes []FDE
	for _, e := range entries {
		fdes = append(fdes, e.FDE)
	}
	return fdes, nil
}

// ParseFrame parses a whole .eh_frame section: every CIE and FDE with
// its call frame program, for unwinding rules (Entry.Rows) and for
// copying the section elsewhere (rewriter/ehwrite). Arguments and errors
// are those of Parse. The programs are not run here; Rows reports their
// errors.
func ParseFrame(data []byte, sectionAddr uint64, opts Options) (*Frame, error) {
	p := parser{addr: sectionAddr, opts: opts, cies: map[int]*CIE{}}
	entries, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	f := &Frame{Addr: sectionAddr, CIEs: p.cieList, Entries: entries}
	slices.SortStableFunc(f.Entries, func(a, b *Entry) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End), cmp.Compare(a.Off, b.Off))
	})
	for _, e := range f.Entries {
		if e.End > e.Begin {
			f.byPC = append(f.byPC, e)
			end := e.End
			if n := len(f.maxEnd); n > 0 && f.maxEnd[n-1] > end {
				end = f.maxEnd[n-1]
			}
			f.maxEnd = append(f.maxEnd, end)
		}
	}
	return f, nil
}

// Find returns the entry whose range holds pc, or nil. Where ranges
// overlap (they should not), the one that starts last wins.
func (f *Frame) Find(pc uint64) *Entry {
	e, _ := f.FindUntil(pc)
	return e
}

// FindUntil is Find, and also returns the address up to which Find
// returns the same for every address from pc on: the end of the entry,
// or the start of the next one, whichever comes first. Callers that
// look up rising addresses look again only past it.
func (f *Frame) FindUntil(pc uint64) (*Entry, uint64) {
	i := sort.Search(len(f.byPC), func(i int) bool { return f.byPC[i].Begin > pc })
	until := ^uint64(0)
	if i < len(f.byPC) {
		until = f.byPC[i].Begin
	}
	for i--; i >= 0 && f.maxEnd[i] > pc; i-- {
		if e := f.byPC[i]; pc < e.End {
			return e, min(until, e.End)
		}
	}
	return nil, until
}

type parser struct {
	addr    uint64
	opts    Options
	cies    map[int]*CIE
	cieList []*CIE
}

func (p *parser) parse(data []byte) ([]*Entry, error) {
	var entries []*Entry
	b := newBuf(data, 0)
	for len(b.Data) > 0 {
		start := b.Off
		// Length: 4 bytes, or 0xffffffff and 8 bytes [LSB 5.0 §10.6.1.1].
		length := uint64(b.U32("length"))
		if b.Err != nil {
			return nil, b.Err
		}
		if length == 0 {
			break // terminator
		}
		if length == 0xffffffff {
			length = b.U64("extended length")
		}
		body := b.sub(length, "entry")
		if b.Err != nil {
			return nil, b.Err
		}
		raw := data[start:b.Off]
		idOff := body.Off
		id := body.U32("CIE id")
		if body.Err != nil {
			return nil, body.Err
		}
		if id == 0 {
			c, err := p.parseCIE(&body)
			if err != nil {
				return nil, err
			}
			c.Off, c.Raw = start, raw
			if c.persOff >= 0 {
				c.persOff -= start
			}
			p.cies[start] = c
			p.cieList = append(p.cieList, c)
			continue
		}
		// The CIE pointer counts back from its own field to the CIE
		// [LSB 5.0 §10.6.1.2].
		cieOff := idOff - int(id)
		c := p.cies[cieOff]
		if int64(idOff)-int64(id) < 0 || c == nil {
			return nil, &FormatError{Off: idOff, Msg: fmt.Sprintf("CIE pointer %#x leads to offset %d, where no CIE was read", id, int64(idOff)-int64(id)), Err: ErrCIEPointer}
		}
		e, err := p.parseFDE(&body, c)
		if err != nil {
			return nil, err
		}
		e.Off, e.CIEOff = start, cieOff
		e.raw, e.idOff = raw, idOff-start
		e.beginOff -= start
		if e.lsdaOff >= 0 {
			e.lsdaOff -= start
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// parseCIE reads a CIE after its id [LSB 5.0 §10.6.1.1].
func (p *parser) parseCIE(b *buf) (*CIE, error) {
	c := &CIE{FDEEnc: PEAbsptr, LSDAEnc: PEOmit, PersonalityEnc: PEOmit, persOff: -1, opts: p.opts, dataAddr: p.addr}
	verOff := b.Off
	c.Version = b.U8("CIE version")
	if b.Err == nil && c.Version != 1 && c.Version != 3 {
		return nil, &FormatError{Off: verOff, Msg: fmt.Sprintf("CIE version %d (want 1 or 3)", c.Version), Err: ErrVersion}
	}
	augOff := b.Off
	aug := b.cstring("augmentation string")
	if b.Err != nil {
		return nil, b.Err
	}
	c.Augmentation = aug
	rest := aug
	if len(rest) >= 2 && rest[:2] == "eh" {
		// Old gcc: a pointer-sized EH data pointer follows.
		b.Bytes(ptrSize, "eh data pointer")
		rest = rest[2:]
	}
	c.CodeAlign = b.uleb("code alignment factor")
	c.DataAlign = b.sleb("data alignment factor")
	if c.Version == 1 {
		c.RAReg = uint64(b.U8("return address register"))
	} else {
		c.RAReg = b.uleb("return address register")
	}
	if b.Err != nil {
		return nil, b.Err
	}
	if rest == "" {
		c.Initial = b.Data
		return c, nil
	}
	if rest[0] != 'z' {
		return nil, &FormatError{Off: augOff, Msg: fmt.Sprintf("augmentation %q does not start with z", aug), Err: ErrAugmentation}
	}
	c.hasZ = true
	augLen := b.uleb("augmentation length")
	ad := b.sub(augLen, "augmentation data")
	if b.Err != nil {
		return nil, b.Err
	}
	c.Initial = b.Data
	for i := 1; i < len(rest); i++ {
		switch rest[i] {
		case 'R':
			c.FDEEnc = ad.U8("FDE pointer encoding")
			if ad.Err == nil && c.FDEEnc == PEOmit {
				return nil, &FormatError{Off: ad.Off - 1, Msg: "FDE pointer encoding is DW_EH_PE_omit", Err: ErrEncoding}
			}
			if ad.Err == nil {
				if err := checkEncoding(c.FDEEnc, false); err != nil {
					return nil, &FormatError{Off: ad.Off - 1, Msg: err.Error(), Err: ErrEncoding}
				}
			}
		case 'L':
			c.LSDAEnc = ad.U8("LSDA encoding")
			if ad.Err == nil && c.LSDAEnc != PEOmit {
				if err := checkEncoding(c.LSDAEnc, true); err != nil {
					return nil, &FormatError{Off: ad.Off - 1, Msg: err.Error(), Err: ErrEncoding}
				}
			}
		case 'P':
			encOff := ad.Off
			enc := ad.U8("personality encoding")
			if ad.Err != nil {
				break
			}
			c.PersonalityEnc = enc
			if enc == PEOmit {
				break
			}
			if err := checkEncoding(enc, true); err != nil {
				return nil, &FormatError{Off: encOff, Msg: err.Error(), Err: ErrEncoding}
			}
			c.persOff = ad.Off
			c.Personality = p.pointerOrZero(&ad, enc, "personality")
		case 'S':
			c.Signal = true
		case 'B', 'G':
			// AArch64 pointer-authentication B key; MTE tagged frame.
			// No augmentation data.
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
		if ad.Err != nil {
			return nil, ad.Err
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
// Field offsets in the result are section offsets; parse rebases them.
func (p *parser) parseFDE(b *buf, c *CIE) (*Entry, error) {
	e := &Entry{CIE: c, lsdaOff: -1}
	f := &e.FDE
	beginOff := b.Off
	if c.FDEEnc&0x70 == PEAligned {
		// The field starts after the padding.
		beginOff += int((ptrSize - (p.addr+uint64(beginOff))%ptrSize) % ptrSize)
	}
	e.beginOff = beginOff
	f.Begin = p.pointer(b, c.FDEEnc, "pc_begin")
	// pc_range uses the value format of pc_begin, never its application.
	rng := p.pointer(b, c.FDEEnc&0x0f, "pc_range")
	if b.Err != nil {
		return nil, b.Err
	}
	end, carry := bits.Add64(f.Begin, rng, 0)
	if carry != 0 {
		return nil, &FormatError{Off: beginOff, Msg: fmt.Sprintf("range %#x+%#x wraps past 2^64", f.Begin, rng), Err: ErrOverflow}
	}
	f.End = end
	if !c.hasZ {
		e.Program = b.Data
		return e, nil
	}
	augLen := b.uleb("FDE augmentation length")
	ad := b.sub(augLen, "FDE augmentation data")
	if b.Err != nil {
		return nil, b.Err
	}
	e.Program = b.Data
	if c.LSDAEnc != PEOmit {
		e.lsdaOff = ad.Off
		f.LSDA = p.pointerOrZero(&ad, c.LSDAEnc, "LSDA")
		if ad.Err != nil {
			return nil, ad.Err
		}
	}
	return e, nil
}

// pointerOrZero is pointer with libgcc's rule for the LSDA and
// personality pointers (read_encoded_value_with_base): a raw value of
// zero is a null pointer whatever the application.
func (p *parser) pointerOrZero(b *buf, enc byte, what string) uint64 {
	if enc&0x70 != PEAligned {
		probe := *b
		if probe.pointerRaw(enc, what) == 0 && probe.Err == nil {
			*b = probe
			return 0
		}
	}
	return p.pointer(b, enc, what)
}

// FixedSize is the size of a value in enc's value format (its low four
// bits): 8, 4 or 2 bytes, or 0 for the LEB128 formats, whose size
// depends on the value, and unknown ones.
func FixedSize(enc byte) int {
	switch enc & 0x0f {
	case PEAbsptr, PEUdata8, PESigned, PESdata8:
		return 8
	case PEUdata4, PESdata4:
		return 4
	case PEUdata2, PESdata2:
		return 2
	}
	return 0
}

// pointerRaw reads the value of a DW_EH_PE-encoded pointer in its value
// format (the low four bits of enc), without applying its base.
func (b *buf) pointerRaw(enc byte, what string) uint64 {
	switch enc & 0x0f {
	case PEAbsptr, PEUdata8, PESigned, PESdata8:
		return b.U64(what)
	case PEUleb128:
		return b.uleb(what)
	case PEUdata2:
		return uint64(b.U16(what))
	case PEUdata4:
		return uint64(b.U32(what))
	case PESleb128:
		return uint64(b.sleb(what))
	case PESdata2:
		return uint64(int64(int16(b.U16(what))))
	case PESdata4:
		return uint64(int64(int32(b.U32(what))))
	}
	b.Fail(ErrEncoding, "%s: unknown value format %#x", what, enc&0x0f)
	return 0
}

// checkEncoding rejects encodings Parse cannot decode, when the CIE is
// read rather than at the first FDE. indirectOK is set for P and L, the
// pointers that may point at a pointer.
func checkEncoding(enc byte, indirectOK bool) error {
	if enc&PEIndirect != 0 && !indirectOK {
		return fmt.Errorf("encoding %#02x: indirect FDE address", enc)
	}
	switch enc & 0x0f {
	case PEAbsptr, PEUleb128, PEUdata2, PEUdata4, PEUdata8, PESigned,
		PESleb128, PESdata2, PESdata4, PESdata8:
	default:
		return fmt.Errorf("encoding %#02x: unknown value format %#x", enc, enc&0x0f)
	}
	switch enc & 0x70 {
	case 0, PEPcrel, PETextrel, PEDatarel:
	case PEAligned:
		if enc&0x0f != PEAbsptr {
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
	if b.Err != nil {
		return 0
	}
	off := b.Off
	if err := checkEncoding(enc, true); err != nil {
		b.Fail(ErrEncoding, "%s: %v", what, err)
		return 0
	}
	fieldAddr := p.addr + uint64(off)
	if enc&0x70 == PEAligned {
		// Align the field's address to the pointer size, then read an
		// absolute pointer.
		pad := (ptrSize - fieldAddr%ptrSize) % ptrSize
		b.Bytes(pad, what+" alignment")
		return b.U64(what)
	}
	v := b.pointerRaw(enc, what)
	if b.Err != nil {
		return 0
	}
	switch enc & 0x70 {
	case PEPcrel:
		v += fieldAddr
	case PETextrel, PEDatarel:
		base, kind := p.opts.TextBase, "textrel pointer and Options.TextBase"
		if enc&0x70 == PEDatarel {
			base, kind = p.opts.DataBase, "datarel pointer and Options.DataBase"
		}
		if base == 0 {
			b.Off = off
			b.Fail(ErrNoBase, "%s: %s is not set", what, kind)
			return 0
		}
		v += base
	}
	return v
}
