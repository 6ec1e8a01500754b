//go:build ignore

/*
 * blpp_signal.c: signals [DESIGN 10]. Installing the handlers (the fatal
 * signals unless the program started with them ignored, and the dump
 * signal), the fatal handler (write the profile unless the exit did,
 * restore the default action, raise again) and the dump handler; the
 * exit profile's states (at the exit hook, final), which the exit hooks
 * of blpp_start.c share.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_writer.c.
 * rt_sigaction with our own restorer (blpp_sigreturn in blpp_stubs.S:
 * there is no libc to provide one); handlers run on the program's
 * alternate stack if it has one.
 */


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

static const u8 fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};

static void set_handlers(u64 dump_signal);

static void install_handlers(u64 dump_signal)
{
	if (!CAS(&rt.handlers, 0, 1))
		return; /* early_init did (twice would chain on_fatal to itself) */
	rt.dump_signal = dump_signal;
	set_handlers(dump_signal);
}

/*
 * handlers_move installs this copy's handlers in place of another
 * module's copy's, which is being unloaded (decision 81): where the
 * signal's action is still the runtime's, it becomes the same action of
 * this copy.
 */
static void handlers_move(void)
{
	set_handlers(rt.dump_signal);
}

/* handlers_drop gives back the default action of every signal whose
 * action is still the runtime's: the last instrumented module is gone,
 * and its code may be unmapped. */
static void handlers_drop(void)
{
	u64 cfg = LOAD(&rt.handlers_cfg);
	void (*ours)(int) = (void (*)(int))((u64)&on_fatal + (cfg - (u64)&blpp_config));
	void (*dump)(int) = (void (*)(int))((u64)&on_dump + (cfg - (u64)&blpp_config));
	for (u64 i = 0; i < sizeof(fatal) + 1; i++) {
		struct ksigaction cur;
		int sig = i < sizeof(fatal) ? fatal[i] : (int)rt.dump_signal;
		if (!sig || sig > NSIG || failed(sc4(SYS_rt_sigaction, sig, 0, &cur, 8)))
			continue;
		if (cur.handler == ours || cur.handler == dump)
			set_action(sig, 0 /* SIG_DFL */, 0, 0);
	}
	sample_ignore(); /* blpp_sample.c */
	STORE(&rt.handlers_cfg, 0);
}

static void set_handlers(u64 dump_signal)
{
	u64 prev = LOAD(&rt.handlers_cfg);
	void (*prev_fatal)(int) = (void (*)(int))((u64)&on_fatal + (prev - (u64)&blpp_config));
	void (*prev_dump)(int) = (void (*)(int))((u64)&on_dump + (prev - (u64)&blpp_config));
	int dump_is_fatal = 0;
	STORE(&rt.handlers_cfg, (u64)&blpp_config);
	sample_handlers(); /* blpp_sample.c */
	for (u64 i = 0; i < sizeof(fatal); i++) {
		struct ksigaction old;
		/* A dump signal among these stays fatal: carrying on after a
		 * fault would fault again forever. */
		dump_is_fatal |= fatal[i] == dump_signal;
		if (rt.flags & BLPP_CONFIG_FLAG_NO_FATAL_HANDLERS)
			continue;
		/* A signal the program started with ignored stays ignored;
		 * moving (prev set), only the runtime's own actions move. */
		if (failed(sc4(SYS_rt_sigaction, fatal[i], 0, &old, 8)) || old.handler == (void (*)(int))1)
			continue;
		if (prev && old.handler != prev_fatal)
			continue;
		set_action(fatal[i], on_fatal, SA_ONSTACK, 0);
	}
	if (dump_signal && !dump_is_fatal && prev) {
		struct ksigaction old;
		if (dump_signal <= NSIG && !failed(sc4(SYS_rt_sigaction, (int)dump_signal, 0, &old, 8)) && old.handler == prev_dump)
			set_action((int)dump_signal, on_dump, SA_RESTART, 0);
	} else if (dump_signal && !dump_is_fatal) {
		if (dump_signal > NSIG || dump_signal == SIGKILL || dump_signal == SIGSTOP ||
		    failed(set_action((int)dump_signal, on_dump, SA_RESTART, 0)))
			say("cannot install the dump signal handler", "", "", 0);
	}
}
