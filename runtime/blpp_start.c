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
 * of the program does not move the profile. %c in it asks for continuous
 * mode (decision 94) and is taken out, as clang's %c is. */
static void set_template(const char *name)
{
	char own[4096];
	u64 n = 0, len = 0;
	const char *s = name ? name : "";
	for (; *s && len < sizeof(own) - 2; s++) {
		if (s[0] == '%' && s[1] == 'c') {
			rt.cont_want = 1;
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			own[len++] = *s++;
			own[len++] = *s;
		} else {
			own[len++] = *s;
		}
	}
	own[len] = 0;
	name = own;
	if (*s) {
		say("profile name too long: ", own, "...", 0);
		len = 0;
	}
	if (!len) {
		name = "blpp.out";
		len = str_len(name);
	}
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

/* BLPP_RUNTIME_SIG identifies this runtime's build (internal/build hashes
 * its inputs): every module's copy must be the same runtime, since they
 * share struct proc and each other's records (decision 81). */
#ifndef BLPP_RUNTIME_SIG
#define BLPP_RUNTIME_SIG 1ull
#endif

static u64 image_sig(void) { return BLPP_RUNTIME_SIG; }

/*
 * find_proc returns the process's runtime state when another module's
 * copy of the runtime made it: %gs then points at a thread block (the
 * calling thread's, or the one it inherited), whose proc word names the
 * state (decision 81). 0 when this copy is the first to start.
 */
static struct proc *find_proc(void)
{
	u64 base = 0;
	struct blpp_thread *t;
	struct proc *p;
	if (failed(sc2(SYS_arch_prctl, ARCH_GET_GS, &base)) || !base)
		return 0;
	t = (struct blpp_thread *)base;
	if (t->self != base || !t->proc)
		return 0; /* a scratch block (early_gs) */
	p = (struct proc *)t->proc;
	return p->magic == PROC_MAGIC ? p : 0;
}

/*
 * setup makes the runtime ready to count, as the first module to start
 * (decision 81): it maps the process state, reads the process-wide
 * settings from this module's configuration, maps the counter state and
 * gives the calling (main) thread its block. rt_own's quiet, fsgsbase
 * and env_known are set before it runs and carried over.
 */
static void setup(const char *profile)
{
	const volatile struct blpp_config *c = &blpp_config;
	struct blpp_thread *t;
	struct proc *p;

	if (c->magic != BLPP_CONFIG_MAGIC)
		die("the runtime configuration is missing (bad magic)");
	p = map_anon(page_up(sizeof(struct proc)), 0);
	if (!p)
		die("cannot map the runtime's state");
	p->quiet = rt_own.quiet;
	p->fsgsbase = rt_own.fsgsbase;
	p->env_known = rt_own.env_known;
	p->image_sig = image_sig();
	if (!make_zeros(p))
		die("cannot map the runtime's state");
	p->magic = PROC_MAGIC;
	set_proc(p);

	rt.flags = c->flags;
	rt.init_pid = getpid();
	rt.pid = rt.init_pid;

	rt.flow_only = (rt.flags & BLPP_CONFIG_FLAG_FLOW_ONLY) != 0;
	rt.arena_limit = c->arena_limit ? c->arena_limit : BLPP_DEFAULT_ARENA_LIMIT;
	if (rt.arena_limit > (1ul << 38))
		rt.arena_limit = 1ul << 38; /* 2^32 records of 64 bytes: Record.index is 32 bits (decision 146) */
	rt.shadow_frames = c->shadow_frames ? c->shadow_frames : BLPP_SHADOW_FRAMES;
	if (rt.shadow_frames > (1ul << 30))
		rt.shadow_frames = 1ul << 30; /* 77 GB of address space */
	metrics_init(c, (u64)&blpp_config - c->self_vaddr);
	/* Slot counters exist only for frequency-only, flow-only images (the
	 * rewriter makes none otherwise); a bound keeps a corrupt size from
	 * reserving absurd blocks. */
	if (rt.flow_only && !rt.nmetrics && c->slots_size <= (1ul << 30))
		rt.slots_size = c->slots_size;
	/* The call cache takes the slots' place: context images only. */
	if ((rt.flags & BLPP_CONFIG_FLAG_CALL_CACHE) && !rt.flow_only && !rt.slots_size)
		rt.cache_size = BLPP_CALL_CACHE_SIZE;
	/* The profile's name, and in continuous mode its file, which the
	 * counter state goes in from the start (blpp_live.c). Without the
	 * environment (early_init without /proc) it is named later, and
	 * continuous mode cannot start. */
	set_template(profile);
	if (rt.cont_want && rt.env_known)
		cont_open();
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
	gate_set(t);
	block_link(t);
	set_gs(t);

	if (rt.nmetrics)
		metrics_open(t);
	sample_init(c, (u64)&blpp_config - c->self_vaddr);
	sample_thread(t);
	STORE(&rt.ready, 1);
	rt.ns_init = mono_ns();
	rt.tsc_init = rdtsc();
}

/* refuse ends the process: module m cannot join this process's runtime. */
static void refuse(const char *why)
{
	char msg[320], tag[24], *d = utoa(tag + sizeof(tag) - 1, blpp_config.module_tag);
	const char *parts[] = {"instrumented module tag ", d, " cannot join the process's runtime: ", why};
	u64 n = 0;
	tag[sizeof(tag) - 1] = 0;
	for (u64 i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		for (const char *p = parts[i]; *p && n < sizeof(msg) - 1; p++)
			msg[n++] = *p;
	msg[n] = 0;
	die(msg);
}

/*
 * exiting says whether the process is in exit() past the point where no
 * object it has loaded can be unmapped: the executable's exit hook has
 * run. glibc's _dl_fini raises the open count of every object
 * initialised by then, so that dlclose cannot unload it, and runs the
 * finalisers in the reverse order of the initialisers: the executable's
 * (initialised last) first, the libraries' after [glibc elf/dl-fini.c].
 * An object loaded after that (a destructor's dlopen) can still be
 * unloaded: its struct mod says late. Without an instrumented
 * executable the answer is always no.
 */
static int exiting(void)
{
	struct mod *exe = LOAD(&rt.mods[0]);
	return exe && !(((const volatile struct blpp_config *)exe->cfg)->flags & BLPP_CONFIG_FLAG_LIBRARY) && !LOAD(&exe->live);
}

/*
 * mod_register adds this copy's module to the process's runtime, which
 * exists (setup or find_proc made procp). The modules of one process must
 * have been instrumented alike by one blpp: the same runtime, the same
 * mode (context or flow-only) and metrics, distinct tags; and slot
 * counters only in a module that started first (they live in thread
 * blocks that already exist otherwise). Anything else stops the process
 * with a message, as a bad configuration does: counting on would mix up
 * counts. A module loaded again after dlclose takes its old entry, so its
 * counts go on adding up.
 */
static void mod_register(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	u64 bias = (u64)&blpp_config - c->self_vaddr, tag = c->module_tag;
	struct mod *m;

	if (c->magic != BLPP_CONFIG_MAGIC)
		die("the runtime configuration is missing (bad magic)");
	if (rt.image_sig != image_sig())
		refuse("it was instrumented by another version of blpp (rewrite every module with one blpp)");
	if (tag > BLPP_MAX_MODULE_TAG || c->nfuncs + c->ndark > BLPP_FID_LOCAL_MASK + 1 ||
	    (c->nfuncs && !c->funcs_vaddr) || (!(c->flags & BLPP_CONFIG_FLAG_LIBRARY) && !c->orig_entry))
		die("the runtime configuration is invalid");
	if (((c->flags ^ rt.flags) & (BLPP_CONFIG_FLAG_FLOW_ONLY | BLPP_CONFIG_FLAG_CALL_CACHE)) != 0)
		refuse("it was instrumented in another mode (--no-context) than the module that started first");
	if (((c->flags ^ rt.flags) & BLPP_CONFIG_FLAG_NO_LATENCY) != 0)
		refuse("it was instrumented in another mode (--no-latency) than the module that started first");
	if (!metrics_same(c, bias))
		refuse("it reads other metrics than the module that started first");
	if (c->slots_size > rt.slots_size && rt.flow_only && !rt.nmetrics)
		refuse("it has slot counters but started after another module (rewrite it with --no-slots, as blpp run does)");
	m = LOAD(&rt.mods[tag]);
	if (m && LOAD(&m->live))
		refuse("another module with the same tag is loaded (give one another --module-tag)");
	if (!m && !(m = map_anon(page_up(sizeof(struct mod)), 0)))
		die("cannot map a module's state");
	m->tag = tag;
	m->cfg = (u64)&blpp_config;
	m->bias = bias;
	m->nfuncs = c->nfuncs;
	m->ndark = c->ndark;
	m->funcs = (const struct blpp_func *)(c->funcs_vaddr + bias);
	m->sites = 0;
	m->nsites = 0;
	if (c->sites_vaddr && c->nsites) {
		m->nsites = c->nsites;
		m->sites = (const struct blpp_site *)(c->sites_vaddr + bias);
	}
	m->build_id = 0;
	m->build_id_len = 0;
	if (c->build_id_vaddr && c->build_id_len <= 256) {
		m->build_id = (const u8 *)(c->build_id_vaddr + bias);
		m->build_id_len = c->build_id_len;
	}
	m->kept = 0;
	m->late = exiting();
	m->exit_hook = (c->flags & BLPP_CONFIG_FLAG_EXIT_HOOK) != 0;
	m->live = 1;
	BARRIER();
	STORE(&rt.mods[tag], m);
	self_mod = m;
	if (ADD(&rt.nlive, 1) == 0 && rt.ready) {
		/* Every module had gone (dlclose of the last one wrote the
		 * profile and gave the signals back): this one starts the
		 * process's counting again, so the next last DT_FINI writes the
		 * profile once more, with everything so far in it. */
		CAS(&rt.exit_written, EXIT_AT_FINI, EXIT_NONE);
		if (LOAD(&rt.handlers) && !LOAD(&rt.handlers_cfg))
			set_handlers(rt.dump_signal);
	}
	if (rt.w)
		STORE(&blpp_fast_slots, 1);
	live_mod(m); /* continuous mode: the module's entry in the file */
}

/*
 * attach starts this copy of the runtime: it joins the process's runtime
 * if another module's copy made it, else makes it (setup), then registers
 * its module. 1 when done (now or before); profile is the BLPP_PROFILE
 * value (0: unset, or the environment is not known: rt.env_known).
 */
static int attach(const char *profile)
{
	struct proc *p;
	if (procp)
		return self_mod != 0;
	if ((p = find_proc())) {
		set_proc(p);
		mod_register();
		return 1;
	}
	setup(profile);
	mod_register();
	install_handlers(((const volatile struct blpp_config *)&blpp_config)->dump_signal);
	return 1;
}

/* follow_seen: env_scan saw BLPP_FOLLOW (decision 167). */
static int follow_seen;

/* env_scan feeds one environment entry to the settings blpp reads:
 * BLPP_PROFILE (returned through *profile) and BLPP_QUIET; and notes
 * BLPP_FOLLOW. */
static void env_scan(const char *e, const char **profile, int *quiet)
{
	const char *v;
	if ((v = prefix(e, "BLPP_PROFILE=")))
		*profile = v;
	else if ((v = prefix(e, "BLPP_QUIET=")))
		*quiet = v[0] == '1' && v[1] == 0;
	else if (prefix(e, "BLPP_FOLLOW="))
		follow_seen = 1;
}

/*
 * env_value copies the value of the last entry named key (with its '='),
 * of the environment this process started with, into out (cap bytes,
 * NUL-terminated) and returns 1; 0 when there is none or it does not
 * fit, -1 when /proc/self/environ cannot be read. The array of pointers
 * may have been changed since (blpp run's auditor takes BLPP_PROFILE and
 * BLPP_FOLLOW out, decisions 140 and 167): the strings the kernel wrote
 * are read instead.
 */
static int env_value(const char *key, char *out, u64 cap)
{
	char buf[256];
	u64 kn = str_len(key), pos = 0, vn = 0;
	int in = 0, found = 0, over = 0;
	long fd, r;

	fd = sc3(SYS_open, "/proc/self/environ", O_RDONLY | O_CLOEXEC, 0);
	if (failed(fd))
		return -1;
	while (!failed(r = sc3(SYS_read, fd, buf, sizeof(buf))) && r > 0) {
		for (long i = 0; i < r; i++) {
			char ch = buf[i];
			if (ch == 0) {
				if (in) {
					found = !over;
					if (found)
						out[vn] = 0;
				}
				pos = vn = 0;
				in = over = 0;
				continue;
			}
			if (in) {
				if (vn + 1 < cap)
					out[vn++] = ch;
				else
					over = 1;
				continue;
			}
			if (pos < kn && ch == key[pos]) {
				if (++pos == kn)
					in = 1;
			} else {
				pos = kn + 1; /* not this entry */
			}
		}
	}
	sc1(SYS_close, fd);
	return found;
}

/*
 * env_file reads BLPP_PROFILE (the last one, into *profile) and
 * BLPP_QUIET from /proc/self/environ: the environment the process
 * started with, whatever was done since to the array of pointers to it
 * (blpp run's auditor takes out the BLPP_PROFILE entry it added, decision
 * 140). 0 when the file cannot be read.
 */
static int env_file(const char **profile, int *quiet)
{
	static char val[4096]; /* the last BLPP_PROFILE value */
	char q[4];
	int r = env_value("BLPP_PROFILE=", val, sizeof(val));
	if (r < 0)
		return 0;
	if (r > 0)
		*profile = val;
	if (env_value("BLPP_QUIET=", q, sizeof(q)) > 0)
		*quiet = q[0] == '1' && q[1] == 0;
	return 1;
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
static __attribute__((noinline)) int early_init(void)
{
	static u64 once;
	const char *profile = 0;
	int quiet = 0;

	if (procp && self_mod)
		return 1;
	if (!CAS(&once, 0, 1) || read_fs_base() == 0)
		return procp && self_mod;
	if (find_proc())
		return attach(0); /* another module's runtime has the environment */
	if (env_file(&profile, &quiet))
		rt_own.env_known = 1;
	rt_own.quiet = quiet;
	attach(profile);
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
	int quiet = 0, moved = 0;

	envp = (char **)(sp + 1 + sp[0] + 1);
	for (; *envp; envp++)
		env_scan(*envp, &profile, &quiet);
	for (auxv = (u64 *)(envp + 1); auxv[0]; auxv += 2) {
		if (auxv[0] == AT_HWCAP2)
			hwcap2 = auxv[1];
		if (auxv[0] == AT_IGNORE)
			moved = 1;
	}
	/* Entries taken out of the environment leave (AT_IGNORE, 0) pairs
	 * before the auxiliary vector (blpp run's auditor): what blpp run
	 * passed is still in the environment's strings. */
	if (moved) {
		const char *p = 0;
		int q = 0;
		if (env_file(&p, &q))
			profile = p, quiet = q;
	}
	blpp_entry_target = c->orig_entry + ((u64)&blpp_config - c->self_vaddr);
	rt.quiet = quiet;
	rt.fsgsbase = (hwcap2 & HWCAP2_FSGSBASE) != 0;
	/* The environment as the kernel laid it out, without BLPP_FOLLOW:
	 * no exec is followed, and follow_exec need not read
	 * /proc/self/environ at each one (an auditor may have moved
	 * BLPP_FOLLOW out: then it looks). */
	int no_follow = !moved && !follow_seen;
	if (procp && self_mod) {
		/* early_init set everything up; it may have lacked the
		 * environment. */
		if (!rt.env_known)
			set_template(profile);
		rt.no_follow = no_follow;
		return;
	}
	if (find_proc()) {
		/* A shared object's runtime started first (its DT_INIT runs
		 * before this entry point): join it (decision 81). */
		attach(profile);
		if (!rt.env_known)
			set_template(profile);
		rt.env_known = 1;
		rt.no_follow = no_follow;
		return;
	}
	rt_own.env_known = 1;
	attach(profile);
	rt.no_follow = no_follow;
}

static void leave_profile(u64 kind);
static void follow_exec(const u64 *regs);

/*
 * blpp_rt_leave runs just before instrumented code calls _exit or an exec
 * function it cannot instrument, or makes an exit_group or execve system
 * call [decision 59]: none of them runs the exit hook, so the profile is
 * written here, as the exit hook would (every activation stopped at the
 * call site the code stored). kind 1 is an exit: the profile is final.
 * kind 2 is an exec, which returns when it fails: the profile is a
 * snapshot (flagged exec), and the exit hook or the next exec writes a
 * newer one under the same name. kind 3 is a call of daemon(), whose
 * parent leaves inside through _exit: its profile, as at an exit (a
 * later exit, if the call fails, writes it again). A vfork child (or any process sharing
 * this memory without a fork reset: its pid is not the owner's) leaves
 * everything alone, since whatever it wrote or changed would be the
 * parent's. kind BLPP_LEAVE_EXECVE is an execve system call or a call of
 * execve, whose arguments are in regs (the registers the stub saved): an
 * exec as kind 2, which blpp run may follow (follow_exec, decision 167),
 * a vfork child's too.
 */
void blpp_rt_leave(u64 kind, const u64 *regs)
{
	if (!rt.ready)
		return;
	if (kind == BLPP_LEAVE_EXECVE) {
		leave_profile(2);
		follow_exec(regs);
		return;
	}
	leave_profile(kind);
}

/* leave_profile is blpp_rt_leave's profile write for kind 1 to 3. */
static void leave_profile(u64 kind)
{
	cont_check();
	fork_check();
	if (getpid() != rt.pid) {
		/* A child in this memory that exits without exec: what it ran
		 * is in no profile, and its parent's says so (decision 101).
		 * Once per child: two hooks can come in a row. */
		u64 tid = gettid();
		if (kind == 1 && LOAD(&rt.vm_exit_tid) != tid) {
			STORE(&rt.vm_exit_tid, tid);
			ADD(&rt.vm_exits, 1);
		}
		return;
	}
	if (kind == 1) {
		if (leave_write())
			write_profile(0, 1);
	} else if (!LOAD(&rt.exit_written)) {
		write_profile(kind == 3 ? 0 : BLPP_FLAG_EXEC, 1);
	}
}

/*
 * maps_path finds the file mapped at addr in /proc/self/maps and copies
 * its path to out (cap bytes, NUL-terminated); 0 when none is.
 */
static int maps_path(u64 addr, char *out, u64 cap)
{
	char buf[4096];
	u64 have = 0, start = 0, end = 0, field = 0, plen = 0;
	int in_num = 1, found = 0;
	long fd = sc3(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0), r;
	if (failed(fd))
		return 0;
	out[0] = 0;
	/* One line: "start-end perms offset dev inode   path". */
	while (!found && !failed(r = sc3(SYS_read, fd, buf, sizeof(buf))) && r > 0) {
		for (long i = 0; i < r; i++) {
			char ch = buf[i];
			if (ch == '\n') {
				if (start <= addr && addr < end && plen && out[0] == '/') {
					out[plen < cap ? plen : cap - 1] = 0;
					found = 1;
					break;
				}
				start = end = field = plen = 0;
				in_num = 1;
				have = 0;
				continue;
			}
			if (field == 0) {
				int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
				if (ch == '-') {
					in_num = 0;
				} else if (ch == ' ') {
					field = 1;
				} else if (d >= 0) {
					if (in_num)
						start = start * 16 + (u64)d;
					else
						end = end * 16 + (u64)d;
				}
				continue;
			}
			if (ch == ' ' && field < 5) {
				field++;
				have = 0;
				continue;
			}
			if (field == 5 && ch == ' ' && !have)
				continue; /* the padding before the path */
			if (field >= 5) {
				have = 1;
				if (plen < cap - 1)
					out[plen] = ch;
				plen++;
			}
		}
	}
	sc1(SYS_close, fd);
	if (!found)
		out[0] = 0;
	return found;
}

/*
 * mod_keep notes module m's file and copies its tables (functions, call
 * sites, build-id) into the runtime's own memory, at its DT_FINI: a
 * library may be unmapped next (dlclose), and the records made of its
 * functions still need them when the profile is written. An executable
 * stays mapped until the process ends, so its tables stay where they
 * are: python3's are 1.8 MB, copied at every exit, the reading faulting
 * in the file's pages of them (decision 142). So does a library whose
 * DT_FINI runs in the process's exit (exiting), unless it was loaded
 * after the exit began: clang's libraries' tables are 120 MB, which
 * the copies made resident at every exit (decision 145).
 */
static void mod_keep(struct mod *m)
{
	u64 nf = m->nfuncs + m->ndark, fsz = nf * sizeof(struct blpp_func), ssz = m->nsites * sizeof(struct blpp_site);
	u8 *mem;
	int lib = (((const volatile struct blpp_config *)m->cfg)->flags & BLPP_CONFIG_FLAG_LIBRARY) != 0;
	if (lib && exiting() && !LOAD(&m->late))
		return; /* mapped until the end: write_modules finds its file */
	maps_path(m->cfg, m->path, sizeof(m->path));
	if (!lib)
		return;
	if (!(mem = map_anon(page_up(fsz + ssz + m->build_id_len + 1), 0))) {
		say("cannot keep an unloaded module's tables: ", m->path, "", 0);
		return;
	}
	mem_copy(mem, m->funcs, fsz);
	if (ssz)
		mem_copy(mem + fsz, m->sites, ssz);
	if (m->build_id_len)
		mem_copy(mem + fsz + ssz, m->build_id, m->build_id_len);
	m->funcs = (const struct blpp_func *)mem;
	m->sites = ssz ? (const struct blpp_site *)(mem + fsz) : 0;
	m->build_id = mem + fsz + ssz;
	BARRIER();
	m->kept = 1;
	ADD(&rt.tables_kept, 1);
}

/* another_live is a registered module other than this copy's whose
 * DT_FINI has not run, 0 if none. */
static struct mod *another_live(void)
{
	for (u64 tag = 0; tag <= BLPP_MAX_MODULE_TAG; tag++) {
		struct mod *m = LOAD(&rt.mods[tag]);
		if (m && m != self_mod && LOAD(&m->live))
			return m;
	}
	return 0;
}

/*
 * exit_writes_later says whether the process is exiting through a leave
 * hook still ahead: a module whose _exit makes its exit_group system call
 * through the hook (the C library instrumented, or a static executable)
 * is registered and still mapped (its tables were not kept, so it was
 * not unloaded). The C library runs its own clean-up after the last
 * DT_FINI (the rest of the exit handlers, flushing stdio) and then calls
 * _exit, whose hook writes the profile with all of it; a profile written
 * at the DT_FINI as well would only be replaced (decision 164). Any other
 * way out still writes: _exit and exit_group from instrumented code go
 * through a leave hook, a fatal signal through the handlers, which stay
 * installed.
 */
static int exit_writes_later(void)
{
	if (!exiting())
		return 0;
	for (u64 tag = 0; tag <= BLPP_MAX_MODULE_TAG; tag++) {
		struct mod *m = LOAD(&rt.mods[tag]);
		if (m && m->exit_hook && !LOAD(&m->kept))
			return 1;
	}
	return 0;
}

/*
 * blpp_fini is a module's exit hook (SysV ABI, no arguments), at exit or
 * when dlclose unloads it: it calls the module's original finaliser if
 * the configuration names one, then takes the module out of the live
 * ones (keeping its tables: mod_keep). The last module to go writes the
 * final profile, once per process, so the destructors of every
 * instrumented module are counted, unless the exit's own leave hook will
 * (exit_writes_later). Signal handlers that live in this copy
 * move to another live module's copy (they would point into unmapped
 * code after a dlclose); with none left they are removed.
 */
void blpp_fini(void)
{
	const volatile struct blpp_config *c = &blpp_config;
	struct mod *m = self_mod, *o;
	if (c->orig_fini)
		((void (*)(void))(c->orig_fini + ((u64)&blpp_config - c->self_vaddr)))();
	if (!procp || !m)
		return;
	fork_check();
	if (!CAS(&m->live, 1, 0))
		return;
	mod_keep(m);
	if (ADD(&rt.nlive, -1) == 1) {
		if (exit_writes_later())
			return; /* the signal handlers stay ours until then */
		if (CAS(&rt.exit_written, EXIT_NONE, EXIT_AT_FINI)) {
			STORE(&rt.just_kept, m);
			write_profile(0, 1);
			STORE(&rt.just_kept, 0);
		}
		handlers_drop();
		return;
	}
	if (LOAD(&rt.handlers_cfg) == (u64)&blpp_config && (o = another_live())) {
		/* The same runtime at another address: its copy of
		 * handlers_move is as far from its blpp_config as ours. */
		void (*move)(void) = (void (*)(void))((u64)&handlers_move + (o->cfg - (u64)&blpp_config));
		move();
	}
}

/* read_hwcap2 reads AT_HWCAP2 from /proc/self/auxv (0 if it cannot). */
static u64 read_hwcap2(void)
{
	u64 aux[64], v = 0;
	long fd = sc3(SYS_open, "/proc/self/auxv", O_RDONLY | O_CLOEXEC, 0), r;
	if (failed(fd))
		return 0;
	while (!failed(r = sc3(SYS_read, fd, aux, sizeof(aux))) && r > 0) {
		for (long i = 0; i + 1 < r / 8; i += 2)
			if (aux[i] == AT_HWCAP2)
				v = aux[i + 1];
		if (r < (long)sizeof(aux))
			break;
	}
	sc1(SYS_close, fd);
	return v;
}

/*
 * blpp_module_init is a shared object's DT_INIT hook (glibc passes argc,
 * argv and envp to DT_INIT functions): it starts this copy of the runtime
 * (joining the process's, or making it when this module is the first
 * instrumented one to start: decision 81), then runs the module's own
 * DT_INIT, whose work is then counted.
 */
void blpp_module_init(int argc, char **argv, char **envp)
{
	const volatile struct blpp_config *c = &blpp_config;
	if (!procp) {
		const char *profile = 0;
		int quiet = 0;
		for (char **e = envp; e && *e; e++)
			env_scan(*e, &profile, &quiet);
		rt_own.quiet = quiet;
		rt_own.env_known = envp != 0;
		rt_own.fsgsbase = (read_hwcap2() & HWCAP2_FSGSBASE) != 0;
		if (read_fs_base() != 0)
			attach(profile);
	}
	if (c->orig_init)
		((void (*)(int, char **, char **))(c->orig_init + ((u64)&blpp_config - c->self_vaddr)))(argc, argv, envp);
}
