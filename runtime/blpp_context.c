//go:build ignore

/*
 * blpp_context.c: user contexts [decision 122]. makecontext, swapcontext,
 * setcontext and getcontext let a thread run several stacks in turn
 * (coroutines, green threads). The shadow stack, the path register in
 * Thread.r, the record and the call site describe the activations of
 * one stack: a switch to another stack must bring that stack's along,
 * or its exits pop the frames of the stack that was left.
 *
 * So each context made by makecontext gets a thread block of its own,
 * and a switch moves %gs: the runtime's replacements of the four
 * functions (the rewriter's thunks send instrumented code's calls here,
 * and the functions themselves stay uninstrumented) keep a table from a
 * ucontext_t's address to the block its context runs on:
 *
 *  - getcontext(ucp) and swapcontext(ucp, ...) save the running context
 *    into ucp: it runs on the calling thread's current block;
 *  - makecontext(ucp, ...) makes a new context: it gets a block of its
 *    own at its first switch (the block this ucp had before, whose
 *    context is then abandoned, when it is not running; else a new one);
 *  - swapcontext(..., ucp) and setcontext(ucp) move %gs to ucp's block
 *    before the switch. A context saved by swapcontext resumes in
 *    blpp_rt_libc_swapcontext, which moves %gs back to the block it
 *    left, whatever the table says (and takes the block for the thread
 *    it resumes on: contexts may move between threads).
 *
 * A context's activations are thus one chain on one block, and its
 * first function is a root of that block's calling context tree. A block
 * left by a switch has its activations stopped at that call (the
 * swapcontext call site in Thread.call_site); the writer records them as
 * partials when the program ends with the context suspended. A context
 * the table does not know (table full, or saved by code that did not
 * come through here) switches without moving %gs, as before this.
 */

enum { UCTX_CAP = 1 << 12, UCTX_PROBES = 64 };
struct uctx {
	u64 ucp;   /* the ucontext_t's address; 0: free */
	u64 block; /* the block its context runs on, or 0 */
	u64 fresh; /* made by makecontext and not yet switched to */
	u64 made;  /* the block made for a context made in ucp before, or 0 */
};
static struct uctx uctx_tab[UCTX_CAP];

static struct uctx *uctx_find(u64 ucp, int make)
{
	u64 h = (ucp >> 4) * 0x9e3779b97f4a7c15ull >> (64 - 12);
	for (u64 i = 0; i < UCTX_PROBES; i++) {
		struct uctx *e = &uctx_tab[(h + i) & (UCTX_CAP - 1)];
		u64 k = LOAD(&e->ucp);
		if (k == ucp)
			return e;
		if (k)
			continue;
		if (!make)
			return 0;
		if (CAS(&e->ucp, 0, ucp) || LOAD(&e->ucp) == ucp)
			return e;
	}
	if (make)
		ADD(&rt.ctx_untracked, 1);
	return 0;
}

/* blpp_rt_ctx_note runs before the C library's getcontext (made 0) or
 * makecontext (made 1) of ucp (blpp_libc_getcontext, blpp_libc_makecontext). */
void blpp_rt_ctx_note(u64 ucp, u64 made)
{
	struct blpp_thread *t = thread_peek();
	struct uctx *e;
	if (!t || !ucp || !(e = uctx_find(ucp, 1)))
		return;
	if (made) {
		STORE(&e->fresh, 1);
	} else {
		STORE(&e->block, (u64)t);
		STORE(&e->fresh, 0);
	}
}

/* ctx_block makes (or takes back) the block of context ucp, made by
 * makecontext, for the calling thread; 0 when none can be mapped. */
static struct blpp_thread *ctx_block(struct blpp_thread *me, u64 ucp, struct blpp_thread *old)
{
	struct blpp_thread *b = old;
	if (b && b != me && TPRIV(b)->ctx_ucp == ucp && TPRIV(b)->ctx_left && TPRIV(b)->ctx_epoch == rt.epoch + 1) {
		/* The context made in ucp before never came back: its
		 * activations end where the switch that left it was. */
		block_reuse(b, b->call_site);
		b->owner = thread_pointer();
	} else {
		b = block_new();
		if (!b)
			return 0;
		b->owner = thread_pointer();
		TPRIV(b)->ctx_ucp = ucp;
		block_link(b);
	}
	/* The thread's perf events count for every block it runs (not
	 * its sampler: a context's samples are dropped). */
	if (rt.nmetrics) {
		mem_copy(TPRIV(b)->ev, TPRIV(me)->ev, sizeof(TPRIV(b)->ev));
		TPRIV(b)->epoch = TPRIV(me)->epoch;
	}
	gate_set(b);
	return b;
}

/* ctx_target is the block the context in ucp runs on, or me when the
 * switch keeps the current one. */
static struct blpp_thread *ctx_target(struct blpp_thread *me, u64 ucp)
{
	struct uctx *e = uctx_find(ucp, 0);
	struct blpp_thread *b;
	if (!e)
		return me;
	b = (struct blpp_thread *)LOAD(&e->block);
	if (LOAD(&e->fresh)) {
		b = ctx_block(me, ucp, (struct blpp_thread *)LOAD(&e->made));
		if (!b)
			return me;
		STORE(&e->made, (u64)b);
		STORE(&e->block, (u64)b);
		STORE(&e->fresh, 0);
	}
	return b ? b : me;
}

/* ctx_leave marks me as left by a switch to block to, and moves %gs there. */
static void ctx_leave(struct blpp_thread *me, struct blpp_thread *to)
{
	TPRIV(me)->ctx_epoch = rt.epoch + 1;
	STORE(&TPRIV(me)->ctx_left, 1);
	if (to != me) {
		STORE(&TPRIV(to)->ctx_left, 0); /* a context saved by getcontext */
		set_gs(to);
	}
}

/* ctx_forked takes block me into a fork child that resumes the context
 * its parent left there: the block is not in the child's list and its
 * records are gone (block_refork makes them again). Its activations
 * began their paths in the parent, stopped at the switch; like
 * blpp_rt_fork_child for the thread that forked, record each one's
 * prefix, which the report subtracts, so that the child's profile holds
 * its own work only. */
static void ctx_forked(struct blpp_thread *me)
{
	struct blpp_frame *f = frames(me);
	struct stop_walk sw;
	block_refork(me);
	stop_start(&sw, me, me->call_site);
	while (sw.next > 0) {
		stop_step(&sw);
		pent_add(&TPRIV(me)->ctx_pref, &TPRIV(me)->ctx_pref_lock, frame_record(me, sw.next), f[sw.next].func,
			 site_block(f[sw.next].func, sw.site), sw.reg);
	}
	block_link(me);
	ADD(&rt.nthreads, 1);
}

/* ctx_resume runs when a context switched away from block me runs
 * again, maybe on another thread or in a fork child. The block %gs
 * names until then is a context's that was left without coming through
 * here (its first function returned, and the C library's own code
 * switched to uc_link). */
static void ctx_resume(struct blpp_thread *me)
{
	u64 tp = thread_pointer();
	struct blpp_thread *prev = (!rt.fsgsbase || gs_base() != 0) ? gs_block() : 0;
	if (prev && prev != me && TPRIV(prev)->ctx_ucp && prev->owner == tp && !LOAD(&TPRIV(prev)->ctx_left)) {
		TPRIV(prev)->ctx_epoch = rt.epoch + 1;
		STORE(&TPRIV(prev)->ctx_left, 1);
	}
	fork_check();
	if (TPRIV(me)->ctx_epoch != rt.epoch + 1)
		ctx_forked(me);
	if (me->owner != tp) {
		me->owner = tp;
		me->tid = gettid();
	}
	STORE(&TPRIV(me)->ctx_left, 0);
	gate_set(me);
	set_gs(me);
}

/*
 * blpp_rt_libc_swapcontext takes the place of swapcontext(oucp, ucp),
 * real (blpp_libc_swapcontext). The context it saves in oucp is this
 * function's own, so it comes back here when resumed.
 */
long blpp_rt_libc_swapcontext(u64 oucp, u64 ucp, u64 real)
{
	long (*f)(u64, u64) = (void *)real;
	struct blpp_thread *me = thread_peek(), *to;
	struct uctx *e;
	long r;
	if (!me)
		return f(oucp, ucp);
	if (oucp && (e = uctx_find(oucp, 1)) != 0) {
		STORE(&e->block, (u64)me);
		STORE(&e->fresh, 0);
	}
	to = ctx_target(me, ucp);
	ctx_leave(me, to);
	r = f(oucp, ucp);
	ctx_resume(me);
	return r;
}

/* blpp_rt_libc_setcontext takes the place of setcontext(ucp), real. */
long blpp_rt_libc_setcontext(u64 ucp, u64 real)
{
	long (*f)(u64) = (void *)real;
	struct blpp_thread *me = thread_peek(), *to;
	long r;
	if (!me)
		return f(ucp);
	to = ctx_target(me, ucp);
	if (to == me)
		return f(ucp);
	ctx_leave(me, to);
	r = f(ucp);
	ctx_resume(me); /* it failed: nothing was switched */
	return r;
}
