package elfw

import "fmt"

const (
	// PageSize is the x86-64 page size. New segments are placed and
	// aligned on it, and their p_align is PageSize.
	PageSize = 0x1000
	// MaxSegments is the most new segments one Write adds for the caller.
	// The program header table is reserved for the original entries, the
	// PT_LOAD that maps the table itself, this many more and extraPhdrs.
	MaxSegments = 16
	// maxUserAddr bounds every segment end: the x86-64 user address space
	// with 4-level paging ends at 2^47, less the guard page.
	maxUserAddr = 1<<47 - PageSize
	// defaultMirrorPad is the most zero bytes Write adds to the file to
	// place the program header table at a file offset equal to its
	// distance from the image base (see Layout.Mirrored).
	defaultMirrorPad = 64 << 20
	// extraPhdrs are entries the table reserves beyond the new segments:
	// a PT_GNU_EH_FRAME for an input that has none (Options.EHFrameHdr)
	// and the PT_LOAD of the copied dynamic symbol tables
	// (Options.Symbols).
	extraPhdrs = 2
)

// Layout says where Write puts the new program header table, and where the
// address space is free for new segments. It depends only on the input
// file, so a caller can plan code addresses before building the segments.
type Layout struct {
	// PhdrAddr and PhdrOff are the virtual address and file offset of the
	// new program header table, mapped by a read-only PT_LOAD of its own.
	PhdrAddr, PhdrOff uint64
	// PhdrCap is the number of entries the table has room for.
	PhdrCap int
	// FreeAddr is the lowest address new segments may use: page-aligned,
	// above every existing PT_LOAD and the table, with one unmapped page
	// between the table and it.
	FreeAddr uint64
	// Mirrored says PhdrAddr - base == PhdrOff, where base is p_vaddr -
	// p_offset of the first PT_LOAD. Linux before 5.18 reported AT_PHDR
	// as base + e_phoff (plus the load bias) whatever segment held the
	// table, and a static glibc without AT_PHDR falls back to
	// __ehdr_start + e_phoff; a mirrored table is right for both. Linux
	// 5.18 and later find the PT_LOAD that holds e_phoff, so an unmirrored
	// table works there. Write mirrors unless that costs more than 64 MiB
	// of zero padding (a large .bss) or the first PT_LOAD's base is not
	// page-aligned.
	Mirrored bool
}

// PlanLayout computes the Layout Write will use for orig.
func PlanLayout(orig []byte) (l Layout, err error) {
	defer func() {
		if r := recover(); r != nil {
			l, err = Layout{}, fmt.Errorf("elfw: internal error: %v", r)
		}
	}()
	im, err := parse(orig)
	if err != nil {
		return Layout{}, err
	}
	return im.plan(defaultMirrorPad), nil
}

// NextFreeAddr returns the lowest address at which a new segment may start
// (Layout.FreeAddr): page-aligned, above every existing PT_LOAD and the
// new program header table, leaving one unmapped page below it.
func NextFreeAddr(orig []byte) (uint64, error) {
	l, err := PlanLayout(orig)
	return l.FreeAddr, err
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }

// plan places the program header table. Its page must not share a page
// with an existing segment (the kernel would map it over the other
// segment's page), so it starts at or above the page after the highest
// PT_LOAD. Its file offset follows the original bytes, which stay where
// they are. maxPad bounds the zero padding mirroring may add; negative
// disables mirroring.
func (im *image) plan(maxPad int64) Layout {
	top := alignUp(im.lastLoadEnd(), PageSize)
	first := im.progs[im.loads[0]]
	fileEnd := alignUp(uint64(len(im.data)), 8)
	room := len(im.progs) + 1 + MaxSegments + extraPhdrs

	var l Layout
	l.PhdrCap = room
	if maxPad >= 0 && first.Addr >= first.Off && (first.Addr-first.Off)%PageSize == 0 {
		base := first.Addr - first.Off
		off := max(fileEnd, top-base)
		if off-uint64(len(im.data)) <= uint64(maxPad) {
			l.PhdrOff, l.PhdrAddr, l.Mirrored = off, base+off, true
		}
	}
	if !l.Mirrored {
		l.PhdrOff, l.PhdrAddr = alignUp(uint64(len(im.data)), PageSize), top
	}
	l.FreeAddr = alignUp(l.PhdrAddr+uint64(room)*phdrSize, PageSize) + PageSize
	return l
}

func (l Layout) String() string {
	return fmt.Sprintf("phdr at %#x (file %#x, %d entries, mirrored %v), free from %#x",
		l.PhdrAddr, l.PhdrOff, l.PhdrCap, l.Mirrored, l.FreeAddr)
}
