package callgrind

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// FoldUnknown attributes to the main object the code callgrind filed under
// UnknownObject that lies in the executable exe: the .init, .plt, .plt.sec
// and .fini sections, which callgrind does not place in any object because
// its debug-info reader covers only the text it found symbols for.
// Callgrind prints those addresses at run time, so the executable's load
// bias is needed to turn them into ELF addresses:
//
//   - ET_EXEC: the bias is 0.
//   - ET_DYN (PIE): valgrind 3.19 loads the executable at 0x108000 (bias
//     0x108000), but rather than trust that, the bias is measured: every
//     direct call or jump (E8/E9 rel32, optionally bnd-prefixed) from the
//     main object into UnknownObject has its ELF target computed from the
//     instruction bytes in exe, and its run-time target in the profile.
//     All such pairs must give the same page-aligned bias, otherwise
//     FoldUnknown fails with ErrBias. Without any such call (a -fno-plt
//     build) nothing is folded, Folded stays false and the Unknown fields
//     keep the code.
//
// Folded code moves into Exec, Jumps and Calls (a call from main into its
// own .plt becomes a Calls entry); calls with no end in the main object
// after folding (the shared libraries' own .plt stubs calling into their
// library) are dropped from External. Run calls FoldUnknown; ParseFile
// does not.
func (p *Profile) FoldUnknown(exe string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("callgrind: fold: %w", err)
	}
	defer f.Close()
	var bias uint64
	switch f.Type {
	case elf.ET_EXEC:
	case elf.ET_DYN:
		b, ok, err := p.measureBias(f)
		if err != nil {
			return fmt.Errorf("callgrind: fold %s: %w", exe, err)
		}
		if !ok {
			return nil
		}
		bias = b
	default:
		return fmt.Errorf("callgrind: fold %s: ELF type %v is not an executable", exe, f.Type)
	}
	if err := p.fold(f, exe, bias); err != nil {
		return err
	}
	if p.After != nil {
		return p.After.fold(f, exe, bias)
	}
	return nil
}

// FoldUnknownAt is FoldUnknown with the load bias given: a fork child of a
// PIE has its parent's layout, but its own counts may hold no call that
// shows the bias.
func (p *Profile) FoldUnknownAt(exe string, bias uint64) error {
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("callgrind: fold: %w", err)
	}
	defer f.Close()
	if err := p.fold(f, exe, bias); err != nil {
		return err
	}
	if p.After != nil {
		return p.After.fold(f, exe, bias)
	}
	return nil
}

// fold moves the code of exe's executable segments out of the Unknown
// fields, given the load bias.
func (p *Profile) fold(f *elf.File, exe string, bias uint64) error {
	var text []*elf.Prog
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 {
			text = append(text, pr)
		}
	}
	// inMain maps a run-time address of UnknownObject to an ELF address
	// of exe's executable segments.
	inMain := func(a uint64) (uint64, bool) {
		if a < bias {
			return 0, false
		}
		v := a - bias
		for _, pr := range text {
			if v >= pr.Vaddr && v-pr.Vaddr < pr.Memsz {
				return v, true
			}
		}
		return 0, false
	}
	mapLoc := func(l Loc) Loc {
		if l.Object == UnknownObject {
			if v, ok := inMain(l.Addr); ok {
				return Loc{p.Object, v}
			}
		}
		return l
	}
	overflow := fmt.Errorf("callgrind: fold %s: count overflows 64 bits", exe)

	for a, n := range p.UnknownExec {
		if v, ok := inMain(a); ok {
			if !addCount(p.Exec, v, n) {
				return overflow
			}
			delete(p.UnknownExec, a)
		}
	}
	for k, j := range p.UnknownJumps {
		from, ok1 := inMain(k[0])
		to, ok2 := inMain(k[1])
		if ok1 && ok2 {
			if !addJump(p.Jumps, [2]uint64{from, to}, j) {
				return overflow
			}
			delete(p.UnknownJumps, k)
		}
	}
	ext := make(map[Arc]uint64, len(p.External))
	for a, n := range p.External {
		b := Arc{mapLoc(a.From), mapLoc(a.To)}
		switch {
		case b.From.Object == p.Object && b.To.Object == p.Object:
			if !addCount(p.Calls, [2]uint64{b.From.Addr, b.To.Addr}, n) {
				return overflow
			}
		case b.From.Object == p.Object || b.To.Object == p.Object:
			if !addCount(ext, b, n) {
				return overflow
			}
		}
	}
	p.External = ext
	names := make(map[Loc]string, len(p.Names))
	for l, s := range p.Names {
		if m := mapLoc(l); m.Object == p.Object || l.Object != UnknownObject {
			names[m] = s
		}
	}
	p.Names = names
	p.Bias, p.Folded = bias, true
	return nil
}

// measureBias derives the run-time load bias of a PIE from direct calls
// and jumps of the main object into UnknownObject.
func (p *Profile) measureBias(f *elf.File) (uint64, bool, error) {
	var found []uint64
	for a := range p.External {
		if a.From.Object != p.Object || a.To.Object != UnknownObject {
			continue
		}
		dest, ok := directTarget(f, a.From.Addr)
		if !ok || a.To.Addr < dest {
			continue
		}
		b := a.To.Addr - dest
		if b%0x1000 != 0 {
			continue
		}
		if !slices.Contains(found, b) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return 0, false, nil
	case 1:
		return found[0], true, nil
	}
	slices.Sort(found)
	s := make([]string, len(found))
	for i, b := range found {
		s[i] = fmt.Sprintf("%#x", b)
	}
	return 0, false, fmt.Errorf("%w: calls into %s give biases %s", ErrBias, UnknownObject, strings.Join(s, ", "))
}

// directTarget decodes a direct call or jump with a 32-bit displacement at
// ELF address addr of f (E8/E9 rel32, optionally after the F2 bnd prefix)
// and returns its ELF target.
func directTarget(f *elf.File, addr uint64) (uint64, bool) {
	var buf [6]byte
	b := buf[:readVaddr(f, addr, buf[:])]
	if len(b) >= 6 && b[0] == 0xF2 {
		b = b[1:]
		addr++
	}
	if len(b) < 5 || b[0] != 0xE8 && b[0] != 0xE9 {
		return 0, false
	}
	rel := int64(int32(binary.LittleEndian.Uint32(b[1:5])))
	return addr + 5 + uint64(rel), true
}

// readVaddr reads into buf the file bytes at ELF address addr, as many as
// the PT_LOAD segment holding addr has in its file image, and returns how
// many it read.
func readVaddr(f *elf.File, addr uint64, buf []byte) int {
	for _, pr := range f.Progs {
		if pr.Type != elf.PT_LOAD || addr < pr.Vaddr || addr-pr.Vaddr >= pr.Filesz {
			continue
		}
		off := addr - pr.Vaddr
		n := uint64(len(buf))
		if pr.Filesz-off < n {
			n = pr.Filesz - off
		}
		k, _ := pr.ReadAt(buf[:n], int64(off))
		return k
	}
	return 0
}
