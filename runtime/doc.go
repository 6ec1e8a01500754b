// Package runtime holds the runtime that the rewriter links into every
// instrumented binary: freestanding C and assembly (blpp_rt.c,
// blpp_stubs.S) compiled by `go generate ./runtime` into blpp_rt.elf,
// which is committed and embedded [DESIGN 9]. This increment counts
// Ball-Larus paths per function, without calling context (flow-only); the
// thread block, shadow frames and configuration keep room for the calling
// context tree and the hardware counters to come.
//
// # The image
//
// Load returns an Image: Text (text and rodata) for an RX segment at a
// page-aligned address T, Data for an RW segment at T+DataOff followed by
// BSSSize zero bytes, and Symbols, offsets from T. The image has no
// relocation at all (the build refuses any), so it runs wherever it is
// put as long as the two parts keep their distance. The rewriter then
//
//   - fills blpp_config (Config, via Image.SetConfig or PutConfig on
//     Image.Data) with link-time addresses of the final binary; the runtime
//     computes the load bias as &blpp_config - SelfVaddr, so PIE works;
//   - writes the function table (NFuncs Func entries at FuncsVaddr): per
//     function its number of paths and the address of a dense array of
//     NumPaths uint64 counters it reserved, or 0 to have the runtime count
//     in a hash table (functions with many paths);
//   - makes blpp_start the entry point (e_entry) and OrigEntry the old one;
//   - hooks the exit path so that blpp_fini (a SysV function without
//     arguments) runs at exit: DT_FINI or a .fini_array entry. blpp_fini
//     calls OrigFini first if it is not 0, so a hook that replaces DT_FINI
//     can leave the chaining to the runtime; a thunk that jumps to the
//     original itself leaves OrigFini 0.
//
// A fresh image's Config holds the defaults (magic, DumpSignal SIGUSR2,
// ConfigFlagFlowOnly): start from Image.Config to keep them. DumpSignal 0
// means no dump signal.
//
// # Calling sequences
//
// Instrumented code reaches the runtime in four ways, all position
// independent (rel32 calls, %gs-relative data); every stub preserves every
// general register, %rsp and the flags, DF included, and never touches
// vector or x87 state. Arguments are pushed with `push $imm32`
// (sign-extended; a 64-bit value is `push $lo32; movl $hi32, 4(%rsp)`)
// after stepping over the red zone, and the caller pops them:
//
//	path increment (edge chord):
//	    addq $inc, %gs:OffR                       (clobbers flags)
//	function entry, at the entry, %rsp as the caller left it:
//	    lea -128(%rsp),%rsp; push $fid; call blpp_enter; lea 136(%rsp),%rsp
//	path end at an exit: before ret, before a tail jump, or before a call
//	that does not return:
//	    lea -128(%rsp),%rsp; push $fid; call blpp_exit; lea 136(%rsp),%rsp
//	path end at a backedge (count[r+k]++, then r = restart):
//	    lea -128(%rsp),%rsp; push $restart; push $k; push $fid;
//	    call blpp_backedge; lea 152(%rsp),%rsp
//
// The stubs find the instrumented code's %rsp from the exact shape of
// these sequences (RedZone, the pushed words, the return address); any
// other shape breaks the shadow stack.
//
// blpp_enter pushes a shadow frame {entry %rsp, caller's r, fid} and sets
// r = 0; blpp_exit counts path r of fid, pops the frame and restores the
// caller's r; blpp_backedge counts path r+k and sets r = restart
// [Ball-Larus 96 §3.4]. Path ids outside [0, NumPaths) and function ids
// outside [0, NFuncs) are not counted (STATS bad_paths, bad_funcs).
// Counters are shared by all threads and incremented with lock-prefixed
// instructions; the hash tables are lock-free.
//
// # Threads [DESIGN 4]
//
// %gs points at the calling thread's block (Thread: OffR is the path
// register, the only field instrumentation touches). blpp_init makes the
// main thread's block and sets %gs with wrgsbase when AT_HWCAP2 has
// FSGSBASE, else arch_prctl(ARCH_SET_GS). New threads inherit their
// creator's %gs base; every stub compares the block's owner with the
// thread pointer %fs:0 and gives a thread whose first stub this is a block
// of its own. A new thread with the thread pointer of a dead one (the C
// library reuses stacks and TCBs) gets the dead thread's block, whose live
// frames are then recorded as partials. A static binary has no thread
// pointer until libc's start code sets one, and instrumented code
// (IRELATIVE resolvers, libc itself) runs before that: blpp_init installs
// a stand-in TCB, and the main thread's block changes hands when libc
// installs the real one.
//
// # Partial activations [DESIGN 6]
//
// A shadow frame records the activation's entry %rsp. An entry at or
// above a frame's %rsp, or an exit above it, proves that activation gone
// (longjmp, an exception): it is popped and recorded as a partial with the
// register it had, and the register returns to its caller's value. At
// exit, on a fatal signal and on a dump, the live frames of the calling
// thread are recorded too. This runtime cannot tell the block where an
// activation stopped: partials carry BlockUnknown (the register is exact)
// and no record (flow-only).
//
// # The profile [DESIGN 11, docs/profile-format.md]
//
// blpp_fini writes the profile once per process; a fatal signal
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT) writes it
// if the exit has not, then restores the default action and raises the
// signal again, so the process ends with the status it would have had; the
// dump signal writes it and the program goes on (many times). A fatal
// signal the program started with ignored stays ignored; a dump signal
// that is one of the fatal ones is treated as fatal. The file is one
// flow-only THREAD section (tid = pid, all threads merged) with a record
// per function that ran (calls = activations), the partials, and STATS.
// It is built in memory and written to "<name>.tmp.<pid>", then renamed.
// The name is BLPP_PROFILE or "blpp.out", made absolute against the
// starting directory at start (a later chdir does not move it), with %p
// the pid, %h the host name, %% a percent sign.
//
// A fork child counts from zero: the counting state lives in
// MADV_WIPEONFORK memory, so the child sees it empty at its first count,
// clears the dense counters it inherited and counts only its own work
// (STATS fork_child = 1); parent and child profiles add up to the whole.
// The child writes its own profile at its exit; when the name has no %p it
// appends ".<pid>", so it never overwrites the parent's file.
//
// Everything that writes is async-signal-safe: raw syscalls, memory from
// mmap, no lock that interrupted code could hold. The partials table and
// the writer use try-locks and give up (STATS dropped_partials, or no
// file from a dump that found a write in progress).
//
// Messages go to stderr, prefixed "blpp: ", only when something fails;
// BLPP_QUIET=1 silences them.
//
// # Limits
//
//   - A longjmp is noticed at the next stub call of the thread: path
//     increments in between still go to the abandoned activation's
//     register, and the landing function resumes with its register as it
//     was at the call it left. Exact counts after a setjmp return need the
//     rewriter to end a path there.
//   - A signal handler on an alternate stack above the interrupted stack,
//     or makecontext/swapcontext stacks, look like unwinding and pop live
//     frames. Threads made with clone without a new TLS share their
//     creator's block.
//   - At exit only the exiting thread's live frames are recorded; a dead
//     thread's are recorded when its block is reused.
//   - 2^20 shadow frames per thread (virtual memory, touched as used);
//     deeper activations are counted but their callers' registers are lost
//     (STATS shadow_overflow).
//   - A program that installs its own handler for one of the fatal signals
//     replaces the runtime's; exec loses the profile of the exec'ing
//     process image.
//   - _exit and exit_group skip the exit hook: no profile (as with the
//     original program's atexit work).
//
// # Cost
//
// Each stub has an assembly fast path (the thread's own block, nothing to
// unwind, a dense counter array already in use, a path id in range) that
// keeps the flags with lahf/seto and add/sahf and touches four scratch
// registers; anything else goes to the slow path, which saves the
// caller-saved registers and the flags (pushfq/popfq) and calls C. On the
// development machine an instrumented call (entry and exit, two locked
// increments) costs about 25 ns. Hash-counted functions always take the
// slow path.
//
// # Building
//
// go generate ./runtime runs internal/gen: it writes blpp_layout.h (from
// the structs in layout.go) and blpp_format.h (from package cct), then
// internal/build compiles the sources with pinned flags and the pinned
// compiler (gcc 12.2.0, Debian's gcc-12, as on CI), links them with
// blpp_rt.ld, and refuses the result if an object has a non-PC-relative
// relocation or the image has any relocation, dynamic section, undefined
// symbol or section other than .text, .rodata, .data and .bss.
// TestImageCurrent rebuilds the image and fails when the committed one is
// stale; it skips with another gcc (fails under BLPP_REQUIRE_TOOLS=1).
// Upgrading the compiler means regenerating and bumping
// build.GCCVersion.
//
// The tests link the runtime's sources with testdata/harness.c, which
// plays the rewriter's part (the test patches the config and function
// table into the linked file), run it with real threads, forks and
// signals, and compare the profiles, read with cct.Parse, with exact
// expectations. BLPP_KEEP_HARNESS=1 keeps the built harnesses.
//
// # What it trusts
//
// The configuration and function table the rewriter wrote (addresses and
// sizes are used as given); the kernel. Function and path ids coming from
// instrumentation are bounds-checked before any counter is touched.
package runtime
