//go:build ignore

/*
 * blpp_enter.c: the C halves of the stubs that keep a thread's paths:
 * blpp_rt_enter (push a shadow frame, find the record), blpp_rt_exit
 * (count the path, pop), blpp_rt_backedge (count, restart) and
 * blpp_rt_leaf (one-path leaves without a frame). blpp_stubs.S saves the
 * registers and flags and passes the instrumented code's %rsp and, for
 * entries and exits, the register save area (a function's path register
 * may live there).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_partial.c.
 * Each C half runs with Thread.busy raised: a signal handler's stub that
 * finds it non-zero only pushes and pops above, never unwinds.
 */


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

/* path_stub_begin begins a stub that ends the running path: the thread
 * is busy in a stub from here (it returns the busy count before, not 0
 * when a stub was interrupted: nested) and, with metrics, now gets their
 * values and d the ended path's. Always inlined, with now from the
 * caller: each stub compiles to the code it had with these lines written
 * out in it (an array of its own here reorders the stub's frame). */
static inline __attribute__((always_inline)) u64 path_stub_begin(struct blpp_thread *t, u64 *now, u64 *d)
{
	u64 nested;
	nested = busy_up(t);
	BARRIER();
	if (rt.nmetrics) {
		metrics_read(t, now);
		path_metrics(t, now, d);
	}
	return nested;
}

/* saved_reg is where the stubs' register save area (see blpp_stubs.S)
 * keeps the path register (Func.path_reg) of the function whose entry is
 * fn (ifunc), or 0 when it has none, is not instrumented or its register
 * is not one of those there. */
static inline __attribute__((always_inline)) u64 *saved_reg(u64 *regs, const struct blpp_func *fn)
{
	/* save-area word of each register number: r11 1, r10 2, r9 3, r8 4,
	 * rdi 5, rsi 6 (the only ones the rewriter picks) */
	static const unsigned char word[16] = {[6] = 6, [7] = 5, [8] = 4, [9] = 3, [10] = 2, [11] = 1};
	u64 pr;
	if (!regs || rt.nmetrics || !fn)
		return 0;
	pr = fn->path_reg;
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
	u64 nested, now[BLPP_MAX_METRICS], *pr;
	const struct blpp_func *fn;
	int cl;
	if (!t)
		return;
	fn = ifunc(fid);
	cl = fn && fn->closed;
	nested = busy_up(t);
	BARRIER();
	if (rt.nmetrics)
		metrics_read(t, now);
	if (rt.w)
		stub_stat(t, ST_STUB_ENTRIES);
	if (rt.w && !nested)
		unwind(t, rsp, 1);
	if (rt.w && fn)
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
		f->site = cl ? *(const u64 *)rsp : t->call_site;
		if (fn && fn->closed == 2)
			f->saved_acc[2] = 0; /* in no outside call (decision 64) */
		if (rt.slots_size)
			f->saved_acc[0] = t->cur; /* the inline exit restores it from here */
		if ((pr = saved_reg(regs, fn)))
			f->saved_acc[1] = *pr; /* and the path register's value */
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
	if (!cl) { /* a closed activation leaves them alone [decision 57] */
		t->r = 0;
		t->call_site = 0;
		t->cur = cur_of(t, r);
		if (!lean(t->cur))
			t->record = rec_word(r);
	}
	if (r)
		ADD1(counts_of(r), 1); /* the thread's own record (decision 152) */
	BARRIER();
	busy_down(t);
}

/* pop ends the activation of fid (entry fn: ifunc) on top of t's shadow
 * stack; regs (the stub's register save area, or 0) gets fid's path
 * register back. */
static void pop(struct blpp_thread *t, u64 fid, const struct blpp_func *fn, u64 *regs)
{
	u64 *pr = saved_reg(regs, fn);
	int cl = fn && fn->closed;
	if (t->overflow) {
		t->overflow--;
		/* The caller's register and record were not saved. Its r
		 * restarts, in Thread.r and in the path register, where a
		 * caller that kept it there (a closed or a direct caller,
		 * decisions 57 and 100) finds it. */
		if (!cl)
			t->r = 0;
		if (pr)
			*pr = 0;
	} else if (t->sp > t->sp_base && ((struct blpp_frame *)t->sp - 1)->func == fid) {
		struct blpp_frame *f = (struct blpp_frame *)t->sp - 1;
		if (pr)
			*pr = f->saved_acc[1];
		if (!cl) {
			t->r = f->saved_r;
			t->call_site = f->site;
			restore_open(t, f);
		}
		for (u64 m = 0; m < rt.nmetrics; m++)
			t->macc[m] = f->saved_acc[m];
		f->rsp = FRAME_FREE; /* as the inline exits pop [decision 163] */
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
	const struct blpp_func *fn;
	if (!t)
		return;
	fn = ifunc(fid);
	nested = path_stub_begin(t, now, d);
	if (rt.w)
		stub_stat(t, ST_STUB_EXITS);
	if (rt.w && !nested && t->overflow == 0)
		unwind(t, rsp, 0);
	if (fn && fn->closed) {
		/* its register is in regs: the exit does not spill it, since
		 * Thread.r is not its own [decision 57] */
		u64 *pr = saved_reg(regs, fn);
		r = flat_rec(t, fid);
		count_f(t, r, fid, fn, pr ? *pr : ~(u64)0, d);
	} else {
		r = running_for(t, fid, fn);
		count_f(t, r, fid, fn, (u64)t->r, d);
	}
	pop(t, fid, fn, regs);
	t->tail_rec = 0;
	if (tail_site && r && !rt.flow_only) {
		t->tail_rec = (u64)r;
		t->tail_site = tail_site;
		t->tail_rsp = rsp;
	}
	BARRIER();
	busy_down(t);
}

/* blpp_rt_backedge: count[fid][r + k]++, r = restart [Ball-Larus 96 §3.4]. */
void blpp_rt_backedge(u64 fid, u64 k, u64 restart)
{
	struct blpp_thread *t = stub_thread();
	u64 now[BLPP_MAX_METRICS], d[BLPP_MAX_METRICS];
	const struct blpp_func *fn;
	if (!t)
		return;
	fn = ifunc(fid);
	path_stub_begin(t, now, d);
	if (rt.w)
		stub_stat(t, ST_STUB_BACKEDGES);
	/* A closed function swaps its register with Thread.r around this
	 * call (decision 57), so Thread.r is its path here too. */
	count_f(t, fn && fn->closed ? flat_rec(t, fid) : running_for(t, fid, fn), fid, fn, (u64)t->r + k, d);
	t->r = (s64)restart;
	BARRIER();
	busy_down(t);
}

/*
 * blpp_rt_leaf: an activation of fid starts, a function of one path that
 * calls nothing, whose instrumentation is only its inline entry counting
 * its call and its path: a flow-only function with slot counters
 * [decision 55], or one without them in context mode or in a flow-only
 * library [decision 88]. No shadow frame, no path register, nothing at
 * its exit. The entry comes here when it cannot count inline: before the
 * runtime is ready, on a thread whose %gs is not its own block yet,
 * before the thread has fid's record (in context mode: the record of
 * this calling context; frames a longjmp left are unwound first, and a
 * pending tail call makes it a child of the jumping activation's). This
 * does the same counts in the record, made if need be. The activation
 * takes no part in the thread's state (frames, r, cur, record, call
 * site).
 */
void blpp_rt_leaf(u64 fid, u64 rsp)
{
	struct blpp_thread *t = stub_thread();
	struct blpp_record *r;
	u64 nested, d[BLPP_MAX_METRICS] = {0};
	if (!t || !rt.w)
		return;
	nested = busy_up(t);
	BARRIER();
	stub_stat(t, ST_STUB_ENTRIES);
	if (!instr(fid))
		ADD(&rt.w->stats[ST_BAD_FUNCS], 1);
	else {
		if (!rt.flow_only && !nested)
			unwind(t, rsp, 1);
		r = rt.flow_only ? root(t, fid) : enter_record(t, fid, rsp);
		if (r) {
			ADD1(counts_of(r), 1); /* the thread's own record (decision 152) */
			count(t, r, fid, 0, d);
		}
	}
	BARRIER();
	busy_down(t);
}
