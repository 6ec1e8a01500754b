package elfw

import (
	"bytes"
	"debug/elf"
	"strings"
)

// Symbol is a function symbol Write adds (STT_FUNC, STB_GLOBAL, default
// visibility), typically naming the relocated copy of a function.
type Symbol struct {
	Name string
	// Addr and Size are the function's address range. Addr must lie in a
	// section that has a header in the output (an original one or a new
	// segment's), whose index becomes st_shndx.
	Addr, Size uint64
	// Dynamic adds the symbol to .dynsym as well, so that glibc's dladdr
	// (and so backtrace_symbols) names addresses inside it. .dynsym must
	// already hold a symbol of that name: the new entry reuses its
	// .dynstr offset and its version.
	Dynamic bool
}

// Sizes and fields of the symbol tables [gABI ch.4 "Symbol Table"].
const (
	symSize   = 24 // Elf64_Sym
	shnUndef  = 0
	verGlobal = 1 // VER_NDX_GLOBAL [LSB 5.0 "Symbol Versioning"]
)

// funcSymInfo is st_info for a global function.
const funcSymInfo = byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC)

// symPlan is what Symbols adds, built before the layout: table contents
// whose only unknowns are the section indices of the new symbols
// (st_shndx), filled by fillShndx once the section headers are final.
type symPlan struct {
	syms []Symbol

	// The static symbol table: symtab and strtab are the new contents;
	// symIdx and strIdx the original headers repointed at them, or 0 when
	// the input has no .symtab and new headers are added. symFirst is the
	// index of the first new symbol.
	symtab, strtab []byte
	symIdx, strIdx int
	symFirst       int

	// The dynamic tables, copied into one new read-only segment (dyn):
	// .dynsym with the new entries appended, .gnu.version, .gnu.hash and
	// the SysV hash. Each has an offset in dyn.Data and the index of the
	// original header repointed at it (0 when the input has none).
	dyn       *Segment
	dynSyms   []int // indices into syms of the Dynamic ones
	dynFirst  int   // index of the first new .dynsym entry
	dynsym    tablePart
	versym    tablePart
	gnuHash   tablePart
	sysvHash  tablePart
	dynamicAt map[elf.DynTag]uint64 // file offset of each entry to rewrite
}

type tablePart struct {
	off, size uint64 // in dyn.Data; size 0 when absent
	sect      int    // original section header index, 0 when none
}

// planSymbols checks the requested symbols and builds the new tables.
func (im *image) planSymbols(syms []Symbol) (*symPlan, error) {
	if len(syms) == 0 {
		return nil, nil
	}
	p := &symPlan{syms: syms}
	for _, s := range syms {
		// Unlike section names, symbol names may be long: C++ and Rust
		// mangled names pass a kilobyte.
		detail := ""
		switch {
		case s.Name == "":
			detail = "empty name"
		case strings.IndexByte(s.Name, 0) >= 0:
			detail = "name contains a NUL byte"
		}
		if detail != "" {
			return nil, &Error{Op: "symbol", Name: s.Name, Addr: s.Addr, Err: ErrBadSymbol, Detail: detail}
		}
		if _, ok := add(s.Addr, s.Size); !ok {
			return nil, &Error{Op: "symbol", Name: s.Name, Addr: s.Addr, Err: ErrBadSymbol, Detail: "size wraps"}
		}
	}
	if err := im.planSymtab(p); err != nil {
		return nil, err
	}
	for i, s := range syms {
		if s.Dynamic {
			p.dynSyms = append(p.dynSyms, i)
		}
	}
	if len(p.dynSyms) > 0 {
		if err := im.planDynsym(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// sectBytes returns the file bytes of original section i, checking that
// they lie inside the file.
func (im *image) sectBytes(i int) ([]byte, error) {
	s := im.sects[i]
	if s.Type == elf.SHT_NOBITS || !inFile(s.Off, s.Size, len(im.data)) {
		return nil, malformed(im.shoff+uint64(i)*shdrSize, "section %d [%#x,+%#x) outside the file", i, s.Off, s.Size)
	}
	return im.data[s.Off : s.Off+s.Size], nil
}

// findSect returns the index of the first original section of type typ,
// 0 when there is none.
func (im *image) findSect(typ elf.SectionType) int {
	for i := 1; i < len(im.sects); i++ {
		if im.sects[i].Type == typ {
			return i
		}
	}
	return 0
}

// planSymtab builds the new .symtab and .strtab: the original entries,
// unchanged and at their indices, then one STB_GLOBAL entry per symbol.
// Appending globals keeps the table valid without renumbering: sh_info,
// one past the last local, stays right, since locals must precede globals
// [gABI ch.4 "Symbol Table"] (a local appended after them would make
// readelf complain and would need every relocation and reference to the
// globals renumbered). gdb takes global and local function symbols alike
// for its minimal symbols, which is what names a pc without debug
// information.
func (im *image) planSymtab(p *symPlan) error {
	var strtab bytes.Buffer
	if i := im.findSect(elf.SHT_SYMTAB); i != 0 {
		s := im.sects[i]
		where := im.shoff + uint64(i)*shdrSize
		if s.Entsize != symSize || s.Size%symSize != 0 || s.Link == 0 || int(s.Link) >= len(im.sects) || im.sects[s.Link].Type != elf.SHT_STRTAB {
			return malformed(where, ".symtab: entry size %d, size %#x, string table %d", s.Entsize, s.Size, s.Link)
		}
		old, err := im.sectBytes(i)
		if err != nil {
			return err
		}
		str, err := im.sectBytes(int(s.Link))
		if err != nil {
			return err
		}
		p.symIdx, p.strIdx = i, int(s.Link)
		p.symtab = append(p.symtab, old...)
		strtab.Write(str)
		if len(str) == 0 || str[len(str)-1] != 0 {
			strtab.WriteByte(0)
		}
	} else {
		p.symtab = make([]byte, symSize) // the null symbol [gABI ch.4]
		strtab.WriteByte(0)
	}
	p.symFirst = len(p.symtab) / symSize
	names := map[string]uint32{}
	for _, s := range p.syms {
		off, ok := names[s.Name]
		if !ok {
			off = uint32(strtab.Len())
			strtab.WriteString(s.Name)
			strtab.WriteByte(0)
			names[s.Name] = off
		}
		p.symtab = append(p.symtab, encodeSym(off, s)...)
	}
	if strtab.Len() > 1<<32-1 {
		return &Error{Op: "symbol", Err: ErrBadSymbol, Detail: "string table beyond 4 GiB"}
	}
	p.strtab = strtab.Bytes()
	return nil
}

// encodeSym encodes an Elf64_Sym for s with st_shndx left 0.
func encodeSym(name uint32, s Symbol) []byte {
	b := make([]byte, symSize)
	le.PutUint32(b[0:], name)
	b[4] = funcSymInfo
	le.PutUint64(b[8:], s.Addr)
	le.PutUint64(b[16:], s.Size)
	return b
}

// planDynsym copies the dynamic symbol table and the tables indexed by
// symbol number into a new segment, with the Dynamic symbols appended.
//
// glibc's dladdr (elf/dl-addr.c, determine_info) names an address after
// the closest symbol below it whose [st_value, st_value+st_size) holds it,
// but it only looks at the symbols it can enumerate: with DT_GNU_HASH the
// ones reachable from a bucket through its chain, else the first nchain
// entries of DT_HASH. So the new entries are appended to .dynsym, the last
// GNU hash chain is extended over them, and DT_HASH (rebuilt) counts them.
// Name lookups must not find them: the dynamic loader would bind calls and
// dlsym to the relocated copy instead of the original entry (which jumps
// there anyway, but code that compares function pointers would see two
// addresses). So each new GNU hash chain word holds the symbol's hash with
// bit 1 flipped, which no lookup of that name matches (do_lookup_x in
// elf/dl-lookup.c compares the hashes before the names), and the SysV
// buckets do not reach them. Relocations refer to symbols by index; the
// old entries keep theirs.
func (im *image) planDynsym(p *symPlan) error {
	dynOff, n, err := im.dynTable()
	if err != nil {
		return err
	}
	if n == 0 {
		return &Error{Op: "symbol", Name: p.syms[p.dynSyms[0]].Name, Err: ErrNoDynsym}
	}
	vals := map[elf.DynTag]uint64{}
	p.dynamicAt = map[elf.DynTag]uint64{}
	es, _ := im.dynEntries(dynOff, n)
	for i, e := range es {
		tag, val := e.Tag, e.Val
		switch tag {
		case elf.DT_SYMTAB, elf.DT_STRTAB, elf.DT_STRSZ, elf.DT_SYMENT, elf.DT_VERSYM, elf.DT_GNU_HASH, elf.DT_HASH:
			if _, dup := vals[tag]; dup {
				return malformed(dynOff+uint64(i)*dynSize, "second %v entry", tag)
			}
			vals[tag] = val
			p.dynamicAt[tag] = dynOff + uint64(i)*dynSize
		}
	}
	if _, ok := vals[elf.DT_SYMTAB]; !ok {
		return &Error{Op: "symbol", Name: p.syms[p.dynSyms[0]].Name, Err: ErrNoDynsym}
	}
	// The table's extent comes from its section header; the loader never
	// needs it, but every tool does.
	symSect := 0
	for i := 1; i < len(im.sects); i++ {
		if im.sects[i].Type == elf.SHT_DYNSYM && im.sects[i].Addr == vals[elf.DT_SYMTAB] {
			symSect = i
		}
	}
	if symSect == 0 {
		return &Error{Op: "symbol", Name: p.syms[p.dynSyms[0]].Name, Err: ErrNoDynsym, Detail: "no .dynsym section header at DT_SYMTAB"}
	}
	ds := im.sects[symSect]
	where := im.shoff + uint64(symSect)*shdrSize
	if ds.Size%symSize != 0 || ds.Size == 0 || (ds.Entsize != 0 && ds.Entsize != symSize) {
		return malformed(where, ".dynsym size %#x, entry size %d", ds.Size, ds.Entsize)
	}
	if v, ok := vals[elf.DT_SYMENT]; ok && v != symSize {
		return malformed(p.dynamicAt[elf.DT_SYMENT], "DT_SYMENT %d", v)
	}
	nsym := int(ds.Size / symSize)
	syms, err := im.loaded(vals[elf.DT_SYMTAB], ds.Size, "DT_SYMTAB")
	if err != nil {
		return err
	}
	strsz := vals[elf.DT_STRSZ]
	strs, err := im.loaded(vals[elf.DT_STRTAB], strsz, "DT_STRTAB")
	if err != nil {
		return err
	}
	// The entry each new symbol copies its name and version from: the
	// first defined one of that name, else the first.
	byName := map[string]int{}
	for i := 1; i < nsym; i++ {
		e := syms[i*symSize:]
		name := le.Uint32(e)
		if uint64(name) >= strsz {
			continue
		}
		end := bytes.IndexByte(strs[name:], 0)
		if end < 0 {
			continue
		}
		s := string(strs[name : name+uint32(end)])
		if j, ok := byName[s]; !ok || le.Uint16(syms[j*symSize+6:]) == shnUndef && le.Uint16(e[6:]) != shnUndef {
			byName[s] = i
		}
	}
	from := make([]int, len(p.dynSyms))
	for k, si := range p.dynSyms {
		s := p.syms[si]
		j, ok := byName[s.Name]
		if !ok {
			return &Error{Op: "symbol", Name: s.Name, Addr: s.Addr, Err: ErrNoDynsym, Detail: "no .dynsym symbol of that name to share its string"}
		}
		from[k] = j
	}
	nnew := len(p.dynSyms)
	total := nsym + nnew
	p.dynFirst = nsym

	var data []byte
	part := func(b []byte, align uint64, sect int) tablePart {
		for uint64(len(data))%align != 0 {
			data = append(data, 0)
		}
		tp := tablePart{off: uint64(len(data)), size: uint64(len(b)), sect: sect}
		data = append(data, b...)
		return tp
	}

	// .dynsym
	nd := append([]byte(nil), syms...)
	for k, si := range p.dynSyms {
		nd = append(nd, encodeSym(le.Uint32(syms[from[k]*symSize:]), p.syms[si])...)
	}
	p.dynsym = part(nd, 8, symSect)

	// .gnu.version: one half-word per symbol [LSB 5.0 "Symbol Version
	// Table"].
	if va, ok := vals[elf.DT_VERSYM]; ok {
		old, err := im.loaded(va, uint64(nsym)*2, "DT_VERSYM")
		if err != nil {
			return err
		}
		nv := append([]byte(nil), old...)
		for k := range p.dynSyms {
			v := le.Uint16(old[from[k]*2:])
			if v == 0 { // VER_NDX_LOCAL: the copy is global
				v = verGlobal
			}
			nv = le.AppendUint16(nv, v)
		}
		p.versym = part(nv, 8, im.sectAt(elf.SHT_GNU_VERSYM, va))
	}

	// .gnu.hash
	if ga, ok := vals[elf.DT_GNU_HASH]; ok {
		ng, err := im.extendGNUHash(ga, nsym, p)
		if err != nil {
			return err
		}
		p.gnuHash = part(ng, 8, im.sectAt(elf.SHT_GNU_HASH, ga))
	}

	// DT_HASH: nbucket, nchain, bucket[nbucket], chain[nchain], 32-bit
	// words on x86-64 [gABI ch.5 "Hash Table"]. nchain must equal the
	// number of symbols; the new chain entries are 0 and no bucket leads
	// to them.
	if ha, ok := vals[elf.DT_HASH]; ok {
		head, err := im.loaded(ha, 8, "DT_HASH")
		if err != nil {
			return err
		}
		nb, nc := uint64(le.Uint32(head)), uint64(le.Uint32(head[4:]))
		if nc != uint64(nsym) || nb > 1<<28 {
			return malformed(p.dynamicAt[elf.DT_HASH], "DT_HASH: %d buckets, %d chains for %d symbols", nb, nc, nsym)
		}
		old, err := im.loaded(ha, 8+4*(nb+nc), "DT_HASH")
		if err != nil {
			return err
		}
		nh := append([]byte(nil), old...)
		le.PutUint32(nh[4:], uint32(total))
		nh = append(nh, make([]byte, 4*nnew)...)
		p.sysvHash = part(nh, 8, im.sectAt(elf.SHT_HASH, ha))
	}

	p.dyn = &Segment{Data: data, Flags: elf.PF_R, Name: ".blpp.dynsym"}
	return nil
}

// extendGNUHash returns the GNU hash table at addr for nsym symbols with
// the new symbols appended to its last chain. The layout [LSB 5.0 has
// none; glibc elf/dl-lookup.c _dl_setup_hash and do_lookup_x, binutils
// bfd/elflink.c]: nbuckets, symoffset, bloom_size, bloom_shift (32-bit),
// bloom[bloom_size] (64-bit words on ELF64), buckets[nbuckets] (32-bit
// symbol indices, 0 for an empty bucket), then one 32-bit word per symbol
// from symoffset on: the symbol's hash with bit 0 set on the last symbol
// of a bucket's chain. Symbols are sorted by bucket, so the last symbol
// ends the last chain.
func (im *image) extendGNUHash(addr uint64, nsym int, p *symPlan) ([]byte, error) {
	where := p.dynamicAt[elf.DT_GNU_HASH]
	head, err := im.loaded(addr, 16, "DT_GNU_HASH")
	if err != nil {
		return nil, err
	}
	nb, symoff, bloom := uint64(le.Uint32(head)), uint64(le.Uint32(head[4:])), uint64(le.Uint32(head[8:]))
	if nb == 0 || nb > 1<<28 || bloom > 1<<28 || symoff == 0 || symoff > uint64(nsym) {
		return nil, malformed(where, "DT_GNU_HASH: %d buckets, symoffset %d, %d bloom words for %d symbols", nb, symoff, bloom, nsym)
	}
	size := 16 + 8*bloom + 4*nb + 4*(uint64(nsym)-symoff)
	old, err := im.loaded(addr, size, "DT_GNU_HASH")
	if err != nil {
		return nil, err
	}
	nh := append([]byte(nil), old...)
	buckets := nh[16+8*bloom : 16+8*bloom+4*nb]
	chain := 16 + 8*bloom + 4*nb // offset of the word of symbol symoff
	if uint64(nsym) > symoff {
		last := chain + 4*(uint64(nsym)-1-symoff)
		w := le.Uint32(nh[last:])
		if w&1 == 0 {
			return nil, malformed(where, "DT_GNU_HASH: the last symbol does not end a chain")
		}
		le.PutUint32(nh[last:], w&^1)
	} else {
		// No symbol is hashed: start a chain in bucket 0.
		if le.Uint32(buckets) != 0 {
			return nil, malformed(where, "DT_GNU_HASH: bucket 0 refers to a symbol though none is hashed")
		}
		le.PutUint32(buckets, uint32(nsym))
	}
	for k, si := range p.dynSyms {
		w := gnuHash(p.syms[si].Name)&^1 ^ 2
		if k == len(p.dynSyms)-1 {
			w |= 1
		}
		nh = le.AppendUint32(nh, w)
	}
	return nh, nil
}

// gnuHash is the DT_GNU_HASH hash function (Bernstein's h*33+c from 5381,
// glibc elf/dl-lookup.c dl_new_hash).
func gnuHash(s string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(s); i++ {
		h = h*33 + uint32(s[i])
	}
	return h
}

// loaded returns size bytes at virtual address addr, which must be
// file-backed in one original PT_LOAD.
func (im *image) loaded(addr, size uint64, what string) ([]byte, error) {
	off, _, ok := im.fileOff(addr, size)
	if !ok {
		return nil, malformed(0, "%s [%#x,+%#x) is not file-backed in one loadable segment", what, addr, size)
	}
	return im.data[off : off+size], nil
}

// sectAt returns the index of the original section of type typ at addr,
// 0 when there is none.
func (im *image) sectAt(typ elf.SectionType, addr uint64) int {
	for i := 1; i < len(im.sects); i++ {
		if im.sects[i].Type == typ && im.sects[i].Addr == addr {
			return i
		}
	}
	return 0
}

// shndxOf returns the index of the section header whose loaded bytes hold
// addr.
func shndxOf(sects []sect, addr uint64) (uint16, bool) {
	for i := 1; i < len(sects); i++ {
		s := sects[i]
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS && addr >= s.Addr && addr-s.Addr < s.Size {
			if i >= shnLoreserve {
				return 0, false // would need SHT_SYMTAB_SHNDX
			}
			return uint16(i), true
		}
	}
	return 0, false
}

// fillShndx sets st_shndx of the new symbols in both tables.
func (p *symPlan) fillShndx(sects []sect) error {
	for i, s := range p.syms {
		x, ok := shndxOf(sects, s.Addr)
		if !ok {
			return &Error{Op: "symbol", Name: s.Name, Addr: s.Addr, Err: ErrBadSymbol, Detail: "not inside a loaded section with a header"}
		}
		le.PutUint16(p.symtab[(p.symFirst+i)*symSize+6:], x)
	}
	for k, si := range p.dynSyms {
		x, _ := shndxOf(sects, p.syms[si].Addr)
		le.PutUint16(p.dyn.Data[p.dynsym.off+uint64(p.dynFirst+k)*symSize+6:], x)
	}
	return nil
}
