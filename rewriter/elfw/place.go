package elfw

// Planning where the new parts go, before any byte is written: the new
// segments checked and given addresses and file offsets, the names of
// the section headers Write adds, and the checks of the requests that
// depend on them.

import (
	"debug/elf"
	"fmt"
	"sort"
	"strings"
)

// segPlan is a new segment being laid out.
type segPlan struct {
	Segment
	idx    int // index in Options.Segments; beyond for Write's own
	off    uint64
	hidden bool // no section header: original ones are repointed at it
}

// placeInFile gives each segment of segs (sorted by address) its file
// offset, after a program header table of nphdr entries at lay.PhdrOff,
// and returns the end of the last one.
func placeInFile(lay Layout, nphdr int, segs []segPlan) uint64 {
	cur := lay.PhdrOff + uint64(nphdr)*phdrSize
	for i := range segs {
		segs[i].off = alignUp(cur, PageSize) + segs[i].Addr%PageSize
		cur = segs[i].off + segs[i].size()
	}
	return cur
}

// SegmentOff returns the file offset Plan gives the new segment s of
// orig when below are the new segments at lower addresses than s (with
// their data, as they will be given) and any others lie above it:
// however many those are, and whether Plan adds program headers of its
// own, as long as the segments number at most MaxSegments. A caller can
// then write a large segment while it still makes what follows it. ok
// is false when the number of program headers moves the offset (the
// table's end would fall on another page), or s has no address.
func SegmentOff(orig []byte, below []Segment, s Segment) (off uint64, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			off, ok, err = 0, false, fmt.Errorf("elfw: internal error: %v", r)
		}
	}()
	im, err := parse(orig)
	if err != nil {
		return 0, false, err
	}
	if s.Addr == 0 || len(below) >= MaxSegments {
		return 0, false, nil
	}
	lay := im.plan(defaultMirrorPad)
	segs := make([]segPlan, 0, len(below)+1)
	for i, b := range below {
		if b.Addr == 0 || b.Addr >= s.Addr {
			return 0, false, nil
		}
		segs = append(segs, segPlan{Segment: b, idx: i})
	}
	segs = append(segs, segPlan{Segment: s, idx: len(below)})
	sort.Slice(segs, func(i, j int) bool { return segs[i].Addr < segs[j].Addr })
	// The fewest program headers: the original ones, the table's own
	// PT_LOAD and these segments; the most: the table's room.
	placeInFile(lay, len(im.progs)+1+len(segs), segs)
	lo := segs[len(segs)-1].off
	placeInFile(lay, lay.PhdrCap, segs)
	if hi := segs[len(segs)-1].off; hi != lo {
		return 0, false, nil
	}
	return lo, true, nil
}

// placeSegments checks the new segments, gives an address to those without
// one (page by page above FreeAddr and above every segment that has one,
// in the order given) and returns them sorted by address.
//
// own are Write's own segments (without section headers of their own),
// placed after the caller's.
func placeSegments(in, own []Segment, lay Layout) ([]segPlan, error) {
	if len(in) > MaxSegments {
		return nil, &Error{Op: "segment", Err: ErrTooManySegments, Detail: fmt.Sprintf("%d, at most %d", len(in), MaxSegments)}
	}
	segs := make([]segPlan, len(in)+len(own))
	next := lay.FreeAddr
	for i, s := range append(append([]Segment(nil), in...), own...) {
		if s.MemSize == 0 {
			s.MemSize = s.size()
		}
		fail := func(err error, detail string) error {
			return &Error{Op: "segment", Name: s.Name, Addr: s.Addr, Err: err, Detail: detail}
		}
		if err := checkName(s.Name); err != nil {
			return nil, fail(ErrBadSegment, err.Error())
		}
		switch s.Flags {
		case elf.PF_R | elf.PF_X, elf.PF_R | elf.PF_W, elf.PF_R:
		default:
			return nil, fail(ErrBadSegment, "flags "+s.Flags.String()+", want R+X, R+W or R")
		}
		if s.MemSize < s.size() {
			return nil, fail(ErrBadSegment, fmt.Sprintf("memory size %#x below data size %#x", s.MemSize, s.size()))
		}
		if s.MemSize == 0 {
			return nil, fail(ErrBadSegment, "empty")
		}
		if err := checkSubSections(s); err != nil {
			return nil, fail(ErrBadSegment, err.Error())
		}
		if s.Addr != 0 {
			if s.Addr%PageSize != 0 {
				return nil, fail(ErrUnaligned, "")
			}
			if s.Addr < lay.FreeAddr {
				return nil, fail(ErrBelowFree, fmt.Sprintf("first free address %#x", lay.FreeAddr))
			}
			if end, ok := add(s.Addr, s.MemSize); !ok || end > maxUserAddr {
				return nil, fail(ErrBadSegment, "ends beyond the user address space")
			}
			next = max(next, alignUp(s.Addr+s.MemSize, PageSize))
		}
		segs[i] = segPlan{Segment: s, idx: i, hidden: i >= len(in)}
	}
	for i := range segs {
		s := &segs[i]
		if s.Addr != 0 {
			continue
		}
		end, ok := add(next, s.MemSize)
		if !ok || end > maxUserAddr {
			return nil, &Error{Op: "segment", Name: s.Name, Err: ErrBadSegment, Detail: "no room below the end of the user address space"}
		}
		s.Addr = next
		next = alignUp(end, PageSize)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Addr < segs[j].Addr })
	for i := 1; i < len(segs); i++ {
		a, b := segs[i-1], segs[i]
		if b.Addr < alignUp(a.Addr+a.MemSize, PageSize) {
			return nil, &Error{Op: "segment", Name: b.Name, Addr: b.Addr, Err: ErrOverlap, Detail: fmt.Sprintf("with segment %q", a.Name)}
		}
	}
	return segs, nil
}

func checkName(n string) error {
	switch {
	case n == "":
		return fmt.Errorf("empty name")
	case strings.IndexByte(n, 0) >= 0:
		return fmt.Errorf("name contains a NUL byte")
	case len(n) > 256:
		return fmt.Errorf("name longer than 256 bytes")
	}
	return nil
}

func checkSections(secs []Section) error {
	for _, s := range secs {
		if err := checkName(s.Name); err != nil {
			return &Error{Op: "section", Name: s.Name, Err: ErrBadSection, Detail: err.Error()}
		}
	}
	return nil
}

// checkCode checks that addr is a file-backed byte of an executable
// segment, old or new.
func (im *image) checkCode(addr uint64, segs []segPlan) error {
	for _, s := range segs {
		if addr >= s.Addr && addr-s.Addr < s.MemSize {
			if s.Flags&elf.PF_X == 0 {
				return ErrNotExecutable
			}
			if addr-s.Addr >= s.size() {
				return ErrNotFileBacked
			}
			return nil
		}
	}
	for _, i := range im.loads {
		p := im.progs[i]
		if addr >= p.Addr && addr-p.Addr < p.Memsz {
			if p.Flags&elf.PF_X == 0 {
				return ErrNotExecutable
			}
			if addr-p.Addr >= p.Filesz {
				return ErrNotFileBacked
			}
			return nil
		}
	}
	return ErrNotFileBacked
}

// checkSubSections checks that a segment's sections have usable names and
// lie, without overlapping, inside its file-backed bytes.
func checkSubSections(s Segment) error {
	subs := append([]SubSection(nil), s.Sections...)
	for _, sub := range subs {
		if err := checkName(sub.Name); err != nil {
			return fmt.Errorf("section %q: %v", sub.Name, err)
		}
		if end, ok := add(sub.Off, sub.Size); !ok || end > s.size() {
			return fmt.Errorf("section %q [%#x,+%#x) outside the segment's %#x data bytes", sub.Name, sub.Off, sub.Size, s.size())
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Off < subs[j].Off })
	for i := 1; i < len(subs); i++ {
		if subs[i].Off < subs[i-1].Off+subs[i-1].Size {
			return fmt.Errorf("sections %q and %q overlap", subs[i-1].Name, subs[i].Name)
		}
	}
	return nil
}

// origPrefix renames an original section that a new one of the same name
// replaces: ".eh_frame" becomes ".blpp.orig.eh_frame".
const origPrefix = ".blpp.orig."

// bssName names the SHT_NOBITS header of a segment's zero-filled tail.
func bssName(s Segment) string {
	if s.size() == 0 {
		return s.Name
	}
	return s.Name + ".bss"
}

// naturalAlign is the sh_addralign of a section at addr: the largest power
// of two up to 16 that divides it [gABI ch.4: sh_addr is 0 modulo
// sh_addralign].
func naturalAlign(addr uint64) uint64 {
	a := uint64(1)
	for a < 16 && addr%(2*a) == 0 {
		a *= 2
	}
	return a
}

// phdrSectName names the section header of the new program header table.
const phdrSectName = ".blpp.phdr"

// newSectionNames collects the names of the section headers Write adds for
// new segments and sections. Two new headers may not share a name (a tool
// looking one up would find either), nor take the section name table's.
func (im *image) newSectionNames(segs []segPlan, secs []Section) (map[string]bool, error) {
	names := map[string]bool{}
	shstr := ".shstrtab"
	if im.shstrndx != 0 {
		if n, ok := im.sectName(im.shstrndx); ok {
			shstr = n
		}
	}
	addName := func(op, n string) error {
		if names[n] || n == shstr {
			return &Error{Op: op, Name: n, Err: ErrBadSection, Detail: "name used twice"}
		}
		names[n] = true
		return nil
	}
	if err := addName("segment", phdrSectName); err != nil {
		return nil, err
	}
	for _, s := range segs {
		if s.hidden {
			continue
		}
		var err error
		switch {
		case len(s.Sections) > 0:
			for _, sub := range s.Sections {
				if err = addName("segment", sub.Name); err != nil {
					break
				}
			}
		case s.size() > 0:
			err = addName("segment", s.Name)
		}
		if err == nil && s.MemSize > s.size() {
			err = addName("segment", bssName(s.Segment))
		}
		if err != nil {
			return nil, err
		}
	}
	for _, s := range secs {
		if err := addName("section", s.Name); err != nil {
			return nil, err
		}
	}
	return names, nil
}
