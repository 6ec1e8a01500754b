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
