// Package ehframe reads the function ranges out of an ELF .eh_frame
// section: one FDE (Frame Description Entry) per function or function
// fragment, giving its address range and, for C++ code, its LSDA.
//
// Debian's binaries are stripped; .eh_frame, which the C++ unwinder and
// glibc's backtrace need at run time, is the one place that still gives
// the bounds of local functions and of gcc's .cold fragments. blpp uses
// the ranges to find functions, not the unwinding rules: call frame
// instructions are skipped, never interpreted.
//
// The format is [LSB 5.0 §10.6.1 .eh_frame] (a variant of [DWARF5 §6.4.1
// call frame information]) with pointer encodings from [LSB 5.0 §10.5.1
// DWARF Exception Header Encoding]. Supported: CIE versions 1 and 3;
// augmentation strings made of z, R, P, L, S, B and G, and the old "eh";
// every DW_EH_PE value format (absptr, uleb128, udata2/4/8, sleb128,
// sdata2/4/8) and application (absolute, pcrel, textrel, datarel,
// aligned), with the indirect flag; 64-bit lengths (0xffffffff escape);
// a zero length as the terminator. Pointers are 8 bytes (ELFCLASS64).
//
// # What it trusts
//
// Nothing. The section bytes are hostile input: every read is bounds
// checked by a sticky-error cursor (after the one in debug/dwarf), every
// length is checked against its container, every CIE pointer must lead
// to a CIE parsed earlier in the section, and Parse never panics
// (FuzzParse). A malformed section gives a nil slice and a *FormatError
// with the offset of the offending bytes: blpp does not guess function
// bounds from a half-read table.
package ehframe
