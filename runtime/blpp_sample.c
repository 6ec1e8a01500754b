//go:build ignore

/*
 * blpp_sample.c: sampled attribution [decision 92; issue 28]. With
 * Config.sampler_vaddr set, every thread with a block samples its own
 * execution: a perf event (perf_event_open on the thread, user space
 * only, one signal per overflow sent to the thread with F_SETOWN_EX and
 * F_SETSIG) or, where perf refuses a software clock, a POSIX timer on
 * the thread's CPU clock (timer_create(CLOCK_THREAD_CPUTIME_ID) with
 * SIGEV_THREAD_ID). A hardware event the machine cannot sample falls back
 * to cpu-clock at BLPP_FALLBACK_SAMPLE_PERIOD, once, said on stderr and
 * recorded in the profile (kind fallback).
 *
 * The signal is a real-time one the program does not use (sampler.signal,
 * default BLPP_DEFAULT_SAMPLE_SIGNAL, SIGRTMAX-1; if a handler is already
 * installed for it at start the next lower free one down to 40). Nothing
 * of the program's signals or timers is touched, so its own SIGPROF and
 * setitimer keep working. The handler (on_sample) makes no system call
 * when FSGSBASE is usable (else one arch_prctl to read %gs), takes no
 * lock and allocates nothing: it reads the interrupted %rip and general
 * registers from the ucontext, the running record and the path register
 * from the thread block, and adds one to the entry (record, pc, register)
 * of the thread's sample table, preallocated when its sampler starts
 * (MADV_WIPEONFORK: a fork child's table is empty). The mapping of a pc
 * to a function and block happens in the report, through the binary's
 * address map (rewriter/addrmap): the runtime only records where the
 * pc's mapping came from, at write time (/proc/self/maps).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_writer.c;
 * sample_init (setup), sample_thread (new blocks, fork_reset) and the
 * writer's hooks are declared in blpp_state.c.
 */

enum {
	SYS_timer_create = 222,
	SYS_timer_settime = 223,
	SYS_timer_delete = 226,
	F_SETFL = 4,
	F_SETSIG = 10,
	F_SETOWN_EX = 15,
	F_OWNER_TID = 0,
	O_ASYNC = 020000,
	SIGEV_THREAD_ID = 4,
	CLOCK_THREAD_CPUTIME_ID = 3,
	SAMPLE_MIN_SIGNAL = 40,
	/* A thread's sample table: open addressing, SAMPLE_PROBES tries. */
	SAMPLE_BITS = 16,
	SAMPLE_CAP = 1 << SAMPLE_BITS,
	SAMPLE_PROBES = 64,
};

/* Where samples come from (the profile's source field). */
enum { SSRC_NONE, SSRC_PERF, SSRC_TIMER };

/* The kernel's ucontext [arch/x86/include/uapi/asm/ucontext.h,
 * sigcontext.h]: uc_flags, uc_link, uc_stack (24 bytes), then the
 * general registers in this order. */
#define UC_GREGS 40
enum { G_R8, G_R9, G_R10, G_R11, G_R12, G_R13, G_R14, G_R15, G_RDI, G_RSI, G_RBP, G_RBX, G_RDX, G_RAX, G_RCX, G_RSP, G_RIP };

/* One entry of a thread's sample table; count is published last. */
struct sent {
	u64 rec, pc;
	s64 reg;
	u64 count;
};

/* struct samp: the process's sampling, shared by every module's copy
 * (rt.samp, mapped by sample_init). */
struct samp {
	u32 type;
	u64 config, period;
	int sig;
	int src;          /* SSRC_PERF or SSRC_TIMER */
	u8 kind;          /* BLPP_METRIC_REAL or _FALLBACK */
	char req[24];     /* the event asked for */
	char event[24];   /* the event sampled */
	u64 taken;        /* signals handled */
	u64 lost;         /* signals on a thread without a block of its own */
	u64 fails;        /* threads whose sampler could not start */
	u64 warned;
};

struct samp_sigaction {
	void (*handler)(int, void *, void *);
	u64 flags;
	void (*restorer)(void);
	u64 mask;
};

void blpp_sigreturn(void); /* blpp_stubs.S */

struct samp_sigevent {
	u64 value;
	int signo, notify;
	int tid;
	int pad[11];
};

struct samp_itimerspec {
	long int_s, int_ns, val_s, val_ns;
};

/* greg maps Func.path_reg (1 + the register's number, rax 0 ... r15 15)
 * to its slot in the ucontext. */
static int greg(u64 pr)
{
	static const unsigned char g[16] = {G_RAX, G_RCX, G_RDX, G_RBX, G_RSP, G_RBP, G_RSI, G_RDI,
					    G_R8, G_R9, G_R10, G_R11, G_R12, G_R13, G_R14, G_R15};
	return pr >= 1 && pr <= 16 ? g[pr - 1] : -1;
}

/* sample_self is the calling thread's own block, 0 when it has none (%gs
 * 0, a scratch block, its creator's). Signal-safe: reads only. */
static struct blpp_thread *sample_self(void)
{
	u64 base = 0;
	struct blpp_thread *t;
	if (rt.fsgsbase)
		base = gs_base();
	else if (failed(sc2(SYS_arch_prctl, ARCH_GET_GS, &base)))
		return 0;
	if (!base)
		return 0;
	t = (struct blpp_thread *)base;
	return t->self == base && t->owner == thread_pointer() ? t : 0;
}

/* sample_hash places a key in the table: the page by the pc's 4 KiB page
 * of code, the entry in it by the whole key. The samples of a hot loop
 * then touch a page or two of the table, not one page per key (each
 * first touch is a page fault, which costs several microseconds in a
 * virtual machine). */
static u64 sample_hash(u64 rec, u64 pc, s64 reg)
{
	enum { PER_PAGE = 4096 / sizeof(struct sent) };
	u64 page = ((pc >> 12) * 0x9e3779b97f4a7c15ull) >> (64 - SAMPLE_BITS + 7);
	u64 h = rec * 0x9e3779b97f4a7c15ull ^ pc * 0xc2b2ae3d27d4eb4full ^ (u64)reg * 0x165667b19e3779f9ull;
	_Static_assert(PER_PAGE == 128, "entries per page");
	return (page * PER_PAGE + ((h ^ (h >> 31)) & (PER_PAGE - 1))) & (SAMPLE_CAP - 1);
}

/*
 * on_sample is the sampling signal's handler. The running record is the
 * one running(t) names (the activation whose code runs, or its caller
 * while a callee's entry, a leaf without a frame, uninstrumented code or
 * the runtime runs: the report tells these apart by the pc). The path
 * register is that record's function's (Func.path_reg: a general register
 * in the ucontext; else Thread.r); the report uses it only where the pc
 * lies in that function's code and the pair names a path prefix.
 */
static void on_sample(int sig, void *si, void *ucv)
{
	const u64 *g = (const u64 *)((const u8 *)ucv + UC_GREGS);
	struct samp *s = rt.samp;
	struct blpp_thread *t;
	struct blpp_record *r = 0;
	struct sent *tab;
	u64 h, pc = g[G_RIP], w = 1;
	s64 reg;
	(void)sig;
	if (!s)
		return;
	t = sample_self();
	if (!t || !(tab = (struct sent *)TPRIV(t)->samp_tab)) {
		ADD(&s->lost, 1);
		return;
	}
	/* A CPU-clock timer fires at the scheduler's tick, however short
	 * its period: one signal then stands for its expirations, 1 +
	 * si_overrun (siginfo's int at byte 20 for timers). */
	if (TPRIV(t)->samp_src == SSRC_TIMER && si) {
		int ov = ((const int *)si)[5];
		w += ov > 0 ? (u64)ov : 0;
	}
	ADD(&s->taken, w);
	if (rt.w && LOAD(&rt.w->live) && TPRIV(t)->samp_epoch == rt.epoch + 1)
		r = running(t);
	reg = t->r;
	if (r && instr(r->func)) {
		int k = greg(func_of(r->func)->path_reg);
		if (k >= 0)
			reg = (s64)g[k];
	}
	h = sample_hash((u64)r, pc, reg);
	for (u64 i = 0; i < SAMPLE_PROBES; i++) {
		struct sent *e = &tab[(h + i) & (SAMPLE_CAP - 1)];
		u64 c = LOAD(&e->count);
		if (!c) {
			e->rec = (u64)r;
			e->pc = pc;
			e->reg = reg;
			STORE(&e->count, w);
			return;
		}
		if (e->rec == (u64)r && e->pc == pc && e->reg == reg) {
			STORE(&e->count, c + w);
			return;
		}
	}
	TPRIV(t)->samp_dropped += w;
}

/* sample_perf opens the sampling event on the calling thread, its
 * overflows signalled to it; the descriptor, or a negative errno. */
static long sample_perf(u32 type, u64 config, u64 period, int sig)
{
	struct blpp_perf_attr a;
	struct {
		int type, pid;
	} owner = {F_OWNER_TID, (int)gettid()};
	long fd;
	blpp_pmu_zero(&a, sizeof(a));
	a.type = type;
	a.size = sizeof(a);
	a.config = config;
	a.sample_period = period;
	a.wakeup_events = 1;
	/* User space only: a signal is then raised only while the thread
	 * runs its own code, never inside a system call (which it would
	 * interrupt: EINTR). */
	a.flags = BLPP_PERF_ATTR_EXCLUDE_KERNEL | BLPP_PERF_ATTR_EXCLUDE_HV;
	fd = sc5(BLPP_PMU_SYS_perf_event_open, &a, 0, -1, -1, BLPP_PERF_FLAG_FD_CLOEXEC);
	if (failed(fd))
		return fd;
	if (failed(sc3(SYS_fcntl, fd, F_SETOWN_EX, &owner)) || failed(sc3(SYS_fcntl, fd, F_SETSIG, sig)) ||
	    failed(sc3(SYS_fcntl, fd, F_SETFL, O_ASYNC))) {
		sc1(SYS_close, fd);
		return -22;
	}
	return fd;
}

/* sample_timer starts a timer on the calling thread's CPU clock that
 * signals it every period ns; the timer id, or a negative errno. */
static long sample_timer(u64 period, int sig)
{
	struct samp_sigevent ev;
	struct samp_itimerspec its;
	int id = 0;
	long r;
	blpp_pmu_zero(&ev, sizeof(ev));
	ev.signo = sig;
	ev.notify = SIGEV_THREAD_ID;
	ev.tid = (int)gettid();
	r = sc3(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &ev, &id);
	if (failed(r))
		return r;
	its.int_s = its.val_s = (long)(period / 1000000000ul);
	its.int_ns = its.val_ns = (long)(period % 1000000000ul);
	r = sc4(SYS_timer_settime, id, 0, &its, 0);
	if (failed(r)) {
		sc1(SYS_timer_delete, id);
		return r;
	}
	return id;
}

/* sample_stop stops t's sampler (a fork child's copy of its parent's
 * descriptor, a dead thread's whose block is taken over). */
static void sample_stop(struct blpp_thread *t)
{
	struct tpriv *p = TPRIV(t);
	if (p->samp_src == SSRC_PERF)
		sc1(SYS_close, p->samp_id);
	else if (p->samp_src == SSRC_TIMER && p->samp_epoch == rt.epoch + 1)
		sc1(SYS_timer_delete, p->samp_id); /* timers are not inherited by a fork child */
	p->samp_src = SSRC_NONE;
}

/*
 * sample_thread starts the calling thread's sampler on its block t: a
 * new thread, a dead thread's block taken over, the main thread at
 * start, a fork child at its reset. The sample table is mapped first, so
 * the handler never finds a sampler without one.
 */
static void sample_thread(struct blpp_thread *t)
{
	struct samp *s = rt.samp;
	struct tpriv *p = TPRIV(t);
	long r = -22;
	if (!s || !t)
		return;
	sample_stop(t);
	p->samp_epoch = rt.epoch + 1;
	if (!p->samp_tab) {
		/* Reserved, touched as used, empty in a fork child; not the
		 * arena's (its bound is for the trees). */
		void *m = map_anon(SAMPLE_CAP * sizeof(struct sent), MAP_NORESERVE);
		if (m && !rt.nowipe)
			sc3(SYS_madvise, m, SAMPLE_CAP * sizeof(struct sent), MADV_WIPEONFORK);
		p->samp_tab = (u64)m;
	}
	if (!p->samp_tab) {
		ADD(&s->fails, 1);
		return;
	}
	if (s->src == SSRC_PERF && !failed(r = sample_perf(s->type, s->config, s->period, s->sig))) {
		p->samp_src = SSRC_PERF;
	} else if (s->src == SSRC_TIMER && !failed(r = sample_timer(s->period, s->sig))) {
		p->samp_src = SSRC_TIMER;
	} else {
		ADD(&s->fails, 1);
		if (CAS(&s->warned, 0, 1))
			say("cannot start a thread's sampler: its samples are missing", "", "", r);
		return;
	}
	p->samp_id = (u64)r;
}

/* sample_signal installs on_sample for the configured signal or, if the
 * program's side already has a handler there, the next lower free one;
 * the signal, or 0. */
static int sample_signal(int want)
{
	for (int sig = want; sig >= SAMPLE_MIN_SIGNAL; sig--) {
		struct samp_sigaction old, sa = {on_sample, SA_SIGINFO | SA_RESTART | SA_RESTORER, blpp_sigreturn, ~0ul};
		if (failed(sc4(SYS_rt_sigaction, sig, 0, &old, 8)) || old.handler != 0)
			continue;
		if (!failed(sc4(SYS_rt_sigaction, sig, &sa, 0, 8)))
			return sig;
	}
	return 0;
}

/* sample_handlers makes this copy's on_sample the sampling signal's
 * handler (set_handlers: the copy that installs the runtime's handlers,
 * or takes them over from a copy being unloaded, decision 81). */
static void sample_handlers(void)
{
	struct samp_sigaction sa = {on_sample, SA_SIGINFO | SA_RESTART | SA_RESTORER, blpp_sigreturn, ~0ul};
	if (rt.samp)
		sc4(SYS_rt_sigaction, rt.samp->sig, &sa, 0, 8);
}

/* sample_ignore ignores the sampling signal (handlers_drop: the last
 * instrumented module is gone, and its code with the handler); the
 * samplers of live threads may still fire. */
static void sample_ignore(void)
{
	struct samp_sigaction sa = {(void (*)(int, void *, void *))1 /* SIG_IGN */, SA_RESTORER, blpp_sigreturn, 0};
	if (rt.samp)
		sc4(SYS_rt_sigaction, rt.samp->sig, &sa, 0, 8);
}

/*
 * sample_init reads the configuration's sampler (setup, the first module
 * to start) and decides where samples come from, by opening the event
 * once on the main thread: perf; for a software clock perf refuses, the
 * thread CPU-clock timer; for any other event that cannot be opened,
 * cpu-clock (perf or timer) at the fallback period, said on stderr.
 */
static void sample_init(const volatile struct blpp_config *c, u64 bias)
{
	const struct blpp_sampler *cs;
	struct samp *s;
	long r;
	int sig;
	if (!c->sampler_vaddr)
		return;
	cs = (const struct blpp_sampler *)(c->sampler_vaddr + bias);
	if (!cs->period || cs->period > (1ul << 40) ||
	    !(sig = sample_signal(cs->signal >= SAMPLE_MIN_SIGNAL && cs->signal <= NSIG ? (int)cs->signal : BLPP_DEFAULT_SAMPLE_SIGNAL))) {
		say("cannot install the sampling signal handler: no samples", "", "", 0);
		return;
	}
	if (!(s = map_anon(page_up(sizeof(struct samp)), 0)))
		return;
	s->sig = sig;
	mem_copy(s->req, (const void *)cs->name, sizeof(s->req));
	s->req[sizeof(s->req) - 1] = 0;
	mem_copy(s->event, s->req, sizeof(s->event));
	s->type = (u32)cs->type;
	s->config = cs->config;
	s->period = cs->period;
	s->kind = BLPP_METRIC_REAL;
	r = cs->flags & BLPP_SAMPLER_FLAG_TIMER ? -95 /* EOPNOTSUPP */ : sample_perf(s->type, s->config, s->period, sig);
	if (!failed(r)) {
		sc1(SYS_close, r);
		s->src = SSRC_PERF;
	} else if (s->type == BLPP_PERF_TYPE_SOFTWARE && s->config <= BLPP_PERF_COUNT_SW_TASK_CLOCK) {
		s->src = SSRC_TIMER; /* the thread's CPU clock is what both clocks measure */
	} else {
		/* cpu-clock stands in: perf's software clock, or the timer */
		s->type = BLPP_PERF_TYPE_SOFTWARE;
		s->config = 0;
		s->period = BLPP_FALLBACK_SAMPLE_PERIOD;
		s->kind = BLPP_METRIC_FALLBACK;
		mem_copy(s->event, "cpu-clock", 10);
		long f = sample_perf(s->type, s->config, s->period, sig);
		s->src = failed(f) ? SSRC_TIMER : SSRC_PERF;
		if (!failed(f))
			sc1(SYS_close, f);
		say("cannot sample ", s->req, " (perf_event_open): sampling cpu-clock at 1 kHz instead (kind fallback)", r);
	}
	STORE(&rt.samp, s);
}

/* ---- the profile's SAMPLES section (docs/profile-format.md) ---- */

/* An executable mapping of the process at write time. */
struct smap {
	u64 start, end, off, obj;
};

/* sample_maps reads the executable mappings from /proc/self/maps into
 * maps (struct smap, in address order) and their distinct file names
 * into names (each NUL-terminated, in order of first appearance); it
 * returns how many names. Anonymous ones are "[anon]". */
static u64 sample_maps(struct obuf *maps, struct obuf *names)
{
	char buf[4096], line[600];
	u64 ln = 0, nnames = 0;
	long fd = sc3(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0), r;
	if (failed(fd))
		return 0;
	while (!failed(r = sc3(SYS_read, fd, buf, sizeof(buf))) && r > 0) {
		for (long i = 0; i < r; i++) {
			if (buf[i] != '\n') {
				if (ln < sizeof(line) - 1)
					line[ln++] = buf[i];
				continue;
			}
			line[ln] = 0;
			/* "start-end perms offset dev inode   path" */
			struct smap m = {0, 0, 0, 0};
			u64 k = 0, *v = &m.start;
			int field = 0;
			const char *path = "[anon]", *perms = 0;
			for (; k < ln; k++) {
				char ch = line[k];
				int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
				if (field == 0 && ch == '-') {
					v = &m.end;
				} else if (ch == ' ') {
					field++;
					while (k + 1 < ln && line[k + 1] == ' ' && field >= 5)
						k++;
					if (field == 1)
						perms = &line[k + 1];
					if (field == 2)
						v = &m.off;
					if (field == 5) {
						if (k + 1 < ln)
							path = &line[k + 1];
						break;
					}
				} else if ((field == 0 || field == 2) && d >= 0) {
					*v = *v * 16 + (u64)d;
				}
			}
			ln = 0;
			if (!perms || perms[2] != 'x')
				continue;
			/* the name's number: names seen before, else a new one */
			u64 off = 0, idx = 0;
			for (; idx < nnames; idx++) {
				if (str_eq((const char *)names->p + off, path))
					break;
				off += str_len((const char *)names->p + off) + 1;
			}
			if (idx == nnames) {
				ob_put(names, path, str_len(path) + 1);
				nnames++;
			}
			m.obj = idx;
			ob_put(maps, &m, sizeof(m));
		}
	}
	sc1(SYS_close, fd);
	return maps->err || names->err ? 0 : nnames;
}

/* A sample ready to encode: record index + 1, object + 1, offset. */
struct senc {
	u64 rec, obj, off;
	s64 reg;
	u64 count;
};

static int senc_less(const struct senc *a, const struct senc *b)
{
	if (a->rec != b->rec)
		return a->rec < b->rec;
	if (a->obj != b->obj)
		return a->obj < b->obj;
	if (a->off != b->off)
		return a->off < b->off;
	return a->reg < b->reg;
}
DEFINE_SIFT(sort_sencs, struct senc, senc_less)
DEFINE_HEAPSORT(sort_sencs, struct senc, senc_less)

/*
 * sample_thread_write appends thread number ti's samples to out (uv ti,
 * uv n, sample*), when it has any; nrec is the number of its records
 * the THREAD section holds. A sample's record is kept only when it is
 * one of those (ptrs, by index); its pc becomes (object, file offset).
 */
static void sample_thread_write(struct blpp_thread *t, u64 ti, u64 nrec, const struct obuf *maps, struct obuf *out,
				struct obuf *scratch)
{
	struct sent *tab = (struct sent *)TPRIV(t)->samp_tab;
	const struct smap *mp = (const struct smap *)maps->p;
	u64 nm = maps->len / sizeof(struct smap), n = 0, nout = 0, i = 0;
	struct obuf ptrs = {0};
	struct senc *e;
	if (!tab || !rt.samp)
		return;
	for (struct blpp_record *r = R(LOAD(&t->records)); r && i < nrec; r = R(LOAD(&r->next)), i++)
		ob_put(&ptrs, &r, sizeof(r));
	scratch->len = 0;
	for (u64 k = 0; k < SAMPLE_CAP; k++) {
		u64 c = LOAD(&tab[k].count);
		struct senc x = {0, 0, 0, 0, c};
		struct blpp_record *r;
		if (!c)
			continue;
		r = R(tab[k].rec);
		if (r && !ptrs.err && r->index < nrec && ((struct blpp_record **)ptrs.p)[r->index] == r)
			x.rec = (u64)r->index + 1;
		x.reg = tab[k].reg;
		x.off = tab[k].pc;
		for (u64 lo = 0, hi = nm; lo < hi;) { /* the mapping holding pc */
			u64 mid = (lo + hi) / 2;
			if (tab[k].pc < mp[mid].start)
				hi = mid;
			else if (tab[k].pc >= mp[mid].end)
				lo = mid + 1;
			else {
				x.obj = mp[mid].obj + 1;
				x.off = tab[k].pc - mp[mid].start + mp[mid].off;
				break;
			}
		}
		ob_put(scratch, &x, sizeof(x));
	}
	ob_free(&ptrs);
	if (scratch->err)
		return;
	e = (struct senc *)scratch->p;
	n = scratch->len / sizeof(*e);
	if (!n)
		return;
	sort_sencs(e, n);
	for (u64 a = 0; a < n; a++) /* equal keys (two mappings of one file) add up */
		if (nout == 0 || senc_less(&e[nout - 1], &e[a]))
			e[nout++] = e[a];
		else
			e[nout - 1].count += e[a].count;
	ob_uv(out, ti);
	ob_uv(out, nout);
	for (u64 a = 0; a < nout; a++) {
		ob_uv(out, e[a].rec);
		ob_uv(out, e[a].obj);
		ob_uv(out, e[a].off);
		ob_sv(out, e[a].reg);
		ob_uv(out, e[a].count);
	}
}

/* sample_section encodes the SAMPLES payload: what was sampled, the
 * objects, then the threads (body: nthreads thread groups). */
static void sample_section(struct obuf *sec, const struct obuf *names, u64 nnames, const struct obuf *body, u64 nthreads)
{
	struct samp *s = rt.samp;
	u64 dropped = 0, off = 0;
	for (struct blpp_thread *t = LOAD(&rt.threads); t; t = (struct blpp_thread *)t->next)
		dropped += LOADR(&TPRIV(t)->samp_dropped);
	ob_str(sec, s->req);
	ob_str(sec, s->event);
	ob_u8(sec, s->kind);
	ob_uv(sec, (u64)s->src);
	ob_str(sec, s->type == BLPP_PERF_TYPE_SOFTWARE && s->config <= BLPP_PERF_COUNT_SW_TASK_CLOCK ? "nanoseconds" : "events");
	ob_uv(sec, s->period);
	ob_uv(sec, (u64)s->sig);
	ob_uv(sec, LOADR(&s->taken));
	ob_uv(sec, dropped);
	ob_uv(sec, LOADR(&s->lost) + LOADR(&s->fails));
	ob_uv(sec, nnames);
	for (u64 i = 0; i < nnames; i++) {
		const char *nm = (const char *)names->p + off;
		ob_str(sec, nm);
		off += str_len(nm) + 1;
	}
	ob_uv(sec, nthreads);
	ob_put(sec, body->p, body->len);
	if (body->err || names->err)
		sec->err = 1;
}

/* sample_fork forgets the parent's counts in a fork child (fork_reset):
 * its tables are wiped already, its statistics are not. */
static void sample_fork(void)
{
	struct samp *s = rt.samp;
	if (!s)
		return;
	s->taken = s->lost = s->fails = 0;
	for (struct blpp_thread *t = LOAD(&rt.threads); t; t = (struct blpp_thread *)t->next)
		TPRIV(t)->samp_dropped = 0;
}
