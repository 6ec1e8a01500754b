// Package callgrind is blpp's oracle for exact execution counts: it runs an
// unmodified program under valgrind's callgrind tool and reads back how
// many times each instruction of the program's own executable ran, how
// often each call site called each target, and how often each jump was
// taken. Tests compare the block counts blpp derives from path counts with
// these numbers (DESIGN, "Invariants").
//
// It is test support, like every package under internal/testsupport: the
// oracles and fixtures that blpp's tests and cmd/blpp-bench use, never
// part of the blpp command.
//
// Run starts
//
//	valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes
//	         --skip-plt=no --separate-threads=no --compress-pos=no
//	         --compress-strings=no --trace-children=yes
//	         --callgrind-out-file=DIR/cg.%p --log-file=DIR/valgrind.%p.log
//	         --dump-before=fork --dump-before=__libc_fork --dump-before=_Fork
//	         --dump-before=vfork --dump-before=__vfork -- prog args...
//
// (ValgrindArgs), parses every file callgrind wrote, sums the files of
// every process that ran prog, and folds prog's PLT code back into it
// (FoldUnknown). Parse and ParseFile read one file somebody else produced,
// in any of the format's compression modes.
//
// # The format
//
// The reader follows the Callgrind Format Specification (valgrind manual,
// "Callgrind Format Specification") where callgrind's writer
// (callgrind/dump.c) agrees with it, and the writer where they differ:
//
//   - jcnd= is written "jcnd=<followed>/<executed> <target>" by callgrind,
//     while the grammar says "jcnd=<executed> <followed> <target>"; both
//     are accepted, told apart by the slash.
//   - A relative subposition (+d, -d, *) is relative to the previous
//     self-cost line. The target position of calls=, jump= and jcnd= and
//     the source position line that follows them are written relative to
//     that line but do not replace it (kcachegrind's reader lets them
//     replace it; in callgrind's output the two readings agree except in
//     corner cases, where the writer's is the right one).
//   - After jump= and jcnd= callgrind writes a line holding only the
//     jump's source position; the grammar does not mention it. It must not
//     carry costs.
//   - The line after calls= holds the call site and the inclusive cost of
//     the calls; it is never an execution count.
//   - cob= applies to the next call only; without it the callee is in the
//     caller's object.
//   - Name ids ("fn=(3) main", later "fn=(3)") have one space for objects,
//     one for files (fl, fi, fe, cfi, cfl, jfi) and one for functions (fn,
//     cfn, jfn, frfn), and stay defined across the parts of a file. An id
//     used before its definition or redefined to another name is an error.
//   - A file may hold several parts (--combine-dumps=yes); positions start
//     afresh in each. totals:, which callgrind writes at the end of each
//     part, must equal the sum of the part's self costs: a cheap check
//     against truncated or edited files.
//
// # What callgrind reports, measured with valgrind 3.19
//
//   - Addresses of a mapped object are its ELF virtual addresses: callgrind
//     subtracts the load bias, also for a PIE main executable.
//   - Code of .init, .plt, .plt.sec and .fini is filed under the object
//     "???" (UnknownObject), at run-time addresses: ELF address plus
//     0x108000 for a PIE (valgrind's load address), the ELF address for
//     ET_EXEC, including a static binary's IRELATIVE .plt. FoldUnknown
//     measures the bias from prog's direct calls into its PLT and moves
//     that code back to ELF addresses of the main object.
//   - The Ir of an instruction is its execution count, except for
//     rep-prefixed string instructions, which count n+1 per execution with
//     count register n (valgrind runs one iteration per pass, plus a final
//     pass that finds the count zero), and also show as a conditional
//     jump to themselves. Compare block counts at another instruction of
//     the block.
//   - A jump from one function into another (a tail call, a jump between
//     foo and foo.cold) is reported as a call from the jump instruction,
//     not as a jump. Call targets are the first instruction reached, not
//     necessarily a symbol.
//   - Recursion levels are separate contexts named fn'2; the package sums
//     all contexts.
//   - With callgrind's default --skip-plt=yes the cost of PLT stubs is
//     charged to the calling instruction as an extra cost line, so its Ir
//     exceeds its execution count. Run passes --skip-plt=no; a file made
//     without it cannot be recognised as such.
//   - A forked child starts with its parent's counters, so its file
//     repeats the parent's work before the fork. Run makes callgrind dump
//     and zero the counters on entry to the C library's fork functions, so
//     every file holds one process's own work and the files add up. Main
//     program code running after that dump and before the fork system call
//     (pthread_atfork prepare handlers with a C library older than 2.34,
//     a raw clone or fork system call) is still counted twice.
//   - valgrind turns vfork into fork. An exec'd program is traced and
//     writes the file of its pid; files that do not mention prog are
//     skipped. Work a process does before it calls exec is never written.
//   - On a fatal signal callgrind still writes its file and valgrind ends
//     with the same signal; a SIGKILLed process leaves an empty file,
//     which is skipped.
//   - Other per-process quirks of valgrind apply: long double is computed
//     with 64 bits, and programs run 10 to 40 times slower, after about
//     0.2 s of start-up.
//
// # What it trusts
//
// valgrind's counts. Files are input like any other: the parser checks
// every number, refuses counts that overflow 64 bits, reports the line of
// the first problem in a *ParseError, never panics (FuzzParse), and is
// checked by a round trip through a writer that follows callgrind's
// compression rules.
package callgrind
