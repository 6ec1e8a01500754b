package cfg

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/elfdyn"
)

// Errors a caller can test for with errors.Is. Each is wrapped with detail.
var (
	ErrNotELF      = errors.New("not an ELF file")
	ErrNotX86_64   = errors.New("not an x86-64 ELF file")
	ErrUnsupported = errors.New("unsupported ELF file")
	ErrMalformed   = errors.New("malformed ELF file")
)

// FormatError locates a defect in the input file.
type FormatError struct {
	Off int64  // file offset, or -1 when not known
	Msg string // what is wrong
	Err error  // one of the sentinels above
}

func (e *FormatError) Error() string {
	if e.Off >= 0 {
		return fmt.Sprintf("%v: %s (at file offset %#x)", e.Err, e.Msg, e.Off)
	}
	return fmt.Sprintf("%v: %s", e.Err, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

func malformed(off int64, format string, args ...any) error {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: ErrMalformed}
}

// Kind is the kind of ELF object.
type Kind uint8

const (
	KindExec   Kind = iota // ET_EXEC: position-dependent executable
	KindPIE                // ET_DYN with an interpreter or DF_1_PIE
	KindShared             // ET_DYN shared library
)

var kindNames = [...]string{KindExec: "exec", KindPIE: "pie", KindShared: "shared"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Section is an allocated section of the binary.
type Section struct {
	Name  string
	Addr  uint64
	Size  uint64
	Off   uint64
	Exec  bool
	Write bool
	data  []byte // nil for SHT_NOBITS
}

// Symbol is a function symbol from .symtab or .dynsym.
type Symbol struct {
	Name    string
	Addr    uint64
	Size    uint64
	Global  bool
	Dynamic bool // from .dynsym
	IFunc   bool // STT_GNU_IFUNC
}

// Binary is a loaded x86-64 ELF file. It owns the file's bytes; all
// accessors bounds-check and never panic.
type Binary struct {
	Path    string
	Kind    Kind
	Static  bool // no PT_INTERP and no PT_DYNAMIC
	Entry   uint64
	BuildID []byte

	File *elf.File

	data     []byte
	sections []Section // allocated sections with data, sorted by Addr
	// hot is 1 + the index in sections of the largest executable section
	// when it overlaps no other, else 0: section tries it first, since
	// the analysis asks for its code once per instruction (in a large
	// library the binary search was 2% of the rewrite's time).
	hot     int
	symbols []Symbol // function symbols, sorted by Addr
	// relative maps the address of each R_X86_64_RELATIVE (and RELR)
	// relocated word to the value the loader stores there, before load bias.
	relative map[uint64]uint64
	// slotSym names GOT slots from JUMP_SLOT/GLOB_DAT/IRELATIVE relocations.
	slotSym map[uint64]string
	fdes    []fdeRange
	// ehOpts are the pointer-encoding bases .eh_frame was parsed with,
	// for the LSDAs its FDEs point to.
	ehOpts ehframe.Options
	// frames gives the unwind rules at an address (cfa.go).
	frames frameIndex
	// refs are the data addresses code refers to (refs.go).
	refs refIndex
	// relTargets holds the values of the R_X86_64_RELATIVE relocations
	// that point into executable sections, sorted (relocTargets).
	relTargets     addrSet
	relTargetsOnce sync.Once
	// UsesGS reports an instruction prefix 0x65 seen in code; filled by
	// analysis, for the rewriter's refusal (DESIGN decision 4).
}

type fdeRange struct {
	begin, end, lsda uint64
	// midFrame: the FDE's first row is not its CIE's initial state: the
	// code starts inside a frame set up elsewhere (gcc's foo.cold), which
	// a function's entry never does.
	midFrame bool
}

// Open reads and validates an x86-64 ELF file.
func Open(path string) (*Binary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b.Path = path
	return b, nil
}

// Load parses an ELF image held in memory. It is the boundary where
// hostile input is contained: a panic inside the standard library's ELF
// reader becomes an error.
func Load(data []byte) (b *Binary, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, malformed(-1, "%v", r)
		}
	}()
	if len(data) < 4 || !bytes.Equal(data[:4], []byte(elf.ELFMAG)) {
		return nil, ErrNotELF
	}
	if len(data) < 64 {
		return nil, malformed(int64(len(data)), "file is %d bytes, shorter than an ELF64 header", len(data))
	}
	if elf.Class(data[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(data[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("%w: class %v, %v", ErrNotX86_64, elf.Class(data[elf.EI_CLASS]), elf.Data(data[elf.EI_DATA]))
	}
	if m := elf.Machine(binary.LittleEndian.Uint16(data[18:])); m != elf.EM_X86_64 {
		return nil, fmt.Errorf("%w: machine is %v", ErrNotX86_64, m)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		msg := err.Error()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			msg = "headers or tables extend past the end of the file (truncated?)"
		}
		return nil, &FormatError{Off: -1, Msg: fmt.Sprintf("%s; file is %d bytes", msg, len(data)), Err: ErrMalformed}
	}
	b = &Binary{File: f, data: data, Entry: f.Entry}
	switch f.Type {
	case elf.ET_EXEC:
		b.Kind = KindExec
	case elf.ET_DYN:
		b.Kind = KindShared
	case elf.ET_REL:
		return nil, fmt.Errorf("%w: relocatable object (.o), not a linked program", ErrUnsupported)
	case elf.ET_CORE:
		return nil, fmt.Errorf("%w: core dump, not a program", ErrUnsupported)
	default:
		return nil, fmt.Errorf("%w: ELF type %v", ErrUnsupported, f.Type)
	}
	if len(f.Sections) == 0 {
		return nil, fmt.Errorf("%w: no section headers (stripped with sstrip?)", ErrUnsupported)
	}
	hasInterp, hasDynamic := false, false
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			hasInterp = true
		case elf.PT_DYNAMIC:
			hasDynamic = true
		}
	}
	b.Static = !hasInterp && !hasDynamic
	// An ET_DYN is an executable when it says so (DF_1_PIE), or when it has
	// an interpreter and no DT_SONAME (older PIEs). libc.so.6 has an
	// interpreter (it can be run) but a SONAME: a library.
	if b.Kind == KindShared && (b.hasPIEFlag() || hasInterp && !b.hasDynTag(elf.DT_SONAME)) {
		b.Kind = KindPIE
	}
	if b.Kind == KindShared && !hasInterp && !hasDynamic {
		b.Kind = KindPIE // static-pie has PT_DYNAMIC; treat a bare ET_DYN like one
	}
	if err := b.loadSections(); err != nil {
		return nil, err
	}
	if err := b.loadSymbols(); err != nil {
		return nil, err
	}
	if err := b.loadRelocs(); err != nil {
		return nil, err
	}
	if err := b.loadFDEs(); err != nil {
		return nil, err
	}
	b.loadBuildID()
	return b, nil
}

// dynamic returns the bytes of the .dynamic section, nil when there is
// none or it cannot be read.
func (b *Binary) dynamic() []byte {
	ds := b.File.Section(".dynamic")
	if ds == nil || ds.Type == elf.SHT_NOBITS {
		return nil
	}
	d, err := b.sectionData(ds)
	if err != nil {
		return nil
	}
	return d
}

func (b *Binary) hasDynTag(want elf.DynTag) bool {
	_, ok := elfdyn.Lookup(b.dynamic(), want)
	return ok
}

func (b *Binary) hasPIEFlag() bool {
	es, _ := elfdyn.Entries(b.dynamic())
	for _, e := range es {
		if e.Tag == elf.DT_FLAGS_1 && e.Val&uint64(elf.DF_1_PIE) != 0 {
			return true
		}
	}
	return false
}

// sectionData returns a section's bytes as a sub-slice of the file, after
// checking that they lie inside it.
func (b *Binary) sectionData(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		d, err := s.Data()
		if err != nil {
			return nil, malformed(int64(s.Offset), "section %s: %v", s.Name, err)
		}
		return d, nil
	}
	end := s.Offset + s.FileSize
	if end < s.Offset || end > uint64(len(b.data)) {
		return nil, malformed(int64(s.Offset), "section %s extends past the end of the file (%d bytes at %#x, file is %d bytes)", s.Name, s.FileSize, s.Offset, len(b.data))
	}
	return b.data[s.Offset:end:end], nil
}

func (b *Binary) loadSections() error {
	for _, s := range b.File.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		// .tbss takes no address space: its size is that of the TLS
		// template's zero part, and the sections after it (a static
		// binary's .preinit_array, .init_array, .fini_array) start at
		// its address [ELF gABI, "Special Sections"; Drepper, "ELF
		// Handling For Thread-Local Storage" §2]. Kept, it would shadow
		// them.
		if s.Type == elf.SHT_NOBITS && s.Flags&elf.SHF_TLS != 0 {
			continue
		}
		if s.Addr+s.Size < s.Addr {
			return malformed(int64(s.Offset), "section %s address range wraps", s.Name)
		}
		sec := Section{Name: s.Name, Addr: s.Addr, Size: s.Size, Off: s.Offset,
			Exec: s.Flags&elf.SHF_EXECINSTR != 0, Write: s.Flags&elf.SHF_WRITE != 0}
		if s.Type != elf.SHT_NOBITS {
			d, err := b.sectionData(s)
			if err != nil {
				return err
			}
			if uint64(len(d)) != s.Size {
				return malformed(int64(s.Offset), "section %s has %d bytes of data for size %d", s.Name, len(d), s.Size)
			}
			sec.data = d
		} else if sec.Exec {
			continue
		}
		b.sections = append(b.sections, sec)
	}
	sort.Slice(b.sections, func(i, j int) bool { return b.sections[i].Addr < b.sections[j].Addr })
	for i := 1; i < len(b.sections); i++ {
		p, s := &b.sections[i-1], &b.sections[i]
		if s.Addr < p.Addr+p.Size && s.data != nil && p.data != nil {
			return malformed(int64(s.Off), "sections %s and %s overlap", p.Name, s.Name)
		}
	}
	return b.placeHot()
}

// placeHot sets b.hot from b.sections (sorted).
func (b *Binary) placeHot() error {
	hot := -1
	for i := range b.sections {
		if s := &b.sections[i]; s.Exec && s.data != nil && (hot < 0 || s.Size > b.sections[hot].Size) {
			hot = i
		}
	}
	if hot >= 0 {
		hs := &b.sections[hot]
		for i := range b.sections {
			// Alone, every address of the section finds it by the
			// search too.
			if s := &b.sections[i]; i != hot && s.Addr < hs.Addr+hs.Size && hs.Addr < s.Addr+s.Size {
				hot = -1
				break
			}
		}
	}
	b.hot = hot + 1
	return nil
}

// Sections returns the allocated sections, sorted by address.
func (b *Binary) Sections() []Section { return b.sections }

// section finds the allocated section holding addr.
func (b *Binary) section(addr uint64) *Section {
	if b.hot > 0 {
		if s := &b.sections[b.hot-1]; addr-s.Addr < s.Size {
			return s
		}
	}
	i := sort.Search(len(b.sections), func(i int) bool { return b.sections[i].Addr+b.sections[i].Size > addr })
	if i < len(b.sections) && b.sections[i].Addr <= addr {
		return &b.sections[i]
	}
	return nil
}

// SectionAt returns the name of the allocated section holding addr.
func (b *Binary) SectionAt(addr uint64) (string, bool) {
	if s := b.section(addr); s != nil {
		return s.Name, true
	}
	return "", false
}

// Code returns the bytes of executable file data from addr to the end of
// its section, or nil when addr is not in executable data.
func (b *Binary) Code(addr uint64) []byte {
	s := b.section(addr)
	if s == nil || !s.Exec || s.data == nil {
		return nil
	}
	return s.data[addr-s.Addr:]
}

// Insts yields the instructions of blk in order. It stops early where the
// code cannot be decoded or is not in the file; the blocks of a graph
// that Analyze built always decode.
func (b *Binary) Insts(blk *Block) iter.Seq[x86.Inst] {
	return func(yield func(x86.Inst) bool) {
		code := b.Code(blk.Addr)
		for a := blk.Addr; a < blk.End && code != nil; {
			in, err := x86.Decode(code[a-blk.Addr:], a)
			if err != nil || !yield(in) {
				return
			}
			a += uint64(in.Len)
		}
	}
}

// IsCode reports whether addr lies in executable file data.
func (b *Binary) IsCode(addr uint64) bool { return b.Code(addr) != nil }

// Bytes returns n bytes of allocated file data at addr, or nil when they
// are not all inside one section with data.
func (b *Binary) Bytes(addr uint64, n int) []byte {
	s := b.section(addr)
	if s == nil || s.data == nil || n < 0 {
		return nil
	}
	off := addr - s.Addr
	if off+uint64(n) > uint64(len(s.data)) || off+uint64(n) < off {
		return nil
	}
	return s.data[off : off+uint64(n)]
}

// Uint32 reads a little-endian 32-bit word at addr.
func (b *Binary) Uint32(addr uint64) (uint32, bool) {
	d := b.Bytes(addr, 4)
	if d == nil {
		return 0, false
	}
	return binary.LittleEndian.Uint32(d), true
}

// Pointer reads the 64-bit pointer stored at addr as the loader leaves it
// (before load bias): the value of an R_X86_64_RELATIVE relocation there,
// or else the file's bytes.
func (b *Binary) Pointer(addr uint64) (uint64, bool) {
	if v, ok := b.relative[addr]; ok {
		return v, true
	}
	d := b.Bytes(addr, 8)
	if d == nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(d), true
}

// HasRelativeRelocs reports whether the binary has R_X86_64_RELATIVE
// relocations (a PIE or shared object).
func (b *Binary) HasRelativeRelocs() bool { return len(b.relative) > 0 }

// GOTSlots maps each GOT slot the loader fills with a dynamic symbol's
// address (JUMP_SLOT and GLOB_DAT relocations; IRELATIVE ones with the
// resolver's name) to the symbol's name. The caller must not change it.
func (b *Binary) GOTSlots() map[uint64]string { return b.slotSym }

// Symbols returns the function symbols, sorted by address.
func (b *Binary) Symbols() []Symbol { return b.symbols }

func (b *Binary) loadSymbols() error {
	add := func(syms []elf.Symbol, dynamic bool) {
		for _, s := range syms {
			t := elf.ST_TYPE(s.Info)
			if t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC {
				continue
			}
			if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || s.Value == 0 {
				continue
			}
			bind := elf.ST_BIND(s.Info)
			b.symbols = append(b.symbols, Symbol{Name: s.Name, Addr: s.Value, Size: s.Size,
				Global: bind == elf.STB_GLOBAL || bind == elf.STB_WEAK, Dynamic: dynamic, IFunc: t == elf.STT_GNU_IFUNC})
		}
	}
	syms, err := b.File.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return malformed(-1, ".symtab: %v", err)
	}
	add(syms, false)
	dsyms, err := b.File.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return malformed(-1, ".dynsym: %v", err)
	}
	add(dsyms, true)
	sort.SliceStable(b.symbols, func(i, j int) bool { return b.symbols[i].Addr < b.symbols[j].Addr })
	return nil
}

// R_X86_64 relocation types used here [SysV x86-64 ABI 4.4.1, Table 4.9].
const (
	rX86_64_GLOB_DAT  = 6
	rX86_64_JUMP_SLOT = 7
	rX86_64_RELATIVE  = 8
	rX86_64_IRELATIVE = 37
	shtRELR           = 19 // SHT_RELR [gABI 2022 draft]
)

func (b *Binary) loadRelocs() error {
	b.relative = make(map[uint64]uint64)
	b.slotSym = make(map[uint64]string)
	var dsyms []elf.Symbol
	for _, s := range b.File.Sections {
		switch {
		case s.Type == elf.SHT_RELA:
			if s.Flags&elf.SHF_ALLOC == 0 {
				continue // .rela.text of an object or --emit-relocs: static relocations
			}
			d, err := b.sectionData(s)
			if err != nil {
				return err
			}
			if dsyms == nil {
				dsyms, _ = b.File.DynamicSymbols()
			}
			for i := 0; i+24 <= len(d); i += 24 {
				off := binary.LittleEndian.Uint64(d[i:])
				info := binary.LittleEndian.Uint64(d[i+8:])
				addend := binary.LittleEndian.Uint64(d[i+16:])
				typ, sym := uint32(info), uint32(info>>32)
				switch typ {
				case rX86_64_RELATIVE:
					b.relative[off] = addend
				case rX86_64_JUMP_SLOT, rX86_64_GLOB_DAT:
					// Symbol index 0 is the null symbol; debug/elf drops it.
					if sym >= 1 && int(sym) <= len(dsyms) {
						b.slotSym[off] = dsyms[sym-1].Name
					}
				case rX86_64_IRELATIVE:
					b.relative[off] = addend
					if name := b.symbolNameAt(addend); name != "" {
						b.slotSym[off] = name
					} else {
						b.slotSym[off] = fmt.Sprintf("ifunc_%x", addend)
					}
				}
			}
		case s.Type == shtRELR && s.Flags&elf.SHF_ALLOC != 0:
			d, err := b.sectionData(s)
			if err != nil {
				return err
			}
			b.decodeRELR(d)
		}
	}
	return nil
}

// decodeRELR expands a SHT_RELR table: an address entry (low bit 0) names a
// relocated word; a bitmap entry (low bit 1) marks the following 63 words
// [gABI RELR proposal]. The values come from the file's words.
func (b *Binary) decodeRELR(d []byte) {
	var where uint64
	for i := 0; i+8 <= len(d); i += 8 {
		e := binary.LittleEndian.Uint64(d[i:])
		if e&1 == 0 {
			where = e
			b.relativeFromFile(where)
			where += 8
			continue
		}
		for bit, bits := 0, e>>1; bits != 0 && bit < 63; bit, bits = bit+1, bits>>1 {
			if bits&1 != 0 {
				b.relativeFromFile(where + uint64(bit)*8)
			}
		}
		where += 63 * 8
	}
}

func (b *Binary) relativeFromFile(addr uint64) {
	if d := b.Bytes(addr, 8); d != nil {
		b.relative[addr] = binary.LittleEndian.Uint64(d)
	}
}

// symbolNameAt returns the name of a function symbol starting at addr.
func (b *Binary) symbolNameAt(addr uint64) string {
	i := sort.Search(len(b.symbols), func(i int) bool { return b.symbols[i].Addr >= addr })
	if i < len(b.symbols) && b.symbols[i].Addr == addr {
		return b.symbols[i].Name
	}
	return ""
}

func (b *Binary) loadBuildID() {
	for _, s := range b.File.Sections {
		if s.Type != elf.SHT_NOTE || s.Name != ".note.gnu.build-id" {
			continue
		}
		d, err := b.sectionData(s)
		if err != nil || len(d) < 16 {
			return
		}
		namesz := binary.LittleEndian.Uint32(d[0:])
		descsz := binary.LittleEndian.Uint32(d[4:])
		start := 12 + (uint64(namesz)+3)&^3
		if start+uint64(descsz) <= uint64(len(d)) {
			b.BuildID = append([]byte(nil), d[start:start+uint64(descsz)]...)
		}
	}
}

// FDEs returns the code ranges described by .eh_frame FDEs, sorted.
func (b *Binary) FDEs() []Range {
	rs := make([]Range, 0, len(b.fdes))
	for _, f := range b.fdes {
		if b.IsCode(f.begin) {
			rs = append(rs, Range{f.begin, f.end - f.begin})
		}
	}
	return rs
}

// IsRelocated reports whether the loader writes the 64-bit word at addr
// with an R_X86_64_RELATIVE (or RELR) relocation.
func (b *Binary) IsRelocated(addr uint64) bool {
	_, ok := b.relative[addr]
	return ok
}
