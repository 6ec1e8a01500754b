// Package cfg recovers the procedures of an x86-64 ELF binary and the
// control-flow graph of each: what the rewriter instruments and every
// report describes (DESIGN, "Layout").
//
// The work, file by file:
//
//   - binary.go: Open and Load read the ELF file: sections, symbols
//     (.symtab and .dynsym), the FDEs of .eh_frame (package ehframe), the
//     build-id, and the kind of object (executable, PIE, shared).
//   - functions.go, function.go, discover.go: the procedures, from
//     symbols, FDE bounds and, in code neither describes, evidence in
//     known code (call targets, taken addresses, tail jumps, code after
//     padding); .cold and other fragments are joined to their parent.
//   - build.go: basic blocks and edges, decoding with package x86; calls
//     end blocks, tail calls and no-return calls go to Exit. jumptable.go
//     and slice.go recover jump tables (regconst.go proves table bases,
//     refs.go bounds unguarded tables, cfa.go tells indirect tail calls
//     from jumps that stay); eh.go adds landing-pad edges from the LSDAs;
//     leaves.go finds the ways out of the process that skip exit handlers.
//   - program.go: Analyze builds every selected graph in parallel and infers
//     no-return procedures to a fixed point.
//   - dom.go: dominators [Cooper-Harvey-Kennedy 01] and the depth-first
//     numbering; flow.go and loops.go: the loop nesting forest, natural
//     loops and irreducible regions [Havlak 97], over a Flow that the
//     reports also build from the metadata, so both see the same loops;
//     liveness.go and regslive.go: flags and register liveness for the
//     code generator (DESIGN decision 5).
//
// A procedure is instrumentable only when all of its control flow is
// understood (DESIGN decision 2); otherwise Graph.Reason and Graph.Detail
// say why, and the procedure is listed, never guessed at.
//
// What it trusts: nothing in the binary. Load is the boundary for hostile
// input: a malformed file is refused with a FormatError naming the offset,
// and a panic in the standard library's ELF reader becomes one. Inside,
// every table read is bounds-checked, every analysis has a work budget
// (ReasonTooLarge when it is spent), and where a fact cannot be proved
// the answer is the conservative one (flags live, jump unresolved). It
// trusts package x86 to decode instructions correctly, and the compilers'
// conventions it names where it relies on them (jump-table shapes, FDEs
// covering whole functions).
package cfg
