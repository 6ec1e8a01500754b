//go:build ignore

/*
 * blpp_start.c: start-up and the exit hooks [DESIGN 10]. blpp_init (from
 * blpp_start, before the program's entry: environment, auxv, the main
 * thread's block), early_init (instrumented code that ld.so runs before
 * the entry point: the environment from /proc), setup (the configuration,
 * the counter state, a stand-in thread pointer for static binaries), the
 * profile name template; blpp_rt_leave (before _exit, exit_group and
 * exec, decision 59) and blpp_fini (the exit hook).
 *
 * Part of the runtime's unity build (blpp_rt.c), last. Nothing of the
 * program's may be assumed to have run: no thread pointer in a static
 * binary, no environment in early_init. A bad configuration ends the
 * process with status 127 (die) before the program starts.
 */


static u64 read_fs_base(void)
{
	u64 v = 0;
	if (rt.fsgsbase)
		__asm__ volatile("rdfsbase %0" : "=r"(v));
	else
		sc2(SYS_arch_prctl, ARCH_GET_FS, &v);
	return v;
}

/* set_template makes the profile name template absolute, so that a chdir
 * of the program does not move the profile. */
static void set_template(const char *name)
{
	u64 n = 0, len;
	if (!name || !*name)
		name = "blpp.out";
	len = str_len(name);
	if (name[0] != '/') {
		long r = sc2(SYS_getcwd, rt.tmpl, sizeof(rt.tmpl));
		if (!failed(r) && r > 0 && rt.tmpl[0] == '/') {
			n = str_len(rt.tmpl);
			if (n > 1)
				rt.tmpl[n++] = '/';
		} else {
			say("cannot get the working directory: the profile name stays relative", "", "", r);
		}
	}
	if (n + len + 1 > sizeof(rt.tmpl)) {
		say("profile name too long: ", name, "", 0);
		n = 0;
		name = "blpp.out";
		len = str_len(name);
	}
	mem_copy(rt.tmpl + n, name, len);
	rt.tmpl[n + len] = 0;
}

/*
 * setup makes the runtime ready to count: it reads the configuration,
 * maps the counter state and gives the calling (main) thread its block.
 * rt.quiet and rt.fsgsbase are set before it runs. It runs once, from
 * blpp_init or, when instrumented code runs before the entry point, from
 * early_init.
 */
static void setup(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	struct blpp_thread *t;

	if (c->magic != BLPP_CONFIG_MAGIC)
		die("the runtime configuration is missing (bad magic)");
	rt.bias = (u64)&blpp_config - c->self_vaddr;
	blpp_entry_target = c->orig_entry + rt.bias;
	rt.flags = c->flags;
	rt.nfuncs = c->nfuncs;
	rt.ndark = c->ndark;
	rt.funcs = (const struct blpp_func *)(c->funcs_vaddr + rt.bias);
	if (c->sites_vaddr && c->nsites) {
		rt.nsites = c->nsites;
		rt.sites = (const struct blpp_site *)(c->sites_vaddr + rt.bias);
	}
	if (c->build_id_vaddr && c->build_id_len <= 256) {
		rt.build_id = (const u8 *)(c->build_id_vaddr + rt.bias);
		rt.build_id_len = c->build_id_len;
	}
	if (!c->orig_entry || (rt.nfuncs && !c->funcs_vaddr) || rt.nfuncs > (1ul << 32) || rt.ndark > (1ul << 32))
		die("the runtime configuration is invalid");
	rt.init_pid = getpid();
	rt.pid = rt.init_pid;

	rt.flow_only = (rt.flags & BLPP_CONFIG_FLAG_FLOW_ONLY) != 0;
	rt.arena_limit = c->arena_limit ? c->arena_limit : BLPP_DEFAULT_ARENA_LIMIT;
	rt.shadow_frames = c->shadow_frames ? c->shadow_frames : BLPP_SHADOW_FRAMES;
	if (rt.shadow_frames > (1ul << 30))
		rt.shadow_frames = 1ul << 30; /* 77 GB of address space */
	metrics_init(c);
	/* Slot counters exist only for frequency-only, flow-only images (the
	 * rewriter makes none otherwise); a bound keeps a corrupt size from
	 * reserving absurd blocks. */
	if (rt.flow_only && !rt.nmetrics && c->slots_size <= (1ul << 30))
		rt.slots_size = c->slots_size;
	/* The call cache takes the slots' place: context images only. */
	if ((rt.flags & BLPP_CONFIG_FLAG_CALL_CACHE) && !rt.flow_only && !rt.slots_size)
		rt.cache_size = BLPP_CALL_CACHE_SIZE;
	rt.w = map_wiped(page_up(sizeof(struct wiped)));
	if (rt.w)
		rt.w->live = 1;
	else
		say("cannot map the counter state: no paths are counted", "", "", 0);

	/* A static binary sets its thread pointer later, in libc's start
	 * code, and instrumented code runs before that (IRELATIVE resolvers,
	 * libc's own start functions). Give it a temporary one whose first
	 * word points to itself, as the TLS ABI wants; thread_slow hands the
	 * main block over when libc installs the real one. */
	if (read_fs_base() == 0) {
		u64 *tcb = map_anon(4096, 0);
		if (!tcb)
			die("cannot map a thread pointer");
		tcb[0] = (u64)tcb;
		if (rt.fsgsbase)
			__asm__ volatile("wrfsbase %0" : : "r"(tcb) : "memory");
		else
			sc2(SYS_arch_prctl, ARCH_SET_FS, tcb);
		rt.dummy_tp = (u64)tcb;
	}
	t = block_new();
	if (!t)
		die("cannot map the main thread block");
	t->owner = thread_pointer();
	block_link(t);
	set_gs(t);

	if (rt.nmetrics)
		metrics_open(t);
	STORE(&rt.ready, 1);
	if (rt.w)
		STORE(&blpp_fast_slots, 1);
	rt.tsc_init = rdtsc();
}

/* env_scan feeds one environment entry to the settings blpp reads:
 * BLPP_PROFILE (returned through *profile) and BLPP_QUIET. */
static void env_scan(const char *e, const char **profile, int *quiet)
{
	const char *v;
	if ((v = prefix(e, "BLPP_PROFILE=")))
		*profile = v;
	else if ((v = prefix(e, "BLPP_QUIET=")))
		*quiet = v[0] == '1' && v[1] == 0;
}

/*
 * early_init sets the runtime up at the first stub call of instrumented
 * code that runs before the entry point: ld.so runs the executable's
 * IRELATIVE resolvers while relocating it, then its DT_PREINIT_ARRAY,
 * then the shared libraries' constructors, which may call back into it.
 * The main thread's thread pointer exists by then (ld.so installs it
 * before relocating), so its block can be made now and everything is
 * counted from here on. The environment is not at hand (no initial
 * stack pointer): it is read from /proc/self/environ, the same strings
 * [proc(5)]; without /proc, blpp_init names the profile later. FSGSBASE
 * is not known yet either, so %gs is set with arch_prctl until
 * blpp_init reads AT_HWCAP2. Returns 0 when the runtime cannot count yet
 * (no thread pointer: threads could not be told apart).
 */
static int early_init(void)
{
	static u64 once;
	static char val[4096]; /* the last BLPP_PROFILE value */
	static const char pp[] = "BLPP_PROFILE=", pq[] = "BLPP_QUIET=";
	const char *profile = 0;
	char buf[512], head[sizeof(pp)];
	u64 pos = 0, vn = 0, qn = 0;
	int kind = 0, quiet = 0, q0 = 0; /* kind: 1 BLPP_PROFILE, 2 BLPP_QUIET */
	long fd, r;

	if (LOAD(&rt.ready))
		return 1;
	if (!CAS(&once, 0, 1) || read_fs_base() == 0)
		return (int)LOAD(&rt.ready);
	fd = sc3(SYS_open, "/proc/self/environ", O_RDONLY | O_CLOEXEC, 0);
	if (!failed(fd)) {
		/* NUL-terminated entries, read as a stream. */
		while (!failed(r = sc3(SYS_read, fd, buf, sizeof(buf))) && r > 0) {
			for (long i = 0; i < r; i++) {
				char ch = buf[i];
				if (ch == 0) {
					if (kind == 1 && vn < sizeof(val))
						val[vn] = 0, profile = val;
					if (kind == 2)
						quiet = qn == 1 && q0 == '1';
					pos = vn = qn = 0;
					kind = 0;
					continue;
				}
				if (pos < sizeof(head))
					head[pos] = ch;
				pos++;
				if (kind == 1)
					vn < sizeof(val) - 1 ? (void)(val[vn++] = ch) : (void)(vn = sizeof(val));
				else if (kind == 2)
					q0 = qn++ ? q0 : ch;
				else if (pos == sizeof(pq) - 1 && mem_eq(head, pq, pos))
					kind = 2;
				else if (pos == sizeof(pp) - 1 && mem_eq(head, pp, pos))
					kind = 1;
			}
		}
		sc1(SYS_close, fd);
		rt.env_known = 1;
	}
	rt.quiet = quiet;
	setup();
	set_template(profile);
	install_handlers(((const volatile struct blpp_config *)&blpp_config)->dump_signal);
	rt.early_start = 1;
	return 1;
}

/*
 * blpp_init runs once, from blpp_start, before the program's own entry
 * code; sp is the initial stack (argc, argv, envp, auxv). It returns with
 * blpp_entry_target set. Nothing of the program has run yet, except what
 * ld.so ran before the entry point (see early_init): in a static binary
 * there is not even a thread pointer.
 */
void blpp_init(u64 *sp)
{
	const volatile struct blpp_config *c = &blpp_config;
	const char *profile = 0;
	char **envp;
	u64 *auxv, hwcap2 = 0;
	int quiet = 0;

	envp = (char **)(sp + 1 + sp[0] + 1);
	for (; *envp; envp++)
		env_scan(*envp, &profile, &quiet);
	for (auxv = (u64 *)(envp + 1); auxv[0]; auxv += 2)
		if (auxv[0] == AT_HWCAP2)
			hwcap2 = auxv[1];
	rt.quiet = quiet;
	rt.fsgsbase = (hwcap2 & HWCAP2_FSGSBASE) != 0;
	if (LOAD(&rt.ready)) {
		/* early_init set everything up; it may have lacked the
		 * environment. */
		if (!rt.env_known)
			set_template(profile);
		return;
	}
	setup();
	set_template(profile);
	install_handlers(c->dump_signal);
}

/*
 * blpp_rt_leave runs just before instrumented code calls _exit or an exec
 * function it cannot instrument, or makes an exit_group or execve system
 * call [decision 59]: none of them runs the exit hook, so the profile is
 * written here, as the exit hook would (every activation stopped at the
 * call site the code stored). kind 1 is an exit: the profile is final.
 * kind 2 is an exec, which returns when it fails: the profile is a
 * snapshot (flagged exec), and the exit hook or the next exec writes a
 * newer one under the same name. A vfork child (or any process sharing
 * this memory without a fork reset: its pid is not the owner's) leaves
 * everything alone, since whatever it wrote or changed would be the
 * parent's.
 */
void blpp_rt_leave(u64 kind)
{
	if (!rt.ready)
		return;
	fork_check();
	if (getpid() != rt.pid)
		return;
	if (kind == 1) {
		if (final_write())
			write_profile(0, 1);
	} else if (!LOAD(&rt.exit_written)) {
		write_profile(BLPP_FLAG_EXEC, 1);
	}
}

/*
 * blpp_fini is the exit hook (SysV ABI, no arguments): it calls the
 * original finaliser if the configuration names one, then writes the
 * final profile, once per process.
 */
void blpp_fini(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	if (c->orig_fini)
		((void (*)(void))(c->orig_fini + rt.bias))();
	fork_check();
	if (CAS(&rt.exit_written, EXIT_NONE, EXIT_AT_FINI))
		write_profile(0, 1);
}

/*
 * blpp_module_init is a shared object's DT_INIT hook (glibc passes argc,
 * argv and envp to DT_INIT functions): it registers the module with the
 * process's runtime, then runs the module's own DT_INIT.
 */
void blpp_module_init(int argc, char **argv, char **envp)
{
	const volatile struct blpp_config *c = &blpp_config;
	if (c->orig_init)
		((void (*)(int, char **, char **))(c->orig_init + ((u64)&blpp_config - c->self_vaddr)))(argc, argv, envp);
}
