// Package ehwrite writes the exception-handling tables of a rewritten
// binary: a new .eh_frame holding a copy of the original's CIEs and FDEs
// plus FDEs for the relocated code, its .eh_frame_hdr lookup table, and
// fresh LSDAs (C++ exception tables) for relocated functions.
//
// The model comes from cfg/ehframe: Builder.CopyFrame re-emits an
// ehframe.Frame at a new address, AddFDE describes a new code range by
// the rows of unwinding rules (ehframe.Entry.Rows of the original,
// shifted by the relocation) and writes the shortest program that
// reproduces them [DWARF5 §6.4.2], BuildHdr writes the binary-search
// table the unwinder looks FDEs up in [LSB 5.0 §10.6.2 .eh_frame_hdr],
// and EncodeLSDA lays an ehframe.LSDA out again for a function at a new
// address [Itanium C++ ABI: exception handling §7; the layout of g++'s
// .gcc_except_table].
//
// Sizes never depend on addresses: every pointer a location change can
// alter has a fixed-size encoding (pcrel uleb128/sleb128 and aligned
// pointers are refused), and nothing is aligned to an address. A caller
// can therefore build once at a guessed address to learn the sizes, lay
// out the file, and build again at the final address.
//
// # What it trusts
//
// The models it is given: they come from ehframe's parsers, which check
// the input. It checks what it must to write a correct table (rows in
// order and inside their FDE, offsets that divide by the alignment
// factors, values that fit their encodings, call sites in order and not
// overlapping) and returns an error rather than write a table the
// unwinder would misread.
package ehwrite
