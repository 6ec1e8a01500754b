package elfw

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sort"
	"strings"
)

// Segment is a new loadable segment.
type Segment struct {
	// Addr is the segment's virtual address: page-aligned and at or above
	// NextFreeAddr. 0 asks Write to choose (see Output.Segments).
	Addr uint64
	// Data holds the file-backed bytes, loaded at Addr. Chunks, when
	// set, hold them instead, one after another (a large program's new
	// code comes in the arrays it was emitted into).
	Data   []byte
	Chunks [][]byte
	// MemSize is the size in memory, at least len(Data); the bytes past
	// Data are zero (like .bss). 0 means len(Data).
	MemSize uint64
	// Flags is PF_R|PF_X, PF_R|PF_W or PF_R. Writable code is refused.
	Flags elf.ProgFlag
	// Name names the section header Write adds for the segment so that
	// objdump and gdb see it, e.g. ".blpp.text". A zero-filled tail gets a
	// SHT_NOBITS section of its own, named Name+".bss" (or Name when the
	// segment has no file-backed bytes).
	Name string
	// Sections, when not empty, replace the one section header named Name
	// that covers Data: Write adds one SHF_ALLOC SHT_PROGBITS header per
	// entry instead, so one read-only segment can carry, say, .eh_frame,
	// .eh_frame_hdr and .gcc_except_table. They must lie inside Data and
	// must not overlap; bytes between them belong to no section.
	Sections []SubSection
}

// data returns the segment's file-backed bytes, in arrays.
func (s *Segment) data() [][]byte {
	if s.Chunks != nil {
		return s.Chunks
	}
	return [][]byte{s.Data}
}

// size is the number of file-backed bytes.
func (s *Segment) size() uint64 {
	if s.Chunks == nil {
		return uint64(len(s.Data))
	}
	n := uint64(0)
	for _, d := range s.Chunks {
		n += uint64(len(d))
	}
	return n
}

// SubSection names a part of a new segment's file-backed bytes.
type SubSection struct {
	Name string
	// Off and Size locate the section's bytes inside Segment.Data.
	Off, Size uint64
}

// Patch overwrites loaded bytes of an existing segment.
type Patch struct {
	Addr  uint64 // virtual address of the first byte
	Bytes []byte
}

// Section is a section that is not loaded: it has a section header and file
// bytes, no address (SHT_PROGBITS, no flags), e.g. ".blpp.meta".
type Section struct {
	Name string
	Data []byte
}

// Options says what Write changes.
type Options struct {
	// Segments are added as PT_LOAD entries, at most MaxSegments.
	Segments []Segment
	// Patches overwrite bytes of existing segments; each must lie inside
	// the file-backed part of one PT_LOAD, must not overlap another patch,
	// the ELF header or the dynamic entry Fini rewrites.
	Patches []Patch
	// Entry, when not 0, becomes e_entry. It must be a file-backed address
	// in an executable segment, old or new.
	Entry uint64
	// Fini, when not 0, becomes the value of DT_FINI: the dynamic loader
	// calls it at exit (from _dl_fini, after the object's
	// DT_FINI_ARRAY) or when dlclose unloads a shared object. An existing
	// DT_FINI entry is rewritten, else a spare DT_NULL slot becomes one.
	// The hook should end by calling or jumping to OrigFini's address,
	// when there is one. Refused for binaries the dynamic loader does not
	// start (static and static-pie): their exit path never reads .dynamic.
	Fini uint64
	// Init, when not 0, becomes the value of DT_INIT, as Fini does for
	// DT_FINI: the dynamic loader calls it when it loads the object,
	// before its DT_INIT_ARRAY, with argc, argv and envp. The hook should
	// call OrigInit's address, when there is one. Meant for shared
	// objects; refused where Fini is.
	Init uint64
	// Sections are appended as non-loaded sections.
	Sections []Section
	// Symbols are function symbols added to .symtab (which a file without
	// one gets) and, when Dynamic, to .dynsym. See Symbol.
	Symbols []Symbol
	// EHFrameHdr, when its Size is not 0, is where PT_GNU_EH_FRAME points:
	// the new .eh_frame_hdr, which must lie in the file-backed bytes of
	// one new segment. The unwinders find .eh_frame through this entry
	// (libgcc's unwind-dw2-fde-dispatch.c through dl_iterate_phdr or
	// glibc's _dl_find_object) [LSB 5.0 "Exception Frames"]. An input
	// without PT_GNU_EH_FRAME gets one.
	EHFrameHdr EHFrameHdr
}

// EHFrameHdr is the address range of an .eh_frame_hdr section
// [LSB 5.0 "The .eh_frame_hdr section"].
type EHFrameHdr struct {
	Addr, Size uint64
}

// Placed is where Write put a new segment.
type Placed struct {
	Name   string
	Addr   uint64 // virtual address
	Off    uint64 // file offset of Data
	Filesz uint64 // len(Data)
	Memsz  uint64
	Flags  elf.ProgFlag
	// Section is the index of the section header describing the whole
	// segment; 0 when the segment has Sections instead.
	Section int
	// Sections holds the section header index of each Segment.Sections
	// entry, in the same order.
	Sections []int
}

// Output is the rewritten executable and where its new parts are.
type Output struct {
	// File is the rewritten executable (Write); Pieces lays it out
	// (Plan: File is nil).
	File   []byte
	Pieces *Pieces
	Layout Layout
	// Segments holds one entry per Options.Segments, in the same order.
	Segments []Placed
	// Sections holds the section header index of each Options.Sections
	// entry, in the same order.
	Sections []int
}

// Write returns a copy of the executable orig with the changes in opts. It
// builds the whole file in memory and returns an error, and no file, when
// the input is malformed or a request cannot be honoured.
//
// The original bytes keep their file offsets, except that the ELF header
// is rewritten, patches are applied and (with Fini) one or two entries of
// .dynamic change. Appended after them are the new program header table,
// the new segments, the non-loaded sections, a copy of the section name
// table with the new names, and a new section header table holding every
// original section header at its old index followed by the new ones.
func Write(orig []byte, opts Options) (out *Output, err error) {
	out, err = Plan(orig, opts)
	if err == nil {
		out.File = out.Pieces.Bytes()
	}
	return out, err
}

// Plan is Write without building the file: Output.Pieces lays it out,
// for the caller to write (Pieces.WriteTo) or assemble.
func Plan(orig []byte, opts Options) (out *Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("elfw: internal error: %v", r)
		}
	}()
	return write(orig, opts, defaultMirrorPad)
}

// write is Plan, padding the file by at most maxPad bytes to place the
// program header table (Layout.Mirrored). It checks the requests against
// the placed segments (place.go), lays out everything appended, then
// assembles the pieces and reads their headers back (verify).
func write(orig []byte, opts Options, maxPad int64) (*Output, error) {
	im, err := parse(orig)
	if err != nil {
		return nil, err
	}
	lay := im.plan(maxPad)

	sym, err := im.planSymbols(opts.Symbols)
	if err != nil {
		return nil, err
	}
	var own []Segment
	if sym != nil && sym.dyn != nil {
		own = append(own, *sym.dyn)
	}
	segs, err := placeSegments(opts.Segments, own, lay)
	if err != nil {
		return nil, err
	}
	var dynSeg *segPlan
	for i := range segs {
		if segs[i].hidden {
			dynSeg = &segs[i]
		}
	}
	if err := checkSections(opts.Sections); err != nil {
		return nil, err
	}
	newNames, err := im.newSectionNames(segs, opts.Sections)
	if err != nil {
		return nil, err
	}
	if sym != nil && sym.symIdx == 0 {
		newNames[".symtab"], newNames[".strtab"] = true, true
	}
	var ehSeg *segPlan
	if h := opts.EHFrameHdr; h.Size != 0 || h.Addr != 0 {
		for i := range segs {
			s := &segs[i]
			if h.Addr >= s.Addr && h.Addr-s.Addr < s.size() && h.Size <= s.size()-(h.Addr-s.Addr) {
				ehSeg = s
			}
		}
		if ehSeg == nil || h.Size == 0 {
			return nil, &Error{Op: "eh_frame_hdr", Addr: h.Addr, Err: ErrNotFileBacked,
				Detail: fmt.Sprintf("%d bytes, not inside the data of a new segment", h.Size)}
		}
	}

	// Byte ranges of the original file that Write changes itself; patches
	// may not touch them.
	type span struct {
		off, end uint64
		what     string
	}
	reserved := []span{{0, ehdrSize, "the ELF header"}}

	hooks, err := im.planHooks(opts, segs)
	if err != nil {
		return nil, err
	}
	for _, h := range hooks.entries {
		reserved = append(reserved, span{h.off, h.off + dynSize, "the " + h.tag.String() + " entry"})
	}
	if hooks.nullOff != 0 {
		reserved = append(reserved, span{hooks.nullOff, hooks.nullOff + dynSize, "the new DT_NULL entry"})
	}
	if dynSeg != nil {
		for tag, off := range sym.dynamicAt {
			reserved = append(reserved, span{off, off + dynSize, "the " + tag.String() + " entry"})
		}
	}
	if opts.Entry != 0 {
		if err := im.checkCode(opts.Entry, segs); err != nil {
			return nil, &Error{Op: "entry", Addr: opts.Entry, Err: err}
		}
	}

	// Patches: map each to its file offset, then check overlaps.
	type patchAt struct {
		Patch
		off uint64
	}
	patches := make([]patchAt, 0, len(opts.Patches))
	for _, p := range opts.Patches {
		if len(p.Bytes) == 0 {
			return nil, &Error{Op: "patch", Addr: p.Addr, Err: ErrNotFileBacked, Detail: "empty patch"}
		}
		off, _, ok := im.fileOff(p.Addr, uint64(len(p.Bytes)))
		if !ok {
			return nil, &Error{Op: "patch", Addr: p.Addr, Err: ErrNotFileBacked, Detail: fmt.Sprintf("%d-byte patch", len(p.Bytes))}
		}
		end := off + uint64(len(p.Bytes))
		for _, r := range reserved {
			if off < r.end && r.off < end {
				return nil, &Error{Op: "patch", Addr: p.Addr, Err: ErrOverlap, Detail: "covers " + r.what}
			}
		}
		patches = append(patches, patchAt{p, off})
	}
	sort.Slice(patches, func(i, j int) bool { return patches[i].off < patches[j].off })
	for i := 1; i < len(patches); i++ {
		a, b := patches[i-1], patches[i]
		if b.off < a.off+uint64(len(a.Bytes)) {
			return nil, &Error{Op: "patch", Addr: b.Addr, Err: ErrOverlap, Detail: fmt.Sprintf("overlaps the patch at %#x", a.Addr)}
		}
	}

	// File layout of everything appended.
	nphdr := len(im.progs) + 1 + len(segs)
	addEH := ehSeg != nil && !im.has(elf.PT_GNU_EH_FRAME)
	if addEH {
		nphdr++
	}
	tableSize := uint64(nphdr) * phdrSize
	cur := placeInFile(lay, nphdr, segs)
	secOffs := make([]uint64, len(opts.Sections))
	for i, s := range opts.Sections {
		secOffs[i] = alignUp(cur, 8)
		cur = secOffs[i] + uint64(len(s.Data))
	}
	var symtabOff, strtabOff uint64
	if sym != nil {
		symtabOff = alignUp(cur, 8)
		strtabOff = symtabOff + uint64(len(sym.symtab))
		cur = strtabOff + uint64(len(sym.strtab))
	}

	// Section headers: the originals, then the new ones, and a new name
	// table replacing the old one's contents (same index).
	sects := append([]sect(nil), im.sects...)
	var names bytes.Buffer
	strndx := im.shstrndx
	if len(sects) == 0 {
		sects = append(sects, sect{}) // SHN_UNDEF entry [gABI ch.4]
		names.WriteByte(0)
	} else {
		s := sects[strndx]
		names.Write(orig[s.Off : s.Off+s.Size])
		if names.Len() == 0 || orig[s.Off+s.Size-1] != 0 {
			names.WriteByte(0)
		}
	}
	addName := func(n string) uint32 {
		idx := uint32(names.Len())
		names.WriteString(n)
		names.WriteByte(0)
		return idx
	}
	placed := make([]Placed, len(opts.Segments))
	for _, sp := range segs {
		if sp.hidden {
			continue
		}
		flags := elf.SHF_ALLOC
		if sp.Flags&elf.PF_X != 0 {
			flags |= elf.SHF_EXECINSTR
		}
		if sp.Flags&elf.PF_W != 0 {
			flags |= elf.SHF_WRITE
		}
		p := Placed{Name: sp.Name, Addr: sp.Addr, Off: sp.off, Filesz: sp.size(), Memsz: sp.MemSize, Flags: sp.Flags}
		switch {
		case len(sp.Sections) > 0:
			for _, sub := range sp.Sections {
				p.Sections = append(p.Sections, len(sects))
				addr := sp.Addr + sub.Off
				sects = append(sects, sect{
					Name: addName(sub.Name), Type: elf.SHT_PROGBITS, Flags: flags,
					Addr: addr, Off: sp.off + sub.Off, Size: sub.Size, Align: naturalAlign(addr),
				})
			}
		case sp.size() > 0:
			p.Section = len(sects)
			sects = append(sects, sect{
				Name: addName(sp.Name), Type: elf.SHT_PROGBITS, Flags: flags,
				Addr: sp.Addr, Off: sp.off, Size: sp.size(), Align: 16,
			})
		}
		if bss := sp.MemSize - sp.size(); bss > 0 {
			name := bssName(sp.Segment)
			if sp.size() == 0 {
				p.Section = len(sects)
			}
			sects = append(sects, sect{
				Name: addName(name), Type: elf.SHT_NOBITS, Flags: flags,
				Addr: sp.Addr + sp.size(), Off: sp.off + sp.size(), Size: bss, Align: 1,
			})
		}
		placed[sp.idx] = p
	}
	// A section header covers the new program header table's PT_LOAD.
	// The loaders do not need it, but objcopy and strip lay a rewritten
	// file out by its sections: a loadable segment that holds none they
	// move without keeping p_offset ≡ p_vaddr (mod p_align), and the kernel
	// then refuses to map the stripped file [gABI ch.5 "Program Loading"].
	sects = append(sects, sect{
		Name: addName(phdrSectName), Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC,
		Addr: lay.PhdrAddr, Off: lay.PhdrOff, Size: tableSize, Align: 8,
	})
	secIdx := make([]int, len(opts.Sections))
	for i, s := range opts.Sections {
		secIdx[i] = len(sects)
		sects = append(sects, sect{
			Name: addName(s.Name), Type: elf.SHT_PROGBITS,
			Off: secOffs[i], Size: uint64(len(s.Data)), Align: 1,
		})
	}
	if sym != nil {
		// The symbol tables: original headers (same indices, so sh_link
		// references and relocations' symbol table stay right) now
		// describe the copies; a file without .symtab gets new ones.
		if sym.symIdx != 0 {
			sects[sym.symIdx].Off, sects[sym.symIdx].Size = symtabOff, uint64(len(sym.symtab))
			sects[sym.strIdx].Off, sects[sym.strIdx].Size = strtabOff, uint64(len(sym.strtab))
		} else {
			si := len(sects)
			sects = append(sects,
				sect{Name: addName(".symtab"), Type: elf.SHT_SYMTAB, Off: symtabOff, Size: uint64(len(sym.symtab)),
					Link: uint32(si + 1), Info: 1, Align: 8, Entsize: symSize},
				sect{Name: addName(".strtab"), Type: elf.SHT_STRTAB, Off: strtabOff, Size: uint64(len(sym.strtab)), Align: 1})
		}
		if dynSeg != nil {
			for _, tp := range []tablePart{sym.dynsym, sym.versym, sym.gnuHash, sym.sysvHash} {
				if tp.sect != 0 && tp.size != 0 {
					s := &sects[tp.sect]
					s.Addr, s.Off, s.Size = dynSeg.Addr+tp.off, dynSeg.off+tp.off, tp.size
				}
			}
		}
		if err := sym.fillShndx(sects); err != nil {
			return nil, err
		}
	}
	if strndx == 0 {
		strndx = len(sects)
		sects = append(sects, sect{Type: elf.SHT_STRTAB, Align: 1})
		sects[strndx].Name = addName(".shstrtab")
	}
	// An original section named like a new one is renamed, so that tools
	// which look sections up by name (gdb reads .eh_frame so) find the new
	// one; its bytes stay where they are.
	for i := 1; i < len(im.sects); i++ {
		if n, ok := im.sectName(i); ok && newNames[n] && i != strndx {
			sects[i].Name = addName(origPrefix + strings.TrimPrefix(n, "."))
		}
	}
	namesOff := cur
	sects[strndx].Off = namesOff
	sects[strndx].Size = uint64(names.Len())
	cur = namesOff + uint64(names.Len())
	shoff := alignUp(cur, 8)
	total := shoff + uint64(len(sects))*shdrSize

	// Extended section numbering when the counts no longer fit in the
	// header's 16-bit fields [gABI ch.4 "Sections"].
	eShnum, eStrndx := uint16(len(sects)), uint16(strndx)
	if len(sects) >= shnLoreserve {
		eShnum = 0
		sects[0].Size = uint64(len(sects))
	}
	if strndx >= shnLoreserve {
		eStrndx = shnXindex
		sects[0].Link = uint32(strndx)
	}

	// The new program header table: PT_PHDR first, as [gABI ch.5]
	// requires and glibc's rtld needs (it derives the load bias from
	// PT_PHDR before it looks at any PT_LOAD); the PT_LOAD for the table
	// and the new segments right after the last original PT_LOAD, so the
	// PT_LOADs stay sorted by address; everything else as it was.
	table := make([]prog, 0, nphdr)
	phdrLoad := prog{
		Type: elf.PT_LOAD, Flags: elf.PF_R, Off: lay.PhdrOff, Addr: lay.PhdrAddr, PAddr: lay.PhdrAddr,
		Filesz: tableSize, Memsz: tableSize, Align: PageSize,
	}
	for _, p := range im.progs {
		if p.Type == elf.PT_PHDR {
			p.Off, p.Addr, p.PAddr, p.Filesz, p.Memsz = lay.PhdrOff, lay.PhdrAddr, lay.PhdrAddr, tableSize, tableSize
			table = append(table, p)
		}
	}
	lastLoad := im.loads[len(im.loads)-1]
	var ehProg prog
	if ehSeg != nil {
		h := opts.EHFrameHdr
		ehProg = prog{
			Type: elf.PT_GNU_EH_FRAME, Flags: elf.PF_R, Off: ehSeg.off + (h.Addr - ehSeg.Addr),
			Addr: h.Addr, PAddr: h.Addr, Filesz: h.Size, Memsz: h.Size, Align: 4,
		}
	}
	for i, p := range im.progs {
		if p.Type == elf.PT_PHDR {
			continue
		}
		if p.Type == elf.PT_GNU_EH_FRAME && ehSeg != nil {
			p = ehProg
		}
		table = append(table, p)
		if i != lastLoad {
			continue
		}
		table = append(table, phdrLoad)
		for _, sp := range segs {
			table = append(table, prog{
				Type: elf.PT_LOAD, Flags: sp.Flags, Off: sp.off, Addr: sp.Addr, PAddr: sp.Addr,
				Filesz: sp.size(), Memsz: sp.MemSize, Align: PageSize,
			})
		}
	}

	if addEH {
		table = append(table, ehProg)
	}

	// Assemble: the original, then what changes or follows it.
	pcs := &Pieces{Size: int64(total)}
	pcs.put(0, orig)
	pcs.putPatches(orig, len(patches), func(i int) (uint64, []byte) { return patches[i].off, patches[i].Bytes })
	phdrs := make([]byte, len(table)*phdrSize)
	for i, p := range table {
		p.encode(phdrs[uint64(i)*phdrSize:])
	}
	pcs.put(lay.PhdrOff, phdrs)
	for _, sp := range segs {
		off := sp.off
		for _, d := range sp.data() {
			pcs.put(off, d)
			off += uint64(len(d))
		}
	}
	for i, s := range opts.Sections {
		pcs.put(secOffs[i], s.Data)
	}
	if sym != nil {
		pcs.put(symtabOff, sym.symtab)
		pcs.put(strtabOff, sym.strtab)
	}
	if dynSeg != nil {
		for _, tag := range []elf.DynTag{elf.DT_SYMTAB, elf.DT_VERSYM, elf.DT_GNU_HASH, elf.DT_HASH} {
			off, ok := sym.dynamicAt[tag]
			if !ok {
				continue
			}
			var tp tablePart
			switch tag {
			case elf.DT_SYMTAB:
				tp = sym.dynsym
			case elf.DT_VERSYM:
				tp = sym.versym
			case elf.DT_GNU_HASH:
				tp = sym.gnuHash
			case elf.DT_HASH:
				tp = sym.sysvHash
			}
			pcs.put(off+8, le.AppendUint64(nil, dynSeg.Addr+tp.off))
		}
	}
	pcs.put(namesOff, names.Bytes())
	// The ELF header: the original's, with the new tables' places.
	ehdr := append([]byte(nil), orig[:ehdrSize]...)
	for _, p := range patches {
		if p.off < ehdrSize {
			copy(ehdr[p.off:], p.Bytes[:min(len(p.Bytes), int(ehdrSize-p.off))])
		}
	}
	if opts.Entry != 0 {
		le.PutUint64(ehdr[offEntry:], opts.Entry)
	}
	le.PutUint64(ehdr[offPhoff:], lay.PhdrOff)
	le.PutUint16(ehdr[offPhnum:], uint16(nphdr))
	le.PutUint64(ehdr[offShoff:], shoff)
	le.PutUint16(ehdr[offShentsize:], shdrSize)
	le.PutUint16(ehdr[offShnum:], eShnum)
	le.PutUint16(ehdr[offShstrndx:], eStrndx)
	pcs.put(0, ehdr)
	for _, h := range hooks.entries {
		e := le.AppendUint64(le.AppendUint64(nil, uint64(h.tag)), h.val)
		pcs.put(h.off, e)
	}
	if hooks.nullOff != 0 {
		pcs.put(hooks.nullOff, make([]byte, dynSize))
	}
	shdrs := make([]byte, len(sects)*shdrSize)
	for i, s := range sects {
		s.encode(shdrs[uint64(i)*shdrSize:])
	}
	pcs.put(shoff, shdrs)

	// The result must read back as what was meant: the headers, which
	// is what parse reads (ELF header, program and section headers).
	if !pcs.ends() {
		return nil, fmt.Errorf("elfw: internal error: the section header table does not end the file")
	}
	view, free, err := pcs.sparse([2]uint64{0, ehdrSize}, [2]uint64{lay.PhdrOff, lay.PhdrOff + uint64(len(phdrs))}, [2]uint64{shoff, total})
	if err != nil {
		return nil, fmt.Errorf("elfw: %w", err)
	}
	err = verify(view, lay, table)
	free()
	if err != nil {
		return nil, fmt.Errorf("elfw: internal error: output does not verify: %w", err)
	}
	return &Output{Pieces: pcs, Layout: lay, Segments: placed, Sections: secIdx}, nil
}

// verify re-reads the output and checks the facts the loaders depend on:
// it parses, its table is the one written, the table is mapped by a
// PT_LOAD at the address PT_PHDR claims.
func verify(out []byte, lay Layout, table []prog) error {
	im, err := parse(out)
	if err != nil {
		return err
	}
	if len(im.progs) != len(table) {
		return fmt.Errorf("%d program headers, wrote %d", len(im.progs), len(table))
	}
	// Linux 5.18+ reports as AT_PHDR the address at which the last PT_LOAD
	// whose file range holds e_phoff maps it (fs/binfmt_elf.c,
	// load_elf_binary); it must be the table's own address.
	var phdrAddr uint64
	found := false
	for _, i := range im.loads {
		p := im.progs[i]
		if p.Off <= im.phoff && im.phoff < p.Off+p.Filesz {
			phdrAddr, found = im.phoff-p.Off+p.Addr, true
		}
	}
	if !found || phdrAddr != lay.PhdrAddr || im.phoff != lay.PhdrOff {
		return fmt.Errorf("program header table not mapped at %#x", lay.PhdrAddr)
	}
	if _, _, ok := im.fileOff(lay.PhdrAddr, uint64(len(table))*phdrSize); !ok {
		return fmt.Errorf("program header table not entirely file-backed")
	}
	for _, p := range im.progs {
		if p.Type == elf.PT_PHDR && (p.Addr != lay.PhdrAddr || p.Off != im.phoff) {
			return fmt.Errorf("PT_PHDR does not describe the table")
		}
	}
	return nil
}
