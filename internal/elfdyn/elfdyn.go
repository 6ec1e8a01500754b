package elfdyn

import (
	"debug/elf"
	"encoding/binary"
)

// EntrySize is the size of one Elf64_Dyn entry: d_tag, then d_val or d_ptr.
const EntrySize = 16

// Entry is one entry of a dynamic table.
type Entry struct {
	Tag elf.DynTag
	Val uint64 // d_val or d_ptr
}

// Entries decodes the table d up to its DT_NULL terminator, which it does
// not include: entry i starts at byte i*EntrySize of d. terminated
// reports whether a DT_NULL was found; entries after it are ignored, as
// every reader ignores them.
func Entries(d []byte) (es []Entry, terminated bool) {
	for i := 0; i+EntrySize <= len(d); i += EntrySize {
		tag := elf.DynTag(binary.LittleEndian.Uint64(d[i:]))
		if tag == elf.DT_NULL {
			return es, true
		}
		es = append(es, Entry{Tag: tag, Val: binary.LittleEndian.Uint64(d[i+8:])})
	}
	return es, false
}

// Lookup returns the value of the first entry with the given tag before
// the terminator.
func Lookup(d []byte, tag elf.DynTag) (val uint64, ok bool) {
	es, _ := Entries(d)
	for _, e := range es {
		if e.Tag == tag {
			return e.Val, true
		}
	}
	return 0, false
}
