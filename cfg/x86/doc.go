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
// on the length and on the kind of control transfer, and a rip-relative
// field x86asm reports must be the one the length decoder found;
// otherwise Decode fails with ErrMismatch. The gaps found this way, by
// comparing with objdump on real binaries, a compiled AVX-512/XOP/CET
// fixture and random bytes:
//
//   - endbr64/endbr32 (f3 0f 1e fa/fb), rdssp, rdpid, adcx/adox,
//     movdir64b and other instructions with a mandatory prefix decode as
//     a one-byte "rep"/"data16" with Op 0 and no error. Any Op 0 result
//     is treated as a failure; ownOp recognises the known ones first and
//     gives them this package's Ops (ENDBR64 … SENDUIPI).
//   - Some mandatory-prefix forms decode as a different instruction of
//     the same length: incssp as lfence, clwb as xsaveopt, clflushopt as
//     clflush, tpause/umonitor/umwait as mfence, ptwrite as xsave,
//     senduipi as rdrand. ownOp catches them before x86asm.
//   - serialize, rdpkru/wrpkru, rdseed, cldemote, movdiri and the AMD
//     monitorx/mwaitx/clzero/rdpru/extrq/insertq are unknown to x86asm.
//   - vzeroupper/vzeroall (c5 f8 77) are decoded with a ModRM byte they
//     do not have when more bytes follow, swallowing one to five bytes of
//     the next instruction (or failing with "truncated"). Running x86asm
//     on exactly the length decoder's bytes fixes that.
//   - VEX and EVEX memory operands [rip+disp32] are reported as absolute
//     [disp32] with PCRel 0: Decode finds them from ModRM (mod=00,
//     rm=101), and completes Raw (Base RIP, PCRel 4, PCRelOff).
//   - VEX/EVEX after a segment override (fs vmovdqu …) fail, because
//     x86asm only accepts VEX at offset 0: Decode retries without the
//     prefix. VEX/EVEX/XOP instructions missing from x86asm's tables (AMX,
//     AVX512-FP16, all of XOP, …) are returned with Op UNKNOWN, Kind
//     Other and conservative flag effects; so are 3DNow! and the hint-NOP
//     space 0f 18–0f 1f. Other legacy instructions x86asm fails on are
//     refused with ErrUnknown, since an undefined encoding is a sign of
//     data, not code.
//   - Gathers/scatters without a SIB byte (#UD) are accepted by x86asm;
//     Decode refuses them. mov to/from control and debug registers ignore
//     ModRM.mod, but x86asm reads a displacement: Decode refuses them
//     (they are privileged anyway).
//
// Encodings Decode refuses although they are valid: 66-prefixed near
// branches (rel16 on AMD, rel32 on Intel; objdump and x86asm disagree on
// their length), eip-relative operands (67 with mod=00 rm=101), a REX
// prefix that is not last, EVEX forms with the APX/AVX10 bits, EVEX map 4
// and VEX map 7. Compilers do not emit them for user code.
//
// Flag effects come from a table of x86asm Ops (flags.go) following
// [Intel SDM Vol.1 App. A]; an Op missing from it reads every flag and
// writes none, which makes liveness err towards "live". Calls kill the
// status flags and returns read none, by the calling convention [SysV
// x86-64 ABI 3.2.1].
//
// # What it trusts
//
// Nothing: the bytes may be data or hostile. Decode reads at most 15
// bytes, checks every bound, and returns a *DecodeError wrapping one of
// the Err sentinels instead of panicking. FuzzDecode exercises this.
//
// Instruction boundaries, kinds, branch targets and rip-relative targets
// are compared with GNU objdump by TestObjdumpRealBinaries (every
// instruction of .text of six large Debian binaries),
// TestObjdumpAVX512Fixture (a gcc-compiled AVX-512 file with inline
// VEX/EVEX/XOP/CET forms) and TestObjdumpRandomBytes.
package x86
