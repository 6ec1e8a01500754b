//go:build ignore

/*
 * blpp_resume.c: activations that go on where their path did not start.
 * blpp_rt_fork_child records, in a fork child, where each live activation
 * stood at the fork (its prefix, counted by the parent); blpp_rt_setjmp_ret
 * ends the path at the edge after a call that returns twice (setjmp) and
 * at a C++ landing pad, unwinding what longjmp or the exception left.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_dark.c. Like
 * the other stubs' C halves, they run with Thread.busy raised.
 */

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
	/* Once per process: a fork made inside a fork-like call that is
	 * instrumented too (daemon's) recorded every live activation's
	 * prefix already, the caller's included. */
	if (!t || !w || t->busy || LOAD(&w->prefix_owner))
		return;
	busy_up(t);
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
	busy_down(t);
}

/*
 * blpp_rt_vfork_child runs in a vfork child right after vfork() returned
 * 0 to function fid, whose call site id is site (decision 94). The child
 * borrows its parent's memory, and its thread pointer, until it execs or
 * exits: the instrumented code it runs meanwhile (its caller's, a set-up
 * function) would count in the parent's records and move the parent's
 * shadow stack, whose owner test it passes. It gets the scratch block
 * instead, where nothing is counted (thread_slow keeps it there), as the
 * child process that execs leaves no profile of that code (callgrind
 * neither: its dump of a process that execs is empty). Where vfork made
 * a copy of the memory (valgrind turns it into fork) the child is a fork
 * child, and records its prefixes.
 */
void blpp_rt_vfork_child(u64 fid, u64 site)
{
	if (!rt.ready)
		return;
	cont_check();
	fork_check();
	if (getpid() == rt.pid) {
		blpp_rt_fork_child(fid, site);
		return;
	}
	set_gs(scratch_block());
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
	nested = path_stub_begin(t, now, d);
	if (rt.w && !nested && t->overflow == 0)
		unwind(t, rsp, 0);
	if (t->call_site == site && site != BLPP_LANDING_SITE)
		count(t, running(t), fid, (u64)t->r + k, d);
	else
		partial_add(t, running(t), fid, site_block(fid, t->call_site), t->r);
	t->r = (s64)restart;
	t->call_site = site == BLPP_LANDING_SITE ? 0 : site;
	BARRIER();
	busy_down(t);
}
