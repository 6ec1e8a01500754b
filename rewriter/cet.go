package rewriter

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// GNU property note constants [x86-64 psABI 2.1.7 "Program Property";
// linux/elf.h].
const (
	ntGNUPropertyType0     = 5
	gnuPropertyX86Feature1 = 0xc0000002 // GNU_PROPERTY_X86_FEATURE_1_AND
	x86FeatureIBT          = 1 << 0
	x86FeatureSHSTK        = 1 << 1
)

// cetWarning is what the summary says when clearCET changed the note.
const cetWarning = "the program was built for CET (IBT/SHSTK); the rewritten one is marked without it: " +
	"entry jumps overwrite endbr64 and the runtime is not CET-enabled (docs/decisions.md)"

// clearCET clears the IBT and SHSTK bits of GNU_PROPERTY_X86_FEATURE_1_AND
// in every .note.gnu.property note and PT_GNU_PROPERTY/PT_NOTE segment of
// the ELF file in place, and reports whether any was set. The note must
// not claim what the rewritten program no longer is: the 5-byte entry jump
// replaces the endbr64 at each instrumented function's entry, where
// indirect calls through function pointers still land, and the runtime
// is linked in without the property, so a linker would have cleared both
// bits too (it ANDs them over its inputs). The kernel and ld.so read the
// segments; tools read the section; both are the same bytes.
func clearCET(file []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(file))
	if err != nil {
		return false
	}
	defer f.Close()
	type span struct{ off, size, align uint64 }
	var spans []span
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Name == ".note.gnu.property" {
			spans = append(spans, span{s.Offset, s.FileSize, s.Addralign})
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE || p.Type == elf.PT_GNU_PROPERTY {
			spans = append(spans, span{p.Off, p.Filesz, p.Align})
		}
	}
	changed := false
	for _, sp := range spans {
		if sp.off > uint64(len(file)) || sp.size > uint64(len(file))-sp.off {
			continue
		}
		changed = clearCETNotes(file[sp.off:sp.off+sp.size], sp.align) || changed
	}
	return changed
}

// clearCETNotes walks the notes in d, whose descriptors are padded to
// align (4, or 8 for ELFCLASS64 NT_GNU_PROPERTY_TYPE_0 notes), and clears
// the bits.
func clearCETNotes(d []byte, align uint64) bool {
	le := binary.LittleEndian
	changed := false
	pad := uint64(3)
	if align == 8 {
		pad = 7
	}
	for len(d) >= 12 {
		namesz, descsz, typ := uint64(le.Uint32(d)), uint64(le.Uint32(d[4:])), le.Uint32(d[8:])
		nameEnd := 12 + (namesz+3)&^3
		descEnd := nameEnd + (descsz+pad)&^pad
		if nameEnd > uint64(len(d)) || nameEnd+descsz > uint64(len(d)) {
			return changed
		}
		if typ == ntGNUPropertyType0 && namesz == 4 && string(d[12:16]) == "GNU\x00" {
			for p := d[nameEnd : nameEnd+descsz]; len(p) >= 8; {
				ptyp, psz := le.Uint32(p), uint64(le.Uint32(p[4:]))
				if 8+psz > uint64(len(p)) {
					break
				}
				if ptyp == gnuPropertyX86Feature1 && psz >= 4 {
					if v := le.Uint32(p[8:]); v&(x86FeatureIBT|x86FeatureSHSTK) != 0 {
						le.PutUint32(p[8:], v&^(x86FeatureIBT|x86FeatureSHSTK))
						changed = true
					}
				}
				next := 8 + (psz+7)&^7
				if next > uint64(len(p)) {
					break
				}
				p = p[next:]
			}
		}
		if descEnd > uint64(len(d)) {
			return changed
		}
		d = d[descEnd:]
	}
	return changed
}
