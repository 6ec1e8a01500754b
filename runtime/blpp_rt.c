//go:build ignore

/*
 * blpp runtime: Ball-Larus path profiling inside an instrumented x86-64
 * Linux process [Ball-Larus 96; Ammons-Ball-Larus 97; DESIGN 4, 6-11, 13].
 *
 * The rewriter copies this code (linked into blpp_rt.elf by
 * runtime/internal/build) into new RX and RW segments of the program, fills
 * blpp_config, makes blpp_start the entry point, hooks the exit path to
 * blpp_fini, and makes instrumented code call the stubs of blpp_stubs.S,
 * which save every register and the flags and call the blpp_rt_* functions
 * of the parts below. The common cases never get here: the rewriter emits
 * them inline, reading the per-thread block through %gs. What the runtime
 * does, in one process however many instrumented objects it loads:
 *
 *  - counts paths per calling context (a calling context tree per thread,
 *    recursion folded, callbacks from uninstrumented code under the call
 *    site that left instrumented code) or, flow-only (--no-context), per
 *    function and thread, in dense arrays, per-thread slot counters or hash
 *    tables for functions with many paths;
 *  - with metrics, reads hardware counters (rdpmc on perf_event pages) or
 *    rdtsc at every path boundary, charging each path its own share
 *    (exclusive of callees);
 *  - keeps a shadow stack per thread, so that activations left by longjmp,
 *    exceptions, exit, fatal signals, dumps and dead threads are recorded
 *    as partial paths (where they stopped and their path register);
 *  - counts entries of uninstrumented functions the rewriter redirected to
 *    its dark-entry stubs, and hangs their callbacks under them;
 *  - writes the profile at exit (DT_FINI or .fini_array hook, and before
 *    _exit, exit_group and exec), on fatal signals (then re-raises them)
 *    and on the dump signal, through a temporary file and a rename;
 *  - restarts its counts in a fork child (each process writes its own
 *    profile, the child's without the prefixes its parent counted).
 *
 * It is one translation unit: this file includes the parts below, in
 * this order (a later part may call an earlier one; the few calls the
 * other way have forward declarations), so the compiler sees the whole
 * runtime at once (static functions inline across parts) and makes one
 * object of it; blpp_stubs.S is the image's only other object.
 *
 *   blpp_sys.h      types, atomics, raw system calls, libc-free helpers
 *   blpp_state.c    blpp_config, the runtime's state (rt, struct wiped,
 *                   per-thread private state), messages, the arenas
 *   blpp_thread.c   thread blocks, %gs, the shadow stack's memory
 *   blpp_metrics.c  metrics: where each comes from, per-thread perf
 *                   events, reading them
 *   blpp_htab.c     hash tables of path counts
 *   blpp_cct.c      records, calling context trees, counting a path
 *   blpp_partial.c  partial activations, stop walks, fork reset, unwinding
 *   blpp_live.c     continuous mode: the live file, its arena, thread and
 *                   module entries, fork children's files
 *   blpp_enter.c    the stubs' C halves: entry, exit, backedge, leaf
 *   blpp_dark.c     entries of uninstrumented functions, dark-entry
 *                   stubs' C half (decision 70)
 *   blpp_resume.c   fork children and setjmp/landing-pad returns
 *   blpp_context.c  user contexts: a thread block per makecontext
 *                   context, %gs moved at swapcontext/setcontext
 *   blpp_obuf.c     the writer's buffers, varints and sorts
 *   blpp_latency.c  latency words and entries; their summary at the writer
 *   blpp_pfile.c    the profile's file name, the writer's lock, MODULES
 *   blpp_writer.c   the profile writer
 *   blpp_sample.c   sampled attribution: per-thread samplers, the
 *                   signal handler, the SAMPLES section (decision 92)
 *   blpp_signal.c   fatal and dump signal handlers, exit-profile states
 *   blpp_start.c    start-up (blpp_init, early_init), exit hooks
 *
 * blpp_pmu.h (perf events, rdpmc) is shared with its own test; the
 * generated blpp_layout.h and blpp_format.h give the tables' and the
 * profile's layout. Every part holds to these constraints:
 *
 *  - freestanding: no libc, no headers beyond these; every kernel service
 *    is a raw syscall; gcc must not emit calls to memset or memcpy (the
 *    build fails on any undefined symbol), so memory is cleared and
 *    copied with the inline-asm helpers of blpp_sys.h;
 *  - no constructors, no destructors, nothing that needs a loader: the
 *    image must have no relocation at all, so no initialised pointer may
 *    sit in data (function pointers are taken at run time, rip-relative);
 *  - general registers only (-mgeneral-regs-only): the program's SSE/AVX
 *    and x87 state is never touched, so the stubs need not save it;
 *  - its own memory: mmap-backed arenas, lock-free bump allocation;
 *  - async-signal-safe: a signal may arrive anywhere, including inside a
 *    stub, and its handler may run instrumented code (which calls the
 *    stubs again) or be one of ours (which writes the profile). There are
 *    no blocking locks: the two try-locks (partials, profile writer) give
 *    up and count what they dropped, and shadow-stack updates are ordered
 *    so that a nested push/pop pair leaves them intact;
 *  - fork-aware: counting state lives in MADV_WIPEONFORK memory, so a
 *    child notices at its first count that it is a child and restarts its
 *    counts from zero (see fork_reset, blpp_partial.c).
 */

#include "blpp_layout.h"
#include "blpp_format.h"
#include "blpp_pmu.h"

#pragma GCC visibility push(hidden)

#include "blpp_sys.h"
#include "blpp_state.c"
#include "blpp_thread.c"
#include "blpp_metrics.c"
#include "blpp_htab.c"
#include "blpp_cct.c"
#include "blpp_partial.c"
#include "blpp_live.c"
#include "blpp_enter.c"
#include "blpp_dark.c"
#include "blpp_resume.c"
#include "blpp_context.c"
#include "blpp_obuf.c"
#include "blpp_latency.c"
#include "blpp_pfile.c"
#include "blpp_writer.c"
#include "blpp_sample.c"
#include "blpp_signal.c"
#include "blpp_start.c"
#include "blpp_follow.c"
#pragma GCC visibility pop
