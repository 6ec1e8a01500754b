package elfw

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math/bits"
)

// Sizes of the ELF64 on-disk structures [gABI ch.4, ch.5].
const (
	ehdrSize = 64
	phdrSize = 56
	shdrSize = 64
	dynSize  = 16
)

// Offsets of the ELF64 header fields Write reads or rewrites [gABI ch.4
// "ELF Header"].
const (
	offType      = 16
	offMachine   = 18
	offEntry     = 24
	offPhoff     = 32
	offShoff     = 40
	offEhsize    = 52
	offPhentsize = 54
	offPhnum     = 56
	offShentsize = 58
	offShnum     = 60
	offShstrndx  = 62
)

// Special section indices and counts [gABI ch.4 "Sections"].
const (
	shnLoreserve = 0xff00 // SHN_LORESERVE: counts from here are extended
	shnXindex    = 0xffff // SHN_XINDEX in e_shstrndx: real index in sh_link of section 0
	pnXnum       = 0xffff // PN_XNUM in e_phnum: real count in sh_info of section 0
)

var le = binary.LittleEndian

// prog is a decoded program header entry (Elf64_Phdr).
type prog struct {
	Type   elf.ProgType
	Flags  elf.ProgFlag
	Off    uint64
	Addr   uint64 // p_vaddr
	PAddr  uint64 // p_paddr
	Filesz uint64
	Memsz  uint64
	Align  uint64
}

func decodeProg(b []byte) prog {
	return prog{
		Type:   elf.ProgType(le.Uint32(b[0:])),
		Flags:  elf.ProgFlag(le.Uint32(b[4:])),
		Off:    le.Uint64(b[8:]),
		Addr:   le.Uint64(b[16:]),
		PAddr:  le.Uint64(b[24:]),
		Filesz: le.Uint64(b[32:]),
		Memsz:  le.Uint64(b[40:]),
		Align:  le.Uint64(b[48:]),
	}
}

func (p prog) encode(b []byte) {
	le.PutUint32(b[0:], uint32(p.Type))
	le.PutUint32(b[4:], uint32(p.Flags))
	le.PutUint64(b[8:], p.Off)
	le.PutUint64(b[16:], p.Addr)
	le.PutUint64(b[24:], p.PAddr)
	le.PutUint64(b[32:], p.Filesz)
	le.PutUint64(b[40:], p.Memsz)
	le.PutUint64(b[48:], p.Align)
}

// sect is a decoded section header entry (Elf64_Shdr).
type sect struct {
	Name    uint32
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Addr    uint64
	Off     uint64
	Size    uint64
	Link    uint32
	Info    uint32
	Align   uint64
	Entsize uint64
}

func decodeSect(b []byte) sect {
	return sect{
		Name:    le.Uint32(b[0:]),
		Type:    elf.SectionType(le.Uint32(b[4:])),
		Flags:   elf.SectionFlag(le.Uint64(b[8:])),
		Addr:    le.Uint64(b[16:]),
		Off:     le.Uint64(b[24:]),
		Size:    le.Uint64(b[32:]),
		Link:    le.Uint32(b[40:]),
		Info:    le.Uint32(b[44:]),
		Align:   le.Uint64(b[48:]),
		Entsize: le.Uint64(b[56:]),
	}
}

func (s sect) encode(b []byte) {
	le.PutUint32(b[0:], s.Name)
	le.PutUint32(b[4:], uint32(s.Type))
	le.PutUint64(b[8:], uint64(s.Flags))
	le.PutUint64(b[16:], s.Addr)
	le.PutUint64(b[24:], s.Off)
	le.PutUint64(b[32:], s.Size)
	le.PutUint32(b[40:], s.Link)
	le.PutUint32(b[44:], s.Info)
	le.PutUint64(b[48:], s.Align)
	le.PutUint64(b[56:], s.Entsize)
}

// image is the parsed, validated input executable. It keeps only what Write
// needs: the program headers, the section headers and the name table, and
// the dynamic section's location. Everything else is copied byte for byte.
type image struct {
	data  []byte
	typ   elf.Type
	entry uint64
	phoff uint64
	progs []prog
	loads []int // indices into progs of the PT_LOAD entries, in table order

	shoff    uint64
	sects    []sect // empty when the file has no section header table
	shstrndx int    // index of the section name table; 0 when there is none

	interp bool // has PT_INTERP: the dynamic loader runs DT_FINI
	dyn    int  // index into progs of PT_DYNAMIC, -1 without one
}

// add returns a+b and whether it did not overflow.
func add(a, b uint64) (uint64, bool) {
	s, c := bits.Add64(a, b, 0)
	return s, c == 0
}

// inFile reports whether [off, off+size) lies inside a file of length n.
func inFile(off, size uint64, n int) bool {
	end, ok := add(off, size)
	return ok && end <= uint64(n)
}

// parse decodes and checks the headers of an executable. It checks what
// the kernel's loader and Write depend on; it does not vouch for sections
// Write only copies.
func parse(data []byte) (*image, error) {
	if len(data) < ehdrSize {
		return nil, malformed(0, "file of %d bytes is shorter than an ELF header", len(data))
	}
	if string(data[:4]) != elf.ELFMAG {
		return nil, unsupported(0, "no ELF magic")
	}
	if elf.Class(data[elf.EI_CLASS]) != elf.ELFCLASS64 {
		return nil, unsupported(elf.EI_CLASS, "class %v, want ELFCLASS64", elf.Class(data[elf.EI_CLASS]))
	}
	if elf.Data(data[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, unsupported(elf.EI_DATA, "data encoding %v, want ELFDATA2LSB", elf.Data(data[elf.EI_DATA]))
	}
	if elf.Version(data[elf.EI_VERSION]) != elf.EV_CURRENT {
		return nil, malformed(elf.EI_VERSION, "ELF version %d", data[elf.EI_VERSION])
	}
	if m := elf.Machine(le.Uint16(data[offMachine:])); m != elf.EM_X86_64 {
		return nil, unsupported(offMachine, "machine %v, want EM_X86_64", m)
	}
	im := &image{data: data, dyn: -1}
	im.typ = elf.Type(le.Uint16(data[offType:]))
	if im.typ != elf.ET_EXEC && im.typ != elf.ET_DYN {
		return nil, unsupported(offType, "type %v, want ET_EXEC or ET_DYN", im.typ)
	}
	if n := le.Uint16(data[offEhsize:]); n != ehdrSize {
		return nil, malformed(offEhsize, "e_ehsize %d, want %d", n, ehdrSize)
	}
	im.entry = le.Uint64(data[offEntry:])
	if err := im.parseProgs(); err != nil {
		return nil, err
	}
	if err := im.parseSects(); err != nil {
		return nil, err
	}
	return im, nil
}

func (im *image) parseProgs() error {
	data := im.data
	im.phoff = le.Uint64(data[offPhoff:])
	if n := le.Uint16(data[offPhentsize:]); n != phdrSize {
		return malformed(offPhentsize, "e_phentsize %d, want %d", n, phdrSize)
	}
	phnum := int(le.Uint16(data[offPhnum:]))
	if phnum == 0 || phnum == pnXnum {
		// Linux does not run executables with PN_XNUM; none has that
		// many segments.
		return malformed(offPhnum, "e_phnum %d", phnum)
	}
	if im.phoff%8 != 0 || !inFile(im.phoff, uint64(phnum)*phdrSize, len(data)) {
		return malformed(offPhoff, "program header table at %#x (%d entries) outside the file or misaligned", im.phoff, phnum)
	}
	im.progs = make([]prog, phnum)
	var prevEnd uint64
	for i := range im.progs {
		off := im.phoff + uint64(i)*phdrSize
		p := decodeProg(data[off : off+phdrSize])
		im.progs[i] = p
		switch p.Type {
		case elf.PT_LOAD:
			if p.Filesz > p.Memsz {
				return malformed(off, "PT_LOAD p_filesz %#x > p_memsz %#x", p.Filesz, p.Memsz)
			}
			if !inFile(p.Off, p.Filesz, len(data)) {
				return malformed(off, "PT_LOAD file range [%#x,+%#x) outside the file", p.Off, p.Filesz)
			}
			end, ok := add(p.Addr, p.Memsz)
			if !ok || end > maxUserAddr {
				return malformed(off, "PT_LOAD [%#x,+%#x) beyond the user address space", p.Addr, p.Memsz)
			}
			// The loader maps whole pages, so offset and address must
			// agree modulo the page size whatever p_align says
			// [gABI ch.5 "Program Header": p_vaddr ≡ p_offset mod p_align].
			if p.Off%PageSize != p.Addr%PageSize {
				return malformed(off, "PT_LOAD p_offset %#x and p_vaddr %#x differ modulo the page size", p.Off, p.Addr)
			}
			if p.Align > 1 && (p.Align&(p.Align-1) != 0 || p.Off%p.Align != p.Addr%p.Align) {
				return malformed(off, "PT_LOAD p_align %#x unusable for p_offset %#x, p_vaddr %#x", p.Align, p.Off, p.Addr)
			}
			// [gABI ch.5]: loadable segment entries appear in ascending
			// order of p_vaddr. The kernel and glibc rely on it.
			if len(im.loads) > 0 && p.Addr < prevEnd {
				return malformed(off, "PT_LOAD at %#x is below or overlaps the previous one (ending at %#x)", p.Addr, prevEnd)
			}
			prevEnd = end
			im.loads = append(im.loads, i)
		case elf.PT_INTERP:
			im.interp = true
		case elf.PT_DYNAMIC:
			if im.dyn >= 0 {
				return malformed(off, "second PT_DYNAMIC")
			}
			im.dyn = i
		}
	}
	if len(im.loads) == 0 {
		return malformed(im.phoff, "no PT_LOAD segment")
	}
	return nil
}

func (im *image) parseSects() error {
	data := im.data
	im.shoff = le.Uint64(data[offShoff:])
	if im.shoff == 0 {
		return nil
	}
	if n := le.Uint16(data[offShentsize:]); n != shdrSize {
		return malformed(offShentsize, "e_shentsize %d, want %d", n, shdrSize)
	}
	if im.shoff%8 != 0 || !inFile(im.shoff, shdrSize, len(data)) {
		return malformed(offShoff, "section header table at %#x outside the file or misaligned", im.shoff)
	}
	first := decodeSect(data[im.shoff:])
	shnum := uint64(le.Uint16(data[offShnum:]))
	if shnum == 0 {
		// Extended numbering: the count lives in section 0's sh_size.
		shnum = first.Size
	}
	if shnum == 0 {
		return nil
	}
	if shnum > 1<<24 || !inFile(im.shoff, shnum*shdrSize, len(data)) {
		return malformed(offShoff, "section header table (%d entries) outside the file", shnum)
	}
	strndx := uint64(le.Uint16(data[offShstrndx:]))
	if strndx == shnXindex {
		strndx = uint64(first.Link)
	}
	if strndx == 0 || strndx >= shnum {
		// Without a name table, Write would have to invent names for
		// sections it copies; refuse instead.
		return malformed(offShstrndx, "section name table index %d (of %d sections)", strndx, shnum)
	}
	im.sects = make([]sect, shnum)
	for i := range im.sects {
		off := im.shoff + uint64(i)*shdrSize
		im.sects[i] = decodeSect(data[off : off+shdrSize])
	}
	str := im.sects[strndx]
	if str.Type != elf.SHT_STRTAB || !inFile(str.Off, str.Size, len(data)) {
		return malformed(im.shoff+strndx*shdrSize, "section name table is not a string table inside the file")
	}
	im.shstrndx = int(strndx)
	return nil
}

// lastLoadEnd returns the highest end address of the existing PT_LOADs.
func (im *image) lastLoadEnd() uint64 {
	var top uint64
	for _, i := range im.loads {
		top = max(top, im.progs[i].Addr+im.progs[i].Memsz)
	}
	return top
}

// fileOff maps the virtual range [addr, addr+size) to the file offset of
// its bytes, when the range lies entirely inside the file-backed part of
// one existing PT_LOAD. The returned index is that of the PT_LOAD in progs.
func (im *image) fileOff(addr, size uint64) (off uint64, idx int, ok bool) {
	end, ok := add(addr, size)
	if !ok {
		return 0, -1, false
	}
	for _, i := range im.loads {
		p := im.progs[i]
		if addr >= p.Addr && end <= p.Addr+p.Filesz {
			return p.Off + (addr - p.Addr), i, true
		}
	}
	return 0, -1, false
}

// has reports whether the program header table has an entry of type typ.
func (im *image) has(typ elf.ProgType) bool {
	for _, p := range im.progs {
		if p.Type == typ {
			return true
		}
	}
	return false
}

// sectName returns the name of original section i, read from the section
// name table; ok is false when the name lies outside the table or is not
// NUL-terminated inside it.
func (im *image) sectName(i int) (string, bool) {
	if im.shstrndx == 0 || i < 0 || i >= len(im.sects) {
		return "", false
	}
	str := im.sects[im.shstrndx]
	tab := im.data[str.Off : str.Off+str.Size]
	off := uint64(im.sects[i].Name)
	if off >= uint64(len(tab)) {
		return "", false
	}
	n := bytes.IndexByte(tab[off:], 0)
	if n < 0 {
		return "", false
	}
	return string(tab[off : off+uint64(n)]), true
}
