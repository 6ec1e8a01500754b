//go:build ignore

/*
 * blpp_partial.c: partial activations [DESIGN 6], the shadow stack read
 * after the fact. The per-thread table of partials (record, function,
 * block, register); stop walks, which find where each live activation
 * stopped and its path register then (closed functions keep that in
 * their callees' frames, decision 57); recording a dead thread's live
 * frames; the fork child's reset (fork_reset); and unwind, which pops
 * and records the activations whose stack frames are gone (longjmp,
 * exceptions).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_cct.c. The
 * partials table takes a try-lock and counts what it drops (STATS
 * dropped_partials) rather than wait; frames stay pushed until read, so a
 * signal handler's pushes never land on a frame still being read.
 */


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
	const struct blpp_site *s = site_of(func, site);
	/* the table holds local ids (decision 81) */
	return s && s->func == local_id(func) ? s->block : BLPP_BLOCK_UNKNOWN;
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
	struct mod *m = mod_of(fid);
	if (!instr(fid) || !m->sites || !ra)
		return 0;
	p = func_of(fid);
	for (u64 s = p->first_site; s - p->first_site < p->nsites && s < m->nsites; s++)
		if (m->sites[s].ret && m->sites[s].ret + m->bias == ra)
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

/* site_func is the function call site id of fid's module belongs to
 * (~0: none). */
static u64 site_func(u64 fid, u64 site)
{
	const struct blpp_site *s = site_of(fid, site);
	return s ? (fid & ~(u64)BLPP_FID_LOCAL_MASK) | s->func : ~(u64)0;
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
		if (!w->site && w->leaf && site_func(fid, w->leaf) == fid) {
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
	u64 had = t->partials;
	pent_add(&t->partials, &t->plock, rec, func, block, reg);
	if (!had && t->partials)
		live_sync(t); /* continuous mode: the table is new */
}

/* act_record is the record of the activation that pushed frame i of t,
 * given next, the record its callee's frame saved (the one in t's list,
 * not its hot twin: decision 99): in a flow-only image its function's
 * flat record, which its callee need not have saved [decision 51]. */
static struct blpp_record *act_record(struct blpp_thread *t, u64 i, u64 next)
{
	return rt.flow_only ? flat_rec(t, frames(t)[i].func) : canon(R(next));
}

/* frame_record is the record of activation i of t: the one its callee
 * saved, or the running one for the newest. */
static struct blpp_record *frame_record(struct blpp_thread *t, u64 i)
{
	u64 d = depth(t);
	return i + 1 < d ? act_record(t, i, frames(t)[i + 1].record) : running(t);
}

/* restore_open gives t the record and cur of the caller of frame f's
 * activation, the running one, as an exit does, when f's function is
 * not closed; restore_caller, whatever it is. */
static void restore_open(struct blpp_thread *t, const struct blpp_frame *f)
{
	if (!lean(t->cur))
		t->record = f->record;
	t->cur = rt.slots_size ? f->saved_acc[0] : 0;
}

static void restore_caller(struct blpp_thread *t, const struct blpp_frame *f)
{
	if (!closed(f->func)) /* a closed one changed neither */
		restore_open(t, f);
}

/* record_live adds the live activations of t to its partials (a dead
 * thread's, whose block is about to be reused; an abandoned user
 * context's). The newest stopped at call site top: 0 for a dead
 * thread's, which stopped who knows where; each older one at the call
 * its callee's frame recorded (a call site, or a closed callee's return
 * address). */
static void record_live(struct blpp_thread *t, u64 top)
{
	struct blpp_frame *f = frames(t);
	struct stop_walk w;
	stop_start(&w, t, top);
	while (w.next > 0) {
		stop_step(&w);
		partial_add(t, frame_record(t, w.next), f[w.next].func, site_block(f[w.next].func, w.site), w.reg);
	}
}

static void live_fork(struct blpp_thread *me); /* blpp_live.c */

/* block_refork makes a fork child's records again for the activations
 * live on block me, a parent's block the child runs on (the forking
 * thread's; a user context's the child switches to, blpp_context.c),
 * with no counts: their calls are the parent's. The block leaves the
 * parent's thread list. */
static void block_refork(struct blpp_thread *me)
{
	struct blpp_frame *f = frames(me);
	struct blpp_record *prev = 0, *kept = 0; /* kept: me->record [decision 51] */
	u64 d = depth(me);
	me->next = 0;
	me->records = me->last_rec = me->nrecords = 0;
	me->folded = me->partials = me->plock = me->flat = me->flat_mods = 0;
	me->tail_rec = 0;
	TPRIV(me)->ctx_pref = TPRIV(me)->ctx_pref_lock = 0; /* the parent's, in its arena */
	/* The latency region reads as zero, like the records
	 * whose entries it held (decision 93). */
	me->lat_next = TPRIV(me)->lat_base;
	me->lat_dropped = 0;
	TPRIV(me)->ndark = 0;
	dark_sync(me);
	me->tid = gettid();
	for (u64 i = 0; i < d; i++) {
		struct blpp_record *r;
		f[i].record = rec_word(kept);
		if (rt.slots_size)
			f[i].saved_acc[0] = cur_of(me, prev);
		if (!instr(f[i].func))
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
	me->record = rec_word(kept);
	me->cur = cur_of(me, prev);
	if (rt.nmetrics)
		metrics_open(me);
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
		if (me) /* its stubs' counts are the parent's, like STATS */
			mem_zero(TPRIV(me)->stub_stats, sizeof(TPRIV(me)->stub_stats));
		if (me)
			block_refork(me);
		STORE(&rt.threads, me);
		rt.nthreads = me ? 1 : 0;
		if (me)
			live_fork(me); /* continuous mode: the child's file */
		rt.write_lock = 0;
		rt.sig_lock = 0; /* a thread of the parent's may have held it */
		rt.exit_written = 0;
		rt.dumps = 0;
		rt.forked = 1;
		rt.vm_children = rt.vm_exits = rt.vm_exit_tid = 0; /* the parent's */
		rt.ctx_untracked = 0;
		rt.pid = getpid();
		sample_fork();
		if (me)
			sample_thread(me);
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
 * left_behind says whether a frame whose %rsp is frsp is one that an
 * entry (inclusive) or an exit at rsp finds left behind: below rsp (or
 * at it). A frame whose %rsp is FRAME_FREE or 0 is live: an entry
 * interrupted after it reserved the frame and before it wrote the %rsp
 * [decision 163].
 */
static inline int left_behind(u64 frsp, u64 rsp, int inclusive)
{
	return frsp && (inclusive ? frsp <= rsp : frsp < rsp);
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
static void unwind_from(struct blpp_thread *t, u64 rsp, int inclusive);
static inline __attribute__((always_inline)) void unwind(struct blpp_thread *t, u64 rsp, int inclusive)
{
	/* Most stubs find nothing to pop: the newest frame is above rsp
	 * (or at it, for an exit). That test is inline; the walk is not. */
	const struct blpp_frame *top = (const struct blpp_frame *)t->sp - 1;
	if (t->sp > t->sp_base && left_behind(top->rsp, rsp, inclusive))
		unwind_from(t, rsp, inclusive);
}

static __attribute__((noinline)) void unwind_from(struct blpp_thread *t, u64 rsp, int inclusive)
{
	struct blpp_frame *f = frames(t);
	struct stop_walk w;
	u64 n = depth(t), m = n;
	while (m > 0 && left_behind(f[m - 1].rsp, rsp, inclusive))
		m--;
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
		int cl = closed(f[i].func);
		f[i].rsp = FRAME_FREE; /* popped, closed or not [decision 163] */
		if (cl)
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
