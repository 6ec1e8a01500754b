// Package enc produces the machine code of blpp's relocated functions: a
// small template encoder for the instructions instrumentation inserts, and
// a relocator that moves original instructions to new addresses (DESIGN
// decisions 1, 3 and 4).
//
// # Encoder
//
// A Buf collects code whose address is decided later. Each template
// method appends one instruction in one form: branches are always rel32
// and %gs counters always disp32, even where a shorter form exists, so
// no instruction's length depends on an address and a layout pass can
// size code before any address is known. Memory operands on a register
// take the displacement width GNU as picks (based), or one fixed by the
// template's name where the operand is a field of a runtime record or
// shadow frame (the D8 and D32 forms of templates_rt.go), so that a
// sequence's length does not depend on where a field lies. A Buf has no
// method that appends raw bytes: every byte comes from a template, or
// from an original instruction through Relocate (STYLE rule 11). Branches, calls, lea and jmp through rip
// take a Target: a Label of the same Buf (NewLabel, Bind) or an absolute
// address such as original code or a runtime symbol. Finish lays the
// buffer out at a base address and resolves every such field to
// destination - end of instruction [Intel SDM Vol.2 §2.2.1.6], failing
// when a label is unbound or a destination is more than 2 GiB away.
// Template misuse (a register outside RAX..R15, %rsp as an index, an
// unset Target) appends nothing and is kept as a sticky *OperandError
// that Finish returns, in the manner of debug/dwarf's buf.
//
// The forms (ModRM/SIB per [Intel SDM Vol.2 §2.1.5, Tables 2-2 and 2-3],
// REX per §2.2.1): per-thread counters through %gs with an absolute
// disp32 (SIB base=101, no index, because mod=00 rm=101 would be
// rip-relative), stack stepping with lea so the flags survive, the
// flag-saving idioms (pushfq/popfq, lahf/sahf, seto %al + add $0x7f,%al
// to restore OF), atomic counter updates through disp32(%base,%index,8),
// rel32 branches, jmp *slot(%rip), and the recommended multi-byte NOPs
// [Intel SDM Vol.2 NOP, Table 4-12]. add $imm32,%rax uses the
// accumulator opcode (48 05), one byte shorter than for other registers,
// because GNU as never emits the ModRM form for it.
//
// TestTemplatesAgainstGNUAs assembles some twenty thousand cases (every
// template, all sixteen registers where a register is an operand,
// boundary displacements and immediates, label and absolute targets
// ±2 GiB) with GNU as in one run and compares the bytes. as is made to
// emit the fixed forms with the {disp8} and {disp32} pseudo-prefixes and with
// immediates written as (Z+v), Z defined at the end of the file, so that
// the value is unknown when as picks the encoding.
//
// # Relocator
//
// Relocate appends one original instruction, decoded by blpp/cfg/x86,
// so that it does at its new address what it did at the old one:
//
//   - no direct branch and no rip-relative operand: copied as is, all
//     prefixes included (notrack 3e on indirect jumps, lock, rep, bnd on
//     ret);
//   - a rip-relative operand, legacy, VEX or EVEX, indirect jmp/call
//     through memory included: copied, disp32 re-aimed at the original
//     target, counted from the end of the instruction (an immediate may
//     follow the displacement);
//   - jmp rel8/rel32, jcc rel8/rel32, call and xbegin: re-encoded as
//     e9, 0f 8x, e8 and c7 f8 with rel32 towards a Target the caller
//     chooses (a Label when the destination moved too). Prefixes are
//     dropped: MPX bnd (f2) has no effect without MPX, which current
//     processors and Linux no longer support; 2e/3e branch hints are
//     only hints; 66 48 on the TLS __tls_get_addr call is padding for the
//     linker [Drepper, ELF Handling For Thread-Local Storage, 4.1.6];
//   - loop, loope, loopne, jrcxz and jecxz exist only with rel8 [Intel
//     SDM Vol.2 LOOP/LOOPcc, JCC]: the instruction is kept, prefixes and
//     all (67 selects %ecx), with rel8 = 2 over "jmp +5" onto
//     "jmp rel32 target".
//
// RelocatedSize gives the size of the relocated form from the decoded
// instruction alone. Relocate refuses 66-prefixed rel8 branches, whose
// target AMD truncates to 16 bits [AMD APM Vol.3, Near Branches in 64-Bit
// Mode] (x86.Decode already refuses the rel32 ones).
//
// rip-relative operands keep their original target: data stays where it
// was, and a pointer to original code still runs correct code (DESIGN
// decision 1). A relocated call pushes its new return address; code that
// inspects return addresses (unwinders) needs the rewriter's .eh_frame
// work, which is not this package's business.
//
// # What it trusts
//
// The x86.Inst given to Relocate is checked against the bytes given with
// it before anything is emitted: length, opcode bytes of every branch
// form, the branch and rip displacement fields and the targets they
// imply. A mismatch is an *RelocError wrapping ErrInconsistent and leaves
// the Buf unchanged. What is trusted is x86.Decode's judgement that an
// instruction without a branch field or a rip-relative operand does not
// depend on its address, and its OpcodeOff.
//
// TestRelocateRealFunctions relocates every function of /bin/bash,
// /usr/bin/python3.11 and libc by 1 MiB and decodes the result:
// intra-function branches reach the relocated destination, everything
// else its original one, rip-relative operands the same address, other
// instructions are byte-identical. FuzzRelocate does the same for
// arbitrary bytes at arbitrary addresses.
package enc
