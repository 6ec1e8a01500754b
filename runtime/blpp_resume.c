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
 * Processes and threads made by clone in uninstrumented code (decision
 * 101). A child that shares this memory and this thread pointer (clone
 * with CLONE_VM and without CLONE_SETTLS: posix_spawn's, made by the C
 * library's __clone3 or __clone, which the rewriter cannot instrument)
 * would run the instrumented code it calls (posix_spawn's child function,
 * __spawni_child, and what that calls, when the C library is instrumented)
 * on its parent's thread block: its counts would land in the parent's
 * records and its activations on the parent's shadow stack. Its first
 * instrumented code is the function clone calls, so the rewriter sends
 * calls of the C library's clone wrappers here (blpp_libc_clone and
 * blpp_libc_clone3, blpp_stubs.S): such a child starts at
 * blpp_clone_start instead, which calls blpp_rt_clone_child and then the
 * function. The function and its argument wait in a record at the top of
 * the child's stack, which starts below it: { fn, arg, flags }.
 */
enum { CLONE_VM = 0x100, CLONE_THREAD = 0x10000, CLONE_SETTLS = 0x80000 };

/* vm_child says whether the calling process, a child made with these
 * clone flags, runs in its parent's memory. Where valgrind made the call
 * a fork the memory is a copy after all, and the child a fork child
 * (fork_check resets it here). */
static int vm_child(u64 flags)
{
	cont_check();
	fork_check();
	return (flags & CLONE_THREAD) || getpid() != rt.pid;
}

/* to_scratch moves a child that shares this memory and thread pointer off
 * its parent's thread block, and counts it in its parent's statistics. */
static void to_scratch(void)
{
	ADD(&rt.vm_children, 1);
	set_gs(scratch_block());
}

/*
 * blpp_rt_clone_child runs first in such a child, with the clone flags.
 * It gets the scratch block, as a vfork child does: nothing it runs is
 * counted, as callgrind keeps nothing of a child that execs. A fork
 * child (valgrind's) counts its own work in its own profile; it starts
 * afresh in a function of its own, so it has no prefixes to record.
 */
void blpp_rt_clone_child(u64 flags)
{
	if (procp && LOAD(&rt.ready) && vm_child(flags))
		to_scratch();
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
	if (!LOAD(&rt.ready))
		return;
	if (vm_child(CLONE_VM))
		to_scratch();
	else
		blpp_rt_fork_child(fid, site);
}

/* glibc's struct clone_args for clone3 [linux/sched.h, CLONE_ARGS_SIZE_VER2]. */
struct kclone_args {
	u64 flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

void blpp_clone_start(void); /* blpp_stubs.S */

/* clone_shares says whether a child made with these flags runs in this
 * memory on this thread pointer. */
static int clone_shares(u64 flags) { return (flags & CLONE_VM) && !(flags & CLONE_SETTLS); }

/*
 * blpp_rt_fork_sys runs right after a system call that makes a process or
 * thread, number nr (clone, fork, vfork, clone3), made by instrumented
 * code at call site site of function fid: rax is its result, rdi its
 * first argument (clone's flags, clone3's arguments). In the parent, or
 * when it failed, nothing. In a child that has a copy of the memory it
 * records where each live activation stood, this one at the system call
 * (blpp_rt_fork_child): the blocks before, the parent's, are then not
 * counted again when the child finishes the paths, also in the functions
 * between the call and the caller of fork (the C library's fork and
 * _Fork, when it is instrumented), which the hook after that call would
 * find gone. A child that shares the memory and the thread pointer
 * (vfork, or clone with CLONE_VM and not CLONE_SETTLS) leaves its
 * parent's block, as blpp_rt_clone_child. A new thread with a thread
 * pointer of its own gets its block at its next entry.
 */
void blpp_rt_fork_sys(u64 fid, u64 site, u64 nr, u64 rax, u64 rdi)
{
	u64 flags = 0;
	if (rax != 0 || !procp || !LOAD(&rt.ready))
		return;
	switch (nr) {
	case 56: /* clone */
		flags = rdi;
		break;
	case 58: /* vfork */
		flags = CLONE_VM;
		break;
	case 435: /* clone3 */
		flags = rdi ? ((const struct kclone_args *)rdi)->flags : 0;
		break;
	}
	if ((flags & CLONE_VM) && (flags & CLONE_SETTLS))
		return;
	if (!(flags & CLONE_VM) || !vm_child(flags))
		blpp_rt_fork_child(fid, site);
	else
		to_scratch();
}

/*
 * blpp_rt_libc_clone3 takes the place of the C library's internal
 * __clone3(args, size, fn, arg) (glibc 2.34 and later), real: a child
 * that shares this memory and thread pointer starts at blpp_clone_start,
 * its record at the top of the stack args names; the library gets a copy
 * of args whose stack ends below the record (the caller's own is left
 * as it was: glibc retries with clone from it when clone3 is missing).
 * Anything else goes to real as it was.
 */
long blpp_rt_libc_clone3(const struct kclone_args *a, u64 size, u64 fn, u64 arg, u64 real)
{
	long (*f)(const void *, u64, u64, u64) = (void *)real;
	struct kclone_args c;
	u64 top, *rec;
	if (!a || !fn || size < 7 * 8 || size > sizeof(c) || !clone_shares(a->flags) || !a->stack || a->stack_size < 256)
		return f(a, size, fn, arg);
	mem_copy(&c, a, size);
	top = (a->stack + a->stack_size) & ~15ul;
	rec = (u64 *)(top - 32);
	rec[0] = fn;
	rec[1] = arg;
	rec[2] = a->flags;
	c.stack_size = (u64)rec - a->stack;
	return f(&c, size, (u64)&blpp_clone_start, (u64)rec);
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
