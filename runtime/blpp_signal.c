//go:build ignore

/*
 * blpp_signal.c: signals [DESIGN 10, decision 94]. The runtime keeps the
 * actions of the fatal signals and the dump signal (the managed ones)
 * without the program seeing it: the kernel holds the runtime's entry
 * (blpp_sig_entry) for each of them, unless the program ignores it, and
 * the runtime holds what the program set (rt.sigv). The program's
 * rt_sigaction system calls (the rewriter replaces them where their number
 * is known: libc's own when libc is instrumented) and its calls to
 * sigaction, signal and their kin in an uninstrumented C library (the
 * rewriter sends those through blpp_libc_sigaction and blpp_libc_signal)
 * read and change rt.sigv; they see exactly what they would see without
 * blpp. A delivered signal with the program's handler goes to that
 * handler, by a jump from the entry, so the handler runs in the frame
 * the kernel made, as it would have; one whose action the program left
 * at SIG_DFL writes the profile and dies as it would have (on_fatal), or
 * dumps (the dump signal).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_writer.c.
 * rt_sigaction with our own restorer (blpp_sigreturn in blpp_stubs.S,
 * the bytes unwinders know) where the program gave none; changes take
 * rt.sig_lock with every signal blocked, so a handler on the same thread
 * never meets half a change.
 */


void blpp_sig_entry(void); /* blpp_stubs.S: the kernel's handler of every managed signal */
void blpp_sigreturn(void); /* blpp_stubs.S: rt_sigreturn */

enum { SIG_DFL_H = 0, SIG_IGN_H = 1 };

static long set_action(int sig, void (*h)(int), u64 flags, struct ksigaction *old)
{
	struct ksigaction sa = {(u64)h, flags | SA_RESTORER, (u64)blpp_sigreturn, ~0ul};
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
 * the file (it is written to a temporary name and renamed). Where the
 * leave hook is sure to come (the C library's own _exit is instrumented:
 * exit_writes_later), the exit hook writes nothing and the state stays
 * EXIT_NONE until then (decision 164).
 */
enum { EXIT_NONE, EXIT_AT_FINI, EXIT_FINAL, EXIT_LEFT };

/* final_write claims the final exit profile: true once per process. */
static int final_write(void)
{
	return CAS(&rt.exit_written, EXIT_NONE, EXIT_FINAL) || CAS(&rt.exit_written, EXIT_AT_FINI, EXIT_FINAL);
}

/*
 * leave_write claims the final exit profile for a leave hook of kind 1
 * (_exit, exit_group): true unless another way has written it, and true
 * again at every such hook after the first (EXIT_LEFT). Two can come in a
 * row: the executable's hook before its call of the C library's _exit,
 * and, when the library is instrumented too (a whole-process run), the
 * hook at _exit's own exit_group system call (decision 101). The last
 * holds the most, and its profile replaces the first's.
 */
static int leave_write(void)
{
	return CAS(&rt.exit_written, EXIT_NONE, EXIT_LEFT) || CAS(&rt.exit_written, EXIT_AT_FINI, EXIT_LEFT) ||
	       LOAD(&rt.exit_written) == EXIT_LEFT;
}

/* wait_writer waits (up to about 2 s, as lock_writer) for a profile
 * write that another thread of this process has in progress. */
static void wait_writer(void)
{
	u64 tid = gettid();
	for (int i = 0; i < 2000; i++) {
		u64 cur = LOAD(&rt.write_lock);
		if (cur == 0 || cur == tid)
			return;
		struct {
			long s, ns;
		} ts = {0, 1000000};
		sc2(SYS_nanosleep, &ts, 0);
	}
}

/*
 * on_fatal writes the profile (unless the exit already did), restores the
 * default action and sends the signal again: when the handler returns the
 * signal is delivered once more and kills the process as it would have
 * without blpp (same status, same core dump). Every signal is blocked
 * while it writes (a handler of the program's that gave its action back
 * may have run with a narrower mask); the frame's mask comes back at the
 * return.
 */
static int not_owner(void);

static void on_fatal(int sig)
{
	u64 all = ~0ul;
	cont_check(); /* with signals blocked, a fork child's first touch of the live file could not fault */
	sc4(SYS_rt_sigprocmask, SIG_BLOCK, &all, 0, 8);
	/* A vfork child's state is its parent's: it writes nothing, and
	 * leaves the exit profile to the parent. */
	if (!not_owner()) {
		if (final_write())
			write_profile(BLPP_FLAG_FATAL_SIGNAL, 1);
		else
			wait_writer(); /* another thread's exit write: its profile first */
	}
	set_action(sig, 0 /* SIG_DFL */, 0, 0);
	sc3(SYS_tgkill, getpid(), gettid(), sig);
}

/* on_dump writes a profile and lets the program go on. In continuous
 * mode the file is the profile already, and a dump written over it would
 * leave the file the program goes on counting in unlinked. */
static void on_dump(int sig)
{
	(void)sig;
	if (!LOAD(&rt.exit_written) && !rt.cont)
		write_profile(BLPP_FLAG_DUMP_SIGNAL, 0);
}

/* The signals whose default action ends the process that the runtime
 * catches to write the profile first: DESIGN 10's seven, and SIGPIPE (a
 * pipeline's reader that has gone: prog | head), SIGHUP (the terminal
 * gone), SIGQUIT (^\) and the resource limits' SIGXCPU and SIGXFSZ
 * (decision 164), and the traps SIGTRAP (an int3 with no debugger) and
 * SIGSYS (a seccomp filter's trap) (decision 166). */
static const u8 fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ, SIGTRAP, SIGSYS};

/* The rest of the standard signals whose default action ends the process
 * (decision 166): a timer's (alarm, setitimer), I/O's, the power and
 * coprocessor ones and SIGUSR1. Caught the same way, they write the
 * profile and end the process; unlike the ones above, any of them chosen
 * as the dump signal is a dump, as SIGUSR2 is by default. SIGKILL cannot
 * be caught; the real-time signals are left to the program (the C
 * library keeps the first two, the sampler takes a free one). */
static const u8 ending[] = {SIGUSR1, SIGALRM, SIGSTKFLT, SIGVTALRM, SIGPROF, SIGIO, SIGPWR};

static int is_fatal(u64 sig)
{
	for (u64 i = 0; i < sizeof(fatal); i++)
		if (fatal[i] == sig)
			return 1;
	return 0;
}

/* entry_of is the address of blpp_sig_entry in the runtime copy whose
 * blpp_config is at cfg (decision 81: every module has a copy). */
static u64 entry_of(u64 cfg) { return (u64)&blpp_sig_entry + (cfg - (u64)&blpp_config); }

/* is_ours says whether h is the entry the kernel holds for the managed
 * signals (the installed copy's). */
static int is_ours(u64 h)
{
	u64 cfg = LOAD(&rt.handlers_cfg);
	return cfg && h == entry_of(cfg);
}

/* emulates says whether the runtime keeps signal sig's action now. */
static int emulates(u64 sig)
{
	return procp && sig >= 1 && sig <= NSIG && LOAD(&rt.handlers_cfg) && ((LOAD(&rt.sig_managed) >> (sig - 1)) & 1);
}

/*
 * sig_lock takes rt.sig_lock with every signal blocked and says whether
 * it did: a thread that holds it already gets 0 and goes on inside the
 * change in progress (blpp_rt_libc_sigaction calls the C library's
 * sigaction, whose rt_sigaction system call comes here again when the
 * library is instrumented too).
 */
static int sig_lock(u64 *old)
{
	u64 all = ~0ul, tid = gettid();
	if (LOAD(&rt.sig_lock) == tid)
		return 0;
	sc4(SYS_rt_sigprocmask, SIG_BLOCK, &all, old, 8);
	while (!CAS(&rt.sig_lock, 0, tid))
		__asm__ volatile("pause");
	return 1;
}

static void sig_unlock(int took, const u64 *old)
{
	if (!took)
		return;
	STORE(&rt.sig_lock, 0);
	sc4(SYS_rt_sigprocmask, SIG_SETMASK, old, 0, 8);
}

/*
 * put_ours gives the kernel this copy's entry for managed signal sig,
 * over the program's action rt.sigv[sig] (ours_over makes that entry
 * from a program's action v, and returns 0 where there is none to give):
 * with the program's mask and flags (so its handler runs on the stack,
 * with the mask and the restart behaviour it asked for; SA_SIGINFO
 * added, for the entry passes the kernel's three arguments on;
 * SA_RESETHAND taken off, blpp_rt_signal does it) and its restorer; an action left at SIG_DFL gets the mask of
 * every signal and the alternate stack, as the profile writer wants. An
 * ignored signal stays ignored in the kernel: nothing is to be written
 * for it.
 */
static int ours_over(u64 sig, const struct ksigaction *v, struct ksigaction *a)
{
	*a = (struct ksigaction){entry_of((u64)&blpp_config), SA_SIGINFO | SA_RESTORER | SA_ONSTACK, (u64)blpp_sigreturn, ~0ul};
	if (v->handler == SIG_IGN_H)
		return 0;
	if (v->handler != SIG_DFL_H) {
		a->flags = (v->flags | SA_SIGINFO | SA_RESTORER) & ~(u64)(u32)SA_RESETHAND;
		a->mask = v->mask;
		if (v->flags & SA_RESTORER)
			a->restorer = v->restorer;
	} else if (sig == rt.dump_signal && !is_fatal(sig)) {
		a->flags |= SA_RESTART; /* the program's system calls go on after a dump */
	}
	return 1;
}

static void put_ours(u64 sig)
{
	struct ksigaction a;
	if (ours_over(sig, &rt.sigv[sig], &a))
		sc4(SYS_rt_sigaction, sig, &a, 0, 8);
}

/*
 * adopt takes the action the kernel holds for managed signal sig, which
 * the program has just set through the C library or a system call, as the
 * program's view, and puts the runtime's entry over it. The kernel's copy
 * is the one to keep: it is what a read would return (the kernel drops
 * flags it does not know and SIGKILL and SIGSTOP from the mask). An
 * action that is still the runtime's entry was not changed (sigset with
 * SIG_HOLD only blocks).
 */
static void adopt(u64 sig)
{
	struct ksigaction k;
	if (failed(sc4(SYS_rt_sigaction, sig, 0, &k, 8)) || is_ours(k.handler))
		return;
	rt.sigv[sig] = k;
	put_ours(sig);
}

/* not_owner says whether the calling process shares this memory without
 * owning it: a vfork child (or a clone with CLONE_VM). Its actions are
 * its own, the view in rt.sigv its parent's. */
static int not_owner(void)
{
	fork_check(); /* a fork child owns its copy from here on */
	return getpid() != rt.pid;
}

/*
 * blpp_rt_sigaction is the rt_sigaction system call of the program
 * (blpp_sys_sigaction calls it for every syscall instruction whose number
 * the rewriter found to be 13): for a managed signal it reads and sets the
 * program's view, and the kernel gets the runtime's entry over a new
 * action; anything else goes to the kernel as it was. The kernel installs
 * act before it writes oact, and returns EFAULT for a bad oact after
 * installing act: so does this. A process that does not own the state (a
 * vfork child) changes its own actions, and reads the runtime's entry as
 * the parent's view.
 */
long blpp_rt_sigaction(u64 sig, const struct ksigaction *act, struct ksigaction *oact, u64 size)
{
	struct ksigaction prev;
	u64 old;
	long r = 0;
	int took;
	if (!emulates(sig) || size != 8)
		return sc4(SYS_rt_sigaction, sig, act, oact, size);
	if (not_owner()) {
		r = sc4(SYS_rt_sigaction, sig, act, oact, size);
		if (!failed(r) && oact && is_ours(oact->handler))
			*oact = rt.sigv[sig];
		return r;
	}
	took = sig_lock(&old);
	prev = rt.sigv[sig];
	if (act && !failed(r = sc4(SYS_rt_sigaction, sig, act, 0, 8)))
		adopt(sig);
	/* The kernel writes oact, or finds it bad; then the view. */
	if (!failed(r) && oact && !failed(r = sc4(SYS_rt_sigaction, sig, 0, oact, 8)))
		*oact = prev;
	sig_unlock(took, &old);
	return r;
}

/* The C library's struct sigaction [glibc bits/sigaction.h, x86-64]. */
struct libc_sigaction {
	u64 handler;
	u64 mask[16];
	int flags;
	int pad;
	u64 restorer;
};

static void to_libc(struct libc_sigaction *o, const struct ksigaction *k)
{
	o->handler = k->handler;
	o->mask[0] = k->mask;
	o->flags = (int)k->flags;
	o->restorer = k->restorer;
}

/*
 * blpp_rt_libc_sigaction is sigaction(sig, act, oact) of an uninstrumented
 * C library, which the rewriter sends here (blpp_libc_sigaction) with the
 * function to call, real. The library does the work; for a managed
 * signal the runtime then takes the new action as the program's view
 * (adopt) and gives the program the old view in place of its own entry.
 */
long blpp_rt_libc_sigaction(long sig, const struct libc_sigaction *act, struct libc_sigaction *oact, u64 real)
{
	long (*fn)(long, const struct libc_sigaction *, struct libc_sigaction *) = (void *)real;
	struct ksigaction prev;
	u64 old;
	long r;
	int took;
	if (!emulates((u64)sig))
		return fn(sig, act, oact);
	if (not_owner()) {
		r = fn(sig, act, oact);
		if (r == 0 && oact && is_ours(oact->handler))
			to_libc(oact, &rt.sigv[sig]);
		return r;
	}
	took = sig_lock(&old);
	prev = rt.sigv[sig];
	r = fn(sig, act, oact);
	if (r == 0) {
		if (oact && is_ours(oact->handler))
			to_libc(oact, &prev);
		if (act)
			adopt((u64)sig);
	}
	sig_unlock(took, &old);
	return r;
}

/*
 * blpp_rt_libc_signal is signal(sig, handler) of an uninstrumented C
 * library, or one of its kin that set an action and return the old
 * handler (bsd_signal, sysv_signal, ssignal, sigset), as
 * blpp_rt_libc_sigaction.
 */
u64 blpp_rt_libc_signal(long sig, u64 handler, u64 real)
{
	u64 (*fn)(long, u64) = (void *)real;
	struct ksigaction prev;
	u64 old, r;
	int took;
	if (!emulates((u64)sig))
		return fn(sig, handler);
	if (not_owner()) {
		r = fn(sig, handler);
		return is_ours(r) ? rt.sigv[sig].handler : r;
	}
	took = sig_lock(&old);
	prev = rt.sigv[sig];
	r = fn(sig, handler);
	if (r != ~0ul /* SIG_ERR */) {
		if (is_ours(r))
			r = prev.handler;
		adopt((u64)sig);
	}
	sig_unlock(took, &old);
	return r;
}

/*
 * blpp_rt_signal is the C half of blpp_sig_entry, the kernel's handler of
 * every managed signal: it returns the program's handler for the entry to
 * jump to (the kernel's frame and arguments untouched), or 0 when the
 * runtime handled the signal: the program left its action at SIG_DFL,
 * so the profile is written and the signal kills (on_fatal), or it is
 * the dump signal. An action of the program's with SA_RESETHAND goes
 * back to SIG_DFL first, as the kernel would have done.
 */
u64 blpp_rt_signal(u64 sig, void *info, void *uc)
{
	struct ksigaction *v;
	u64 h;
	(void)uc;
	if (sig < 1 || sig > NSIG || !procp)
		return 0;
	/* A fork child's first touch of the live file, which it did not
	 * inherit (continuous mode): si_addr is at byte 16 of siginfo_t. */
	if (sig == SIGSEGV && info && cont_fault(((const u64 *)info)[2]))
		return 0;
	v = &rt.sigv[sig];
	h = LOAD(&v->handler);
	if (h == SIG_IGN_H)
		return 0;
	if (h != SIG_DFL_H) {
		if (v->flags & (u64)(u32)SA_RESETHAND)
			STORE(&v->handler, SIG_DFL_H);
		return h;
	}
	if (sig == rt.dump_signal && !is_fatal(sig))
		on_dump((int)sig);
	else
		on_fatal((int)sig);
	return 0;
}

static void set_handlers(u64 dump_signal);

static void install_handlers(u64 dump_signal)
{
	u64 m = 0;
	if (!CAS(&rt.handlers, 0, 1))
		return; /* early_init did (twice would take our entry for the program's action) */
	rt.dump_signal = dump_signal;
	if (!(rt.flags & BLPP_CONFIG_FLAG_NO_FATAL_HANDLERS)) {
		for (u64 i = 0; i < sizeof(fatal); i++)
			m |= 1ul << (fatal[i] - 1);
		for (u64 i = 0; i < sizeof(ending); i++)
			m |= 1ul << (ending[i] - 1);
	}
	if (dump_signal >= 1 && dump_signal <= NSIG && dump_signal != SIGKILL && dump_signal != SIGSTOP)
		m |= 1ul << (dump_signal - 1);
	else if (dump_signal)
		say("cannot install the dump signal handler", "", "", 0);
	STORE(&rt.sig_managed, m);
	set_handlers(dump_signal);
}

/*
 * set_handlers puts this copy's entry in the kernel for every managed
 * signal. Started afresh (no copy's entry installed), the kernel's
 * actions are the program's view (what it inherited, or set before the
 * runtime started). Moving from another copy's entry (that module is
 * being unloaded, decision 81), the actions that hold that entry get
 * this copy's, the view unchanged.
 */
static void set_handlers(u64 dump_signal)
{
	u64 prev = LOAD(&rt.handlers_cfg), old, m = LOAD(&rt.sig_managed);
	int took;
	(void)dump_signal;
	took = sig_lock(&old);
	STORE(&rt.handlers_cfg, (u64)&blpp_config);
	sample_handlers(); /* blpp_sample.c */
	for (u64 sig = 1; sig <= NSIG; sig++) {
		struct ksigaction k, a;
		if (!((m >> (sig - 1)) & 1))
			continue;
		if (!prev) {
			/* Started afresh: the entry for SIG_DFL, which is what
			 * a process starts with, set and the old action read in
			 * one call (decision 136); with signals blocked, an
			 * action that was not SIG_DFL gets its own entry, or
			 * (ignored) is put back, before any signal comes. */
			const struct ksigaction dfl = {SIG_DFL_H, 0, 0, 0};
			ours_over(sig, &dfl, &a);
			if (failed(sc4(SYS_rt_sigaction, sig, &a, &k, 8)))
				continue;
			rt.sigv[sig] = k;
			if (k.handler == SIG_IGN_H)
				sc4(SYS_rt_sigaction, sig, &k, 0, 8);
			else if (k.handler != SIG_DFL_H)
				put_ours(sig);
			continue;
		}
		if (failed(sc4(SYS_rt_sigaction, sig, 0, &k, 8)))
			continue;
		if (k.handler == entry_of(prev))
			put_ours(sig);
	}
	sig_unlock(took, &old);
}

/* handlers_move installs this copy's entry in place of another module's
 * copy's, which is being unloaded (decision 81). */
static void handlers_move(void)
{
	set_handlers(rt.dump_signal);
}

/* handlers_drop gives the kernel the program's own action of every
 * managed signal whose action is still the runtime's: the last
 * instrumented module is gone, and its code may be unmapped. */
static void handlers_drop(void)
{
	u64 old, m = LOAD(&rt.sig_managed);
	int took = sig_lock(&old);
	for (u64 sig = 1; sig <= NSIG; sig++) {
		struct ksigaction cur;
		if (!((m >> (sig - 1)) & 1))
			continue;
		if (rt.sigv[sig].handler != SIG_IGN_H) {
			/* The program's action set and the kernel's read in one
			 * call (decision 136), and the kernel's put back where
			 * it was not ours: rare, and setting an action other
			 * than SIG_IGN loses no pending signal. */
			if (!failed(sc4(SYS_rt_sigaction, sig, &rt.sigv[sig], &cur, 8)) && !is_ours(cur.handler))
				sc4(SYS_rt_sigaction, sig, &cur, 0, 8);
			continue;
		}
		if (failed(sc4(SYS_rt_sigaction, sig, 0, &cur, 8)))
			continue;
		if (is_ours(cur.handler))
			sc4(SYS_rt_sigaction, sig, &rt.sigv[sig], 0, 8);
	}
	sample_ignore(); /* blpp_sample.c */
	STORE(&rt.handlers_cfg, 0);
	sig_unlock(took, &old);
}
