package elfw

import (
	"debug/elf"

	"blpp/internal/elfdyn"
)

// dynTable locates the dynamic section through PT_DYNAMIC and returns the
// file offset of its first entry and the number of entries. The section
// must be file-backed inside one PT_LOAD at the offset its address maps
// to, because Write edits it in the file and the loader reads it from
// memory [gABI ch.5 "Dynamic Section"].
func (im *image) dynTable() (off uint64, n int, err error) {
	if im.dyn < 0 {
		return 0, 0, nil
	}
	p := im.progs[im.dyn]
	where := im.phoff + uint64(im.dyn)*phdrSize
	if p.Filesz%dynSize != 0 {
		return 0, 0, malformed(where, "PT_DYNAMIC size %#x is not a multiple of %d", p.Filesz, dynSize)
	}
	off, _, ok := im.fileOff(p.Addr, p.Filesz)
	if !ok || off != p.Off {
		return 0, 0, malformed(where, "PT_DYNAMIC [%#x,+%#x) is not file-backed at its p_offset %#x", p.Addr, p.Filesz, p.Off)
	}
	return off, int(p.Filesz / dynSize), nil
}

// dynEntries returns the entries of the dynamic table at off, of n
// entries, before its terminator, and whether it has one.
func (im *image) dynEntries(off uint64, n int) ([]elfdyn.Entry, bool) {
	return elfdyn.Entries(im.data[off : off+uint64(n)*dynSize])
}

// finiSlot finds where a new DT_FINI value goes: the existing DT_FINI
// entry, or else the first DT_NULL, which becomes DT_FINI while the slot
// after it (ignored by every reader, being past the terminator) becomes
// the new DT_NULL. It returns the file offset of the entry and whether a
// terminator must be written after it.
func (im *image) finiSlot() (entryOff uint64, newNull bool, err error) {
	off, n, err := im.dynTable()
	if err != nil {
		return 0, false, err
	}
	if n == 0 {
		return 0, false, ErrNoFiniSlot
	}
	es, terminated := im.dynEntries(off, n)
	for i, e := range es {
		if e.Tag == elf.DT_FINI {
			return off + uint64(i)*dynSize, false, nil
		}
	}
	if !terminated {
		return 0, false, malformed(off, "dynamic section has no DT_NULL terminator")
	}
	if len(es)+1 >= n {
		return 0, false, ErrNoFiniSlot
	}
	return off + uint64(len(es))*dynSize, true, nil
}

// OrigFini returns the DT_FINI value of an executable: the link-time
// address of the function the dynamic loader calls at exit after the
// DT_FINI_ARRAY entries [gABI ch.5 "Initialization and Termination
// Functions"]. An exit hook installed with Options.Fini calls (or jumps
// to) it when present. ok is false when the file has no DT_FINI or cannot
// be parsed.
func OrigFini(orig []byte) (addr uint64, ok bool) {
	defer func() {
		if recover() != nil {
			addr, ok = 0, false
		}
	}()
	im, err := parse(orig)
	if err != nil {
		return 0, false
	}
	off, n, err := im.dynTable()
	if err != nil {
		return 0, false
	}
	es, _ := im.dynEntries(off, n)
	for _, e := range es {
		if e.Tag == elf.DT_FINI {
			return e.Val, true
		}
	}
	return 0, false
}
