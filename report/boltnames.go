package report

// This file names the original binary's functions the way llvm-bolt does
// when it reads that binary, so that a BOLT profile's locations match
// (bolt/lib/Rewrite/RewriteInstance.cpp, discoverFileObjects,
// disassemblePLT; checked against llvm-bolt-16 on the test fixtures):
//
//   - BOLT reads .symtab only (not .dynsym). It walks the symbols in
//     address order (at one address, function symbols first) and gives
//     a global or weak symbol its name and a local one "name/N", N
//     counting the local symbols of that name seen so far from 1 (a
//     static function foo is "foo/1", gcc's foo.cold fragment
//     "foo.cold/1", a clone "foo.isra.0/1"). Names starting with ".L"
//     get a "PG" prefix.
//   - A function symbol inside an earlier function is another entry of
//     it, not a function.
//   - PLT entries are functions named "<symbol>@PLT", after the symbol
//     of the dynamic relocation of the GOT slot they jump through.
//   - An .eh_frame FDE that starts no function and lies in none is a
//     function "__BOLT_FDE_FUNCat<hex address>" (lower-case hex): in a
//     stripped binary, every function.

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/blpp/blpp/cfg/ehframe"
)

// boltFunc is one function of the original binary as BOLT names it.
type boltFunc struct {
	name       string
	addr, size uint64
}

// boltFuncs are a module's functions as BOLT names them, by address.
type boltFuncs []boltFunc

// lookup returns the function holding addr and addr's offset in it.
func (fs boltFuncs) lookup(addr uint64) (boltLoc, bool) {
	i := sort.Search(len(fs), func(i int) bool { return fs[i].addr > addr }) - 1
	if i < 0 || addr-fs[i].addr >= max(fs[i].size, 1) {
		return boltLoc{}, false
	}
	return boltLoc{sym: fs[i].name, off: addr - fs[i].addr}, true
}

// entryName returns the name of the function that starts at addr.
func (fs boltFuncs) entryName(addr uint64) (string, bool) {
	if l, ok := fs.lookup(addr); ok && l.off == 0 {
		return l.sym, true
	}
	return "", false
}

// newBoltFuncs lists the functions of the original binary kept in the
// instrumented file f. The rewriter appends its own symbols to .symtab,
// in its own sections (.blpp.*), and renames the original .eh_frame to
// .blpp.orig.eh_frame: both are told apart here.
func newBoltFuncs(f *elf.File) boltFuncs {
	if f == nil {
		return nil
	}
	type sym struct {
		elf.Symbol
		idx  int
		fn   bool
		name string // BOLT's
	}
	var syms []sym
	ss, _ := f.Symbols()
	for i, s := range ss {
		t := elf.ST_TYPE(s.Info)
		if s.Value == 0 || t == elf.STT_FILE || t == elf.STT_SECTION || s.Section == elf.SHN_UNDEF ||
			s.Name == "__hot_start" || s.Name == "__hot_end" {
			continue
		}
		if int(s.Section) < len(f.Sections) && strings.HasPrefix(f.Sections[s.Section].Name, ".blpp") {
			continue // blpp's own
		}
		syms = append(syms, sym{Symbol: s, idx: i, fn: t == elf.STT_FUNC})
	}
	sort.SliceStable(syms, func(i, j int) bool {
		if syms[i].Value != syms[j].Value {
			return syms[i].Value < syms[j].Value
		}
		return syms[i].fn && !syms[j].fn
	})
	seen := map[string]int{}
	for i := range syms {
		s := &syms[i]
		name := s.Name
		if strings.HasPrefix(name, ".L") {
			name = "PG" + name
		}
		if name != "" && elf.ST_BIND(s.Info) == elf.STB_LOCAL {
			seen[name]++
			name = fmt.Sprintf("%s/%d", name, seen[name])
		}
		s.name = name
	}

	fdes := origFDEs(f)
	fdeSize := map[uint64]uint64{}
	for _, d := range fdes {
		fdeSize[d.Begin] = d.End - d.Begin
	}
	var out boltFuncs
	contains := func(addr uint64) bool {
		if n := len(out); n > 0 {
			last := &out[n-1]
			return addr >= last.addr && addr-last.addr < max(last.size, 1)
		}
		return false
	}
	for _, s := range syms {
		if !s.fn || s.name == "" || !execAddr(f, s.Value) || contains(s.Value) {
			continue
		}
		out = append(out, boltFunc{s.name, s.Value, max(s.Size, fdeSize[s.Value])})
	}
	for addr, name := range pltNames(f) {
		out = append(out, boltFunc{name, addr, 0})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	for i := range out {
		if out[i].size == 0 && strings.HasSuffix(out[i].name, "@PLT") {
			out[i].size = 8
			if i+1 < len(out) && out[i+1].addr-out[i].addr < 16 {
				out[i].size = out[i+1].addr - out[i].addr
			} else if n := pltEntrySize(f, out[i].addr); n > 0 {
				out[i].size = n
			}
		}
	}
	// A function symbol without a size (assembly, crt's
	// __do_global_dtors_aux) reaches the next function or its section's
	// end, as BOLT's adjustFunctionBoundaries makes it.
	for i := range out {
		if out[i].size != 0 {
			continue
		}
		end := sectionEnd(f, out[i].addr)
		if i+1 < len(out) && out[i+1].addr < end {
			end = out[i+1].addr
		}
		out[i].size = end - out[i].addr
	}
	var extra boltFuncs
	for _, d := range fdes {
		if _, ok := out.lookup(d.Begin); ok || !execAddr(f, d.Begin) {
			continue
		}
		extra = append(extra, boltFunc{fmt.Sprintf("__BOLT_FDE_FUNCat%x", d.Begin), d.Begin, d.End - d.Begin})
	}
	out = append(out, extra...)
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// execAddr reports whether addr lies in an executable section of the
// original program.
func execAddr(f *elf.File, addr uint64) bool {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS && !strings.HasPrefix(s.Name, ".blpp") &&
			addr >= s.Addr && addr-s.Addr < s.Size {
			return true
		}
	}
	return false
}

// sectionEnd is the end of the section holding addr (addr if none).
func sectionEnd(f *elf.File, addr uint64) uint64 {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && addr >= s.Addr && addr-s.Addr < s.Size {
			return s.Addr + s.Size
		}
	}
	return addr
}

// origFDEs parses the original .eh_frame (renamed by the rewriter).
func origFDEs(f *elf.File) []ehframe.FDE {
	s := f.Section(".blpp.orig.eh_frame")
	if s == nil {
		s = f.Section(".eh_frame")
	}
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	fdes, _ := ehframe.Parse(data, s.Addr, ehframe.Options{})
	return fdes
}

// pltEntrySize is the entry size of the PLT section holding addr.
func pltEntrySize(f *elf.File, addr uint64) uint64 {
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".plt") && addr >= s.Addr && addr-s.Addr < s.Size {
			if s.Name == ".plt.got" {
				return 8
			}
			return 16
		}
	}
	return 0
}

// pltNames names the PLT entries that jump through a GOT slot with a
// symbol's dynamic relocation (JUMP_SLOT or GLOB_DAT): "<symbol>@PLT",
// by entry address [SysV x86-64 ABI 5.2].
func pltNames(f *elf.File) map[uint64]string {
	slots := gotSlotSymbols(f)
	out := map[uint64]string{}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || !strings.HasPrefix(s.Name, ".plt") {
			continue
		}
		code, err := s.Data()
		if err != nil {
			continue
		}
		ent := uint64(16)
		if s.Name == ".plt.got" {
			ent = 8
		}
		for off := uint64(0); off+ent <= uint64(len(code)); off += ent {
			stub := code[off : off+ent]
			for i := 0; i+6 <= len(stub); i++ {
				if stub[i] != 0xff || stub[i+1] != 0x25 {
					continue
				}
				slot := s.Addr + off + uint64(i) + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(stub[i+2:]))))
				if name, ok := slots[slot]; ok {
					out[s.Addr+off] = name + "@PLT"
				}
				break
			}
		}
	}
	return out
}

// gotSlotSymbols maps the GOT slots of symbols' JUMP_SLOT and GLOB_DAT
// relocations to the symbols' names.
func gotSlotSymbols(f *elf.File) map[uint64]string {
	out := map[uint64]string{}
	if f == nil {
		return out
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return out
	}
	dynsym := -1
	for i, s := range f.Sections {
		if s.Type == elf.SHT_DYNSYM {
			dynsym = i
		}
	}
	for _, s := range f.Sections {
		// Relocations against .dynsym: the dynamic ones (--emit-relocs
		// keeps the static ones too, against .symtab).
		if s.Type != elf.SHT_RELA || int(s.Link) != dynsym {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for off := 0; off+24 <= len(data); off += 24 {
			at := binary.LittleEndian.Uint64(data[off:])
			info := binary.LittleEndian.Uint64(data[off+8:])
			typ, idx := elf.R_X86_64(info&0xffffffff), info>>32
			if typ != elf.R_X86_64_JMP_SLOT && typ != elf.R_X86_64_GLOB_DAT || idx == 0 || idx > uint64(len(dyn)) {
				continue
			}
			out[at] = dyn[idx-1].Name
		}
	}
	return out
}
