// Package cursor is the little-endian byte cursor of blpp's file parsers
// (cct's profile reader, cfg/ehframe's section parser), after the buf of
// debug/dwarf: the first failure is recorded and every later read returns
// zero, so a parser reads a whole item and checks Err once. The failure
// is the parser's own located error, which its Located function makes:
// the error types stay with the formats, and so do the number encodings
// (LEB128 rules differ between DWARF and the profile file). It trusts
// nothing in its input.
package cursor
