// Package rewriter turns an x86-64 Linux executable or shared library
// into one that profiles its own acyclic paths (Ball-Larus) in each
// calling context: Rewrite takes the ELF file's bytes and returns the
// instrumented object's, with a Summary of what was instrumented and why
// the rest was not.
//
// # What it does
//
// Every function the analysis finds safe [DESIGN 2] is copied into a new
// executable segment with its instrumentation; its original first bytes
// become a jmp to the copy, and the original body stays where it was
// [DESIGN 1]. The copy counts paths with a path register (in a thread
// block at %gs, or in a general register), increments on the chords of
// the numbering, and path ends at backedges and exits [DESIGN 4-6]; its
// entries and exits keep a shadow stack of frames and find each
// activation's record in the calling context tree [DESIGN 7]. The
// freestanding runtime (package runtime) is linked in its own segments
// with the tables it reads (functions, call sites, metrics, its
// configuration), and the metadata a report needs goes into a
// non-loaded section [DESIGN 12].
//
// Each instrumented object is a module of the process [DESIGN 13,
// decision 81] (module.go): the executable has tag 0, a shared object a
// tag of its own (Options.ModuleTag), and every function id the code
// carries is tag<<runtime.FidBits | the local id that indexes the
// module's tables (gen.globalID), so an executable's code is what it was
// before modules. A library starts its runtime copy from DT_INIT
// (blpp_module_init, chaining the old DT_INIT), stops it from DT_FINI,
// keeps its e_entry and its dynamic symbols, and has no slot counters.
// docs/codegen.md describes the emitted
// code; docs/decisions.md records why it is so.
//
// # What it trusts
//
// It trusts package analysis (cfg, pathnum): the function bounds, the
// control-flow graphs, jump tables, flags and register liveness and the
// numbering it builds on. It trusts its own encoder, package enc, whose
// templates are checked byte for byte against GNU as, and relocates
// original instructions only through enc.Relocate, which checks them
// against their decoding. It does not trust the input file: a binary it
// cannot handle whole (libc.so.6 and the dynamic linker, a program that
// uses %gs, one with no exit hook, more than 2^20 functions) is refused
// with an error, a function it cannot
// handle is left out and listed with its reason, and a function whose
// code generation fails is left out and the layout redone without it.
// Nothing is written until the whole output is built.
//
// # Data flow
//
// Rewrite (rewrite.go) chooses the functions, then layout plans, emits
// and writes:
//
//	analysis.Func ─► plan (funcPlan per function)
//	              ─► emit (funcGen: the function's code into one enc.Buf)
//	              ─► Finish (labels resolved) ─► tables, unwind data,
//	                 entry patches ─► ELF writer (package elfw)
//
// Every function is planned before any is emitted, since one function's
// code refers to another's plan (closed calls, tail-jump sites); the plan
// is then only read.
//
// # Files by job
//
//   - rewrite.go: Rewrite and RewriteTo, the rounds (a layout redone
//     from the analysis), the summary's types.
//   - choose.go: which functions may be instrumented (%gs, branches
//     into them, patched bytes).
//   - layout.go: layout and its steps (segments, runtime tables as
//     typed records of package runtime, code, jump-table copies,
//     patches, the summary).
//   - release.go, meta.go, hooks.go: the analysis released as functions
//     are emitted, the metadata encoded, the DT_FINI hook.
//   - module.go: executable or library, the module tag, the start and
//     exit hooks.
//   - plan.go, planloops.go: the per-function plan: slot counters, the
//     path register, closed functions, call sites, table copies, loop
//     registers, loop copies.
//   - codegen.go: the generator's types (Stubs, Mode, gen, funcGen).
//   - body.go: blocks, copied instructions, terminators, jump tables.
//   - edges.go: edge targets, chord increments, trampolines.
//   - entry.go, exit.go, backedge.go, loopcopy.go: the instrumentation
//     sequences at entries, exits, backedges and in loop copies.
//   - frame.go: what those sequences share (shadow-frame offsets, spills,
//     flags, runtime checks, stub calls).
//   - darkentry.go: counting stubs at the entries of left-out functions.
//   - entrymove.go: moved entries, for functions others branch into.
//   - pietable.go: absolute jump tables in PIE.
//   - unwind.go, addrmap.go: .eh_frame for the new code, and the map from
//     new code back to original instructions.
//   - cet.go: keeping CET IBT and SHSTK (decision 95): the entry jump after
//     an entry's endbr64, endbr64 at every new indirect-branch target,
//     the note.
//   - rtsyms.go, symbols.go: the runtime's symbols, symbols for the new
//     code.
//
// Subpackages: enc (the encoder and relocator), elfw (ELF writing),
// ehwrite (.eh_frame and .gcc_except_table), addrmap (the address map's
// format).
package rewriter
