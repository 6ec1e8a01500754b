package cfg

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"

	"golang.org/x/arch/x86/x86asm"
)

func (b *Binary) loadFDEs() error {
	s := b.File.Section(".eh_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	d, err := b.sectionData(s)
	if err != nil {
		return err
	}
	var opts ehframe.Options
	if got := b.File.Section(".got"); got != nil {
		opts.DataBase = got.Addr
	}
	b.ehOpts = opts
	fr, err := ehframe.ParseFrame(d, s.Addr, opts)
	if err != nil {
		return fmt.Errorf(".eh_frame: %w", &FormatError{Off: int64(s.Offset), Msg: err.Error(), Err: ErrMalformed})
	}
	// Whether each starts mid-frame runs its whole unwind program: on
	// every worker (libLLVM has 100,000 entries).
	mid := make([]bool, len(fr.Entries))
	par.Each(len(fr.Entries), 0, func(i int) {
		if f := fr.Entries[i]; f.End > f.Begin {
			mid[i] = midFrame(f)
		}
	})
	for i, f := range fr.Entries {
		if f.End > f.Begin {
			b.fdes = append(b.fdes, fdeRange{begin: f.Begin, end: f.End, lsda: f.LSDA, midFrame: mid[i]})
		}
	}
	sort.Slice(b.fdes, func(i, j int) bool { return b.fdes[i].begin < b.fdes[j].begin })
	return nil
}

// pltStub is one PLT entry: its address range and the GOT slot it jumps
// through.
type pltStub struct {
	addr, size uint64
	name       string
}

// pltStubs finds the PLT stubs of .plt, .plt.sec, .plt.got and .iplt and
// names each from the relocation of the GOT slot it jumps through
// [SysV x86-64 ABI 5.2: the procedure linkage table]. The first 16 bytes
// of .plt (PLT0, the lazy-binding trampoline) are named "_plt0".
func (b *Binary) pltStubs() []pltStub {
	var stubs []pltStub
	for _, s := range b.File.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || !strings.HasPrefix(s.Name, ".plt") && s.Name != ".iplt" {
			continue
		}
		code := b.Code(s.Addr)
		if code == nil {
			continue
		}
		ent := s.Entsize
		if ent != 8 && ent != 16 {
			ent = 16
			// A static binary's .plt holds only IRELATIVE stubs of 8
			// bytes (jmp *slot(%rip); xchg %ax,%ax), with no PLT0 and
			// sh_entsize 0: two such jumps 8 bytes apart tell.
			if len(code) >= 16 && s.Size >= 16 && code[0] == 0xff && code[1] == 0x25 && code[8] == 0xff && code[9] == 0x25 {
				ent = 8
			}
		}
		if s.Name == ".plt.got" && s.Entsize == 0 {
			ent = 8
		}
		for off := uint64(0); off+ent <= uint64(len(code)) && off+ent <= s.Size; off += ent {
			stub := code[off : off+ent]
			addr := s.Addr + off
			name := ""
			if s.Name == ".plt" && off == 0 && b.slotSym != nil && !b.Static {
				name = "_plt0"
			} else if slot, ok := ripJumpSlot(stub, addr); ok {
				name = b.slotSym[slot]
				if name == "" {
					name = fmt.Sprintf("plt_%x", addr)
				} else {
					name += "@plt"
				}
			}
			if name == "" {
				// A lazy-binding entry of .plt when .plt.sec holds the real
				// jumps (IBT layout): push index; bnd jmp PLT0.
				name = fmt.Sprintf("plt_%x", addr)
			}
			stubs = append(stubs, pltStub{addr: addr, size: ent, name: name})
		}
	}
	return stubs
}

// ripJumpSlot finds `jmp *disp32(%rip)` (ff 25, optionally after bnd or
// notrack prefixes) in a stub and returns the slot address it reads.
func ripJumpSlot(stub []byte, addr uint64) (uint64, bool) {
	for i := 0; i+6 <= len(stub); i++ {
		if stub[i] == 0xff && stub[i+1] == 0x25 {
			disp := int32(binary.LittleEndian.Uint32(stub[i+2:]))
			return addr + uint64(i) + 6 + uint64(int64(disp)), true
		}
	}
	return 0, false
}

// Functions discovers the procedures of the binary, sorted by entry
// address: function symbols of .symtab and .dynsym, FDE ranges of
// .eh_frame (the only bounds a stripped binary keeps), PLT stubs, and the
// entry point. gcc's split fragments (foo.cold) are joined to their parent.
// Functions never overlap: a range that runs into the next function's
// entry is cut there.
func (b *Binary) Functions() []*Function {
	type cand struct {
		f       *Function
		prio    int // name priority: lower wins
		hasSize bool
	}
	byAddr := make(map[uint64]*cand)
	get := func(addr uint64) *cand {
		c := byAddr[addr]
		if c == nil {
			c = &cand{f: &Function{Addr: addr}, prio: 100}
			byAddr[addr] = c
		}
		return c
	}
	setName := func(c *cand, name string, prio int) {
		if name == "" {
			return
		}
		if prio < c.prio {
			if c.f.Name != "" {
				c.f.Aliases = append(c.f.Aliases, c.f.Name)
			}
			c.f.Name, c.prio = name, prio
			return
		}
		if name != c.f.Name {
			for _, a := range c.f.Aliases {
				if a == name {
					return
				}
			}
			c.f.Aliases = append(c.f.Aliases, name)
		}
	}
	var cold []Symbol
	for _, s := range b.symbols {
		if !b.IsCode(s.Addr) {
			continue
		}
		if !s.Dynamic && isColdName(s.Name) {
			cold = append(cold, s)
			continue
		}
		c := get(s.Addr)
		prio := 3
		switch {
		case !s.Dynamic && s.Global:
			prio = 0
		case !s.Dynamic:
			prio = 1
		default:
			prio = 2
		}
		setName(c, s.Name, prio)
		if s.Dynamic {
			c.f.Source |= FromDynsym
		} else {
			c.f.Source |= FromSymtab
		}
		if s.Size > c.f.Size {
			c.f.Size, c.hasSize = s.Size, true
		}
	}
	coldAddr := make(map[uint64]bool, len(cold))
	for _, s := range cold {
		coldAddr[s.Addr] = true
	}
	for _, r := range b.fdes {
		if !b.IsCode(r.begin) || coldAddr[r.begin] {
			continue
		}
		c := get(r.begin)
		c.f.Source |= FromFDE
		c.f.MidFrame = r.midFrame
		if !c.hasSize {
			c.f.Size, c.hasSize = r.end-r.begin, true
		}
	}
	for _, p := range b.pltStubs() {
		c := get(p.addr)
		c.f.Source |= FromPLT
		c.f.PLT = true
		setName(c, p.name, -1)
		c.f.Size, c.hasSize = p.size, true
	}
	if b.IsCode(b.Entry) {
		c := get(b.Entry)
		c.f.Source |= FromEntry
		setName(c, "_start", 50)
	}
	// .init and .fini hold one function each, _init and _fini (crti.o
	// starts them, crtn.o ends them), which DT_INIT, DT_FINI or the C
	// library's start-up calls, and which a stripped binary names in no
	// symbol or FDE. Unknown, their bytes would be free for discovery to
	// misread (wc: a procedure guessed at 0x2007, inside _init's second
	// instruction, got an entry jump written over it).
	for _, name := range []string{".init", ".fini"} {
		s := b.File.Section(name)
		if s == nil || s.Flags&elf.SHF_EXECINSTR == 0 || s.Size == 0 || !b.IsCode(s.Addr) {
			continue
		}
		c := get(s.Addr)
		c.f.Source |= FromEntry
		setName(c, "_"+name[1:], 40)
		if !c.hasSize {
			c.f.Size, c.hasSize = s.Size, true
		}
	}

	addrs := make([]uint64, 0, len(byAddr))
	for a := range byAddr {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	// Starts of all code objects, cold fragments included, bound sizeless
	// functions and cut overlapping ones.
	starts := append([]uint64(nil), addrs...)
	for _, s := range cold {
		starts = append(starts, s.Addr)
	}
	slices.Sort(starts)
	nextStart := func(a uint64) uint64 { return nextAfter(starts, a) }
	funcs := make([]*Function, 0, len(addrs))
	byName := make(map[string][]*Function)
	for _, a := range addrs {
		c := byAddr[a]
		f := c.f
		s := b.section(a)
		secEnd := s.Addr + s.Size
		end := f.Addr + f.Size
		if !c.hasSize || f.Size == 0 || end > secEnd || end < f.Addr {
			end = secEnd
		} else {
			f.sized = true
		}
		if n := nextStart(a); n < end {
			end = n
		}
		f.Size = end - f.Addr
		if f.Size < 9 { // room for endbr64 and the entry jump (decision 95)
			gap := secEnd - end
			if n := nextStart(a); n < secEnd {
				gap = n - end
			}
			f.Pad = padding(b.Code(end), min(gap, 16))
		}
		if f.Name == "" {
			f.Name = fmt.Sprintf("sub_%x", f.Addr)
		}
		sort.Strings(f.Aliases)
		funcs = append(funcs, f)
		byName[f.Name] = append(byName[f.Name], f)
		for _, al := range f.Aliases {
			byName[al] = append(byName[al], f)
		}
	}
	// Join cold fragments to the function named by the prefix. Where the
	// name is ambiguous (static functions of the same name in several
	// files), pick the candidate that jumps into the fragment.
	for _, s := range cold {
		size := s.Size
		sec := b.section(s.Addr)
		if n := nextStart(s.Addr); size == 0 || s.Addr+size > n {
			size = n - s.Addr
		}
		if s.Addr+size > sec.Addr+sec.Size {
			size = sec.Addr + sec.Size - s.Addr
		}
		r := Range{s.Addr, size}
		parent := coldParent(b, byName[coldBase(s.Name)], r)
		if parent == nil {
			// An orphan fragment stays a function of its own, so that it is
			// listed (and refused, since it jumps into its parent's body).
			f := &Function{Name: s.Name, Addr: s.Addr, Size: size, Source: FromSymtab, sized: true}
			funcs = append(funcs, f)
			continue
		}
		parent.Parts = append(parent.Parts, r)
		parent.PartNames = append(parent.PartNames, s.Name)
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Addr < funcs[j].Addr })
	return funcs
}

// isColdName reports gcc's names for split-off unlikely code: foo.cold,
// foo.cold.12 (older gcc), foo.part.0.cold.
func isColdName(name string) bool {
	i := strings.LastIndex(name, ".cold")
	if i <= 0 {
		return false
	}
	rest := name[i+len(".cold"):]
	if rest == "" {
		return true
	}
	if rest[0] != '.' || len(rest) == 1 {
		return false
	}
	for _, r := range rest[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func coldBase(name string) string {
	return name[:strings.LastIndex(name, ".cold")]
}

// coldParent picks the parent of a fragment among functions with the
// fragment's base name: the only one, or the one whose code holds a direct
// jump into the fragment.
func coldParent(b *Binary, cands []*Function, frag Range) *Function {
	if len(cands) == 1 {
		return cands[0]
	}
	for _, f := range cands {
		if jumpsInto(b, f, frag) {
			return f
		}
	}
	return nil
}

// nextAfter returns the first of the sorted addresses above a, or the
// largest address when none is.
func nextAfter(sorted []uint64, a uint64) uint64 {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] > a })
	if i < len(sorted) {
		return sorted[i]
	}
	return ^uint64(0)
}

// padding counts the leading bytes of code[:n] that are alignment filler:
// nop forms, int3 and zero bytes (the linker's fill between functions).
func padding(code []byte, n uint64) uint64 {
	if uint64(len(code)) < n {
		n = uint64(len(code))
	}
	var off uint64
	for off < n {
		switch code[off] {
		case 0x00, 0xcc, 0x90:
			off++
			continue
		}
		in, err := x86.DecodeInfo(code[off:n], 0)
		if err != nil || !isNop(&in, code[off:]) {
			break
		}
		off += uint64(in.Len)
	}
	return off
}

// isNop reports whether in, decoded from code, is a no-operation: nop in
// any of its lengths, or xchg %ax,%ax (66 90).
func isNop(in *x86.Info, code []byte) bool {
	return in.Op == x86asm.NOP || in.Len == 2 && len(code) >= 2 && code[0] == 0x66 && code[1] == 0x90
}

// midFrame reports whether the FDE's code starts with unwind rules other
// than its CIE's initial ones (a call frame already set up). Unreadable
// rules count as not mid-frame.
func midFrame(e *ehframe.Entry) bool {
	init, err := e.CIE.InitialState()
	if err != nil {
		return false
	}
	row, err := e.FirstRow()
	if err != nil || row.Addr != e.Begin {
		return false
	}
	return !row.State.Equal(init)
}
