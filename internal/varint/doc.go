// Package varint reads the varint-encoded tables blpp writes into the
// binaries it rewrites (meta, rewriter/addrmap), and owns the header
// (magic, version) that starts each: a sticky-error cursor in the manner of debug/dwarf's buf, whose first failure is kept
// and turns every later read into a zero value, so that a decoder checks
// once per step. It trusts nothing in its input.
package varint
