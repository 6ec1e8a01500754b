//go:build ignore

/*
 * blpp runtime: flow-only Ball-Larus path counting inside an instrumented
 * x86-64 Linux executable [Ball-Larus 96; DESIGN 4, 6, 9, 10, 11].
 *
 * The rewriter copies this code (linked into blpp_rt.elf by
 * runtime/internal/build) into new RX and RW segments of the program, fills
 * blpp_config, makes blpp_start the entry point, hooks the exit path to
 * blpp_fini, and makes instrumented code call the stubs of blpp_stubs.S,
 * which save every register and the flags and call the blpp_rt_* functions
 * below. Everything here must therefore hold to these constraints:
 *
 *  - freestanding: no libc, no headers beyond the generated ones; every
 *    kernel service is a raw syscall; gcc must not emit calls to memset or
 *    memcpy (the build fails on any undefined symbol), so memory is cleared
 *    and copied with the inline-asm helpers mem_zero and mem_copy;
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
 *    counts from zero (see fork_reset).
 */

#include "blpp_layout.h"
#include "blpp_format.h"
#include "blpp_pmu.h"

#pragma GCC visibility push(hidden)

typedef unsigned long u64;
typedef long s64;
typedef unsigned int u32;
typedef unsigned char u8;

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOADR(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CAS(p, o, n)                                                                   \
	({                                                                             \
		__typeof__(*(p)) cas_old_ = (o);                                       \
		__atomic_compare_exchange_n((p), &cas_old_, (n), 0, __ATOMIC_ACQ_REL, \
					    __ATOMIC_ACQUIRE);                         \
	})
/* Orders memory accesses against a signal handler on the same thread. */
#define BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* ---- system calls [Linux x86-64 syscall ABI] ---- */

enum {
	SYS_read = 0,
	SYS_write = 1,
	SYS_open = 2,
	SYS_close = 3,
	SYS_stat = 4,
	SYS_mmap = 9,
	SYS_mprotect = 10,
	SYS_munmap = 11,
	SYS_rt_sigaction = 13,
	SYS_rt_sigprocmask = 14,
	SYS_mremap = 25,
	SYS_madvise = 28,
	SYS_nanosleep = 35,
	SYS_getpid = 39,
	SYS_uname = 63,
	SYS_getcwd = 79,
	SYS_rename = 82,
	SYS_unlink = 87,
	SYS_arch_prctl = 158,
	SYS_gettid = 186,
	SYS_clock_gettime = 228,
	SYS_exit_group = 231,
	SYS_tgkill = 234,
};

enum {
	ARCH_SET_GS = 0x1001,
	ARCH_SET_FS = 0x1002,
	ARCH_GET_GS = 0x1004,
	ARCH_GET_FS = 0x1003,
	PROT_NONE = 0,
	PROT_RW = 3,
	MAP_PRIVATE_ANON = 0x22,
	MAP_NORESERVE = 0x4000,
	MREMAP_MAYMOVE = 1,
	MADV_WIPEONFORK = 18,
	O_RDONLY = 0,
	O_WRONLY = 01,
	O_CREAT = 0100,
	O_TRUNC = 01000,
	O_CLOEXEC = 02000000,
	AT_HWCAP2 = 26,
	HWCAP2_FSGSBASE = 1 << 1,
	SA_RESTART = 0x10000000,
	SA_ONSTACK = 0x08000000,
	SA_RESTORER = 0x04000000,
	SIGINT = 2,
	SIGILL = 4,
	SIGABRT = 6,
	SIGBUS = 7,
	SIGFPE = 8,
	SIGKILL = 9,
	SIGSEGV = 11,
	SIGTERM = 15,
	SIGSTOP = 19,
	NSIG = 64,
};

/* The raw system call is blpp_pmu.h's (one copy of the asm). */
#define sc6 blpp_pmu_syscall6
#define sc0(n) sc6((n), 0, 0, 0, 0, 0, 0)
#define sc1(n, a) sc6((n), (long)(a), 0, 0, 0, 0, 0)
#define sc2(n, a, b) sc6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define sc3(n, a, b, c) sc6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sc4(n, a, b, c, d) sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sc5(n, a, b, c, d, e) sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

static inline int failed(long r) { return (unsigned long)r > -4096ul; }

static u64 getpid(void) { return (u64)sc0(SYS_getpid); }
static u64 gettid(void) { return (u64)sc0(SYS_gettid); }

/* ---- memory and strings (no libc) ---- */

static void mem_copy(void *d, const void *s, u64 n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static int mem_eq(const void *a, const void *b, u64 n)
{
	const u8 *x = a, *y = b;
	for (u64 i = 0; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

static u64 str_len(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

/* prefix returns the rest of s after p, or 0 when s does not start with p. */
static const char *prefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return 0;
	return s;
}

/* utoa writes v in decimal ending just before end; returns its start. */
static char *utoa(char *end, u64 v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static void *map_anon(u64 size, int flags)
{
	long r = sc6(SYS_mmap, 0, (long)size, PROT_RW, MAP_PRIVATE_ANON | flags, -1, 0);
	return failed(r) ? 0 : (void *)r;
}

static u64 page_up(u64 n) { return (n + 4095) & ~4095ul; }

/* ---- the configuration and the runtime's own state ---- */

/*
 * blpp_config is the only initialised object that matters: the rewriter
 * patches it in the image's data. It is global (not static) so that the
 * compiler cannot fold its initial values into the code.
 */
struct blpp_config blpp_config = {
	.magic = BLPP_CONFIG_MAGIC,
	.dump_signal = BLPP_DEFAULT_DUMP_SIGNAL,
	.flags = BLPP_CONFIG_FLAG_FLOW_ONLY,
};

/* Where blpp_start jumps after blpp_init: orig_entry plus the load bias. */
u64 blpp_entry_target;

/* Indices of the per-epoch statistics (struct wiped.stats). */
enum {
	ST_BAD_FUNCS,         /* a stub named a function id >= nfuncs */
	ST_BAD_PATHS,         /* a path id outside [0, num_paths) */
	ST_DROPPED_COUNTS,    /* counts lost because a hash table could not grow */
	ST_DROPPED_PARTIALS,  /* partial activations lost (table full or busy) */
	ST_EXIT_MISMATCH,     /* an exit whose function was not on top of the shadow stack */
	ST_SHADOW_OVERFLOW,   /* entries not pushed because the shadow stack was full */
	ST_UNWOUND,           /* activations popped because their stack frame was gone */
	ST_DROPPED_RECORDS,   /* records not made: arena full or over its limit */
	ST_NO_RECORD,         /* path ends not counted: the activation had no record */
	ST_STUB_ENTRIES,      /* entries, exits and backedges that took the stub: */
	ST_STUB_EXITS,        /*   where the inline code could not, or (metrics */
	ST_STUB_BACKEDGES,    /*   other than tsc alone) where there is none */
	ST_STUB_DARK,         /* entries of uninstrumented functions that took the stub (decision 70) */
	NSTATS,
};

/* What the inline instrumentation tests before it touches %gs: non-zero
 * once blpp_init has set up the main thread's block. */
u64 blpp_fast_slots;

/* A bump allocator over mmap chunks, lock-free. */
struct chunk {
	u64 used, cap;
	u64 pad[6];
};
struct arena {
	struct chunk *cur;
};

/*
 * struct wiped is everything a fork child must not inherit: the arena
 * that holds the calling context trees, their counters, the hash tables
 * and partials, and the statistics. It and every chunk of its arena are
 * MADV_WIPEONFORK, so in a child they read as zero; live == 0 tells the
 * child it must reset (fork_reset). Pointers into this memory that the
 * child still holds (thread blocks, shadow frames) then point at zeros,
 * which every fast path treats as "take the slow path".
 */
struct wiped {
	u64 live;
	struct arena arena;
	u64 stats[NSTATS];
	/* In a fork child: the path prefixes of the activations live at the
	 * fork (blpp_rt_fork_child), a struct ptab, and the block of the
	 * thread that forked, whose THREAD section carries them. */
	unsigned long long prefixes, prefix_lock, prefix_owner;
};

/* Private per-thread state after the shared struct blpp_thread, in the
 * same 4 KiB block header. */
struct tpriv {
	struct blpp_pmu_ev ev[BLPP_MAX_METRICS]; /* perf events (fd -1 if none) */
	u64 epoch;                               /* rt.epoch + 1 when they were opened, 0: never */
	/* The shadow stack's reserved address space ends at shadow_end; it
	 * is readable and writable up to shadow_rw (see shadow_grow). */
	u64 shadow_end, shadow_rw;
	/* The activations of uninstrumented functions that may be in
	 * progress, newest last (decision 70): see blpp_rt_dark. */
	struct dark_ctx {
		u64 list;  /* the node list its record hangs in (head word address) */
		u64 rec;   /* its record */
		u64 rsp;   /* its entry %rsp */
		u64 epoch; /* rt.epoch when pushed: older ones are a fork parent's */
	} dark[8];
	u64 ndark;
};
#define TPRIV(t) ((struct tpriv *)((u8 *)(t) + sizeof(struct blpp_thread)))

/* dark_sync copies the newest entry of t's uninstrumented activations
 * (TPRIV(t)->dark) to Thread.dark_*, where the rewriter's inline stubs
 * look (decision 70); zeros when there is none. The list word is written
 * last, as the call cache's: a handler's inline stub in between sees 0,
 * matches nothing and takes blpp_dark. */
static void dark_sync(struct blpp_thread *t)
{
	const struct tpriv *p = TPRIV(t);
	const struct dark_ctx *d = p->ndark > 0 && p->ndark <= 8 ? &p->dark[p->ndark - 1] : 0;
	t->dark_list = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->dark_rec = d ? d->rec : 0;
	t->dark_rsp = d ? d->rsp : 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->dark_list = d ? d->list : 0;
}

/* Metric sources. */
enum { MSRC_NONE, MSRC_TSC, MSRC_PMU };

static struct {
	int ready;      /* blpp_init finished */
	int quiet;      /* BLPP_QUIET=1 */
	int fsgsbase;   /* rd/wr{fs,gs}base usable (AT_HWCAP2) */
	int nowipe;     /* MADV_WIPEONFORK refused: children keep inherited counts */
	int warned_thread;
	u64 bias;       /* run-time minus link-time addresses */
	const struct blpp_func *funcs;
	u64 nfuncs;
	u64 ndark;      /* ids [nfuncs, nfuncs + ndark) are uninstrumented functions (decision 70) */
	const struct blpp_site *sites; /* call sites by id (0: none) */
	u64 nsites;
	u32 writing_why;  /* why the profile being written is written (0: exit) */
	const u8 *build_id;
	u64 build_id_len;
	u64 flags;
	u64 shadow_frames; /* shadow-stack capacity per thread, in frames */
	int flow_only;  /* --no-context: one root record per function and thread */
	u64 nmetrics;   /* metrics besides freq */
	u64 stride;     /* words per path in a dense counter array: 1 + nmetrics */
	int msrc[BLPP_MAX_METRICS];   /* where each metric comes from */
	u8 mkind[BLPP_MAX_METRICS];   /* BLPP_METRIC_REAL, _FALLBACK or _UNAVAILABLE */
	char mname[BLPP_MAX_METRICS][24];
	u32 mtype[BLPP_MAX_METRICS];
	u64 mconfig[BLPP_MAX_METRICS];
	u64 tsc_init;   /* rdtsc at blpp_init */
	u64 arena_limit;
	u64 slots_size; /* bytes of slot counters per thread block (decision 42) */
	u64 cache_size; /* bytes of call cache per thread block (decision 49), or 0 */
	u64 epoch;      /* fork generation: bumped by fork_reset */
	u64 init_pid;
	u64 pid;        /* the process that owns this memory: init_pid, or the fork child's after fork_reset */
	u64 dummy_tp;   /* thread pointer blpp_init made up (static binaries), or 0 */
	u64 early_start;     /* 1: counting began before the entry point (early_init) */
	u64 early_uncounted; /* stub calls before the runtime could count */
	u64 handlers;        /* install_handlers ran */
	int env_known;       /* early_init read the environment */
	struct wiped *w;
	struct blpp_thread *threads; /* every thread block, newest first */
	u64 nthreads;
	u64 arena_bytes;
	u64 forked;       /* counts restarted at a fork */
	u64 resetting;    /* fork_reset running */
	u64 write_lock;   /* tid of the thread writing a profile, 0 if none */
	u64 exit_written; /* EXIT_NONE, EXIT_AT_FINI or EXIT_FINAL */
	u64 dumps;        /* dump-signal profiles written */
	char tmpl[4096];  /* profile name template, absolute */
	char name[4096];  /* expanded name, under write_lock */
	char tmp[4096];   /* temporary file name, under write_lock */
} rt;

/* ---- messages ---- */

/* say writes "blpp: a b c[: error N]" to stderr unless BLPP_QUIET=1. */
static void say(const char *a, const char *b, const char *c, long err)
{
	char buf[512], num[24];
	const char *parts[4] = {"blpp: ", a, b, c};
	u64 n = 0;
	if (rt.quiet)
		return;
	for (int i = 0; i < 4; i++) {
		const char *s = parts[i];
		for (; s && *s && n < sizeof(buf) - 40; s++)
			buf[n++] = *s;
	}
	if (err) {
		const char *e = ": error ";
		char *d = utoa(num + sizeof(num), (u64)(err < 0 ? -err : err));
		while (*e)
			buf[n++] = *e++;
		while (d < num + sizeof(num))
			buf[n++] = *d++;
	}
	buf[n++] = '\n';
	sc3(SYS_write, 2, buf, n);
}

/* ---- arenas ---- */

enum { CHUNK_SIZE = 1 << 20, CHUNK_HDR = sizeof(struct chunk) };

/* map_wiped maps zeroed memory that a fork child sees as zero again. */
static void *map_wiped(u64 size)
{
	void *p = map_anon(size, 0);
	if (p && !rt.nowipe && failed(sc3(SYS_madvise, p, size, MADV_WIPEONFORK))) {
		rt.nowipe = 1;
		say("MADV_WIPEONFORK is not supported: ", "a fork child's profile includes its parent's counts", "", 0);
	}
	if (p)
		ADD(&rt.arena_bytes, size);
	return p;
}

/* arena_alloc returns size bytes of zeroed, 64-byte aligned memory. */
static void *arena_alloc(struct arena *a, u64 size)
{
	size = (size + 63) & ~63ul;
	for (;;) {
		struct chunk *c = LOAD(&a->cur);
		if (c) {
			u64 off = ADD(&c->used, size);
			if (off + size <= c->cap)
				return (u8 *)c + off;
		}
		u64 want = size + CHUNK_HDR > CHUNK_SIZE ? page_up(size + CHUNK_HDR) : CHUNK_SIZE;
		struct chunk *n = map_wiped(want);
		if (!n)
			return 0;
		n->cap = want;
		n->used = CHUNK_HDR + size;
		if (want == CHUNK_SIZE)
			CAS(&a->cur, c, n); /* losing the race only wastes the rest of n */
		return (u8 *)n + CHUNK_HDR;
	}
}

/* ---- thread blocks [DESIGN 4] ---- */

/* Shadow-stack capacity per thread: address space reserved for
 * rt.shadow_frames frames (Config.shadow_frames, else this default),
 * made usable SHADOW_CHUNK frames at a time as the stack deepens
 * [decision 61]. A thread whose reservation cannot be had gets
 * SHADOW_FALLBACK frames. The runtime's own tests build a tiny default
 * to exercise the overflow path. */
#ifndef BLPP_SHADOW_FRAMES
#define BLPP_SHADOW_FRAMES BLPP_DEFAULT_SHADOW_FRAMES
#endif
enum { BLOCK_HDR = BLPP_SLOTS_OFFSET };
_Static_assert(sizeof(struct blpp_thread) + sizeof(struct tpriv) + sizeof(struct blpp_frame) <= BLOCK_HDR,
	       "a frame's room at the header's end (scratch_block)");
#define SHADOW_CHUNK (rt.shadow_frames < (1ul << 15) ? rt.shadow_frames : (1ul << 15))
#define SHADOW_FALLBACK (rt.shadow_frames < (1ul << 20) ? rt.shadow_frames : (1ul << 20))

static inline struct blpp_thread *gs_block(void)
{
	struct blpp_thread *t;
	__asm__ volatile("movq %%gs:0, %0" : "=r"(t));
	return t;
}

static inline u64 gs_base(void)
{
	u64 v;
	__asm__ volatile("rdgsbase %0" : "=r"(v));
	return v;
}

/* thread_pointer is %fs:0, which the x86-64 TLS ABI makes the TCB's address. */
static inline u64 thread_pointer(void)
{
	u64 v;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(v));
	return v;
}

static void set_gs(struct blpp_thread *t)
{
	if (rt.fsgsbase)
		__asm__ volatile("wrgsbase %0" : : "r"(t) : "memory");
	else
		sc2(SYS_arch_prctl, ARCH_SET_GS, t);
}

static struct blpp_frame *frames(struct blpp_thread *t) { return (struct blpp_frame *)t->sp_base; }

static u64 depth(struct blpp_thread *t) { return (t->sp - t->sp_base) / sizeof(struct blpp_frame); }

static int over_limit(void);

/* shadow_grow makes the next SHADOW_CHUNK frames of t's reserved shadow
 * stack usable and raises sp_limit over them; 0 when the reservation is
 * used up, the arena is at its bound (unless first: a new block's first
 * chunk) or the kernel refuses. Only the stubs push past sp_limit, so
 * the inline code sees a larger stack the next time it reads sp_limit,
 * and frames never move. */
static int shadow_grow(struct blpp_thread *t, int first)
{
	struct tpriv *p = TPRIV(t);
	u64 n, from = p->shadow_rw, to = page_up(p->shadow_rw + SHADOW_CHUNK * sizeof(struct blpp_frame));
	if (to > p->shadow_end)
		to = p->shadow_end;
	if (to <= from || (!first && over_limit()) || failed(sc3(SYS_mprotect, from, to - from, PROT_RW)))
		return 0;
	ADD(&rt.arena_bytes, to - from);
	p->shadow_rw = to;
	n = (to - t->sp_base) / sizeof(struct blpp_frame);
	if (n > rt.shadow_frames)
		n = rt.shadow_frames; /* the last page's spare room */
	t->sp_limit = t->sp_base + n * sizeof(struct blpp_frame);
	return 1;
}

/* sentinel_at fills the frame's place below t's shadow stack (writable
 * memory: the shadow stack's first page, or the header's unused end in
 * the scratch block) as a frame no activation can own: the inline exits
 * find that its %rsp is not theirs and the inline entries that it is
 * not below theirs, without testing for an empty stack first (rewriter
 * decision 65). Nothing else reads it. */
static void sentinel_at(struct blpp_thread *t)
{
	struct blpp_frame *s = (struct blpp_frame *)t->sp_base - 1;
	s->rsp = ~(u64)0;
	s->func = ~(u64)0;
}

/* block_new maps a thread block: the header, the slot counters (fork
 * children see them as zero, like the arena) and the shadow stack, of
 * which only the first SHADOW_CHUNK frames are usable to begin with. */
static struct blpp_thread *block_new(void)
{
	u64 slots = page_up(rt.slots_size + rt.cache_size); /* one or the other */
	u64 head = BLOCK_HDR + slots, size = head + page_up((rt.shadow_frames + 1) * sizeof(struct blpp_frame));
	long r = sc6(SYS_mmap, 0, (long)size, PROT_NONE, MAP_PRIVATE_ANON | MAP_NORESERVE, -1, 0);
	struct blpp_thread *t;
	u8 *m;
	if (failed(r)) {
		size = head + page_up(((u64)SHADOW_FALLBACK + 1) * sizeof(struct blpp_frame));
		r = sc6(SYS_mmap, 0, (long)size, PROT_NONE, MAP_PRIVATE_ANON | MAP_NORESERVE, -1, 0);
	}
	if (failed(r))
		return 0;
	m = (u8 *)r;
	t = (struct blpp_thread *)m;
	if (failed(sc3(SYS_mprotect, (long)m, (long)head, PROT_RW))) {
		sc2(SYS_munmap, (long)m, (long)size);
		return 0;
	}
	if (slots && !rt.nowipe && failed(sc3(SYS_madvise, m + BLOCK_HDR, slots, MADV_WIPEONFORK))) {
		rt.nowipe = 1;
		say("MADV_WIPEONFORK is not supported: ", "a fork child's profile includes its parent's counts", "", 0);
	}
	ADD(&rt.arena_bytes, head);
	t->self = (u64)t;
	/* The first frame's place holds the sentinel (sentinel_at). */
	t->sp = t->sp_base = t->sp_limit = (u64)(m + head) + sizeof(struct blpp_frame);
	TPRIV(t)->shadow_rw = (u64)(m + head);
	TPRIV(t)->shadow_end = (u64)(m + size);
	if (!shadow_grow(t, 1)) {
		sc2(SYS_munmap, (long)m, (long)size);
		ADD(&rt.arena_bytes, -head);
		return 0;
	}
	sentinel_at(t);
	t->tid = gettid();
	ADD(&rt.nthreads, 1);
	return t;
}

static void block_link(struct blpp_thread *t)
{
	struct blpp_thread *h;
	do {
		h = LOAD(&rt.threads);
		t->next = (u64)h;
	} while (!CAS(&rt.threads, h, t));
}

/* owns: t is the calling thread's block. Under the planted fault
 * BLPP_CONFIG_FLAG_FAULT_SHARED_THREADS (fault-injection tests only) any
 * block is. */
static int owns(const struct blpp_thread *t)
{
	return t->owner == thread_pointer() || (rt.flags & BLPP_CONFIG_FLAG_FAULT_SHARED_THREADS);
}

/* thread_peek returns the calling thread's own block, or 0 when it has none yet. */
static struct blpp_thread *thread_peek(void)
{
	struct blpp_thread *t;
	if (!rt.ready || (rt.fsgsbase && gs_base() == 0))
		return 0;
	t = gs_block();
	return t && owns(t) ? t : 0;
}

static void record_live(struct blpp_thread *t);
static void fork_check(void);
static void metrics_open(struct blpp_thread *t);
static struct blpp_thread *scratch_block(void);

/*
 * thread_slow finds the calling thread's block when %gs still points at
 * its creator's (threads inherit the %gs base). Three cases:
 *  - the block was made by blpp_init before libc set up TLS (a static
 *    binary starts with no thread pointer; blpp_init made one up): the
 *    main thread now has its real thread pointer, claim the block;
 *  - a block whose owner is this thread pointer exists: it belonged to a
 *    thread that has died (the C library reuses the TCB of dead threads);
 *    record its unfinished activations and reuse it;
 *  - else map a new block.
 */
static struct blpp_thread *thread_slow(struct blpp_thread *t)
{
	u64 tp = thread_pointer();
	struct blpp_thread *b;
	fork_check();
	if (t && rt.dummy_tp && t->owner == rt.dummy_tp) {
		t->owner = tp;
		return t;
	}
	for (b = LOAD(&rt.threads); b; b = (struct blpp_thread *)b->next) {
		if (b->owner == tp) {
			record_live(b);
			b->sp = b->sp_base;
			b->r = 0;
			b->record = 0;
			b->cur = 0;
			b->call_site = 0;
			b->leaf_site = 0;
			b->tail_rec = 0;
			TPRIV(b)->ndark = 0;
			dark_sync(b);
			if (rt.nmetrics)
				metrics_open(b); /* the dead thread's events counted it */
			b->overflow = 0;
			b->busy = 0;
			b->tid = gettid();
			set_gs(b);
			return b;
		}
	}
	b = block_new();
	if (!b) {
		if (!rt.warned_thread) {
			rt.warned_thread = 1;
			say("cannot map a thread block: ", "paths of new threads are not counted", "", 0);
		}
		/* Off the block %gs may still name (the creator's, inherited
		 * by clone): the internal entries of closed functions do not
		 * test the owner, and must not push there [decision 61]. */
		set_gs(scratch_block());
		return 0;
	}
	b->owner = tp;
	block_link(b);
	set_gs(b);
	return b;
}

static void die(const char *m);

/* scratch_block returns the scratch block, mapped on first use: one block
 * for every thread that has no block of its own, where nothing is
 * counted. Its shadow stack is empty with no room, so every inline
 * entry takes its stub there, the internal entries of closed functions
 * included [decision 61]; its slots take the inline increments. */
static struct blpp_thread *scratch_block(void)
{
	static u64 block;
	struct blpp_thread *t = (struct blpp_thread *)LOAD(&block);
	if (!t) {
		/* With room for the slot counters: the inline backedges of
		 * functions with register paths count there without testing
		 * Thread.cur (decision 44). rt.slots_size may not be set yet. */
		u64 slots = blpp_config.slots_size <= (1ul << 30) ? page_up(blpp_config.slots_size) : 0;
		t = (struct blpp_thread *)map_anon(BLOCK_HDR + slots, MAP_NORESERVE);
		if (!t)
			die("cannot map a thread block");
		t->self = (u64)t;
		/* An empty shadow stack with no room (the limit test fails)
		 * and a frame's worth of the header's unused end below it:
		 * a closed function's outside call stores into the newest
		 * frame's place even when it has none (decision 64). */
		t->sp = t->sp_base = t->sp_limit = (u64)t + BLOCK_HDR;
		sentinel_at(t);
		if (!CAS(&block, 0, (u64)t))
			t = (struct blpp_thread *)LOAD(&block); /* another thread's (ours leaks: once) */
	}
	return t;
}

/* early_gs points %gs at the scratch block, before blpp_init, on a thread
 * whose %gs base is still 0. Every entry thus leaves %gs at a block, which
 * the inline code after an entry (call-site stores, backedges, exits)
 * relies on instead of testing the ready word. */
static void early_gs(void)
{
	u64 cur = 0;
	if (failed(sc2(SYS_arch_prctl, ARCH_GET_GS, &cur)) || cur)
		return;
	sc2(SYS_arch_prctl, ARCH_SET_GS, scratch_block());
}

static int early_init(void);

/* thread_get returns the calling thread's block, making one if needed. */
static struct blpp_thread *thread_get(void)
{
	struct blpp_thread *t = 0;
	/* Before blpp_init: code ld.so runs before the entry point (IFUNC
	 * resolvers, DT_PREINIT_ARRAY, shared libraries' constructors
	 * calling back into the program). early_init sets the runtime up
	 * there. Where it cannot (no thread pointer yet), nothing is counted,
	 * but the instrumentation's increments (addq $k, %gs:r) still run:
	 * give %gs a scratch block to write to. Every activation starts with
	 * an entry stub, so this happens before any increment. */
	if (!LOAD(&rt.ready) && !early_init()) {
		early_gs();
		ADD(&rt.early_uncounted, 1);
		return 0;
	}
	if (!rt.fsgsbase || gs_base() != 0)
		t = gs_block();
	if (t && owns(t))
		return t;
	return thread_slow(t);
}

/* ---- metrics [DESIGN 8] ---- */

#define rdtsc() ((u64)blpp_rdtsc())

/* metrics_open opens the calling thread's perf events (each thread counts
 * its own: perf events follow one task). */
static void metrics_open(struct blpp_thread *t)
{
	struct tpriv *p = TPRIV(t);
	for (u64 m = 0; m < BLPP_MAX_METRICS && p->epoch; m++)
		blpp_pmu_close(&p->ev[m]); /* a fork child's copies of its parent's */
	p->epoch = rt.epoch + 1;
	for (u64 m = 0; m < BLPP_MAX_METRICS; m++) {
		p->ev[m].fd = -1;
		p->ev[m].page = 0;
		if (m < rt.nmetrics && rt.msrc[m] == MSRC_PMU)
			blpp_pmu_open(rt.mtype[m], rt.mconfig[m], &p->ev[m]);
	}
}

/* metrics_read reads every metric of the calling thread into v. */
static void metrics_read(struct blpp_thread *t, u64 *v)
{
	struct tpriv *p = TPRIV(t);
	u64 tsc = 0;
	int have_tsc = 0;
	for (u64 m = 0; m < rt.nmetrics; m++) {
		switch (rt.msrc[m]) {
		case MSRC_TSC:
			if (!have_tsc) {
				tsc = rdtsc();
				have_tsc = 1;
			}
			v[m] = tsc;
			break;
		case MSRC_PMU:
			if (!p->ev[m].page || blpp_pmu_read(p->ev[m].page, (unsigned long long *)&v[m]) != 0)
				v[m] = 0;
			break;
		default:
			v[m] = 0;
		}
	}
}

/* ---- counters ---- */

/* A hash table of path counts for one record of a function with many
 * paths. Entries are a key (path+1; 0 marks an empty entry) followed by
 * rt.stride values (count, then metric sums). Tables are never resized
 * in place. The record points at the newest table, which is where paths
 * are counted: when it is half full and a path it lacks comes, a table
 * four times bigger goes in front of it (linked to it through next). A
 * path already in an older table starts a new entry in the newest; the
 * older counts stay where they are, and the writer sums a path over all
 * tables. So the hot paths live in the first table, the one the inline
 * code probes [decision 48], and a function that sees few paths keeps a
 * small table. A record belongs to one thread, but a signal handler on
 * that thread may count while a count is interrupted: the atomics keep
 * the tables consistent. */
struct htab {
	u64 cap;   /* power of two */
	u64 used;
	u64 next;  /* the next older table */
	u64 bytes; /* cap * entry size: the inline code's scale (home) */
	u64 e[];
};

enum { HTAB_INIT = BLPP_HTAB_INIT_CAP };
_Static_assert(__builtin_offsetof(struct htab, e) == BLPP_HTAB_ENTRIES_OFF, "htab header");
_Static_assert(__builtin_offsetof(struct htab, bytes) == BLPP_HTAB_BYTES_OFF, "htab bytes");
_Static_assert((BLPP_HTAB_INIT_CAP & (BLPP_HTAB_INIT_CAP - 1)) == 0, "htab capacity");

/* fib32 is the 32-bit Fibonacci hash of x's low 32 bits, the one inline
 * code computes with imul $BLPP_HASH_MUL (hash tables, call cache). */
static u32 fib32(u64 x) { return (u32)x * (u32)BLPP_HASH_MUL; }

/* home is key's first probe in a table of cap entries: fib32 scaled to
 * [0, cap) by a multiply and a shift. The second probe is the next entry,
 * wrapping at cap (the inline code looks at entry cap instead, which
 * stays empty). The inline code computes the same (imul $BLPP_HASH_MUL;
 * imul bytes; shr $32) in the record's newest table and counts a path
 * found there itself [decision 48]. */
static u64 home(u64 key, u64 cap) { return ((u64)fib32(key) * cap) >> 32; }

static u64 mix(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdul;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ul;
	x ^= x >> 33;
	return x;
}

static u64 hent_words(void) { return 1 + rt.stride; }

static struct htab *htab_new(struct wiped *w, u64 cap)
{
	/* One entry more than cap, never written: the inline code's second
	 * probe (home + 1) may look at it [decision 48]. */
	struct htab *h = arena_alloc(&w->arena, sizeof(struct htab) + (cap + 1) * hent_words() * 8);
	if (h) {
		h->cap = cap;
		h->bytes = cap * hent_words() * 8;
	}
	return h;
}

/* htab_slot returns the values of key in h, inserting it if insert says
 * so and h is less than half full, else 0. */
static u64 *htab_slot(struct htab *h, u64 key, int insert)
{
	u64 mask = h->cap - 1, i = home(key, h->cap), hw = hent_words();
	for (u64 n = 0; n < h->cap; n++, i = (i + 1) & mask) {
		u64 *e = &h->e[i * hw];
		u64 k = LOAD(&e[0]);
		if (k == 0) {
			if (!insert || LOADR(&h->used) >= h->cap / 2)
				return 0;
			if (!CAS(&e[0], 0, key)) {
				if (LOAD(&e[0]) != key)
					continue;
			} else {
				ADD(&h->used, 1);
			}
			return e + 1;
		}
		if (k == key)
			return e + 1;
	}
	return 0;
}

/* hash_slot returns where record r counts path path, 0 when no table
 * can take it (the arena is full and no older table has it). */
static u64 *hash_slot(struct wiped *w, struct blpp_record *r, u64 path)
{
	u64 key = path + 1;
	for (;;) {
		struct htab *h = (struct htab *)LOAD(&r->hash), *n;
		u64 *v = htab_slot(h, key, 1);
		if (v)
			return v;
		if (!(n = htab_new(w, h->cap * 4))) {
			for (h = (struct htab *)LOAD(&h->next); h; h = (struct htab *)LOAD(&h->next))
				if ((v = htab_slot(h, key, 0)))
					return v;
			return 0;
		}
		n->next = (u64)h;
		/* A signal handler's count may have put a table in front
		 * meanwhile: then n stays unused in the arena, and we retry. */
		CAS(&r->hash, (u64)h, (u64)n);
	}
}

/* ---- calling context trees [DESIGN 7; Ammons-Ball-Larus 97 §4] ---- */

static struct blpp_record *R(u64 p) { return (struct blpp_record *)p; }
static struct blpp_node *N(u64 p) { return (struct blpp_node *)p; }

/* over_limit says whether the arena has reached its bound. */
static int over_limit(void) { return LOADR(&rt.arena_bytes) >= rt.arena_limit; }

/* slot_of says whether fid's counters live in t's slot counters: a
 * flow-only, frequency-only image with a slot for a dense fid, and t a
 * real block (the scratch block of early_gs has no slots). */
static int slot_of(struct blpp_thread *t, u64 fid)
{
	const struct blpp_func *f = &rt.funcs[fid];
	return rt.slots_size && t->sp_base > (u64)t + BLOCK_HDR && f->slot && !f->hashed &&
	       f->slot >= BLOCK_HDR && f->slot + 8 * (1 + f->num_paths) <= BLOCK_HDR + rt.slots_size;
}

/* cur_of is Thread.cur for a running activation with record r. */
static u64 cur_of(struct blpp_thread *t, const struct blpp_record *r)
{
	if (!r || !rt.slots_size || r->func >= rt.nfuncs || !r->dense_n)
		return 0;
	return r->counts == (u64)t + rt.funcs[r->func].slot ? r->func + 1 : 0;
}

/*
 * Flow-only records [decision 51]. In a flow-only image every activation
 * of fid counts in t's flat record of fid (root), so a record follows from
 * its function. The inline entry of a function with slot counters
 * therefore neither saves nor sets t->record, and its exit does not
 * restore it: while Thread.cur is not 0 the running record is the flat
 * record of fid cur - 1, and t->record is that of the newest activation
 * whose cur is 0 (such an activation's frame.record is never read). The
 * C code keeps to the same rule: lean says whether an activation with
 * cur leaves t->record alone.
 */
static int lean(u64 cur) { return rt.flow_only && cur != 0; }

static struct blpp_record *flat_rec(struct blpp_thread *t, u64 fid)
{
	u64 *flat = (u64 *)t->flat;
	return flat && fid < rt.nfuncs ? R(flat[fid]) : 0;
}

/* closed says whether fid is a closed function (decision 57, below);
 * calls_out, whether it is one that makes outside calls (decision 64). */
static int closed(u64 fid) { return fid < rt.nfuncs && rt.funcs[fid].closed; }
static int calls_out(u64 fid) { return fid < rt.nfuncs && rt.funcs[fid].closed == 2; }

/* running is the record of t's running activation: the newest frame's
 * function's when that is closed (its activations leave cur and record
 * alone), unless activations without frames run above it. */
static struct blpp_record *running(struct blpp_thread *t)
{
	u64 d = depth(t);
	if (d && !t->overflow && closed(frames(t)[d - 1].func))
		return flat_rec(t, frames(t)[d - 1].func);
	return lean(t->cur) ? flat_rec(t, t->cur - 1) : R(t->record);
}

/* The call cache [decision 49]: entry {list, fid, node} says that the
 * node list whose head word is at list holds fid's node. Inline entries
 * look there when the list's first node is another function's. Nodes are
 * never freed (a fork child's cache is wiped with the arena), so an entry
 * stays true; a later pair with the same hash replaces it. */
struct cache_ent {
	u64 list, fid, node, pad;
};
_Static_assert(sizeof(struct cache_ent) * (1u << BLPP_CALL_CACHE_BITS) == BLPP_CALL_CACHE_SIZE, "call cache");
_Static_assert(BLPP_CALL_CACHE_OFFSET == BLPP_SLOTS_OFFSET, "the call cache takes the slots' place");

static void cache_fill(struct blpp_thread *t, u64 list, u64 fid, struct blpp_node *n)
{
	struct cache_ent *e;
	u32 h;
	if (!rt.cache_size || t->sp_base < (u64)t + BLPP_CALL_CACHE_OFFSET + BLPP_CALL_CACHE_SIZE)
		return; /* no cache in this block (early_gs's scratch block) */
	h = fib32(list + fid) >> (32 - BLPP_CALL_CACHE_BITS);
	e = (struct cache_ent *)((u8 *)t + BLPP_CALL_CACHE_OFFSET) + h;
	/* The list word last: an inline entry in a signal handler never
	 * pairs a new list with an old node (it takes the stub while this
	 * one runs anyway: Thread.busy). */
	STORE(&e->list, 0);
	BARRIER();
	e->fid = fid;
	e->node = (u64)n;
	BARRIER();
	STORE(&e->list, list);
}

/* rec_new makes a record of function fid under parent at call site id
 * site and links it at the end of t's list (so parents precede children). */
_Static_assert(BLPP_RECORD_INLINE_COUNTS >= sizeof(struct blpp_record), "inline counts overlap the record");

/* An uninstrumented function's record holds its calls and nothing else:
 * no paths, no call sites (decision 70). */
static const struct blpp_func dark_func;

static struct blpp_record *rec_new(struct blpp_thread *t, u64 fid, struct blpp_record *parent, u64 site)
{
	struct wiped *w = rt.w;
	const struct blpp_func *f = fid < rt.nfuncs ? &rt.funcs[fid] : &dark_func;
	if (fid >= rt.nfuncs && fid - rt.nfuncs < rt.ndark && !rt.funcs[fid].num_paths && !rt.funcs[fid].nsites)
		f = &rt.funcs[fid]; /* its slot, if any */
	u64 dense = f->hashed ? 0 : f->num_paths;
	struct blpp_record *r;
	u64 *counts;
	if (!w || over_limit() || dense > (1ul << 40))
		goto drop;
	/* Counters not in the slots follow the record at a fixed offset,
	 * BLPP_RECORD_INLINE_COUNTS, so the inline code reaches them without
	 * loading r->counts [decision 47]. */
	int slot = f != &dark_func && slot_of(t, fid);
	r = arena_alloc(&w->arena, BLPP_RECORD_INLINE_COUNTS + (slot ? 0 : 8 * (1 + dense * rt.stride)));
	if (!r)
		goto drop;
	if (slot)
		counts = (u64 *)((u8 *)t + f->slot); /* zero or this thread's own counts (a fork child's) */
	else
		counts = (u64 *)((u8 *)r + BLPP_RECORD_INLINE_COUNTS);
	if (f->hashed && !(r->hash = (u64)htab_new(w, HTAB_INIT)))
		goto drop;
	if (!rt.flow_only) {
		u64 *kids = arena_alloc(&w->arena, 8 * (f->nsites + 1));
		if (!kids)
			goto drop;
		r->kids = (u64)kids;
		r->first_site = f->first_site;
		r->nsites = f->nsites;
	}
	r->func = fid;
	r->counts = (u64)counts;
	r->parent = (u64)parent;
	r->site = site;
	r->index = t->nrecords;
	r->dense_n = dense; /* last: it tells the fast paths the record is ready */
	BARRIER();
	if (t->last_rec)
		STORE(&R(t->last_rec)->next, (u64)r);
	else
		STORE(&t->records, (u64)r);
	t->last_rec = (u64)r;
	STORE(&t->nrecords, t->nrecords + 1);
	return r;
drop:
	if (w)
		ADD(&w->stats[ST_DROPPED_RECORDS], 1);
	return 0;
}

/* root returns t's root record of fid, making it if needed. */
/*
 * Records are made with signals blocked. A signal handler that runs
 * instrumented code on this thread enters the same stubs; had it
 * interrupted the making of a record, it would find the thread's record
 * list or flat table half updated, or make a second record for the same
 * function and context (a profile the reader rejects). A record is made
 * once, so the two system calls are rare. Callers look again once
 * signals are blocked: a handler may have made the record meanwhile.
 */
static void sig_block(u64 *old)
{
	u64 all = ~0ul;
	sc4(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, &all, old, 8);
}

static void sig_restore(const u64 *old) { sc4(SYS_rt_sigprocmask, 2 /* SIG_SETMASK */, old, 0, 8); }

static struct blpp_record *root(struct blpp_thread *t, u64 fid)
{
	u64 *flat = (u64 *)t->flat, old;
	struct blpp_record *r = 0;
	if (flat && flat[fid])
		return R(flat[fid]);
	sig_block(&old);
	flat = (u64 *)t->flat;
	if (!flat && rt.w && (flat = arena_alloc(&rt.w->arena, 8 * (rt.nfuncs + rt.ndark))))
		t->flat = (u64)flat;
	if (flat && !(r = R(flat[fid])) && (r = rec_new(t, fid, 0, 0)))
		flat[fid] = (u64)r;
	sig_restore(&old);
	return r;
}

/* find_node finds fid's node in the list at head, and the node before it. */
static struct blpp_node *find_node(struct blpp_node **head, u64 fid, struct blpp_node **prev)
{
	struct blpp_node *n;
	*prev = 0;
	for (n = *head; n && n->func != fid; *prev = n, n = N(n->next))
		;
	return n;
}

/* make_node adds fid's node, with calls, to the list at head of p (call
 * site site) and returns its record: a new one, or the ancestor it folds
 * onto. */
static struct blpp_record *make_node(struct blpp_thread *t, struct blpp_record *p, struct blpp_node **head, u64 site, u64 fid, u64 calls, u64 via)
{
	struct blpp_node *n;
	struct blpp_record *a;
	for (a = p; a && a->func != fid; a = R(a->parent))
		;
	n = rt.w ? arena_alloc(&rt.w->arena, sizeof(*n)) : 0;
	if (!n)
		return a;
	n->folded = a != 0; /* an ancestor (or p itself): the call folds onto it */
	if (!a) {
		if (!(a = rec_new(t, fid, p, site)))
			return 0;
		a->via = via;
	}
	n->via = via;
	n->func = fid;
	n->rec = (u64)a;
	n->owner = (u64)p;
	n->site = site;
	n->count = calls;
	if (n->folded) { /* listed once whole: the writer may read the list */
		n->fnext = t->folded;
		BARRIER();
		STORE(&t->folded, (u64)n);
	}
	n->next = (u64)*head;
	*head = n;
	cache_fill(t, (u64)head, fid, n);
	return a;
}

/*
 * child returns the record of fid called from p at call site id site,
 * making it if needed, and adds calls to the node that leads there. A
 * call to a function that has a record on p's chain (p included) reuses
 * that ancestor (recursion folds: the tree stays finite); its node is
 * marked folded and listed for the writer. A site that is none or not one
 * of p's function (an entry from uninstrumented code) uses list 0.
 */
static u64 dark_via(struct blpp_thread *t, u64 list, u64 rsp);

static struct blpp_record *child(struct blpp_thread *t, struct blpp_record *p, u64 site, u64 fid, u64 calls, u64 rsp)
{
	struct blpp_node **head, *n, *prev;
	struct blpp_record *a = 0;
	u64 idx = 0, old;
	if (!p->dense_n && !p->hash)
		return 0; /* not a record of this epoch */
	if (site >= p->first_site && site - p->first_site < p->nsites)
		idx = 1 + site - p->first_site;
	else
		site = 0;
	head = &((struct blpp_node **)p->kids)[idx];
	/* A list changes (a node made, or moved to the front, where the
	 * inline entry looks first) with signals blocked, see sig_block: a
	 * handler's entry never meets a half-moved node. */
	if (!(n = find_node(head, fid, &prev)) || prev) {
		sig_block(&old);
		if ((n = find_node(head, fid, &prev)) && prev) {
			prev->next = n->next;
			n->next = (u64)*head;
			*head = n;
		} else if (!n) {
			a = make_node(t, p, head, site, fid, calls, dark_via(t, (u64)head, rsp));
		}
		sig_restore(&old);
		if (!n)
			return a;
	}
	n->count += calls;
	cache_fill(t, (u64)head, fid, n);
	return R(n->rec);
}

/* enter_record finds the record of an activation of fid entered at rsp. */
static struct blpp_record *enter_record(struct blpp_thread *t, u64 fid, u64 rsp)
{
	struct blpp_record *p = R(t->record);
	u64 site = t->call_site;
	if (t->tail_rec) {
		if (t->tail_rsp == rsp) {
			p = R(t->tail_rec);
			site = t->tail_site;
		}
		t->tail_rec = 0;
	}
	if (rt.flow_only || !p)
		return root(t, fid);
	return child(t, p, site, fid, 1, rsp);
}

/*
 * count adds one run of path `path` of record r (function fid) with the
 * metric deltas d [Ball-Larus 96 §3.3; DESIGN 8]. An activation without
 * its record (the shadow stack overflowed, the arena was full) counts in
 * the function's root record of the thread: its context is lost
 * (STATS no_record), its flow is not.
 */
static void count(struct blpp_thread *t, struct blpp_record *r, u64 fid, u64 path, const u64 *d)
{
	struct wiped *w = rt.w;
	u64 *v;
	if (!w)
		return;
	if (fid >= rt.nfuncs) {
		ADD(&w->stats[ST_BAD_FUNCS], 1);
		return;
	}
	if (!r || r->func != fid || (!r->dense_n && !r->hash)) {
		ADD(&w->stats[ST_NO_RECORD], 1);
		if (!(r = root(t, fid)))
			return;
	}
	if (path >= rt.funcs[fid].num_paths) {
		ADD(&w->stats[ST_BAD_PATHS], 1);
		return;
	}
	if (path < r->dense_n)
		v = (u64 *)r->counts + 1 + path * rt.stride;
	else if (!(v = hash_slot(w, r, path))) {
		ADD(&w->stats[ST_DROPPED_COUNTS], 1);
		return;
	}
	ADD(&v[0], 1);
	for (u64 m = 0; m < rt.nmetrics; m++)
		ADD(&v[1 + m], d[m]);
}

/* ---- partial activations [DESIGN 6] ---- */

/* A thread's partial activations found while the program runs (frames
 * unwound after a longjmp, live frames of a dead thread whose block is
 * reused), keyed by (record, func, block, reg). */
struct pent {
	u64 rec, func, block;
	s64 reg;
	u64 count;
};
enum { PTAB_CAP = 4096 };
struct ptab {
	struct pent e[PTAB_CAP];
};

static int try_lock(unsigned long long *l)
{
	for (int i = 0; i < 1000; i++) {
		if (CAS(l, 0, 1))
			return 1;
		__asm__ volatile("pause");
	}
	return 0;
}

/*
 * site_block maps a call-site id to the block of function func that ends
 * with that call, or BLPP_BLOCK_UNKNOWN when the id is none, out of range
 * or belongs to another function (a stale id: the activation stopped
 * somewhere other than at its last call).
 */
static u64 site_block(u64 func, u64 site)
{
	const struct blpp_site *s;
	if (!site || site >= rt.nsites)
		return BLPP_BLOCK_UNKNOWN;
	s = &rt.sites[site];
	return s->func == func ? s->block : BLPP_BLOCK_UNKNOWN;
}

/*
 * Closed functions [decision 57]. A closed function's activations leave
 * Thread.r, call_site, cur and record alone, and it calls only closed
 * functions with its own path register, without storing its call site or
 * spilling its register: the callee's frame holds the register's value at
 * the call (saved_acc[1], the entry value it restores at its exit) and
 * the callee's return address (in site: the stack may be overwritten by
 * the time an unwind reads it), which names the call. So
 * the state of an activation below the newest is found thus: a closed
 * one's from its callee's frame; any other one's in the newest frame
 * above it that is not a closed function's (the state it saved at its
 * entry), or in Thread itself when there is none.
 */
/* ret_site is the call site of closed function fid whose return address
 * is ra, 0 when none is. */
static u64 ret_site(u64 fid, u64 ra)
{
	const struct blpp_func *p;
	if (fid >= rt.nfuncs || !rt.sites || !ra)
		return 0;
	p = &rt.funcs[fid];
	for (u64 s = p->first_site; s - p->first_site < p->nsites && s < rt.nsites; s++)
		if (rt.sites[s].ret && rt.sites[s].ret + rt.bias == ra)
			return s;
	return 0;
}

/* A stop walk goes down t's frames from the newest, giving each
 * activation the call site it stopped at and its path register then.
 * The newest activation, unless closed, stopped at the site stop_start is
 * given (Thread's at an exit, 0 where it stopped anywhere: a signal); a
 * closed newest one stopped somewhere unknown. */
struct stop_walk {
	struct blpp_thread *t;
	u64 site;  /* where the last activation stepped stopped */
	s64 reg;   /* and its register */
	u64 top;   /* the newest activation's site */
	u64 usite; /* the state the newest non-closed frame above the next */
	s64 ureg;  /* activation saved: its stop, unless it is closed */
	u64 next;  /* the next activation to step */
	u64 leaf;  /* a closed activation's leaf call in progress, until one takes it */
};

static void stop_start(struct stop_walk *w, struct blpp_thread *t, u64 top)
{
	w->t = t;
	w->next = depth(t);
	w->top = top;
	w->usite = t->call_site;
	w->ureg = t->r;
	w->leaf = t->leaf_site;
}

/* site_func is the function call site id belongs to (~0: none). */
static u64 site_func(u64 site)
{
	return site && site < rt.nsites && rt.sites ? rt.sites[site].func : ~(u64)0;
}

/* stop_step steps to the next older activation (w->next - 1, which must
 * exist) and sets w->site and w->reg to its stop. */
static void stop_step(struct stop_walk *w)
{
	struct blpp_frame *f = frames(w->t);
	u64 i = --w->next, fid = f[i].func;
	if (closed(fid)) {
		/* its callee, when closed too, saved the return address as
		 * its site, which names an inside call; any other frame above
		 * is a signal handler's or one pushed during an outside call,
		 * whose site and register the activation stored in its own
		 * frame (decision 64) */
		int known = i + 1 < depth(w->t) && closed(f[i + 1].func);
		w->site = known ? ret_site(fid, f[i + 1].site) : 0;
		w->reg = known ? (s64)f[i + 1].saved_acc[1] : w->ureg;
		if (!w->site && w->leaf && site_func(w->leaf) == fid) {
			/* the newest activation of fid is in a leaf call
			 * (decision 64); the site is its only once */
			w->site = w->leaf;
			w->reg = w->t->leaf_r;
			w->leaf = 0;
		} else if (!w->site && calls_out(fid) && f[i].saved_acc[2]) {
			w->site = f[i].saved_acc[2];
			w->reg = (s64)f[i].saved_acc[3];
		}
		return;
	}
	w->site = i + 1 == depth(w->t) ? w->top : w->usite;
	w->reg = w->ureg;
	w->usite = f[i].site;
	w->ureg = f[i].saved_r;
}

/* pent_add counts one (rec, func, block, reg) in the table at *tab
 * (made on first use), under *lock. */
static void pent_add(unsigned long long *tab, unsigned long long *lock, struct blpp_record *rec, u64 func, u64 block, s64 reg)
{
	struct wiped *w = rt.w;
	struct ptab *p;
	if (!w)
		return;
	if (rec && rec->func != func)
		rec = 0;
	if (!try_lock(lock)) {
		ADD(&w->stats[ST_DROPPED_PARTIALS], 1);
		return;
	}
	p = (struct ptab *)*tab;
	if (!p) {
		p = arena_alloc(&w->arena, sizeof(struct ptab));
		*tab = (u64)p;
	}
	if (p) {
		u64 i = mix(func * 0x9e3779b97f4a7c15ul ^ (u64)reg ^ block << 40 ^ (u64)rec) & (PTAB_CAP - 1);
		for (u64 n = 0; n < PTAB_CAP; n++, i = (i + 1) & (PTAB_CAP - 1)) {
			struct pent *e = &p->e[i];
			if (e->count && e->rec == (u64)rec && e->func == func && e->block == block && e->reg == reg) {
				STORE(&e->count, e->count + 1);
				goto out;
			}
			if (!e->count) {
				e->rec = (u64)rec;
				e->func = func;
				e->block = block;
				e->reg = reg;
				STORE(&e->count, 1); /* published last: a lock-free reader sees whole entries */
				goto out;
			}
		}
	}
	ADD(&w->stats[ST_DROPPED_PARTIALS], 1);
out:
	STORE(lock, 0);
}

static void partial_add(struct blpp_thread *t, struct blpp_record *rec, u64 func, u64 block, s64 reg)
{
	pent_add(&t->partials, &t->plock, rec, func, block, reg);
}

/* act_record is the record of the activation that pushed frame i of t,
 * given next, the record its callee's frame saved: in a flow-only image
 * its function's flat record, which its callee need not have saved
 * [decision 51]. */
static struct blpp_record *act_record(struct blpp_thread *t, u64 i, u64 next)
{
	return rt.flow_only ? flat_rec(t, frames(t)[i].func) : R(next);
}

/* frame_record is the record of activation i of t: the one its callee
 * saved, or the running one for the newest. */
static struct blpp_record *frame_record(struct blpp_thread *t, u64 i)
{
	u64 d = depth(t);
	return i + 1 < d ? act_record(t, i, frames(t)[i + 1].record) : running(t);
}

/* restore_caller gives t the record and cur of the caller of frame f's
 * activation, the running one, as an exit does. */
static void restore_caller(struct blpp_thread *t, const struct blpp_frame *f)
{
	if (closed(f->func))
		return; /* it changed neither */
	if (!lean(t->cur))
		t->record = f->record;
	t->cur = rt.slots_size ? f->saved_acc[0] : 0;
}

/* record_live adds the live activations of t to its partials (a dead
 * thread's, whose block is about to be reused). */
static void record_live(struct blpp_thread *t)
{
	struct blpp_frame *f = frames(t);
	struct stop_walk w;
	/* The newest activation of a dead thread stopped who knows where
	 * (site 0); each older one at the call its callee's frame recorded
	 * (a call site, or a closed callee's return address). */
	stop_start(&w, t, 0);
	while (w.next > 0) {
		stop_step(&w);
		partial_add(t, frame_record(t, w.next), f[w.next].func, site_block(f[w.next].func, w.site), w.reg);
	}
}

/*
 * fork_reset runs in a fork child, at its first slow path (or profile
 * write): the wiped memory reads as zero there, so the child's trees,
 * counters and partials are gone and it counts only its own work. The
 * other threads of the parent do not exist in the child, so the thread
 * list keeps only the caller's block, whose records are made again for
 * the activations live on its shadow stack (with no counts: their calls
 * are the parent's). A profile write the parent had in progress is
 * forgotten.
 */
static void fork_reset(void)
{
	struct wiped *w = rt.w;
	struct blpp_thread *me;
	if (!CAS(&rt.resetting, 0, 1))
		return; /* a signal handler interrupted the reset */
	if (!LOAD(&w->live)) {
		STORE(&w->live, 1);
		rt.epoch++;
		/* The forking thread's block: %gs points at it in that thread
		 * and in any thread it has created since. */
		me = (!rt.fsgsbase || gs_base() != 0) ? gs_block() : 0;
		if (me) {
			struct blpp_frame *f = frames(me);
			struct blpp_record *prev = 0, *kept = 0; /* kept: me->record [decision 51] */
			u64 d = depth(me);
			me->next = 0;
			me->records = me->last_rec = me->nrecords = 0;
			me->folded = me->partials = me->plock = me->flat = 0;
			me->tail_rec = 0;
			TPRIV(me)->ndark = 0;
			dark_sync(me);
			me->tid = gettid();
			for (u64 i = 0; i < d; i++) {
				struct blpp_record *r;
				f[i].record = (u64)kept;
				if (rt.slots_size)
					f[i].saved_acc[0] = cur_of(me, prev);
				if (f[i].func >= rt.nfuncs)
					r = 0;
				else if (!prev || rt.flow_only)
					r = root(me, f[i].func);
				else
					r = child(me, prev, f[i].site, f[i].func, 0, 0);
				if (closed(f[i].func))
					continue; /* changed neither cur nor record */
				prev = r;
				if (!lean(cur_of(me, r)))
					kept = r;
			}
			me->record = (u64)kept;
			me->cur = cur_of(me, prev);
			if (rt.nmetrics)
				metrics_open(me);
		}
		STORE(&rt.threads, me);
		rt.nthreads = me ? 1 : 0;
		rt.write_lock = 0;
		rt.exit_written = 0;
		rt.dumps = 0;
		rt.forked = 1;
		rt.pid = getpid();
	}
	STORE(&rt.resetting, 0);
}

static void fork_check(void)
{
	struct wiped *w = rt.w;
	if (w && !LOAD(&w->live))
		fork_reset();
}

/*
 * unwind pops the activations whose stack frames are gone: a frame with
 * rsp below the caller's stack pointer belongs to a function that was left
 * without passing its exit (longjmp, an exception, a tail call through
 * uninstrumented code). `inclusive` also pops a frame at exactly rsp (at
 * an entry, where a live caller's frame is always strictly above). Each is
 * recorded as a partial with the register it had; the register, record
 * and call site return to their caller's.
 */
static void unwind(struct blpp_thread *t, u64 rsp, int inclusive)
{
	struct blpp_frame *f = frames(t);
	struct stop_walk w;
	u64 n = depth(t), m = n;
	while (m > 0 && (inclusive ? f[m - 1].rsp <= rsp : f[m - 1].rsp < rsp))
		m--;
	if (m == n)
		return;
	t->overflow = 0; /* anything above the frames is gone as well */
	/* The newest stopped at its last call (t->call_site, the call that
	 * left it, e.g. to longjmp), or somewhere unknown if that id is not
	 * one of its; each older one where its callee's frame says. The
	 * frames stay pushed until all are read: a signal handler's frames
	 * would go where popped ones were. */
	stop_start(&w, t, t->call_site);
	while (w.next > m) {
		stop_step(&w);
		partial_add(t, frame_record(t, w.next), f[w.next].func, site_block(f[w.next].func, w.site), w.reg);
		ADD(&rt.w->stats[ST_UNWOUND], 1);
	}
	/* A leaf call in progress was a popped activation's, or one under
	 * a signal handler whose stop is then unknown rather than wrong. */
	t->leaf_site = 0;
	/* The register, record and call site return to the caller's, as if
	 * the popped activations had exited newest first (closed ones did
	 * not change them). */
	for (u64 i = n; i-- > m;) {
		if (closed(f[i].func))
			continue;
		t->r = f[i].saved_r;
		t->call_site = f[i].site;
		restore_caller(t, &f[i]);
		for (u64 k = 0; k < rt.nmetrics; k++)
			t->macc[k] = f[i].saved_acc[k];
	}
	BARRIER();
	t->sp = (u64)&f[m];
}

/* ---- the stubs' C halves (blpp_stubs.S saves the registers and flags) ---- */

/*
 * The stubs' C halves count t->busy up while they work. A stub that finds
 * it non-zero runs in a signal handler that interrupted another stub on
 * the same thread, whose shadow-stack update may be half done (a frame
 * reserved but not yet filled): it must not unwind, only push and pop
 * above. The handler's activations are deeper than everything on the
 * shadow stack, so there is nothing for it to unwind anyway.
 *
 * Metrics [DESIGN 8]: t->mstart holds the counters when the running path
 * last resumed, t->macc what it accumulated before. An entry adds the
 * caller's progress to its macc and saves it in the new frame; an exit
 * or backedge charges macc + (now - mstart) to the path that ends; an
 * exit gives the caller its macc back. So a path's metrics exclude its
 * callees, and the runtime's own time after a read is charged to whatever
 * resumes.
 */

static struct blpp_thread *stub_thread(void)
{
	struct blpp_thread *t;
	fork_check();
	t = thread_get();
	if (t && rt.nmetrics && TPRIV(t)->epoch != rt.epoch + 1)
		metrics_open(t);
	return t;
}

/* path_metrics sets d to the metrics of the path that ends now. */
static void path_metrics(struct blpp_thread *t, const u64 *now, u64 *d)
{
	for (u64 m = 0; m < rt.nmetrics; m++) {
		d[m] = t->macc[m] + (now[m] - t->mstart[m]);
		t->macc[m] = 0;
		t->mstart[m] = now[m];
	}
}

/* saved_reg is where the stubs' register save area (see blpp_stubs.S)
 * keeps function fid's path register (Func.path_reg), or 0 when fid has
 * none or it is not one of the registers there. */
static u64 *saved_reg(u64 *regs, u64 fid)
{
	/* save-area word of each register number: r11 1, r10 2, r9 3, r8 4,
	 * rdi 5, rsi 6 (the only ones the rewriter picks) */
	static const unsigned char word[16] = {[6] = 6, [7] = 5, [8] = 4, [9] = 3, [10] = 2, [11] = 1};
	u64 pr;
	if (!regs || rt.nmetrics || fid >= rt.nfuncs)
		return 0;
	pr = rt.funcs[fid].path_reg;
	if (pr == 0 || pr > 16 || !word[pr - 1])
		return 0;
	return &regs[word[pr - 1]];
}

/* blpp_rt_enter: function fid was entered with %rsp == rsp. */
void blpp_rt_enter(u64 fid, u64 rsp, u64 *regs)
{
	struct blpp_thread *t = stub_thread();
	struct blpp_frame *f;
	struct blpp_record *r = 0;
	u64 nested, now[BLPP_MAX_METRICS];
	if (!t)
		return;
	nested = t->busy++;
	BARRIER();
	if (rt.nmetrics)
		metrics_read(t, now);
	if (rt.w)
		ADD(&rt.w->stats[ST_STUB_ENTRIES], 1);
	if (rt.w && !nested)
		unwind(t, rsp, 1);
	if (rt.w && fid < rt.nfuncs)
		r = enter_record(t, fid, rsp);
	else if (rt.w)
		ADD(&rt.w->stats[ST_BAD_FUNCS], 1);
	f = (struct blpp_frame *)t->sp;
	if (t->overflow == 0 && (u64)(f + 1) > t->sp_limit)
		shadow_grow(t, 0);
	if (t->overflow == 0 && (u64)(f + 1) <= t->sp_limit) {
		/* Reserve, then fill: a signal handler's push/pop pair that
		 * lands in between works above the reserved frame. */
		t->sp = (u64)(f + 1);
		BARRIER();
		f->rsp = rsp;
		f->saved_r = t->r;
		f->func = fid;
		f->record = t->record;
		/* a closed function's frame keeps its return address there */
		f->site = closed(fid) ? *(const u64 *)rsp : t->call_site;
		if (calls_out(fid))
			f->saved_acc[2] = 0; /* in no outside call (decision 64) */
		if (rt.slots_size)
			f->saved_acc[0] = t->cur; /* the inline exit restores it from here */
		if (saved_reg(regs, fid))
			f->saved_acc[1] = *saved_reg(regs, fid); /* and the path register's value */
		for (u64 m = 0; m < rt.nmetrics; m++)
			f->saved_acc[m] = t->macc[m] + (now[m] - t->mstart[m]);
	} else {
		t->overflow++;
		if (rt.w)
			ADD(&rt.w->stats[ST_SHADOW_OVERFLOW], 1);
	}
	for (u64 m = 0; m < rt.nmetrics; m++) {
		t->macc[m] = 0;
		t->mstart[m] = now[m];
	}
	if (!closed(fid)) { /* a closed activation leaves them alone [decision 57] */
		t->r = 0;
		t->call_site = 0;
		t->cur = cur_of(t, r);
		if (!lean(t->cur))
			t->record = (u64)r;
	}
	if (r)
		ADD((u64 *)r->counts, 1);
	BARRIER();
	t->busy--;
}

/* pop ends the activation of fid on top of t's shadow stack; regs (the
 * stub's register save area, or 0) gets fid's path register back. */
static void pop(struct blpp_thread *t, u64 fid, u64 *regs)
{
	if (t->overflow) {
		t->overflow--;
		/* the caller's register and record were not saved */
		if (!closed(fid))
			t->r = 0;
		else if (saved_reg(regs, fid))
			*saved_reg(regs, fid) = 0;
	} else if (t->sp > t->sp_base && ((struct blpp_frame *)t->sp - 1)->func == fid) {
		struct blpp_frame *f = (struct blpp_frame *)t->sp - 1;
		u64 *pr = saved_reg(regs, fid);
		if (pr)
			*pr = f->saved_acc[1];
		if (!closed(fid)) {
			t->r = f->saved_r;
			t->call_site = f->site;
			restore_caller(t, f);
		}
		for (u64 m = 0; m < rt.nmetrics; m++)
			t->macc[m] = f->saved_acc[m];
		BARRIER();
		t->sp = (u64)f;
	} else if (rt.w) {
		ADD(&rt.w->stats[ST_EXIT_MISMATCH], 1);
	}
}

/* blpp_rt_exit: function fid ends its path at an exit, %rsp == rsp. A
 * tail site (not 0) says the exit is a tail jump from that site to an
 * instrumented function, whose entry is to become a child of this
 * activation's record. */
void blpp_rt_exit(u64 fid, u64 rsp, u64 tail_site, u64 *regs)
{
	struct blpp_thread *t = stub_thread();
	u64 nested, now[BLPP_MAX_METRICS], d[BLPP_MAX_METRICS];
	struct blpp_record *r;
	if (!t)
		return;
	nested = t->busy++;
	BARRIER();
	if (rt.nmetrics) {
		metrics_read(t, now);
		path_metrics(t, now, d);
	}
	if (rt.w)
		ADD(&rt.w->stats[ST_STUB_EXITS], 1);
	if (rt.w && !nested && t->overflow == 0)
		unwind(t, rsp, 0);
	if (closed(fid)) {
		/* its register is in regs: the exit does not spill it, since
		 * Thread.r is not its own [decision 57] */
		u64 *pr = saved_reg(regs, fid);
		r = flat_rec(t, fid);
		count(t, r, fid, pr ? *pr : ~(u64)0, d);
	} else {
		r = running(t);
		count(t, r, fid, (u64)t->r, d);
	}
	pop(t, fid, regs);
	t->tail_rec = 0;
	if (tail_site && r && !rt.flow_only) {
		t->tail_rec = (u64)r;
		t->tail_site = tail_site;
		t->tail_rsp = rsp;
	}
	BARRIER();
	t->busy--;
}

/* blpp_rt_backedge: count[fid][r + k]++, r = restart [Ball-Larus 96 §3.4]. */
void blpp_rt_backedge(u64 fid, u64 k, u64 restart)
{
	struct blpp_thread *t = stub_thread();
	u64 now[BLPP_MAX_METRICS], d[BLPP_MAX_METRICS];
	if (!t)
		return;
	t->busy++;
	BARRIER();
	if (rt.nmetrics) {
		metrics_read(t, now);
		path_metrics(t, now, d);
	}
	if (rt.w)
		ADD(&rt.w->stats[ST_STUB_BACKEDGES], 1);
	/* A closed function swaps its register with Thread.r around this
	 * call (decision 57), so Thread.r is its path here too. */
	count(t, closed(fid) ? flat_rec(t, fid) : running(t), fid, (u64)t->r + k, d);
	t->r = (s64)restart;
	BARRIER();
	t->busy--;
}

/*
 * blpp_rt_leaf: an activation of fid starts, a flow-only function of one
 * path that calls nothing, whose instrumentation is only its inline entry
 * counting its call and its path [decision 55]: no shadow frame, no path
 * register, nothing at its exit. The entry comes here when it cannot
 * count inline: before the runtime is ready, on a thread whose %gs is not
 * its own block yet, or before the thread has fid's record. This does the
 * same counts in the record, made if need be. The activation takes no
 * part in the thread's state (frames, r, cur, call site).
 */
void blpp_rt_leaf(u64 fid)
{
	struct blpp_thread *t = stub_thread();
	struct blpp_record *r;
	u64 d[BLPP_MAX_METRICS] = {0};
	if (!t || !rt.w)
		return;
	t->busy++;
	BARRIER();
	ADD(&rt.w->stats[ST_STUB_ENTRIES], 1);
	if (fid >= rt.nfuncs)
		ADD(&rt.w->stats[ST_BAD_FUNCS], 1);
	else if ((r = root(t, fid))) {
		ADD((u64 *)r->counts, 1);
		count(t, r, fid, 0, d);
	}
	BARRIER();
	t->busy--;
}

/*
 * Uninstrumented functions (decision 70). The rewriter redirects the
 * entry of each function it leaves out, where it can, to a stub that
 * calls blpp_rt_dark with the function's id (nfuncs + its index among the
 * left-out functions of the metadata) and the entry %rsp, then runs the
 * function's first instructions and jumps back into its original body.
 * Its exits are not seen, so the activation takes no part in the
 * thread's state: no shadow frame, and Thread.record, call_site, r and
 * cur stay the caller's. Only its record counts the entry: the thread's
 * root record of the function (flow-only), or a child of the running
 * record at the last call site, as an instrumented callee's would be.
 *
 * Instrumented code it calls back then enters, as before, under the
 * caller's record at that call site (decision 7). To show such callbacks
 * under the uninstrumented function in the profile, the thread keeps the
 * activations that may be in progress in TPRIV(t)->dark: the node list
 * the function's record hangs in and its entry %rsp. A record (or folded
 * call) made later in the same list by an entry below that %rsp is one of
 * its callbacks, so its Via names the function's record, which the
 * writer gives as its parent. An entry at or above the %rsp proves the
 * activation gone. Calls from an instrumented function at one call site
 * run at one %rsp, so for a direct call site this is exact; an indirect
 * site that calls both an uninstrumented function and, directly,
 * instrumented ones may see a direct callee made under the former's
 * record when a deeper activation of the same context reaches the site
 * first. Counts are never affected, only where a record hangs.
 */
/* dark_pull takes into t's newest uninstrumented activation the entry
 * %rsp an inline stub stored (Thread.dark_rsp): an activation of the same
 * function from the same call site that replaced it. */
static void dark_pull(struct blpp_thread *t)
{
	struct tpriv *p = TPRIV(t);
	struct dark_ctx *d;
	if (p->ndark == 0 || p->ndark > 8)
		return;
	d = &p->dark[p->ndark - 1];
	if (d->list == t->dark_list && d->rec == t->dark_rec)
		d->rsp = t->dark_rsp;
}

static u64 dark_via(struct blpp_thread *t, u64 list, u64 rsp)
{
	struct tpriv *p = TPRIV(t);
	u64 n = p->ndark < 8 ? p->ndark : 8;
	if (!rsp || !list)
		return 0;
	dark_pull(t);
	for (u64 i = n; i-- > 0;) {
		const struct dark_ctx *d = &p->dark[i];
		if (d->epoch == rt.epoch && d->list == list && rsp < d->rsp)
			return d->rec;
	}
	return 0;
}

/* blpp_rt_dark: uninstrumented function fid was entered with %rsp == rsp. */
void blpp_rt_dark(u64 fid, u64 rsp)
{
	struct blpp_thread *t = stub_thread();
	struct blpp_record *p, *r = 0;
	struct tpriv *tp;
	u64 nested;
	if (!t || !rt.w)
		return;
	nested = t->busy++;
	BARRIER();
	ADD(&rt.w->stats[ST_STUB_DARK], 1);
	if (fid < rt.nfuncs || fid - rt.nfuncs >= rt.ndark) {
		ADD(&rt.w->stats[ST_BAD_FUNCS], 1);
		goto out;
	}
	/* Activations whose frames lie at or below this entry are gone, as
	 * at an instrumented entry (blpp_rt_enter). */
	if (!nested && t->sp > t->sp_base && ((struct blpp_frame *)t->sp)[-1].rsp <= rsp)
		unwind(t, rsp, 1);
	tp = TPRIV(t);
	if (!nested)
		dark_pull(t);
	p = R(t->record);
	if (rt.flow_only || !p || (!p->dense_n && !p->hash)) {
		r = root(t, fid);
	} else {
		u64 site = t->call_site, idx = 0;
		struct blpp_node *n;
		if (site >= p->first_site && site - p->first_site < p->nsites)
			idx = 1 + site - p->first_site;
		n = ((struct blpp_node **)p->kids)[idx];
		if (n && n->func == fid) { /* the common case: a call site's only callee */
			n->count++;
			r = R(n->rec);
		} else {
			r = child(t, p, site, fid, 1, rsp);
		}
		if (r && !nested) {
			u64 list = (u64) & ((struct blpp_node **)p->kids)[idx];
			struct dark_ctx *d;
			if (tp->ndark > 0 && tp->ndark <= 8) {
				d = &tp->dark[tp->ndark - 1];
				if (d->list == list && d->rec == (u64)r && d->epoch == rt.epoch) {
					/* called again from the same call site: it takes
					 * the old activation's place, as in the inline stub */
					d->rsp = rsp;
					dark_sync(t);
					goto counted;
				}
			}
			while (tp->ndark > 0 && (tp->ndark > 8 || tp->dark[tp->ndark - 1].rsp <= rsp))
				tp->ndark--;
			if (tp->ndark == 8) { /* forget the oldest */
				for (u64 i = 1; i < 8; i++)
					tp->dark[i - 1] = tp->dark[i];
				tp->ndark--;
			}
			d = &tp->dark[tp->ndark];
			d->list = list;
			d->rec = (u64)r;
			d->rsp = rsp;
			d->epoch = rt.epoch;
			BARRIER();
			tp->ndark++;
			dark_sync(t);
		}
	}
counted:
	if (r)
		ADD((u64 *)r->counts, 1);
out:
	BARRIER();
	t->busy--;
}

/*
 * blpp_rt_fork_child runs in a fork child right after fork() returned 0
 * to function fid, whose call site id is site. Every activation live now
 * began its path in the parent, which counts the blocks before the fork;
 * the child will finish those paths and count them again. So the child
 * records each one's prefix, where it stopped and the path register
 * there (as a partial), and the report subtracts the prefixes' blocks:
 * each process's profile then holds its own work only, as callgrind's
 * dump at fork has it.
 */
void blpp_rt_fork_child(u64 fid, u64 site)
{
	struct blpp_thread *t = stub_thread(); /* makes the child's state (fork_reset) */
	struct wiped *w = rt.w;
	struct blpp_frame *f;
	struct stop_walk sw;
	if (!t || !w || t->busy)
		return;
	t->busy++;
	BARRIER();
	STORE(&w->prefix_owner, (u64)t);
	f = frames(t);
	(void)fid; /* the newest frame is fid's unless it was not pushed; then site names no block of it */
	stop_start(&sw, t, site);
	while (sw.next > 0) {
		stop_step(&sw);
		pent_add(&w->prefixes, &w->prefix_lock, frame_record(t, sw.next), f[sw.next].func, site_block(f[sw.next].func, sw.site), sw.reg);
	}
	BARRIER();
	t->busy--;
}

/*
 * blpp_rt_setjmp_ret runs on the edge after a call that returns twice, in
 * function fid whose activation has %rsp == rsp. The edge ends a path
 * (pathnum makes it path-breaking). On the first return the call site is
 * still the setjmp call's own (site): count[r + k]. On a return through
 * longjmp it is not: first pop the activations longjmp abandoned (each
 * recorded where it stopped), then record this activation's own path,
 * abandoned at its last call, as a partial: the blocks before the setjmp
 * call were not run again. Either way the next path starts: r = restart.
 *
 * A C++ landing pad calls it too, with site BLPP_LANDING_SITE (-1, never
 * a call site): the unwinder came back like a longjmp, leaving the
 * activations the exception passed through, and this activation stopped
 * at the call that raised. No call is in progress after it.
 */
#define BLPP_LANDING_SITE (~(u64)0)
void blpp_rt_setjmp_ret(u64 fid, u64 k, u64 restart, u64 site, u64 rsp)
{
	struct blpp_thread *t = stub_thread();
	u64 nested, now[BLPP_MAX_METRICS], d[BLPP_MAX_METRICS];
	if (!t)
		return;
	nested = t->busy++;
	BARRIER();
	if (rt.nmetrics) {
		metrics_read(t, now);
		path_metrics(t, now, d);
	}
	if (rt.w && !nested && t->overflow == 0)
		unwind(t, rsp, 0);
	if (t->call_site == site && site != BLPP_LANDING_SITE)
		count(t, running(t), fid, (u64)t->r + k, d);
	else
		partial_add(t, running(t), fid, site_block(fid, t->call_site), t->r);
	t->r = (s64)restart;
	t->call_site = site == BLPP_LANDING_SITE ? 0 : site;
	BARRIER();
	t->busy--;
}

/* ---- the profile writer [DESIGN 11, docs/profile-format.md] ---- */

/* obuf is a growable buffer in its own mapping; err sticks. */
struct obuf {
	u8 *p;
	u64 len, cap;
	int err;
};

static int ob_reserve(struct obuf *b, u64 n)
{
	u64 cap;
	long r;
	if (b->err)
		return 0;
	if (b->len + n <= b->cap)
		return 1;
	cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->len + n)
		cap *= 2;
	if (b->p)
		r = sc5(SYS_mremap, b->p, b->cap, cap, MREMAP_MAYMOVE, 0);
	else
		r = sc6(SYS_mmap, 0, (long)cap, PROT_RW, MAP_PRIVATE_ANON, -1, 0);
	if (failed(r)) {
		b->err = 1;
		return 0;
	}
	b->p = (u8 *)r;
	b->cap = cap;
	return 1;
}

static void ob_free(struct obuf *b)
{
	if (b->p)
		sc2(SYS_munmap, b->p, b->cap);
	b->p = 0;
	b->len = b->cap = 0;
}

static void ob_put(struct obuf *b, const void *s, u64 n)
{
	if (n && ob_reserve(b, n)) {
		mem_copy(b->p + b->len, s, n);
		b->len += n;
	}
}

static void ob_u8(struct obuf *b, u8 v) { ob_put(b, &v, 1); }

static void ob_le(struct obuf *b, u64 v, int n)
{
	u8 x[8];
	for (int i = 0; i < n; i++)
		x[i] = (u8)(v >> (8 * i));
	ob_put(b, x, (u64)n);
}

static void ob_uv(struct obuf *b, u64 v)
{
	u8 x[10];
	int n = 0;
	while (v >= 0x80) {
		x[n++] = (u8)(v | 0x80);
		v >>= 7;
	}
	x[n++] = (u8)v;
	ob_put(b, x, (u64)n);
}

static void ob_sv(struct obuf *b, s64 v) { ob_uv(b, ((u64)v << 1) ^ (u64)(v >> 63)); }

static void ob_str(struct obuf *b, const char *s)
{
	u64 n = str_len(s);
	ob_uv(b, n);
	ob_put(b, s, n);
}

static void ob_section(struct obuf *out, u8 tag, struct obuf *payload)
{
	ob_u8(out, tag);
	ob_uv(out, payload->len);
	ob_put(out, payload->p, payload->len);
	if (payload->err)
		out->err = 1;
}

/* Heapsorts (no libc qsort): path entries by id, partials by (rec, func, block, reg). */
static int pent_less(const struct pent *a, const struct pent *b)
{
	if (a->rec != b->rec)
		return a->rec < b->rec;
	if (a->func != b->func)
		return a->func < b->func;
	if (a->block != b->block)
		return a->block < b->block;
	return a->reg < b->reg;
}

/* hent: a hash entry copied out for sorting; values beyond stride unused. */
struct hent {
	u64 key;
	u64 v[1 + BLPP_MAX_METRICS];
};

static int hent_less(const struct hent *a, const struct hent *b) { return a->key < b->key; }

#define DEFINE_HEAPSORT(name, T, less)                                         \
	static void name(T *a, u64 n)                                          \
	{                                                                      \
		for (u64 k = n; k-- > 0;)                                      \
			name##_sift(a, k, n);                                  \
		while (n > 1) {                                                \
			T x = a[0];                                            \
			a[0] = a[n - 1];                                       \
			a[n - 1] = x;                                          \
			name##_sift(a, 0, --n);                                \
		}                                                              \
	}
#define DEFINE_SIFT(name, T, less)                                             \
	static void name##_sift(T *a, u64 i, u64 n)                            \
	{                                                                      \
		for (;;) {                                                     \
			u64 c = 2 * i + 1;                                     \
			T x;                                                   \
			if (c >= n)                                            \
				return;                                        \
			if (c + 1 < n && less(&a[c], &a[c + 1]))               \
				c++;                                           \
			if (!less(&a[i], &a[c]))                               \
				return;                                        \
			x = a[i];                                              \
			a[i] = a[c];                                           \
			a[c] = x;                                              \
			i = c;                                                 \
		}                                                              \
	}
DEFINE_SIFT(sort_pents, struct pent, pent_less)
DEFINE_HEAPSORT(sort_pents, struct pent, pent_less)
DEFINE_SIFT(sort_hents, struct hent, hent_less)
DEFINE_HEAPSORT(sort_hents, struct hent, hent_less)

/* put_path encodes one path entry: id, count, metric sums (unavailable
 * metrics are written as 0, as the format wants). */
static void put_path(struct obuf *out, u64 id, const u64 *v)
{
	ob_uv(out, id);
	ob_uv(out, v[0]);
	for (u64 m = 0; m < rt.nmetrics; m++)
		ob_uv(out, rt.mkind[m] == BLPP_METRIC_UNAVAILABLE ? 0 : v[1 + m]);
}

/* hash_paths encodes the paths of a hashed record into out, summing a
 * path found in several tables; returns their number. */
static u64 hash_paths(struct htab *h, struct obuf *out, struct obuf *scratch)
{
	struct hent *e;
	u64 n = 0, np = 0, hw = hent_words();
	scratch->len = 0;
	for (; h; h = (struct htab *)LOAD(&h->next)) {
		for (u64 i = 0; i < h->cap; i++) {
			u64 *src = &h->e[i * hw], key = LOAD(&src[0]);
			if (!key)
				continue; /* most entries: tables stay at most half full */
			struct hent x = {key, {0}};
			for (u64 j = 0; j < rt.stride; j++)
				x.v[j] = LOADR(&src[1 + j]);
			if (x.key && x.v[0])
				ob_put(scratch, &x, sizeof(x));
		}
	}
	if (scratch->err)
		return 0;
	e = (struct hent *)scratch->p;
	n = scratch->len / sizeof(*e);
	sort_hents(e, n);
	for (u64 i = 0; i < n;) {
		struct hent sum = {e[i].key, {0}};
		for (; i < n && e[i].key == sum.key; i++)
			for (u64 j = 0; j < rt.stride; j++)
				sum.v[j] += e[i].v[j];
		put_path(out, sum.key - 1, sum.v);
		np++;
	}
	return np;
}

/* local_site is the file's call-site number of id site in record p: the
 * local index + 1, 0 for none. */
static u64 local_site(struct blpp_record *p, u64 site)
{
	if (!p || !site || site < p->first_site || site - p->first_site >= p->nsites)
		return 0;
	return 1 + site - p->first_site;
}

/* write_records encodes the records of thread t, parents first (the
 * list order), numbering them in rec->index. */
static u64 write_records(struct blpp_thread *t, struct obuf *recs, struct obuf *paths, struct obuf *scratch)
{
	u64 nrec = 0, limit = LOAD(&t->nrecords);
	for (struct blpp_record *r = R(LOAD(&t->records)); r && nrec < limit; r = R(LOAD(&r->next))) {
		u64 *c = (u64 *)r->counts, np = 0;
		struct blpp_record *p = R(r->parent);
		paths->len = 0;
		for (u64 id = 0; id < r->dense_n; id++) {
			u64 *v = c + 1 + id * rt.stride;
			if (LOADR(&v[0])) {
				put_path(paths, id, v);
				np++;
			}
		}
		if (r->hash)
			np += hash_paths((struct htab *)r->hash, paths, scratch);
		nrec++;
		ob_uv(recs, r->func);
		if (r->via) { /* called back from an uninstrumented function (decision 70) */
			ob_uv(recs, R(r->via)->index + 1);
			ob_uv(recs, 0);
		} else {
			ob_uv(recs, p ? p->index + 1 : 0);
			ob_uv(recs, local_site(p, r->site));
		}
		ob_uv(recs, LOADR(&c[0]));
		ob_uv(recs, np);
		ob_put(recs, paths->p, paths->len);
		if (paths->err)
			recs->err = 1;
	}
	return nrec;
}

/* write_folded encodes t's folded calls (recursion folded onto an
 * ancestor record, or a second call site of the same parent reaching one
 * record): from, call site, to, count. */
static u64 write_folded(struct blpp_thread *t, u64 nrec, struct obuf *out)
{
	u64 n = 0;
	for (struct blpp_node *x = N(LOAD(&t->folded)); x; x = N(x->fnext)) {
		u64 c = LOADR(&x->count);
		if (!c || R(x->owner)->index >= nrec || R(x->rec)->index >= nrec || (x->via && R(x->via)->index >= nrec))
			continue;
		if (x->via) {
			ob_uv(out, R(x->via)->index);
			ob_uv(out, 0);
		} else {
			ob_uv(out, R(x->owner)->index);
			ob_uv(out, local_site(R(x->owner), x->site));
		}
		ob_uv(out, R(x->rec)->index);
		ob_uv(out, c);
		n++;
	}
	return n;
}

/*
 * write_partials encodes t's partial activations: those found while the
 * program ran, and, when t is the calling thread (the one exiting,
 * crashing or handling the dump signal), its live activations. When the
 * calling thread was inside a stub (a signal handler interrupted it) its
 * newest frame may be half made and is left out.
 */
/* collect_pents appends the entries of table pt (0: none) to scratch. */
static void collect_pents(struct ptab *pt, struct obuf *scratch)
{
	if (!pt)
		return;
	for (u64 i = 0; i < PTAB_CAP; i++) {
		struct pent *e = &pt->e[i];
		u64 c = LOAD(&e->count); /* published last, so read first */
		if (c) {
			struct pent x = {e->rec, e->func, e->block, e->reg, c};
			ob_put(scratch, &x, sizeof(x));
		}
	}
}

/* encode_pents sorts the pents in scratch, adds up equal ones and
 * encodes them as the format's partials; it returns how many. */
static u64 encode_pents(struct obuf *scratch, u64 nrec, struct obuf *out)
{
	struct pent *e = (struct pent *)scratch->p;
	u64 n = scratch->len / sizeof(*e), np = 0;
	sort_pents(e, n);
	for (u64 i = 0; i < n;) {
		struct pent k = e[i];
		u64 c = 0;
		for (; i < n && e[i].rec == k.rec && e[i].func == k.func && e[i].block == k.block && e[i].reg == k.reg; i++)
			c += e[i].count;
		ob_uv(out, k.rec && R(k.rec)->index < nrec ? R(k.rec)->index + 1 : 0);
		ob_uv(out, k.func);
		ob_uv(out, k.block);
		ob_sv(out, k.reg);
		ob_uv(out, c);
		np++;
	}
	return np;
}

static u64 write_partials(struct blpp_thread *t, int self, u64 nrec, struct obuf *parts, struct obuf *scratch)
{
	scratch->len = 0;
	collect_pents((struct ptab *)t->partials, scratch);
	if (self) {
		struct blpp_frame *f = frames(t);
		struct stop_walk w;
		/* Where each activation stopped: the newest at its last call
		 * when the program is exiting (exit() is a call), unknown at a
		 * signal (it stopped at any instruction); every older one at
		 * the call its callee's frame recorded (or its return address,
		 * decision 57). When busy, the newest frame may be half made:
		 * it is left out and its caller's stop is unknown. */
		int half = t->busy && depth(t) > 0;
		stop_start(&w, t, (rt.writing_why & ~BLPP_FLAG_EXEC) == 0 && !t->busy ? t->call_site : 0);
		while (w.next > 0) {
			stop_step(&w);
			u64 i = w.next;
			if (half && i + 1 == depth(t))
				continue;
			struct blpp_record *rec = frame_record(t, i);
			u64 site = half && i + 2 == depth(t) ? 0 : w.site;
			struct pent x = {(u64)rec, f[i].func, site_block(f[i].func, site), w.reg, 1};
			if (rec && rec->func != f[i].func)
				x.rec = 0;
			ob_put(scratch, &x, sizeof(x));
		}
	}
	if (scratch->err)
		return 0;
	return encode_pents(scratch, nrec, parts);
}

/* write_prefixes encodes the fork prefixes (blpp_rt_fork_child) when t is
 * the thread that recorded them. */
static u64 write_prefixes(struct blpp_thread *t, u64 nrec, struct obuf *out, struct obuf *scratch)
{
	struct wiped *w = rt.w;
	struct ptab *pt = w ? (struct ptab *)LOAD(&w->prefixes) : 0;
	scratch->len = 0;
	if (!pt || LOAD(&w->prefix_owner) != (u64)t)
		return 0;
	collect_pents(pt, scratch);
	if (scratch->err)
		return 0;
	return encode_pents(scratch, nrec, out);
}

static void write_stat(struct obuf *b, const char *key, u64 v)
{
	ob_str(b, key);
	ob_uv(b, v);
}

/* write_stats encodes the STATS payload, keys in byte order (canonical). */
static void write_stats(struct obuf *b, u64 nrec)
{
	u64 z[NSTATS] = {0};
	const u64 *s = rt.w ? rt.w->stats : z;
	int tsc = 0;
	for (u64 m = 0; m < rt.nmetrics; m++)
		tsc |= rt.msrc[m] == MSRC_TSC;
	ob_uv(b, 21 + (u64)tsc);
	write_stat(b, BLPP_STAT_ARENA_BYTES, LOADR(&rt.arena_bytes));
	write_stat(b, "bad_funcs", LOADR(&s[ST_BAD_FUNCS]));
	write_stat(b, "bad_paths", LOADR(&s[ST_BAD_PATHS]));
	write_stat(b, "dropped_counts", LOADR(&s[ST_DROPPED_COUNTS]));
	write_stat(b, "dropped_partials", LOADR(&s[ST_DROPPED_PARTIALS]));
	write_stat(b, BLPP_STAT_DROPPED_RECORDS, LOADR(&s[ST_DROPPED_RECORDS]));
	write_stat(b, "dumps", rt.dumps);
	write_stat(b, "early_start", rt.early_start);
	write_stat(b, "early_uncounted", LOADR(&rt.early_uncounted));
	write_stat(b, "exit_mismatch", LOADR(&s[ST_EXIT_MISMATCH]));
	write_stat(b, "fork_child", rt.forked);
	write_stat(b, "no_record", LOADR(&s[ST_NO_RECORD]));
	write_stat(b, "record_bytes", BLPP_RECORD_INLINE_COUNTS); /* the record and the gap before its counters */
	write_stat(b, BLPP_STAT_RECORDS, nrec);
	write_stat(b, "shadow_overflow", LOADR(&s[ST_SHADOW_OVERFLOW]));
	write_stat(b, "stub_backedges", LOADR(&s[ST_STUB_BACKEDGES]));
	write_stat(b, "stub_dark", LOADR(&s[ST_STUB_DARK]));
	write_stat(b, "stub_entries", LOADR(&s[ST_STUB_ENTRIES]));
	write_stat(b, "stub_exits", LOADR(&s[ST_STUB_EXITS]));
	write_stat(b, BLPP_STAT_THREADS, LOADR(&rt.nthreads));
	if (tsc)
		write_stat(b, "tsc_total", rdtsc() - rt.tsc_init);
	write_stat(b, "unwound_frames", LOADR(&s[ST_UNWOUND]));
}

/* put appends s to the name being built in rt.name; 0 when it does not fit. */
static int put(u64 *n, const char *s, u64 len)
{
	if (*n + len + 1 > sizeof(rt.name))
		return 0;
	mem_copy(rt.name + *n, s, len);
	*n += len;
	rt.name[*n] = 0;
	return 1;
}

/*
 * profile_names expands the template into rt.name and rt.tmp: %p is the
 * pid, %h the host name, %% a percent sign. A fork child (pid differs from
 * the one blpp_init saw) whose template has no %p appends ".<pid>", so it
 * never overwrites its parent's profile.
 */
static int profile_names(u64 pid)
{
	char num[24], *p = utoa(num + sizeof(num), pid);
	u64 plen = (u64)(num + sizeof(num) - p), n = 0;
	int has_pid = 0;
	for (const char *s = rt.tmpl; *s; s++) {
		int ok;
		if (s[0] == '%' && s[1] == 'p') {
			ok = put(&n, p, plen);
			has_pid = 1;
			s++;
		} else if (s[0] == '%' && s[1] == 'h') {
			char uts[6 * 65];
			const char *host = "localhost";
			if (!failed(sc1(SYS_uname, uts))) {
				uts[2 * 65 - 1] = 0;
				host = uts + 65; /* struct utsname.nodename */
			}
			ok = put(&n, host, str_len(host));
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			ok = put(&n, "%", 1);
			s++;
		} else {
			ok = put(&n, s, 1);
		}
		if (!ok)
			return 0;
	}
	if (pid != rt.init_pid && !has_pid && !(put(&n, ".", 1) && put(&n, p, plen)))
		return 0;
	if (n + 5 + plen + 1 > sizeof(rt.tmp))
		return 0;
	mem_copy(rt.tmp, rt.name, n);
	mem_copy(rt.tmp + n, ".tmp.", 5);
	mem_copy(rt.tmp + n + 5, p, plen);
	rt.tmp[n + 5 + plen] = 0;
	return 1;
}

static int lock_writer(u64 tid, int wait)
{
	for (int i = 0;; i++) {
		u64 cur;
		if (CAS(&rt.write_lock, 0, tid))
			return 1;
		cur = LOAD(&rt.write_lock);
		if (cur == tid || !wait || i >= 2000)
			return 0;
		struct {
			long s, ns;
		} ts = {0, 1000000};
		sc2(SYS_nanosleep, &ts, 0);
	}
}

static u64 fnv1a(const u8 *p, u64 n)
{
	u64 h = BLPP_FNV_OFFSET64;
	for (u64 i = 0; i < n; i++) {
		h ^= p[i];
		h *= BLPP_FNV_PRIME64;
	}
	return h;
}

/*
 * write_profile writes the whole profile to "<name>.tmp.<pid>" and renames
 * it to <name>. why is 0 (exit), BLPP_FLAG_FATAL_SIGNAL or
 * BLPP_FLAG_DUMP_SIGNAL; wait says whether to wait (a while) for another
 * thread's write to finish rather than give up.
 */
/*
 * special_file: path exists and is not a regular file (a device such as
 * /dev/null, a FIFO). A profile is written into it in place: renaming the
 * temporary file over it would replace the device (BLPP_PROFILE=/dev/null
 * run as root). st_mode is at byte 24 of the x86-64 struct stat.
 */
static int special_file(const char *path)
{
	u64 st[18];
	if (failed(sc2(SYS_stat, path, st)))
		return 0;
	return ((u32)st[3] & 0170000) != 0100000;
}

static void write_profile(u32 why, int wait)
{
	struct obuf out = {0}, sec = {0}, recs = {0}, parts = {0}, paths = {0}, scratch = {0}, folded = {0}, pref = {0};
	struct blpp_thread *self;
	u64 pid, tid, nrec, npart, npref, sum;
	struct {
		long s, ns;
	} now = {0, 0};
	long fd, r = 0;
	int direct = 0;
	if (!rt.ready)
		return;
	fork_check();
	pid = getpid();
	tid = gettid();
	if (!lock_writer(tid, wait))
		return;
	rt.writing_why = why;

	ob_put(&out, BLPP_MAGIC, BLPP_MAGIC_LEN);
	ob_le(&out, BLPP_VERSION, 4);
	ob_le(&out, (rt.flow_only ? BLPP_FLAG_FLOW_ONLY : 0) | why, 4);
	ob_uv(&out, rt.build_id_len);
	ob_put(&out, rt.build_id, rt.build_id_len);
	ob_uv(&out, pid);
	sc2(SYS_clock_gettime, 0 /* CLOCK_REALTIME */, &now);
	ob_uv(&out, (u64)now.s * 1000000000ul + (u64)now.ns);
	ob_uv(&out, 1 + rt.nmetrics);
	ob_str(&out, BLPP_METRIC_FREQ);
	ob_u8(&out, BLPP_METRIC_REAL);
	for (u64 m = 0; m < rt.nmetrics; m++) {
		ob_str(&out, rt.mname[m]);
		ob_u8(&out, rt.mkind[m]);
	}

	/* One THREAD section per thread block (the list is newest first;
	 * the order carries no meaning). */
	nrec = 0;
	self = thread_peek();
	for (struct blpp_thread *t = LOAD(&rt.threads); t; t = (struct blpp_thread *)t->next) {
		u64 n = write_records(t, &recs, &paths, &scratch), nf;
		nrec += n;
		npart = write_partials(t, t == self, n, &parts, &scratch);
		folded.len = 0;
		nf = write_folded(t, n, &folded);
		pref.len = 0;
		npref = write_prefixes(t, n, &pref, &scratch);
		sec.len = 0;
		ob_uv(&sec, t->tid);
		ob_uv(&sec, n);
		ob_put(&sec, recs.p, recs.len);
		ob_uv(&sec, npart);
		ob_put(&sec, parts.p, parts.len);
		if (nf || npref) { /* an empty folded list only before prefixes */
			ob_uv(&sec, nf);
			ob_put(&sec, folded.p, folded.len);
		}
		if (npref) {
			ob_uv(&sec, npref);
			ob_put(&sec, pref.p, pref.len);
		}
		if (recs.err || parts.err || folded.err || pref.err)
			sec.err = 1;
		ob_section(&out, BLPP_TAG_THREAD, &sec);
		recs.len = parts.len = 0;
	}
	sec.len = 0;
	write_stats(&sec, nrec);
	ob_section(&out, BLPP_TAG_STATS, &sec);
	ob_u8(&out, BLPP_TAG_TRAILER);
	sum = out.err ? 0 : fnv1a(out.p, out.len);
	ob_le(&out, sum, 8);

	if (out.err) {
		say("out of memory writing the profile", "", "", 0);
	} else if (!profile_names(pid)) {
		say("profile name too long: ", rt.tmpl, "", 0);
	} else if ((direct = special_file(rt.name)) && failed(fd = sc3(SYS_open, rt.name, O_WRONLY | O_CLOEXEC, 0))) {
		say("cannot open ", rt.name, "", fd);
	} else if (!direct && failed(fd = sc3(SYS_open, rt.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644))) {
		say("cannot create ", rt.tmp, "", fd);
	} else {
		for (u64 off = 0; off < out.len;) {
			r = sc3(SYS_write, fd, out.p + off, out.len - off);
			if (r == -4 /* EINTR */)
				continue;
			if (failed(r) || r == 0) {
				r = r ? r : -28 /* ENOSPC */;
				break;
			}
			off += (u64)r;
			r = 0;
		}
		if (!r)
			r = sc1(SYS_close, fd);
		else
			sc1(SYS_close, fd);
		if (!failed(r) && !direct)
			r = sc2(SYS_rename, rt.tmp, rt.name);
		if (failed(r)) {
			say("cannot write profile ", rt.name, "", r);
			if (!direct)
				sc1(SYS_unlink, rt.tmp);
		} else if (why == BLPP_FLAG_DUMP_SIGNAL) {
			rt.dumps++;
		}
	}
	ob_free(&out);
	ob_free(&sec);
	ob_free(&recs);
	ob_free(&parts);
	ob_free(&paths);
	ob_free(&scratch);
	ob_free(&folded);
	ob_free(&pref);
	STORE(&rt.write_lock, 0);
}

/* ---- signals [DESIGN 10] ---- */

struct ksigaction {
	void (*handler)(int);
	u64 flags;
	void (*restorer)(void);
	u64 mask;
};

void blpp_sigreturn(void); /* blpp_stubs.S: rt_sigreturn */

static long set_action(int sig, void (*h)(int), u64 flags, struct ksigaction *old)
{
	struct ksigaction sa = {h, flags | SA_RESTORER, blpp_sigreturn, ~0ul};
	return sc4(SYS_rt_sigaction, sig, &sa, old, 8);
}

/*
 * The exit profile's states. The exit hook (blpp_fini) runs from the C
 * library's exit before the rest of its work: the last atexit handlers,
 * _fini, flushing stdio (_IO_cleanup, _IO_file_write), freeing its
 * buffers. Where that work is instrumented (static binaries, whose _exit
 * makes the exit_group system call from instrumented code: decision 59's
 * leave hook), the profile written at the exit hook misses it; the leave
 * hook, or a fatal signal, then writes it once more, final, replacing
 * the file (it is written to a temporary name and renamed).
 */
enum { EXIT_NONE, EXIT_AT_FINI, EXIT_FINAL };

/* final_write claims the final exit profile: true once per process. */
static int final_write(void)
{
	return CAS(&rt.exit_written, EXIT_NONE, EXIT_FINAL) || CAS(&rt.exit_written, EXIT_AT_FINI, EXIT_FINAL);
}

/*
 * on_fatal writes the profile (unless the exit already did), restores the
 * default action and sends the signal again: when the handler returns the
 * signal is delivered once more and kills the process as it would have
 * without blpp (same status, same core dump).
 */
static void on_fatal(int sig)
{
	if (final_write())
		write_profile(BLPP_FLAG_FATAL_SIGNAL, 1);
	set_action(sig, 0 /* SIG_DFL */, 0, 0);
	sc3(SYS_tgkill, getpid(), gettid(), sig);
}

/* on_dump writes a profile and lets the program go on. */
static void on_dump(int sig)
{
	(void)sig;
	if (!LOAD(&rt.exit_written))
		write_profile(BLPP_FLAG_DUMP_SIGNAL, 0);
}

static void install_handlers(u64 dump_signal)
{
	static const u8 fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};
	int dump_is_fatal = 0;
	if (!CAS(&rt.handlers, 0, 1))
		return; /* early_init did (twice would chain on_fatal to itself) */
	for (u64 i = 0; i < sizeof(fatal); i++) {
		struct ksigaction old;
		/* A dump signal among these stays fatal: carrying on after a
		 * fault would fault again forever. */
		dump_is_fatal |= fatal[i] == dump_signal;
		if (rt.flags & BLPP_CONFIG_FLAG_NO_FATAL_HANDLERS)
			continue;
		/* A signal the program started with ignored stays ignored. */
		if (failed(sc4(SYS_rt_sigaction, fatal[i], 0, &old, 8)) || old.handler == (void (*)(int))1)
			continue;
		set_action(fatal[i], on_fatal, SA_ONSTACK, 0);
	}
	if (dump_signal && !dump_is_fatal) {
		if (dump_signal > NSIG || dump_signal == SIGKILL || dump_signal == SIGSTOP ||
		    failed(set_action((int)dump_signal, on_dump, SA_RESTART, 0)))
			say("cannot install the dump signal handler", "", "", 0);
	}
}

/* ---- start and exit [DESIGN 10] ---- */

static void die(const char *m)
{
	say(m, "", "", 0);
	sc1(SYS_exit_group, 127);
}

static u64 read_fs_base(void)
{
	u64 v = 0;
	if (rt.fsgsbase)
		__asm__ volatile("rdfsbase %0" : "=r"(v));
	else
		sc2(SYS_arch_prctl, ARCH_GET_FS, &v);
	return v;
}

/* set_template makes the profile name template absolute, so that a chdir
 * of the program does not move the profile. */
static void set_template(const char *name)
{
	u64 n = 0, len;
	if (!name || !*name)
		name = "blpp.out";
	len = str_len(name);
	if (name[0] != '/') {
		long r = sc2(SYS_getcwd, rt.tmpl, sizeof(rt.tmpl));
		if (!failed(r) && r > 0 && rt.tmpl[0] == '/') {
			n = str_len(rt.tmpl);
			if (n > 1)
				rt.tmpl[n++] = '/';
		} else {
			say("cannot get the working directory: the profile name stays relative", "", "", r);
		}
	}
	if (n + len + 1 > sizeof(rt.tmpl)) {
		say("profile name too long: ", name, "", 0);
		n = 0;
		name = "blpp.out";
		len = str_len(name);
	}
	mem_copy(rt.tmpl + n, name, len);
	rt.tmpl[n + len] = 0;
}

/* str_eq compares two NUL-terminated strings. */
static int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/*
 * metrics_init reads the metric table and decides, by opening each perf
 * event once on the main thread, where every metric comes from
 * [DESIGN 8]: rdpmc when the kernel allows user reads of it, else for
 * "cycles" (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES) the time-stamp
 * counter, recorded as "tsc" of kind fallback, else nothing (kind
 * unavailable, values 0). What is missing is said once on stderr.
 */
static void metrics_init(const volatile struct blpp_config *c)
{
	const struct blpp_metric *mt = (const struct blpp_metric *)(c->metrics_vaddr + rt.bias);
	char missing[256];
	u64 nmiss = 0;
	long err = 0;
	int fell_back = 0;
	rt.nmetrics = c->metrics_vaddr && c->nmetrics <= BLPP_MAX_METRICS ? c->nmetrics : 0;
	rt.stride = 1 + rt.nmetrics;
	for (u64 m = 0; m < rt.nmetrics; m++) {
		mem_copy(rt.mname[m], (const void *)mt[m].name, sizeof(mt[m].name));
		rt.mname[m][sizeof(rt.mname[m]) - 1] = 0;
		rt.mtype[m] = (u32)mt[m].type;
		rt.mconfig[m] = mt[m].config;
	}
	for (u64 m = 0; m < rt.nmetrics; m++) {
		struct blpp_pmu_ev ev;
		int r;
		if (mt[m].type == BLPP_METRIC_TYPE_TSC) {
			rt.msrc[m] = MSRC_TSC;
			rt.mkind[m] = BLPP_METRIC_REAL;
			continue;
		}
		r = blpp_pmu_open(rt.mtype[m], rt.mconfig[m], &ev);
		if (r == 0 && blpp_pmu_has_rdpmc(ev.page)) {
			rt.msrc[m] = MSRC_PMU;
			rt.mkind[m] = BLPP_METRIC_REAL;
			blpp_pmu_close(&ev);
			continue;
		}
		if (r == 0)
			blpp_pmu_close(&ev);
		else if (!err)
			err = r;
		if (rt.mtype[m] == 0 && rt.mconfig[m] == 0) { /* cycles */
			int named = 0;
			for (u64 k = 0; k < rt.nmetrics; k++)
				named |= str_eq(rt.mname[k], "tsc");
			rt.msrc[m] = MSRC_TSC;
			rt.mkind[m] = BLPP_METRIC_FALLBACK;
			if (!named)
				mem_copy(rt.mname[m], "tsc", 4);
			fell_back = 1;
			continue;
		}
		rt.msrc[m] = MSRC_NONE;
		rt.mkind[m] = BLPP_METRIC_UNAVAILABLE;
		for (const char *p = nmiss ? ", " : ""; *p && nmiss < sizeof(missing) - 1; p++)
			missing[nmiss++] = *p;
		for (const char *p = rt.mname[m]; *p && nmiss < sizeof(missing) - 1; p++)
			missing[nmiss++] = *p;
	}
	missing[nmiss] = 0;
	if (fell_back || nmiss) {
		char num[24], *e = utoa(num + sizeof(num) - 1, (u64)(err < 0 ? -err : err));
		num[sizeof(num) - 1] = 0;
		say(err ? "no hardware performance counters (perf_event_open error " : "hardware counters cannot be read in user space (rdpmc)",
		    err ? e : "", err ? ")" : "", 0);
		if (fell_back)
			say("  cycles are measured with rdtsc: the profile calls them tsc (fallback)", "", "", 0);
		if (nmiss)
			say("  not measured (recorded as unavailable, values 0): ", missing, "", 0);
	}
}

/*
 * setup makes the runtime ready to count: it reads the configuration,
 * maps the counter state and gives the calling (main) thread its block.
 * rt.quiet and rt.fsgsbase are set before it runs. It runs once, from
 * blpp_init or, when instrumented code runs before the entry point, from
 * early_init.
 */
static void setup(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	struct blpp_thread *t;

	if (c->magic != BLPP_CONFIG_MAGIC)
		die("the runtime configuration is missing (bad magic)");
	rt.bias = (u64)&blpp_config - c->self_vaddr;
	blpp_entry_target = c->orig_entry + rt.bias;
	rt.flags = c->flags;
	rt.nfuncs = c->nfuncs;
	rt.ndark = c->ndark;
	rt.funcs = (const struct blpp_func *)(c->funcs_vaddr + rt.bias);
	if (c->sites_vaddr && c->nsites) {
		rt.nsites = c->nsites;
		rt.sites = (const struct blpp_site *)(c->sites_vaddr + rt.bias);
	}
	if (c->build_id_vaddr && c->build_id_len <= 256) {
		rt.build_id = (const u8 *)(c->build_id_vaddr + rt.bias);
		rt.build_id_len = c->build_id_len;
	}
	if (!c->orig_entry || (rt.nfuncs && !c->funcs_vaddr) || rt.nfuncs > (1ul << 32) || rt.ndark > (1ul << 32))
		die("the runtime configuration is invalid");
	rt.init_pid = getpid();
	rt.pid = rt.init_pid;

	rt.flow_only = (rt.flags & BLPP_CONFIG_FLAG_FLOW_ONLY) != 0;
	rt.arena_limit = c->arena_limit ? c->arena_limit : BLPP_DEFAULT_ARENA_LIMIT;
	rt.shadow_frames = c->shadow_frames ? c->shadow_frames : BLPP_SHADOW_FRAMES;
	if (rt.shadow_frames > (1ul << 30))
		rt.shadow_frames = 1ul << 30; /* 77 GB of address space */
	metrics_init(c);
	/* Slot counters exist only for frequency-only, flow-only images (the
	 * rewriter makes none otherwise); a bound keeps a corrupt size from
	 * reserving absurd blocks. */
	if (rt.flow_only && !rt.nmetrics && c->slots_size <= (1ul << 30))
		rt.slots_size = c->slots_size;
	/* The call cache takes the slots' place: context images only. */
	if ((rt.flags & BLPP_CONFIG_FLAG_CALL_CACHE) && !rt.flow_only && !rt.slots_size)
		rt.cache_size = BLPP_CALL_CACHE_SIZE;
	rt.w = map_wiped(page_up(sizeof(struct wiped)));
	if (rt.w)
		rt.w->live = 1;
	else
		say("cannot map the counter state: no paths are counted", "", "", 0);

	/* A static binary sets its thread pointer later, in libc's start
	 * code, and instrumented code runs before that (IRELATIVE resolvers,
	 * libc's own start functions). Give it a temporary one whose first
	 * word points to itself, as the TLS ABI wants; thread_slow hands the
	 * main block over when libc installs the real one. */
	if (read_fs_base() == 0) {
		u64 *tcb = map_anon(4096, 0);
		if (!tcb)
			die("cannot map a thread pointer");
		tcb[0] = (u64)tcb;
		if (rt.fsgsbase)
			__asm__ volatile("wrfsbase %0" : : "r"(tcb) : "memory");
		else
			sc2(SYS_arch_prctl, ARCH_SET_FS, tcb);
		rt.dummy_tp = (u64)tcb;
	}
	t = block_new();
	if (!t)
		die("cannot map the main thread block");
	t->owner = thread_pointer();
	block_link(t);
	set_gs(t);

	if (rt.nmetrics)
		metrics_open(t);
	STORE(&rt.ready, 1);
	if (rt.w)
		STORE(&blpp_fast_slots, 1);
	rt.tsc_init = rdtsc();
}

/* env_scan feeds one environment entry to the settings blpp reads:
 * BLPP_PROFILE (returned through *profile) and BLPP_QUIET. */
static void env_scan(const char *e, const char **profile, int *quiet)
{
	const char *v;
	if ((v = prefix(e, "BLPP_PROFILE=")))
		*profile = v;
	else if ((v = prefix(e, "BLPP_QUIET=")))
		*quiet = v[0] == '1' && v[1] == 0;
}

/*
 * early_init sets the runtime up at the first stub call of instrumented
 * code that runs before the entry point: ld.so runs the executable's
 * IRELATIVE resolvers while relocating it, then its DT_PREINIT_ARRAY,
 * then the shared libraries' constructors, which may call back into it.
 * The main thread's thread pointer exists by then (ld.so installs it
 * before relocating), so its block can be made now and everything is
 * counted from here on. The environment is not at hand (no initial
 * stack pointer): it is read from /proc/self/environ, the same strings
 * [proc(5)]; without /proc, blpp_init names the profile later. FSGSBASE
 * is not known yet either, so %gs is set with arch_prctl until
 * blpp_init reads AT_HWCAP2. Returns 0 when the runtime cannot count yet
 * (no thread pointer: threads could not be told apart).
 */
static int early_init(void)
{
	static u64 once;
	static char val[4096]; /* the last BLPP_PROFILE value */
	static const char pp[] = "BLPP_PROFILE=", pq[] = "BLPP_QUIET=";
	const char *profile = 0;
	char buf[512], head[sizeof(pp)];
	u64 pos = 0, vn = 0, qn = 0;
	int kind = 0, quiet = 0, q0 = 0; /* kind: 1 BLPP_PROFILE, 2 BLPP_QUIET */
	long fd, r;

	if (LOAD(&rt.ready))
		return 1;
	if (!CAS(&once, 0, 1) || read_fs_base() == 0)
		return (int)LOAD(&rt.ready);
	fd = sc3(SYS_open, "/proc/self/environ", O_RDONLY | O_CLOEXEC, 0);
	if (!failed(fd)) {
		/* NUL-terminated entries, read as a stream. */
		while (!failed(r = sc3(SYS_read, fd, buf, sizeof(buf))) && r > 0) {
			for (long i = 0; i < r; i++) {
				char ch = buf[i];
				if (ch == 0) {
					if (kind == 1 && vn < sizeof(val))
						val[vn] = 0, profile = val;
					if (kind == 2)
						quiet = qn == 1 && q0 == '1';
					pos = vn = qn = 0;
					kind = 0;
					continue;
				}
				if (pos < sizeof(head))
					head[pos] = ch;
				pos++;
				if (kind == 1)
					vn < sizeof(val) - 1 ? (void)(val[vn++] = ch) : (void)(vn = sizeof(val));
				else if (kind == 2)
					q0 = qn++ ? q0 : ch;
				else if (pos == sizeof(pq) - 1 && mem_eq(head, pq, pos))
					kind = 2;
				else if (pos == sizeof(pp) - 1 && mem_eq(head, pp, pos))
					kind = 1;
			}
		}
		sc1(SYS_close, fd);
		rt.env_known = 1;
	}
	rt.quiet = quiet;
	setup();
	set_template(profile);
	install_handlers(((const volatile struct blpp_config *)&blpp_config)->dump_signal);
	rt.early_start = 1;
	return 1;
}

/*
 * blpp_init runs once, from blpp_start, before the program's own entry
 * code; sp is the initial stack (argc, argv, envp, auxv). It returns with
 * blpp_entry_target set. Nothing of the program has run yet, except what
 * ld.so ran before the entry point (see early_init): in a static binary
 * there is not even a thread pointer.
 */
void blpp_init(u64 *sp)
{
	const volatile struct blpp_config *c = &blpp_config;
	const char *profile = 0;
	char **envp;
	u64 *auxv, hwcap2 = 0;
	int quiet = 0;

	envp = (char **)(sp + 1 + sp[0] + 1);
	for (; *envp; envp++)
		env_scan(*envp, &profile, &quiet);
	for (auxv = (u64 *)(envp + 1); auxv[0]; auxv += 2)
		if (auxv[0] == AT_HWCAP2)
			hwcap2 = auxv[1];
	rt.quiet = quiet;
	rt.fsgsbase = (hwcap2 & HWCAP2_FSGSBASE) != 0;
	if (LOAD(&rt.ready)) {
		/* early_init set everything up; it may have lacked the
		 * environment. */
		if (!rt.env_known)
			set_template(profile);
		return;
	}
	setup();
	set_template(profile);
	install_handlers(c->dump_signal);
}

/*
 * blpp_rt_leave runs just before instrumented code calls _exit or an exec
 * function it cannot instrument, or makes an exit_group or execve system
 * call [decision 59]: none of them runs the exit hook, so the profile is
 * written here, as the exit hook would (every activation stopped at the
 * call site the code stored). kind 1 is an exit: the profile is final.
 * kind 2 is an exec, which returns when it fails: the profile is a
 * snapshot (flagged exec), and the exit hook or the next exec writes a
 * newer one under the same name. A vfork child (or any process sharing
 * this memory without a fork reset: its pid is not the owner's) leaves
 * everything alone, since whatever it wrote or changed would be the
 * parent's.
 */
void blpp_rt_leave(u64 kind)
{
	if (!rt.ready)
		return;
	fork_check();
	if (getpid() != rt.pid)
		return;
	if (kind == 1) {
		if (final_write())
			write_profile(0, 1);
	} else if (!LOAD(&rt.exit_written)) {
		write_profile(BLPP_FLAG_EXEC, 1);
	}
}

/*
 * blpp_fini is the exit hook (SysV ABI, no arguments): it calls the
 * original finaliser if the configuration names one, then writes the
 * final profile, once per process.
 */
void blpp_fini(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	if (c->orig_fini)
		((void (*)(void))(c->orig_fini + rt.bias))();
	fork_check();
	if (CAS(&rt.exit_written, EXIT_NONE, EXIT_AT_FINI))
		write_profile(0, 1);
}

#pragma GCC visibility pop
