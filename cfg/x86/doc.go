// Package x86 decodes single x86-64 instructions for blpp's CFG builder
// and relocator.
//
// It wraps golang.org/x/arch/x86/x86asm (64-bit mode) and adds what blpp
// needs on top of it:
//
//   - a Kind for every instruction (call, jmp, jcc, ret, halt, syscall,
//     their indirect forms, or fall-through) with the absolute Target and
//     the location of the rel8/rel32 field of direct branches;
//   - the location and target of every rip-relative memory operand,
//     including VEX and EVEX instructions, where x86asm reports none;
//   - the status flags each instruction reads and writes, for flags
//     liveness (DESIGN decision 5);
//   - fixes for the gaps of x86asm v0.32 (DESIGN decision 3).
//
// # Gaps of x86asm v0.32 and what Decode does about them
//
// Decode first runs its own length decoder (length.go: prefixes, opcode
// maps, ModRM, SIB, displacement, immediates; [Intel SDM Vol.2 §2 and
// App. A]) and then x86asm on exactly that many bytes. The two must agree
// on the length and on the kind of control transfer; otherwise Decode
// fails with ErrMismatch. This catches:
//
//   - endbr64/endbr32 (f3 0f 1e fa/fb), rdssp and the other CET
//     shadow-stack instructions, which x86asm decodes as a one-byte "rep"
//     with Op 0 and no error. Decode recognises them itself (ENDBR64 …
//     WRUSSQ) and treats any other Op 0 result as a failure.
//   - incsspd/incsspq (f3 0f ae /5), which x86asm decodes as lfence.
//   - vzeroupper/vzeroall (c5 f8 77), which x86asm decodes with a ModRM
//     byte they do not have when more bytes follow, taking one to five
//     bytes of the next instruction.
//   - VEX and EVEX memory operands of the form [rip+disp32], which x86asm
//     reports as absolute [disp32] with PCRel 0: the length decoder finds
//     them from ModRM (mod=00, rm=101).
//   - VEX/EVEX/XOP instructions missing from x86asm's tables and VEX after
//     a segment or 67 prefix (x86asm only accepts VEX at offset 0): their
//     length is known, so they are returned with Op UNKNOWN, Kind Other
//     and conservative flag effects. The same holds for unknown
//     instructions in the 0f, 0f 38 and 0f 3a maps, whose length rules are
//     uniform. An unknown one-byte-map instruction or control transfer is
//     an error.
//
// Encodings Decode refuses even though they are valid: 66-prefixed near
// branches (rel16 on AMD, rel32 on Intel) and eip-relative operands (67
// with mod=00 rm=101); EVEX forms with the APX/AVX10 bits, EVEX map 4 and
// VEX map 7. Compilers do not emit them for user code.
//
// # What it trusts
//
// Nothing: the bytes may be data or hostile. Decode reads at most 15
// bytes, checks every bound, and returns a *DecodeError wrapping one of
// the Err sentinels instead of panicking. FuzzDecode exercises this.
//
// The instruction boundaries, branch targets and rip-relative targets are
// compared with GNU objdump on large real binaries by TestObjdump.
package x86
