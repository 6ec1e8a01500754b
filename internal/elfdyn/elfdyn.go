// Package elfdyn reads the dynamic table of an ELF64 little-endian file,
// the array of Elf64_Dyn entries that ends at the first DT_NULL [gABI ch.5
// "Dynamic Section"]. It is the one walker of that table: cfg reads the
// table to tell a PIE from a shared object, the ELF writer
// (rewriter/elfw) to find DT_FINI and the symbol tables it edits.
//
// What it trusts: nothing in the bytes. A table without a terminator, or
// whose size is not a multiple of the entry size, is read as far as whole
// entries go; the caller decides whether that is an error. Where the
// table lies (section header or PT_DYNAMIC) is the caller's choice.
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
