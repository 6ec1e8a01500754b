// Package addrmap is the address map the rewriter stores in a non-loaded
// section (.blpp.map) of an instrumented binary: for every original
// instruction of every instrumented function, the addresses of its copies
// in the relocated code. Most instructions have one copy; an instruction
// of a loop given a second copy [decisions 58, 63] has two. The map is
// recorded while code is generated (each copied instruction's offset in
// the code buffer) and turned into virtual addresses once the code is
// placed.
//
// It lets a tool that observes the rewritten program (callgrind running
// it, a sampling profiler, a debugger) attribute what it sees in the
// relocated code to the original instructions: the same-run exactness
// oracle of internal/testsupport/corpus sums callgrind's counts over an instruction's
// copies and compares them with the profile the same run wrote.
//
// This package owns the encoding (docs/formats.md, "The address map").
// The format is versioned; Decode trusts nothing in its input.
package addrmap
