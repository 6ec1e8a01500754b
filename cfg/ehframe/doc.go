// Package ehframe reads the ELF exception-handling tables: .eh_frame
// (one FDE, Frame Description Entry, per function or function fragment,
// with its address range, its call frame program and, for C++ code, its
// LSDA) and the LSDAs in .gcc_except_table.
//
// Debian's binaries are stripped; .eh_frame, which the C++ unwinder and
// glibc's backtrace need at run time, is the one place that still gives
// the bounds of local functions and of gcc's .cold fragments. Parse gives
// just those ranges. ParseFrame gives the whole section (CIEs, FDEs,
// programs, the raw bytes of each entry) so that rewriter/ehwrite can
// copy it and describe relocated code: Entry.Rows runs an FDE's program
// into its table of unwinding rules [DWARF5 §6.4.1], and ParseLSDA
// decodes the call sites, landing pads, action chains and type tables of
// a function's LSDA [Itanium C++ ABI: exception handling §7].
//
// The format is [LSB 5.0 §10.6.1 .eh_frame] (a variant of [DWARF5 §6.4.1
// call frame information]) with pointer encodings from [LSB 5.0 §10.5.1
// DWARF Exception Header Encoding]. Supported: CIE versions 1 and 3;
// augmentation strings made of z, R, P, L, S, B and G, and the old "eh";
// every DW_EH_PE value format (absptr, uleb128, udata2/4/8, sleb128,
// sdata2/4/8) and application (absolute, pcrel, textrel, datarel,
// aligned), with the indirect flag; 64-bit lengths (0xffffffff escape);
// a zero length as the terminator. Pointers are 8 bytes (ELFCLASS64).
// Every call frame instruction of DWARF 5 except the SPARC/AArch64
// DW_CFA_GNU_window_save and DW_CFA_MIPS_advance_loc8, plus
// DW_CFA_GNU_args_size and DW_CFA_GNU_negative_offset_extended. The LSDA
// layout is g++'s and clang++'s for __gxx_personality_v0 (not ARM EHABI).
//
// # What it trusts
//
// Nothing. The section bytes are hostile input: every read is bounds
// checked by a sticky-error cursor (after the one in debug/dwarf), every
// length is checked against its container, every CIE pointer must lead
// to a CIE parsed earlier in the section, action chains must not loop,
// and no function here panics (FuzzParse, FuzzParseFrame, FuzzParseLSDA).
// A malformed section gives a nil result and a *FormatError with the
// offset of the offending bytes: blpp does not guess function bounds
// from a half-read table.
package ehframe
