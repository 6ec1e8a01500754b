package elfw

import (
	"debug/elf"
	"errors"

	"github.com/blpp/blpp/internal/elfdyn"
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

// dynSlots finds where new values of the given tags go, one entry each:
// an existing entry of that tag, or else the next DT_NULL, which becomes
// the tag's entry, while the slot after the last one taken (ignored by
// every reader, being past the terminator) becomes the new DT_NULL. It
// returns the file offset of each tag's entry, in order, and the offset
// of the new terminator (0 when no DT_NULL was taken). noSlot gives the
// error for a tag that finds no spare slot.
func (im *image) dynSlots(tags []elf.DynTag) (offs []uint64, nullOff uint64, err error) {
	off, n, err := im.dynTable()
	if err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, noSlot(tags[0])
	}
	es, terminated := im.dynEntries(off, n)
	next := len(es) // the next spare slot
	for _, tag := range tags {
		found := false
		for i, e := range es {
			if e.Tag == tag {
				offs, found = append(offs, off+uint64(i)*dynSize), true
				break
			}
		}
		if found {
			continue
		}
		if !terminated {
			return nil, 0, malformed(off, "dynamic section has no DT_NULL terminator")
		}
		if next+1 >= n {
			return nil, 0, noSlot(tag)
		}
		offs = append(offs, off+uint64(next)*dynSize)
		next++
	}
	if next > len(es) {
		nullOff = off + uint64(next)*dynSize
	}
	return offs, nullOff, nil
}

// noSlot is dynSlots' error for tag.
func noSlot(tag elf.DynTag) error {
	if tag == elf.DT_INIT {
		return ErrNoInitSlot
	}
	return ErrNoFiniSlot
}

// finiSlot finds where a new DT_FINI value goes (dynSlots): the file
// offset of the entry and whether a terminator must be written after it.
func (im *image) finiSlot() (entryOff uint64, newNull bool, err error) {
	offs, null, err := im.dynSlots([]elf.DynTag{elf.DT_FINI})
	if err != nil {
		return 0, false, err
	}
	return offs[0], null != 0, nil
}

// hookPlan is where Options.Init and Options.Fini go in .dynamic.
type hookPlan struct {
	entries []hookEntry
	nullOff uint64 // file offset of a new DT_NULL terminator, 0 if none
}

type hookEntry struct {
	tag elf.DynTag
	val uint64
	off uint64 // file offset of the entry
}

// planHooks checks Options.Init and Options.Fini and finds their entries.
func (im *image) planHooks(opts Options, segs []segPlan) (*hookPlan, error) {
	var want []hookEntry
	var tags []elf.DynTag
	for _, h := range []struct {
		tag elf.DynTag
		val uint64
	}{{elf.DT_INIT, opts.Init}, {elf.DT_FINI, opts.Fini}} {
		if h.val != 0 {
			want = append(want, hookEntry{tag: h.tag, val: h.val})
			tags = append(tags, h.tag)
		}
	}
	p := &hookPlan{}
	if len(want) == 0 {
		return p, nil
	}
	op := func(tag elf.DynTag) string {
		if tag == elf.DT_INIT {
			return "init"
		}
		return "fini"
	}
	for _, h := range want {
		if !im.hooksRun() {
			return nil, &Error{Op: op(h.tag), Addr: h.val, Err: ErrStatic}
		}
		if err := im.checkCode(h.val, segs); err != nil {
			return nil, &Error{Op: op(h.tag), Addr: h.val, Err: err}
		}
	}
	offs, nullOff, err := im.dynSlots(tags)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			return nil, err
		}
		h := want[len(want)-1]
		if errors.Is(err, ErrNoInitSlot) {
			h = want[0]
		}
		return nil, &Error{Op: op(h.tag), Addr: h.val, Err: err}
	}
	for i := range want {
		want[i].off = offs[i]
	}
	p.entries, p.nullOff = want, nullOff
	return p, nil
}

// hooksRun reports whether the dynamic loader runs the file's DT_INIT and
// DT_FINI: it does for a dynamic executable (PT_INTERP) and for a shared
// object (ET_DYN with a dynamic section that is not a static PIE, which
// says DF_1_PIE), never for a static executable or static PIE, whose
// start-up code calls _init and _fini by symbol.
func (im *image) hooksRun() bool {
	if im.interp {
		return true
	}
	if im.typ != elf.ET_DYN || im.dyn < 0 {
		return false
	}
	off, n, err := im.dynTable()
	if err != nil {
		return false
	}
	es, _ := im.dynEntries(off, n)
	for _, e := range es {
		if e.Tag == elf.DT_FLAGS_1 && e.Val&uint64(elf.DF_1_PIE) != 0 {
			return false
		}
	}
	return true
}

// OrigFini returns the DT_FINI value of an executable or shared object:
// the link-time address of the function the dynamic loader calls at exit
// (or dlclose) after the DT_FINI_ARRAY entries [gABI ch.5 "Initialization
// and Termination Functions"]. An exit hook installed with Options.Fini
// calls (or jumps to) it when present. ok is false when the file has no
// DT_FINI or cannot be parsed.
func OrigFini(orig []byte) (addr uint64, ok bool) { return origDyn(orig, elf.DT_FINI) }

// OrigInit returns the DT_INIT value of a shared object: the link-time
// address of the function the dynamic loader calls when it loads the
// object, before the DT_INIT_ARRAY entries. A start hook installed with
// Options.Init calls it when present. ok is false when the file has no
// DT_INIT or cannot be parsed.
func OrigInit(orig []byte) (addr uint64, ok bool) { return origDyn(orig, elf.DT_INIT) }

func origDyn(orig []byte, tag elf.DynTag) (addr uint64, ok bool) {
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
		if e.Tag == tag {
			return e.Val, true
		}
	}
	return 0, false
}
