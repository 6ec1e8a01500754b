package ehwrite

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/blpp/blpp/cfg/ehframe"
)

// BuildHdr returns an .eh_frame_hdr to be loaded at addr for the
// .eh_frame at ehFrameAddr [LSB 5.0 §10.6.2]: version 1, eh_frame_ptr
// pcrel|sdata4, fde_count udata4, and the search table (initial location,
// FDE address) in datarel|sdata4 — relative to the header's own start —
// sorted by initial location, which is what libgcc's
// _Unwind_Find_FDE and glibc's dl_iterate_phdr users binary-search.
// Two entries with one Begin are an error (ErrDuplicate), as is an
// address more than 2 GiB away from the header (ErrRange).
func BuildHdr(addr, ehFrameAddr uint64, table []HdrEntry) ([]byte, error) {
	t := slices.Clone(table)
	slices.SortFunc(t, func(a, b HdrEntry) int {
		switch {
		case a.Begin < b.Begin:
			return -1
		case a.Begin > b.Begin:
			return 1
		}
		return 0
	})
	for i := 1; i < len(t); i++ {
		if t[i].Begin == t[i-1].Begin {
			return nil, fmt.Errorf("eh_frame_hdr: %w: two FDEs (at %#x and %#x) start at %#x", ErrDuplicate, t[i-1].FDEAddr, t[i].FDEAddr, t[i].Begin)
		}
	}
	if uint64(len(t)) > 0xffffffff {
		return nil, fmt.Errorf("eh_frame_hdr: %w: %d FDEs", ErrRange, len(t))
	}
	out := []byte{1, ehframe.PESdata4 | ehframe.PEPcrel, ehframe.PEUdata4, ehframe.PESdata4 | ehframe.PEDatarel}
	if !fitsInt32(ehFrameAddr, addr+4) {
		return nil, fmt.Errorf("eh_frame_hdr: %w: .eh_frame at %#x is too far from the header at %#x", ErrRange, ehFrameAddr, addr)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(ehFrameAddr-(addr+4)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(t)))
	for _, e := range t {
		if !fitsInt32(e.Begin, addr) || !fitsInt32(e.FDEAddr, addr) {
			return nil, fmt.Errorf("eh_frame_hdr: %w: FDE at %#x for %#x is too far from the header at %#x", ErrRange, e.FDEAddr, e.Begin, addr)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(e.Begin-addr))
		out = binary.LittleEndian.AppendUint32(out, uint32(e.FDEAddr-addr))
	}
	return out, nil
}
