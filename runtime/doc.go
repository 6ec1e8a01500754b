// Package runtime holds the runtime that the rewriter links into every
// instrumented binary: freestanding C and assembly (blpp_rt.c and the
// parts it includes, blpp_stubs.S; see Files) compiled by `go generate
// ./runtime` into blpp_rt.elf, which is committed and embedded [DESIGN 9]. It counts
// Ball-Larus paths per calling context (a calling context tree per
// thread, PP's [Ammons-Ball-Larus 97 §4]) or, with --no-context, per
// function and thread, and reads hardware counters (or rdtsc) at path
// boundaries when the binary asks for metrics [DESIGN 7, 8].
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
//     function its number of paths, whether to count them in a hash table
//     (functions with many paths) rather than a dense array, and its
//     call sites' ids; the call-site table (SitesVaddr) and, with
//     metrics, the metric table (MetricsVaddr);
//   - makes blpp_start the entry point (e_entry) and OrigEntry the old one
//     (an executable), or blpp_module_init the DT_INIT function and
//     OrigInit the old one (a shared object: ConfigFlagLibrary);
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
// # Modules (decision 81)
//
// Every instrumented object of a process (the executable, shared objects,
// dlopen'ed ones) carries its own copy of this runtime, and the copies
// share one state: the first to start maps it (struct proc), the others
// find it through the %gs block of the loading thread (Thread.Proc) and
// register their module. A module has a tag (Config.ModuleTag: 0 for the
// executable, unique per process) and its function ids are
// tag<<FidBits | local id; call-site ids are its own and are read in the
// module of the record they belong to. A shared object's DT_INIT is
// blpp_module_init (it starts or joins the runtime, then runs OrigInit);
// its DT_FINI is blpp_fini, which keeps the module's tables in the
// runtime's memory (the object may be dlclose'd next) and, for the last
// live module, writes the final profile. Copies must be the same runtime
// build (BLPP_RUNTIME_SIG), in the same mode and with the same metrics;
// only the first module to start may have slot counters.
//
// # Calling sequences
//
// The common cases never call the runtime: the rewriter emits them
// inline (rewriter/codegen.go), reading the thread block through %gs and
// the records through the pointers in it, and falls back to the stubs
// below for anything else. Every stub preserves every general register,
// %rsp and the flags, DF included, and never touches vector or x87
// state. Arguments are pushed with `push $imm32` after stepping over the
// red zone, and the caller pops them:
//
//	function entry, at the entry, %rsp as the caller left it:
//	    lea -128(%rsp),%rsp; push $fid; call blpp_enter; lea 136(%rsp),%rsp
//	path end at an exit: before ret, before a tail jump, or before a call
//	that does not return:
//	    lea -128(%rsp),%rsp; push $fid; call blpp_exit; lea 136(%rsp),%rsp
//	path end before a direct tail jump to an instrumented function:
//	    lea -128(%rsp),%rsp; push $site; push $fid; call blpp_tail_exit;
//	    lea 144(%rsp),%rsp
//	path end at a backedge (count[r+k]++, then r = restart):
//	    lea -128(%rsp),%rsp; push $restart; push $k; push $fid;
//	    call blpp_backedge; lea 152(%rsp),%rsp
//	entry of an uninstrumented function (fid = NFuncs + its index
//	among the left-out functions), at its redirected entry:
//	    lea -128(%rsp),%rsp; push $fid; call blpp_dark; lea 136(%rsp),%rsp
//
// The stubs find the instrumented code's %rsp from the exact shape of
// these sequences (RedZone, the pushed words, the return address).
//
// # Calling context trees [DESIGN 7]
//
// Each thread block has the running activation's Record (the runtime's
// zero_record when it has none: never 0, decision 104). Before every
// call, instrumentation stores the call's site id in Thread.CallSite. An
// entry finds its record under the caller's: Record.Kids holds a node
// list per call site of the caller's function (list 0 for entries with no
// known site), searched move-to-front; the inline entry looks at the head
// only. A call to a function with a record on the caller's chain reuses
// that ancestor (recursion folds; the node is marked folded and its
// count is written as a folded call). An entry with no record running
// (a thread's first, or code called from uninstrumented code with no
// instrumented caller) gets the thread's root record of the function.
// Callbacks from uninstrumented code (qsort's comparator) thus land under
// the call site that entered the uninstrumented code. A direct tail jump
// to an instrumented function leaves its record and site in
// Thread.TailRec/TailSite, so the callee becomes its child. The shadow
// frame saves the caller's record, call site, register and metric
// accumulators; exits and unwinding restore them. With --no-context
// (ConfigFlagFlowOnly) every entry takes the thread's root record
// (Thread.Flat), one per function.
//
// A record's counters are the activation count and, per dense path id,
// Stride = 1 + NMetrics words (count, metric sums), and with metrics,
// unless ConfigFlagNoLatency, LatencyWords more: the path's largest
// values of the first metric per execution and their log2 histogram
// (decision 93; lat_add, and the inline tsc path ends). Records belong to
// one thread, so counts need no lock prefix. Functions over DenseMax
// paths count in a per-record hash table. In context mode a record of
// such a function, or of one over 64 paths, starts cold (decision 99):
// DenseN 0 and a two-entry table, until the runtime has counted 32 of
// its path ends; then a dense function's record gets a hot twin with
// its dense array (Record.Twin), a hashed one a larger table. A record's
// node lists are made at its first call. Records and nodes are published
// by one store or compare-and-swap, never with signals blocked: a signal
// handler's stub on the same thread finds what the one it interrupted
// was making. Memory comes from MADV_WIPEONFORK arenas bounded by
// Config.ArenaLimit (STATS arena_bytes, dropped_records); an activation
// without a record counts in the function's root record (STATS
// no_record), so flow counts stay exact.
//
// # Uninstrumented functions (decision 70)
//
// Function ids [NFuncs, NFuncs+NDark) are the functions the rewriter left
// out, in the metadata's order. Where it could, it redirected their
// entries to stubs that count them: inline in the slot counters of a
// flow-only frequency image (Func.Slot of their table entries, which have
// nothing else); inline in a context image when the thread's newest such
// activation (Thread.DarkList, DarkRec) is the same function from the
// same call site, storing the new entry %rsp in DarkRSP; else through
// blpp_dark. Their exits are not seen, so
// such an activation pushes no frame and leaves Record, CallSite, R and
// Cur as they were; only a record of the function counts the entry (the
// flat root record, or a child of the running record at CallSite).
// Callbacks into instrumented code then enter under the caller's record,
// as ever; a record made that way while the uninstrumented activation is
// known to be in progress (the same node list, an entry %rsp below its
// own) names it in Record.Via, and the profile gives it that record as
// parent, with call site 0 (blpp_rt_dark explains the bookkeeping).
//
// # Metrics [DESIGN 8]
//
// With metrics every entry, exit and backedge goes through the stubs. At
// init each perf event is opened once to learn whether it can be read
// with rdpmc (blpp_pmu.h: the user page's seqlock, index, offset and
// width); each thread then opens its own. Where it cannot, cycles fall
// back to rdtsc (named "tsc", kind fallback) and other events are
// recorded as unavailable; one message on stderr says so (BLPP_QUIET=1
// silences it). Thread.MStart holds the counters when the running path
// last resumed and MAcc what it accumulated before; a call saves the
// caller's progress in the callee's frame, so a path's metrics exclude
// its callees. STATS tsc_total is the runtime's own rdtsc delta from init
// to the write, tsc_ns the CLOCK_MONOTONIC nanoseconds over the same
// span (the counter's rate, for reports). The profile's LATENCY sections
// hold each thread's distributions.
//
// # Sampling (decision 92)
//
// With Config.SamplerVaddr set (--metrics sample:cpu-clock[@HZ]), every
// thread block starts a sampler for its thread: a perf event with a
// signal per overflow (F_SETOWN_EX, F_SETSIG; user space only), or a
// timer on the thread's CPU clock where perf refuses a software clock; a
// hardware event that cannot be opened falls back to cpu-clock at 1 kHz
// (one message, kind fallback in the profile). The signal is
// Sampler.Signal or DefaultSampleSignal (63), the next lower free one
// when a handler holds it; the program's own signals and timers are left
// alone. The handler adds one to (running record, pc, path register) in
// the thread's preallocated sample table, with no lock, allocation or
// (with FSGSBASE) system call; the writer turns pcs into (object, file
// offset) with /proc/self/maps and writes the SAMPLES section.
//
// # Threads [DESIGN 4]
//
// %gs points at the calling thread's block (Thread: R is the path
// register, Record the running record, CallSite the last call site; in
// a flow-only image, while Cur is not 0 the running record is the flat
// record of function Cur-1 and Record that of the newest activation
// whose Cur is 0, decision 51). blpp_init makes the
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
// (longjmp, an exception): it is popped and recorded as a partial of its
// record with the register it had and the block of its last call (or
// BlockUnknown), and the register, record and call site return to their
// caller's. At exit, on a fatal signal and on a dump, the live frames of
// the calling thread are recorded too: each stopped at the call its
// callee's frame recorded; the newest at its last call at exit, at an
// unknown block at a signal.
//
// # The profile [DESIGN 11, docs/profile-format.md]
//
// blpp_fini writes the profile once per process; a fatal signal
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT; since
// decision 164 SIGPIPE, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ; since decision
// 166 every other standard signal whose default ends the process: SIGTRAP,
// SIGSYS, SIGUSR1, SIGALRM, SIGSTKFLT, SIGVTALRM, SIGPROF, SIGIO, SIGPWR)
// writes it
// if the exit has not, then restores the default action and raises the
// signal again, so the process ends with the status it would have had; the
// dump signal writes it and the program goes on (many times). The runtime
// keeps these signals' actions without the program seeing it (decision
// 94, blpp_signal.c): the kernel holds blpp_sig_entry, which jumps to
// the program's handler where it set one (in the kernel's frame) and does
// the above only where the program left SIG_DFL; the program's
// rt_sigaction system calls (blpp_sys_sigaction, where the rewriter saw
// them) and its calls to an uninstrumented sigaction or signal
// (blpp_libc_sigaction, blpp_libc_signal) read and set its own view. An
// ignored signal stays ignored; a dump signal that is one of the fatal
// ones is treated as fatal. The file has one
// THREAD section per thread block (its records parents first, partials,
// folded calls) and STATS.
// It goes to "<name>.tmp.<pid>" as it is made, through a 64 KiB buffer
// (a thread's records are gathered first: a section's length comes
// before it), and is renamed once whole (decision 136; STATS
// writer_bytes says what the writer's buffers held at most).
// The name is BLPP_PROFILE or "blpp.out", made absolute against the
// starting directory at start (a later chdir does not move it), with %p
// the pid, %h the host name, %% a percent sign. BLPP_PROFILE is read from
// the environment the process started with: the array, or
// /proc/self/environ where entries were taken out of it (blpp run's
// auditor takes out the one it passed, decision 140).
//
// A fork child counts from zero: records and counters live in
// MADV_WIPEONFORK memory, so the child sees zeros, which send every
// inline fast path to the stubs; the first stub resets the runtime, makes
// the records of the live activations again (without counts) and the
// child counts only its own work (STATS fork_child = 1); parent and child
// profiles add up to the whole.
// The child writes its own profile at its exit; when the name has no %p it
// appends ".<pid>", so it never overwrites the parent's file. After
// vfork the child calls blpp_vfork_child, which moves its %gs to the
// scratch block: until it execs it counts nowhere and leaves its
// parent's block alone. daemon() is a way out for its parent and a fork
// for its child (decision 94).
//
// Continuous mode (%c in BLPP_PROFILE, decision 94, blpp_live.c): the
// arena is a shared mapping of the profile file, a live file that holds
// every count as it is made, readable after SIGKILL (cct.ParseLive);
// each thread block and module has an entry in it. The mapping is
// MADV_DONTFORK: a fork child faults at its first touch and gets a file
// of its own, zero where its parent's counts were. The dump signal
// writes nothing in this mode.
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
//   - A longjmp is noticed at the next entry or exit of the thread: path
//     increments in between still go to the abandoned activation's
//     register, and the landing function resumes with its register as it
//     was at the call it left (the rewriter ends a path after setjmp).
//   - A signal handler on an alternate stack above the interrupted stack,
//     or makecontext/swapcontext stacks, look like unwinding and pop live
//     frames. Threads made with clone without a new TLS share their
//     creator's block.
//   - A write records the live frames of the writing thread, of threads
//     that have ended (their block not yet reused) and of threads that
//     wait in the kernel (/proc/self/task/TID/stat says S or D); a thread
//     that is running at that moment keeps its in-flight paths out of the
//     profile.
//   - 2^20 shadow frames per thread (virtual memory, touched as used);
//     deeper activations are counted in root records and their callers'
//     registers are lost (STATS shadow_overflow).
//   - A program that sets a fatal signal's action through a function
//     pointer to sigaction, or syscall(2) with a number only known at run
//     time, is not seen: it reads the runtime's entry where it set
//     SIG_DFL, and a handler it set replaces the runtime's.
//   - _exit and exit_group skip the exit hook: no profile (as with the
//     original program's atexit work).
//   - Modules (decision 81): a thread that existed before the first
//     instrumented module started (a dlopen from a thread, with nothing
//     instrumented before) has %gs 0; its first stub makes it a block
//     through the copy it entered, but a copy that has not started by
//     then makes a second runtime state. Modules that cannot share the
//     runtime (another blpp build, another mode or metrics, a tag in use,
//     slot counters after another module started) stop the process with
//     status 127 and a message naming the tag and the reason.
//
// # Cost
//
// Entry, exit and backedge are inline for freq (no metrics): the entry
// checks the thread block, the shadow stack and the caller's head node
// (about 30 instructions, no call), the exit about 20, a backedge about
// 10, all on the thread's own cache lines. New contexts, hashed
// functions, tail calls to instrumented functions and all metric modes
// take the stubs (a call, 11 register saves and C).
//
// # Files
//
// The C runtime is one translation unit: blpp_rt.c describes the whole
// runtime and its constraints and includes its parts in this order (a
// part calls earlier ones; the few calls back have forward declarations),
// so the compiler sees it all at once and the build makes one object of
// it. Each part's header says what it owns and what it must keep to.
//
//	blpp_rt.c       the runtime's description and constraints; includes the rest
//	blpp_sys.h      integer types, atomics, raw system calls, libc-free helpers
//	blpp_state.c    blpp_config, the process state (rt), struct wiped (what a
//	                fork child must not inherit), the thread block's private
//	                tail, messages, the MADV_WIPEONFORK arenas
//	blpp_thread.c   thread blocks: %gs, owners, reuse, the shadow stack's memory,
//	                the scratch block
//	blpp_metrics.c  where each metric comes from (perf + rdpmc, rdtsc fallback),
//	                per-thread events, reads
//	blpp_htab.c     hash tables of path counts (hashed functions)
//	blpp_cct.c      records and calling context trees, the call cache, flat
//	                records, counting a path
//	blpp_partial.c  partial activations, stop walks, fork reset, unwinding
//	blpp_live.c     continuous mode: the live file, its arena, thread and
//	                module entries, fork children's files
//	blpp_enter.c    stubs' C halves: entry, exit, backedge, leaf
//	blpp_dark.c     entries of uninstrumented functions (decision 70)
//	blpp_resume.c   stubs' C halves: fork child, vfork child, setjmp return, landing pad
//	blpp_context.c  user contexts: a thread block per makecontext context (decision 122)
//	blpp_obuf.c     the writer's buffers, varints and sorts
//	blpp_latency.c  latency words and entries per path; their summary at the writer
//	blpp_pfile.c    the profile's file name, the writer's lock, the MODULES section
//	blpp_writer.c   the profile writer
//	blpp_sample.c   sampled attribution: per-thread samplers, the signal
//	                handler, the SAMPLES section (decision 92)
//	blpp_signal.c   fatal and dump signal handlers, exit-profile states
//	blpp_start.c    blpp_init, early_init, setup; blpp_rt_leave, blpp_fini
//	blpp_follow.c   following an exec under blpp run (decision 167)
//	blpp_pmu.h      perf events and rdpmc (also built alone by pmu_test.go)
//	blpp_stubs.S    blpp_start and the stubs, compiled as a second object
//	blpp_rt.ld      the image's linker script
//	blpp_layout.h   generated from layout.go: config, tables, thread block,
//	                shadow frames, records and nodes
//	blpp_format.h   generated from package cct: the profile format
//
// internal/build lists every hand-written file (Sources, Includes), so
// each is an input of the build and of TestImageCurrent; TestBuildInputs
// fails when a blpp_* file here, or a file a source includes, is missing
// from the lists. Go ignores the C and assembly files (a go:build ignore
// line): a new .c or .S file needs one too.
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
