package rewriter

// The exit hook of an executable: the .fini_array entry the runtime's
// blpp_fini replaces (module.hooks).

import (
	"debug/elf"
	"encoding/binary"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/elfw"
)

// finiHook is how the exit hook is installed: by replacing the first
// entry of .fini_array (which runs last of the array) with the thunk. In a
// PIE the entry's R_X86_64_RELATIVE addend is replaced as well.
type finiHook struct {
	dtFini   bool   // hook DT_FINI instead (no .fini_array)
	slot     uint64 // address of the .fini_array entry
	orig     uint64 // its original value (link-time address)
	relaAddr uint64 // address of the RELA entry's addend, 0 if none
}

func findFini(b *cfg.Binary) (*finiHook, error) {
	s := b.File.Section(".fini_array")
	if s == nil || s.Size < 8 || s.Type == elf.SHT_NOBITS {
		return nil, ErrNoExit
	}
	h := &finiHook{slot: s.Addr}
	v, ok := b.Pointer(s.Addr)
	if !ok {
		return nil, ErrNoExit
	}
	h.orig = v
	for _, rs := range b.File.Sections {
		if rs.Type != elf.SHT_RELA || rs.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		d := b.Bytes(rs.Addr, int(rs.Size))
		for i := 0; i+24 <= len(d); i += 24 {
			if binary.LittleEndian.Uint64(d[i:]) == s.Addr && uint32(binary.LittleEndian.Uint64(d[i+8:])) == 8 {
				h.relaAddr = rs.Addr + uint64(i) + 16
			}
		}
	}
	return h, nil
}

func (h *finiHook) patches(thunk uint64) []elfw.Patch {
	v := binary.LittleEndian.AppendUint64(nil, thunk)
	ps := []elfw.Patch{{Addr: h.slot, Bytes: v}}
	if h.relaAddr != 0 {
		ps = append(ps, elfw.Patch{Addr: h.relaAddr, Bytes: v})
	}
	return ps
}
