package ehwrite

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/blpp/blpp/cfg/ehframe"
)

// HdrEntry is one line of the .eh_frame_hdr search table: an FDE's
// first address and the address of the FDE itself.
type HdrEntry struct {
	Begin, FDEAddr uint64
}

// Builder accumulates a new .eh_frame section to be loaded at addr.
// Entries are laid out in the order they are added; every CIE comes
// before the FDEs that use it (libgcc's CIE pointer counts backwards).
type Builder struct {
	addr  uint64
	buf   []byte
	cies  map[*ehframe.CIE]int // original CIE -> offset of its copy
	table []HdrEntry
}

// entryAlign is the alignment of every entry's size: gcc and ld pad
// CIEs and FDEs to the pointer size with DW_CFA_nop.
const entryAlign = 8

// NewBuilder starts a section that will be loaded at addr. addr should
// be 8-aligned: entries are padded to 8-byte multiples from the start.
func NewBuilder(addr uint64) *Builder {
	return &Builder{addr: addr, cies: map[*ehframe.CIE]int{}}
}

// CopyFrame re-emits every CIE and FDE of f, in f's section order, at
// the builder's address. Pointers keep their encodings and their
// targets: pc_begin, LSDA and personality pointers are re-encoded for
// their new field addresses. Programs are copied byte for byte (their
// DW_CFA_set_loc operands, which gcc and clang never emit, are not
// re-encoded).
func (b *Builder) CopyFrame(f *ehframe.Frame) error {
	type item struct {
		off int
		cie *ehframe.CIE
		fde *ehframe.Entry
	}
	var items []item
	for _, c := range f.CIEs {
		items = append(items, item{off: c.Off, cie: c})
	}
	for _, e := range f.Entries {
		items = append(items, item{off: e.Off, fde: e})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].off < items[j].off })
	for _, it := range items {
		if it.cie != nil {
			if _, err := b.cieCopy(it.cie); err != nil {
				return fmt.Errorf("copy CIE at offset %#x: %w", it.cie.Off, err)
			}
			continue
		}
		e := it.fde
		if err := b.addFDE(e.CIE, e.Begin, e.End, e.LSDA, e.Program); err != nil {
			return fmt.Errorf("copy FDE at offset %#x [%#x,%#x): %w", e.Off, e.Begin, e.End, err)
		}
	}
	return nil
}

// AddFDE adds an FDE for [begin, end) whose program reproduces rows:
// rows[0].Addr must be begin, addresses ascend and stay below end. The
// program starts from cie's initial state and, at each row, advances and
// states only what changed; a rule that returns to the CIE's initial
// rule is written as DW_CFA_restore. The FDE refers to the copy of cie
// in this section (emitted at the first use, once per original CIE).
// lsda is the address of the function's LSDA, or 0; a non-zero lsda
// needs a CIE with an L augmentation.
func (b *Builder) AddFDE(cie *ehframe.CIE, begin, end uint64, rows []ehframe.Row, lsda uint64) error {
	prog, err := Program(cie, begin, end, rows)
	return b.AddFDEProgram(cie, begin, end, prog, err, lsda)
}

// AddFDEProgram is AddFDE with the program made beforehand: prog and
// progErr are what Program returned for the FDE's rows. The program
// does not depend on where the code is, only on its rows' distances
// from begin, so it can be made before the code has its final address.
func (b *Builder) AddFDEProgram(cie *ehframe.CIE, begin, end uint64, prog []byte, progErr error, lsda uint64) error {
	if end < begin {
		return fmt.Errorf("FDE [%#x,%#x): %w: end before begin", begin, end, ErrRows)
	}
	if lsda != 0 && cie.LSDAEnc == ehframe.PEOmit {
		return fmt.Errorf("FDE [%#x,%#x): %w: an LSDA needs a CIE with L (augmentation %q)", begin, end, ErrAugmentation, cie.Augmentation)
	}
	if progErr != nil {
		return fmt.Errorf("FDE [%#x,%#x): %w", begin, end, progErr)
	}
	if err := b.addFDE(cie, begin, end, lsda, prog); err != nil {
		return fmt.Errorf("FDE [%#x,%#x): %w", begin, end, err)
	}
	return nil
}

// Finish returns the section, ended by a zero terminator, and one
// HdrEntry per FDE with a non-empty range (an empty FDE, such as one
// left by a discarded section, describes no code and would only collide
// with others in .eh_frame_hdr), in the order they were added. The
// Builder hands its arrays over: it is not to be used after.
func (b *Builder) Finish() ([]byte, []HdrEntry) {
	out, table := append(b.buf, 0, 0, 0, 0), b.table
	b.buf, b.table = nil, nil
	return out, table
}

// maxFDEFields bounds an FDE's bytes besides its program: the length,
// the CIE pointer, pc_begin and pc_range (8 bytes at most each), the
// augmentation data's size and LSDA pointer, and the padding.
const maxFDEFields = 4 + 4 + 8 + 8 + 10 + 8 + entryAlign - 1

// Reserve makes room for a copy of f (CopyFrame) and for fdes more FDEs
// whose programs take progBytes in all, so that a large section (a
// large library's is some 30 MB) is written without its arrays growing
// by doubling. It is a hint: nothing breaks if more is added.
func (b *Builder) Reserve(f *ehframe.Frame, fdes, progBytes int) {
	n, entries := progBytes+fdes*maxFDEFields+4, fdes
	if f != nil {
		for _, c := range f.CIEs {
			n += 64 + len(c.Augmentation) + len(c.Initial)
		}
		for _, e := range f.Entries {
			n += maxFDEFields + len(e.Program)
		}
		entries += len(f.Entries)
	}
	b.buf = slices.Grow(b.buf, n)
	b.table = slices.Grow(b.table, entries)
}

// cieCopy emits a copy of c unless there is one, and returns its offset.
func (b *Builder) cieCopy(c *ehframe.CIE) (int, error) {
	if off, ok := b.cies[c]; ok {
		return off, nil
	}
	start := len(b.buf)
	body := []byte{0, 0, 0, 0} // CIE id
	body = append(body, c.Version)
	aug := c.Augmentation
	if len(aug) >= 2 && aug[:2] == "eh" {
		return 0, fmt.Errorf("%w: %q (pre-z gcc)", ErrAugmentation, aug)
	}
	if aug != "" && aug[0] != 'z' {
		return 0, fmt.Errorf("%w: %q", ErrAugmentation, aug)
	}
	body = append(append(body, aug...), 0)
	body = appendUleb(body, c.CodeAlign)
	body = appendSleb(body, c.DataAlign)
	switch c.Version {
	case 1:
		if c.RAReg > 0xff {
			return 0, fmt.Errorf("%w: return address register %d in a version 1 CIE", ErrRange, c.RAReg)
		}
		body = append(body, byte(c.RAReg))
	default:
		body = appendUleb(body, c.RAReg)
	}
	if aug != "" {
		// The augmentation data: its size is known before the
		// personality's field address is, since every accepted encoding
		// has an address-independent size.
		size := 0
		for _, l := range aug[1:] {
			switch l {
			case 'P':
				if err := checkPointerEnc(c.PersonalityEnc); err != nil {
					return 0, fmt.Errorf("personality: %w", err)
				}
				size++
				if c.PersonalityEnc != ehframe.PEOmit {
					size += pointerSize(c.PersonalityEnc, c.Personality)
				}
			case 'L', 'R':
				size++
			case 'S', 'B', 'G':
			default:
				return 0, fmt.Errorf("%w: %q: cannot re-emit %q", ErrAugmentation, aug, l)
			}
		}
		body = appendUleb(body, uint64(size))
		for _, l := range aug[1:] {
			switch l {
			case 'P':
				body = append(body, c.PersonalityEnc)
				if c.PersonalityEnc != ehframe.PEOmit {
					field := b.addr + uint64(start+4+len(body))
					var err error
					if body, err = appendPointer(body, c.PersonalityEnc, c.Personality, field, c.Bases(), true, "personality"); err != nil {
						return 0, err
					}
				}
			case 'L':
				body = append(body, c.LSDAEnc)
			case 'R':
				body = append(body, c.FDEEnc)
			}
		}
	}
	body = append(body, c.Initial...)
	b.emit(body)
	b.cies[c] = start
	return start, nil
}

// addFDE emits an FDE for c's copy with the given program.
func (b *Builder) addFDE(c *ehframe.CIE, begin, end, lsda uint64, prog []byte) error {
	if err := checkPointerEnc(c.FDEEnc); err != nil {
		return fmt.Errorf("pc_begin: %w", err)
	}
	if c.FDEEnc&ehframe.PEIndirect != 0 || c.FDEEnc == ehframe.PEOmit {
		return fmt.Errorf("pc_begin: %w: %#02x", ErrEncoding, c.FDEEnc)
	}
	cieOff, err := b.cieCopy(c)
	if err != nil {
		return fmt.Errorf("CIE at offset %#x: %w", c.Off, err)
	}
	// The entry is written in place: its length field first, filled in
	// by endEntry, so no body is made and copied per FDE (a large
	// library's section has a hundred thousand). An error takes the
	// partial entry back out.
	start := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0)
	if err := b.fdeBody(c, start, cieOff, begin, end, lsda); err != nil {
		b.buf = b.buf[:start]
		return err
	}
	b.buf = append(b.buf, prog...)
	b.endEntry(start)
	if end > begin {
		b.table = append(b.table, HdrEntry{Begin: begin, FDEAddr: b.addr + uint64(start)})
	}
	return nil
}

// fdeBody appends the fields of the FDE starting at offset start (its
// length field written) up to its program.
func (b *Builder) fdeBody(c *ehframe.CIE, start, cieOff int, begin, end, lsda uint64) error {
	// The CIE pointer: from this field back to the CIE [LSB 5.0
	// §10.6.1.2].
	var err error
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(start+4-cieOff))
	b.buf, err = appendPointer(b.buf, c.FDEEnc, begin, b.addr+uint64(len(b.buf)), c.Bases(), false, "pc_begin")
	if err != nil {
		return err
	}
	b.buf, err = appendPointer(b.buf, c.FDEEnc&0x0f, end-begin, 0, c.Bases(), false, "pc_range")
	if err != nil {
		return err
	}
	if len(c.Augmentation) > 0 && c.Augmentation[0] == 'z' {
		if c.LSDAEnc == ehframe.PEOmit {
			b.buf = appendUleb(b.buf, 0)
		} else {
			if err := checkPointerEnc(c.LSDAEnc); err != nil {
				return fmt.Errorf("LSDA: %w", err)
			}
			b.buf = appendUleb(b.buf, uint64(pointerSize(c.LSDAEnc, lsda)))
			b.buf, err = appendPointer(b.buf, c.LSDAEnc, lsda, b.addr+uint64(len(b.buf)), c.Bases(), true, "LSDA")
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// endEntry pads the entry that starts at offset start with DW_CFA_nop
// to a multiple of entryAlign and fills in its length field.
func (b *Builder) endEntry(start int) {
	for (len(b.buf)-start)%entryAlign != 0 {
		b.buf = append(b.buf, 0) // DW_CFA_nop
	}
	binary.LittleEndian.PutUint32(b.buf[start:], uint32(len(b.buf)-start-4))
}

// emit appends an entry: a 4-byte length and body, padded with DW_CFA_nop
// to a multiple of entryAlign.
func (b *Builder) emit(body []byte) {
	start := len(b.buf)
	b.buf = append(append(b.buf, 0, 0, 0, 0), body...)
	b.endEntry(start)
}
