//go:build ignore

/*
 * blpp_thread.c: per-thread blocks [DESIGN 4]. %gs and the thread pointer,
 * mapping a block (header, slot counters or call cache, a reserved shadow
 * stack made usable a chunk at a time), finding the calling thread's
 * block (threads inherit their creator's %gs; a new thread may reuse a
 * dead one's block; a static binary's main thread changes hands when libc
 * installs its thread pointer), and the scratch block where threads
 * without a block of their own write without counting.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_state.c. Raw
 * mmap/mprotect/arch_prctl only; blocks are never unmapped once in use.
 * A block belongs to one thread, but a signal handler on that thread may
 * run any of this in between: block lists change by CAS only.
 */


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

/*
 * Thread.gate (decision 90) is what the inline entries compare with the
 * thread pointer: t->owner while no stub is busy on t and its shadow stack
 * has not overflowed, else BLPP_GATE_SHUT, which no thread pointer equals
 * (a block never yet owned holds 0, which none equals either). busy_up
 * shuts it before it raises busy, so that a signal handler's entry in
 * between takes the stub; busy_down opens it again when nothing else
 * keeps it shut. The C halves run with busy raised, so an overflow they
 * count or clear is seen by their busy_down.
 */
static void gate_set(struct blpp_thread *t)
{
	BARRIER();
	STORE(&t->gate, t->busy || t->overflow ? BLPP_GATE_SHUT : t->owner);
}

static inline u64 busy_up(struct blpp_thread *t)
{
	STORE(&t->gate, BLPP_GATE_SHUT);
	BARRIER();
	return t->busy++;
}

static inline void busy_down(struct blpp_thread *t)
{
	BARRIER();
	t->busy--;
	gate_set(t);
}

static struct blpp_frame *frames(struct blpp_thread *t) { return (struct blpp_frame *)t->sp_base; }

static u64 depth(struct blpp_thread *t) { return (t->sp - t->sp_base) / sizeof(struct blpp_frame); }

static int over_limit(void); /* blpp_cct.c */

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

/* lat_region gives a new block its latency region (decision 93), when
 * the image keeps latencies: address space for rt.lat_entries entries, taken one per path and record as paths run a second time (decision 148) and
 * touched only then, zero again in a fork child. Without one the
 * thread's executions go to no histogram (Thread.lat_dropped). */
static void lat_region(struct blpp_thread *t)
{
	u64 size = rt.lat_entries * BLPP_LATENCY_ENTRY_SIZE;
	long r;
	if (!rt.latency)
		return;
	r = sc6(SYS_mmap, 0, (long)size, PROT_RW, MAP_PRIVATE_ANON | MAP_NORESERVE, -1, 0);
	if (failed(r))
		return;
	if (!rt.nowipe)
		sc3(SYS_madvise, r, size, MADV_WIPEONFORK);
	TPRIV(t)->lat_base = (u64)r;
	t->lat_next = (u64)r;
	t->lat_limit = (u64)r + size - BLPP_LATENCY_ENTRY_SIZE + 1;
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
	t->proc = (u64)procp; /* how modules that start later find the runtime (find_proc) */
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
	t->record = rec_word(0);
	lat_region(t);
	t->tid = gettid();
	ADD(&rt.nthreads, 1);
	return t;
}

static void live_sync(struct blpp_thread *t);

static void block_link(struct blpp_thread *t)
{
	struct blpp_thread *h;
	do {
		h = LOAD(&rt.threads);
		t->next = (u64)h;
	} while (!CAS(&rt.threads, h, t));
	live_sync(t);
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

/* Defined further on: blpp_partial.c, blpp_partial.c, blpp_metrics.c,
 * below, blpp_dark.c. */
static void record_live(struct blpp_thread *t, u64 top);
static void fork_check(void);
static void metrics_open(struct blpp_thread *t);
static struct blpp_thread *scratch_block(void);
static void dark_sync(struct blpp_thread *t);

/* block_reuse records the activations left live on block b, whose
 * owner will not come back to them (a dead thread's; a user context made
 * again, blpp_context.c), the newest stopped at call site top (0:
 * unknown), and empties it for the calling thread. */
static void block_reuse(struct blpp_thread *b, u64 top)
{
	record_live(b, top);
	b->sp = b->sp_base;
	b->r = 0;
	b->record = rec_word(0);
	b->cur = 0;
	b->call_site = 0;
	b->leaf_site = 0;
	b->tail_rec = 0;
	TPRIV(b)->ndark = 0;
	dark_sync(b);
	b->overflow = 0;
	b->busy = 0;
	b->tid = gettid();
}

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
static __attribute__((noinline)) struct blpp_thread *thread_slow(struct blpp_thread *t)
{
	u64 tp = thread_pointer();
	struct blpp_thread *b;
	fork_check();
	if (t && rt.dummy_tp && t->owner == rt.dummy_tp) {
		t->owner = tp;
		gate_set(t);
		return t;
	}
	for (b = LOAD(&rt.threads); b; b = (struct blpp_thread *)b->next) {
		if (b->owner == tp && getpid() != rt.pid) {
			/* A vfork child (or a clone with this memory and thread
			 * pointer): the block is its parent's thread's, which is
			 * alive. Nothing is counted (blpp_rt_vfork_child). */
			set_gs(scratch_block());
			return 0;
		}
		if (b->owner == tp) {
			block_reuse(b, 0);
			if (rt.nmetrics)
				metrics_open(b); /* the dead thread's events counted it */
			gate_set(b);
			live_sync(b);
			set_gs(b);
			sample_thread(b);
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
	gate_set(b);
	block_link(b);
	set_gs(b);
	sample_thread(b);
	return b;
}

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
		u64 want = rt.ready ? rt.slots_size : blpp_config.slots_size;
		u64 slots = want <= (1ul << 30) ? page_up(want) : 0;
		t = (struct blpp_thread *)map_anon(BLOCK_HDR + slots, MAP_NORESERVE);
		if (!t)
			die("cannot map a thread block");
		t->self = (u64)t;
		/* An empty shadow stack with no room (the limit test fails)
		 * and a frame's worth of the header's unused end below it:
		 * a closed function's outside call stores into the newest
		 * frame's place even when it has none (decision 64). */
		t->sp = t->sp_base = t->sp_limit = (u64)t + BLOCK_HDR;
		t->record = rec_word(0);
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

static int early_init(void); /* blpp_start.c */

/* early_none is thread_get before blpp_init where early_init cannot set
 * the runtime up. Out of line, like thread_slow: the stubs call
 * thread_get every time, and these would give it a frame to save. */
static __attribute__((noinline)) struct blpp_thread *early_none(void)
{
	early_gs();
	ADD(&rt.early_uncounted, 1);
	return 0;
}

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
	if (!LOAD(&rt.ready) && !early_init())
		return early_none();
	if (!rt.fsgsbase || gs_base() != 0)
		t = gs_block();
	if (t && owns(t))
		return t;
	return thread_slow(t);
}
