//go:build ignore

/*
 * blpp_state.c: the runtime's state and memory. blpp_config (the one
 * object the rewriter patches), the per-epoch statistics, struct wiped
 * (everything a fork child must not inherit), the private tail of a
 * thread block (struct tpriv: perf events, shadow-stack bounds, the
 * uninstrumented activations in progress), the process-wide struct rt;
 * then messages to stderr (say, and die when it cannot go on) and the
 * allocator: MADV_WIPEONFORK mappings and a lock-free bump arena over
 * them.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_sys.h.
 * blpp_config is the only initialised data and holds no pointer (the image
 * has no relocations); everything else starts as zero bss. The arena never
 * frees and never blocks: an allocation that races another, or a signal
 * handler's, at worst wastes the rest of a chunk.
 */


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

/* A bump allocator over mmap chunks, lock-free. ready: how far the
 * chunk's pages were made present ahead of use (populate). */
struct chunk {
	u64 used, cap, ready;
	u64 pad[5];
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
	/* Small objects (nodes, node lists, cold records: decision 99), at
	 * 8-byte alignment where the arena gives 64. */
	struct arena small;
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
	/* The thread's latency region (decision 93): entries from lat_base
	 * up to Thread.lat_next are taken; 0 when it has none. */
	u64 lat_base;
	/* The thread's sampler (blpp_sample.c, decision 92): its sample
	 * table, where its samples come from and the perf descriptor or
	 * timer id, the epoch it was started in, samples the full table
	 * dropped. */
	u64 samp_tab, samp_src, samp_id, samp_epoch, samp_dropped;
	/* Continuous mode: the block's part of the live file (struct
	 * blpp_live_thread), made in fork generation live_epoch - 1
	 * (blpp_live.c). */
	u64 live, live_epoch;
	/* A node that a stub is moving to the front of the list whose head
	 * word is at mv_head (0: none), which a signal handler's stub on
	 * this thread finds there while it is out of the list (blpp_cct.c,
	 * decision 99). */
	u64 mv_head, mv_node;
	/* User contexts (blpp_context.c, decision 122): the ucontext_t a
	 * block was made for (0: a thread's own block); 1 while a context
	 * switch has left the block, its activations stopped at that call;
	 * rt.epoch + 1 when it was left. In a fork child that resumes a
	 * context left in its parent: the prefixes of the context's
	 * activations (a struct ptab in the child's arena) and its lock. */
	u64 ctx_ucp, ctx_left, ctx_epoch;
	unsigned long long ctx_pref, ctx_pref_lock;
	/* The stubs this block's thread took, STATS ST_STUB_ENTRIES to
	 * ST_STUB_DARK (stub_stat): the writer sums them over the thread
	 * list, so a stub takes no locked add on a word every thread
	 * writes (decision 152). */
	u64 stub_stats[4];
};
/* The %rsp of a shadow-stack slot no activation holds: every pop writes
 * it, so an entry that reserved a slot and has not yet written its %rsp
 * shows a live frame, above every %rsp [decision 163]. */
#define FRAME_FREE (~(u64)0)

#define TPRIV(t) ((struct tpriv *)((u8 *)(t) + sizeof(struct blpp_thread)))

/* stub_stat counts one stub of kind k (ST_STUB_ENTRIES to ST_STUB_DARK)
 * in t's own block: only t's thread writes it, and a signal handler on
 * that thread runs between instructions, so an add without a lock is
 * whole (decision 151). A fork child starts its block's at 0, as its
 * wiped STATS (fork_reset). */
_Static_assert(ST_STUB_DARK - ST_STUB_ENTRIES == 3, "stub_stats holds the four stub counts");
static inline void stub_stat(struct blpp_thread *t, int k) { ADD1(&TPRIV(t)->stub_stats[k - ST_STUB_ENTRIES], 1); }

/* Metric sources. */
enum { MSRC_NONE, MSRC_TSC, MSRC_PMU };

/*
 * A module (decision 81): one instrumented object of the process, the
 * executable (tag 0) or a shared object. Every module carries a copy of
 * this runtime; the copies share one struct proc, and each registers its
 * module there. Function ids are tag << BLPP_FID_BITS | the local index
 * into the module's tables; call-site ids are the module's own. Made by
 * mod_register in memory that is never unmapped or wiped; a module's
 * DT_FINI (it may be a dlclose) copies its tables here (mod_keep), so the
 * writer never reads an unmapped object.
 */
struct mod {
	u64 tag;
	u64 cfg;        /* run-time address of the module's blpp_config */
	u64 bias;       /* its run-time minus link-time addresses */
	const struct blpp_func *funcs;
	u64 nfuncs;
	u64 ndark;      /* local ids [nfuncs, nfuncs + ndark) are its uninstrumented functions (decision 70) */
	const struct blpp_site *sites; /* call sites by id (0: none) */
	u64 nsites;
	const u8 *build_id;
	u64 build_id_len;
	u64 live;       /* registered and its DT_FINI has not run */
	u64 kept;       /* mod_keep copied its tables: they no longer point into the object */
	u64 late;       /* registered after the executable's exit hook ran (exiting) */
	u64 exit_hook;  /* its _exit writes the profile (BLPP_CONFIG_FLAG_EXIT_HOOK) */
	char path[512]; /* the object's file, found at its DT_FINI (mod_keep); "" until then */
};

/* PROC_MAGIC opens struct proc ("BLPPPROC"): a module that starts checks
 * it before it trusts Thread.proc. */
#define PROC_MAGIC 0x434f525050504c42ull

struct proc {
	u64 magic;
	u64 image_sig;  /* FNV-1a of the runtime's text: every copy must be the same runtime */
	int ready;      /* the runtime can count: the main thread has its block */      /* blpp_init finished */
	int quiet;      /* BLPP_QUIET=1 */
	int fsgsbase;   /* rd/wr{fs,gs}base usable (AT_HWCAP2) */
	int nowipe;     /* MADV_WIPEONFORK refused: children keep inherited counts */
	int warned_thread;
	int no_follow;  /* started with its environment in place and no BLPP_FOLLOW: follow_exec need not look */
	u32 writing_why;  /* why the profile being written is written (0: exit) */
	u64 flags;      /* the first module's (each module's must agree: mod_register) */
	u64 shadow_frames; /* shadow-stack capacity per thread, in frames */
	int flow_only;  /* --no-context: one root record per function and thread */
	u64 nmetrics;   /* metrics besides freq */
	u64 stride;     /* words per path in a dense counter array: 1 + nmetrics (+ 1: the latency entry) */
	int latency;    /* each path keeps its slowest values and a histogram of metric 0 (decision 93) */
	u64 lat_entries; /* latency entries per thread (Config.latency_entries, else the default) */
	int msrc[BLPP_MAX_METRICS];   /* where each metric comes from */
	u8 mkind[BLPP_MAX_METRICS];   /* BLPP_METRIC_REAL, _FALLBACK or _UNAVAILABLE */
	char mname[BLPP_MAX_METRICS][24];
	u32 mtype[BLPP_MAX_METRICS];
	u64 mconfig[BLPP_MAX_METRICS];
	u64 tsc_init;   /* rdtsc at blpp_init */
	u64 ns_init;    /* CLOCK_MONOTONIC at blpp_init, ns: with tsc_init, the counter's rate */
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
	/* Processes that ran in this memory on this thread pointer without
	 * owning it (a vfork child, a clone with CLONE_VM and no
	 * CLONE_SETTLS: posix_spawn's), each moved to the scratch block, so
	 * that what it ran before its exec or exit counted nowhere (blpp_resume.c,
	 * decision 101). The child adds to its parent's count. */
	u64 vm_children;
	/* Those that exited without exec (STATS vm_exits), and the last one's
	 * thread id: what they ran is counted nowhere. */
	u64 vm_exits, vm_exit_tid;
	/* User contexts the table of blpp_context.c had no room for: they
	 * switch without moving %gs (STATS contexts_untracked). */
	u64 ctx_untracked;
	u64 resetting;    /* fork_reset running */
	u64 write_lock;   /* tid of the thread writing a profile, 0 if none */
	u64 exit_written; /* EXIT_NONE, EXIT_AT_FINI, EXIT_FINAL or EXIT_LEFT */
	struct mod *just_kept; /* the module whose DT_FINI writes the exit profile: mod_keep found its path just before */
	u64 dumps;        /* dump-signal profiles written */
	char tmpl[4096];  /* profile name template, absolute */
	char name[4096];  /* expanded name, under write_lock */
	char tmp[4096];   /* temporary file name, under write_lock */
	u64 nlive;        /* modules registered whose DT_FINI has not run */
	u64 handlers_cfg; /* blpp_config of the runtime copy whose handlers are installed */
	u64 dump_signal;  /* the dump signal the handlers were installed for */
	/* The signals whose actions the runtime keeps (bit s: signal s), the
	 * program's view of their actions, and the lock of changes to them
	 * (blpp_signal.c, decision 94). */
	u64 sig_managed;
	u64 sig_lock;
	struct ksigaction sigv[NSIG + 1];
	/* Continuous mode (blpp_live.c, decision 94): wanted (%c in the
	 * name), on; the live file's mapping (address, reserved size), the
	 * bytes of it in use and its size; the growing thread; its
	 * descriptor, name and inode; the process it belongs to. */
	int cont_want;
	int cont;
	u64 cont_base, cont_cap, cont_top, cont_fsize, cont_lock;
	long cont_fd;
	u64 cont_ino, cont_pid;
	char cont_name[4096];
	char cont_tmp[4096 + 32]; /* the live file until its header is whole */
	struct mod *mods[BLPP_MAX_MODULE_TAG + 1]; /* by tag */
	struct samp *samp; /* sampling (blpp_sample.c), 0: none */
	/* KIDS0_WORDS words of zeros that may only be read: the node lists
	 * of every record that has made no call yet (blpp_cct.c kids_of,
	 * decision 99). 0 until the first record needs them. */
	u64 kids0;
	/* MADV_POPULATE_WRITE failed once (an older kernel): arena_take
	 * leaves the small arena's pages to fault (decision 145). */
	u64 no_populate;
	/* Modules whose tables mod_keep copied, finalised while the
	 * process could still unload them (STATS tables_kept). */
	u64 tables_kept;
	/* The process's zero_record and zero_node (decision 104), on a
	 * read-only page of their own that stays mapped: every module's
	 * copy of the runtime must write and recognise the same ones. */
	const struct blpp_record *zrec;
	const struct blpp_node *znode;
};

/* Sampling (blpp_sample.c, decision 92): a thread's sampler starts with
 * its block. */
struct samp;
static void sample_thread(struct blpp_thread *t);
static void sample_fork(void);

/*
 * rt is the process's runtime state, one for all the modules' copies of
 * this runtime: this copy's own (rt_own) until it starts (attach), then
 * the struct proc that the first copy to start mapped and every other
 * copy found (decision 81). Settings read before the start (quiet,
 * fsgsbase, env_known) go to rt_own, and a copy that makes the shared
 * state carries them over.
 */
static struct proc rt_own, *procp;
/* rt_off is procp's distance from rt_own once procp is set (0 before,
 * so rt is rt_own): rt reads through it with an add where a test of
 * procp took a compare and a conditional move at every use (the stubs
 * read rt 2.9 million times in python3's start-up, decision 145).
 * set_proc sets both. */
static u64 rt_off;
#define rt (*(struct proc *)((u64)&rt_own + rt_off))
static void set_proc(struct proc *p)
{
	procp = p;
	rt_off = (u64)p - (u64)&rt_own;
}

/* This copy's module, once registered. */
static struct mod *self_mod;

/* mod_of is the module of function id fid, 0 if none is registered. */
static struct mod *mod_of(u64 fid)
{
	u64 tag = fid >> BLPP_FID_BITS;
	return tag <= BLPP_MAX_MODULE_TAG ? LOAD(&rt.mods[tag]) : 0;
}

static u64 local_id(u64 fid) { return fid & BLPP_FID_LOCAL_MASK; }

/* instr says whether fid is an instrumented function of a registered module. */
static int instr(u64 fid)
{
	struct mod *m = mod_of(fid);
	return m && local_id(fid) < m->nfuncs;
}

/* dark_fid says whether fid is an uninstrumented function whose entries
 * its module counts (decision 70). */
static int dark_fid(u64 fid)
{
	struct mod *m = mod_of(fid);
	return m && local_id(fid) >= m->nfuncs && local_id(fid) - m->nfuncs < m->ndark;
}

/* func_of is fid's table entry (instrumented or dark); 0 if none. */
static const struct blpp_func *func_of(u64 fid)
{
	struct mod *m = mod_of(fid);
	return m && local_id(fid) < m->nfuncs + m->ndark ? &m->funcs[local_id(fid)] : 0;
}

/* ifunc is the table entry of fid when it is an instrumented function
 * of a registered module, else 0: instr and func_of in one look-up, which
 * the stubs make once and pass on. */
static inline __attribute__((always_inline)) const struct blpp_func *ifunc(u64 fid)
{
	struct mod *m = mod_of(fid);
	return m && local_id(fid) < m->nfuncs ? &m->funcs[local_id(fid)] : 0;
}

/* site_of is call site `site` of the module of function fid; 0 for none. */
static const struct blpp_site *site_of(u64 fid, u64 site)
{
	struct mod *m = mod_of(fid);
	return m && m->sites && site && site < m->nsites ? &m->sites[site] : 0;
}

/* ---- messages ---- */

/* errtext is the text of the Linux error number e (positive) as strerror
 * gives it, with its name, for the errors the runtime's system calls
 * meet; 0 for others. */
static const char *errtext(long e)
{
	switch (e) {
	case 1: return "Operation not permitted (EPERM)";
	case 2: return "No such file or directory (ENOENT)";
	case 4: return "Interrupted system call (EINTR)";
	case 5: return "Input/output error (EIO)";
	case 9: return "Bad file descriptor (EBADF)";
	case 12: return "Cannot allocate memory (ENOMEM)";
	case 13: return "Permission denied (EACCES)";
	case 14: return "Bad address (EFAULT)";
	case 16: return "Device or resource busy (EBUSY)";
	case 17: return "File exists (EEXIST)";
	case 19: return "No such device (ENODEV)";
	case 20: return "Not a directory (ENOTDIR)";
	case 21: return "Is a directory (EISDIR)";
	case 22: return "Invalid argument (EINVAL)";
	case 23: return "Too many open files in system (ENFILE)";
	case 24: return "Too many open files (EMFILE)";
	case 27: return "File too large (EFBIG)";
	case 28: return "No space left on device (ENOSPC)";
	case 30: return "Read-only file system (EROFS)";
	case 36: return "File name too long (ENAMETOOLONG)";
	case 38: return "Function not implemented (ENOSYS)";
	case 95: return "Operation not supported (EOPNOTSUPP)";
	case 122: return "Disk quota exceeded (EDQUOT)";
	}
	return 0;
}

/* say writes "blpp: a b c[: error text]" to stderr unless BLPP_QUIET=1;
 * err is a system call's result (negative errno) or 0. */
static void say(const char *a, const char *b, const char *c, long err)
{
	char buf[512], num[24];
	const char *parts[4] = {"blpp: ", a, b, c};
	u64 n = 0;
	if (rt.quiet)
		return;
	for (int i = 0; i < 4; i++) {
		const char *s = parts[i];
		for (; s && *s && n < sizeof(buf) - 80; s++)
			buf[n++] = *s;
	}
	if (err) {
		long e = err < 0 ? -err : err;
		const char *t = errtext(e), *sep = t ? ": " : ": error ";
		while (*sep)
			buf[n++] = *sep++;
		if (t) {
			while (*t)
				buf[n++] = *t++;
		} else {
			char *d = utoa(num + sizeof(num), (u64)e);
			while (d < num + sizeof(num))
				buf[n++] = *d++;
		}
	}
	buf[n++] = '\n';
	sc3(SYS_write, 2, buf, n);
}

/* die says m and ends the process with status 127: the runtime cannot go
 * on (a bad configuration, no memory for a thread block). */
static void die(const char *m)
{
	say(m, "", "", 0);
	sc1(SYS_exit_group, 127);
}

/* ---- arenas ---- */

enum { CHUNK_SIZE = 1 << 20, CHUNK_HDR = sizeof(struct chunk) };

static void *cont_chunk(u64 size); /* blpp_live.c */

/* map_wiped maps zeroed memory that a fork child sees as zero again: in
 * continuous mode, part of the live file's mapping (blpp_live.c). */
static void *map_wiped(u64 size)
{
	void *p;
	if (rt.cont) {
		if ((p = cont_chunk(size)))
			ADD(&rt.arena_bytes, size);
		return p;
	}
	p = map_anon(size, 0);
	if (p && !rt.nowipe && failed(sc3(SYS_madvise, p, size, MADV_WIPEONFORK))) {
		rt.nowipe = 1;
		say("MADV_WIPEONFORK is not supported: ", "a fork child's profile includes its parent's counts", "", 0);
	}
	if (p)
		ADD(&rt.arena_bytes, size);
	return p;
}

/* arena_alloc returns size bytes of zeroed, 64-byte aligned memory. */
static void *arena_take(struct arena *a, u64 size);
static void *arena_alloc(struct arena *a, u64 size) { return arena_take(a, (size + 63) & ~63ul); }

/* small_alloc returns size bytes of zeroed, 8-byte aligned memory of the
 * small objects' arena: nodes, node lists and cold records, of which a
 * context-mode process makes tens of thousands (decision 99). */
static void *small_alloc(u64 size)
{
	struct wiped *w = rt.w;
	return w ? arena_take(&w->small, (size + 7) & ~7ul) : 0;
}

/*
 * populate makes the pages of chunk c present up to end, POPULATE bytes
 * ahead, with one madvise(MADV_POPULATE_WRITE) where first writes would
 * take a page fault each [decision 145]. Only the small objects' arena
 * does this: nodes, node lists and records fill its pages as they come,
 * while the main arena's dense arrays and tables are mostly never
 * written. A kernel without MADV_POPULATE_WRITE (before 5.14), or the
 * live file's mapping (continuous mode), faults as before.
 */
enum { POPULATE = 64 << 10 };
static void populate(struct chunk *c, u64 end)
{
	u64 from = LOAD(&c->ready), to = (end + POPULATE - 1) & ~(u64)(POPULATE - 1);
	if (to > c->cap)
		to = c->cap;
	if (to > from && CAS(&c->ready, from, to) &&
	    failed(sc3(SYS_madvise, (long)((u8 *)c + from), (long)(to - from), MADV_POPULATE_WRITE)))
		STORE(&rt.no_populate, 1);
}

/* arena_take returns size bytes (a multiple of the alignment wanted, which
 * every allocation from a has) of zeroed memory. */
static void *arena_take(struct arena *a, u64 size)
{
	for (;;) {
		struct chunk *c = LOAD(&a->cur);
		if (c) {
			u64 off = ADD(&c->used, size);
			if (off + size <= c->cap) {
				if (off + size > LOAD(&c->ready))
					populate(c, off + size);
				return (u8 *)c + off;
			}
		}
		u64 want = size + CHUNK_HDR > CHUNK_SIZE ? page_up(size + CHUNK_HDR) : CHUNK_SIZE;
		struct chunk *n = map_wiped(want);
		if (!n)
			return 0;
		n->cap = want;
		n->used = CHUNK_HDR + size;
		/* populate's bound: the whole chunk where it does not apply */
		n->ready = want == CHUNK_SIZE && !rt.cont && !LOAD(&rt.no_populate) && rt.w && a == &rt.w->small ? 0 : want;
		if (n->ready == 0)
			populate(n, n->used);
		if (want == CHUNK_SIZE)
			CAS(&a->cur, c, n); /* losing the race only wastes the rest of n */
		return (u8 *)n + CHUNK_HDR;
	}
}

/*
 * zero_record is "no record" (decision 104). It is Thread.record, and a
 * frame's saved record, where the running activation (or the caller)
 * has none: its dense_n of 0 sends the inline exits, which count in
 * Thread.record (decision 119), to the stub; its nsites of 0 fails
 * the inline entries' site-range test, so they need no test of the word
 * for 0; its func matches no function id (the inline backedges and exits
 * that compare it). The runtime reads those words through R() (and
 * writes them through rec_word), which turn it into 0 and back, so
 * nothing else ever sees it.
 *
 * zero_node ends every node list: an empty list's head word, and the
 * last node's next, hold it instead of 0, so the inline entries compare
 * the first node's func with theirs without testing the head for 0 (its
 * func matches no function: they take the call cache, then the stub).
 * The runtime reads list words through N(), which turns it into 0;
 * kids_fill gives new lists their heads.
 *
 * Both are the process's (rt.zrec, rt.znode: setup makes them), not
 * this copy's: a word one module's runtime wrote is read by another's,
 * and a copy's own data goes away with a dlclose.
 */
#define zero_record (*rt.zrec)
#define zero_node (*rt.znode)

/* make_zeros maps the page of zero_record and zero_node (0 on failure). */
static int make_zeros(struct proc *p)
{
	struct zeros {
		struct blpp_record r;
		struct blpp_node n;
	} *z = map_anon(page_up(sizeof(struct zeros)), 0);
	if (!z)
		return 0;
	z->r.func = ~0ull;
	z->n.func = ~0ull;
	sc3(SYS_mprotect, (long)z, (long)page_up(sizeof(struct zeros)), 1 /* PROT_READ */);
	p->zrec = &z->r;
	p->znode = &z->n;
	return 1;
}

static u64 rec_word(const struct blpp_record *r) { return (u64)(r ? r : &zero_record); }

/* The words before a record (Record.ext, decision 146): twin_word is
 * where r keeps its Twin, 0 when it has none (only a dense function's
 * cold record and its hot twin have one); via_of is its Via, 0 for
 * none. */
static inline __attribute__((always_inline)) u64 *twin_word(const struct blpp_record *r)
{
	return r->ext & BLPP_RECORD_EXT_TWIN ? (u64 *)r - 1 : 0;
}
static inline __attribute__((always_inline)) u64 twin_of(const struct blpp_record *r)
{
	return r->ext & BLPP_RECORD_EXT_TWIN ? LOAD((u64 *)r - 1) : 0;
}
static u64 via_of(const struct blpp_record *r)
{
	return r->ext & BLPP_RECORD_EXT_VIA ? *((u64 *)r - (r->ext & (BLPP_RECORD_EXT_TWIN | BLPP_RECORD_EXT_SLOT) ? 2 : 1)) : 0;
}

/* counts_of is where r's counters are: at BLPP_RECORD_INLINE_COUNTS
 * from it, or a thread's slot counters, whose address is the word
 * before it (decision 146). */
static inline __attribute__((always_inline)) u64 *counts_of(const struct blpp_record *r)
{
	return r->ext & BLPP_RECORD_EXT_SLOT ? (u64 *)*((const u64 *)r - 1) : (u64 *)((u8 *)r + BLPP_RECORD_INLINE_COUNTS);
}

/*
 * SLOT_LIVE is the sign bit of a calls word in the slot counters: root
 * sets it once the thread has the function's record, and the inline
 * entries count and test in one add (rewriter countSlotCall, decision
 * 104). Readers of a calls word mask it off.
 */
#define SLOT_LIVE (1ull << 63)

static void kids_fill(u64 *kids, u64 n)
{
	for (u64 i = 0; i < n; i++)
		kids[i] = (u64)&zero_node;
}
