//go:build ignore

/*
 * blpp_dark.c: entries of uninstrumented functions (decision 70):
 * blpp_rt_dark counts an entry the rewriter redirected to its dark-entry
 * stub in the function's record, and keeps the activations that may be
 * in progress (TPRIV(t)->dark, mirrored in Thread.dark_* for the inline
 * stubs), so that callbacks into instrumented code hang under them in the
 * profile (Record.Via).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_enter.c. No
 * frames: an uninstrumented activation's exit is never seen, so nothing
 * here may depend on one; the mirror in Thread is written list word last
 * (dark_sync) for inline stubs in signal handlers.
 */

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
	nested = busy_up(t);
	BARRIER();
	stub_stat(t, ST_STUB_DARK);
	if (!dark_fid(fid)) {
		ADD(&rt.w->stats[ST_BAD_FUNCS], 1);
		goto out;
	}
	/* Activations whose frames lie at or below this entry are gone, as
	 * at an instrumented entry (blpp_rt_enter; unwind tests the newest
	 * frame first). */
	if (!nested)
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
		n = N(((u64 *)p->kids)[idx]);
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
		ADD1(counts_of(r), 1); /* the thread's own record (decision 152) */
out:
	BARRIER();
	busy_down(t);
}
