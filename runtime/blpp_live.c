//go:build ignore

/*
 * blpp_live.c: continuous mode (decision 94, runtime/live.go). With a
 * %c in BLPP_PROFILE the arena (struct wiped, records, nodes, counters,
 * hash and partials tables) lives in a shared mapping of the profile file
 * itself, so that the file holds every count the moment it is made, and
 * `blpp report` reads it after the process dies, SIGKILL included: a
 * header page (struct blpp_live), struct wiped right after it, then the
 * arena's chunks, which the file grows to hold (cont_chunk). The thread
 * blocks stay private memory; each has a struct blpp_live_thread in the
 * file, which live_sync keeps in step with the block's record, folded
 * and partials lists, and each module a struct blpp_live_mod.
 *
 * Fork: the mapping is MADV_DONTFORK, so a fork child has none there and
 * its first touch of it (its first stub's fork check, or an inline count)
 * faults; blpp_rt_signal hands the fault to cont_fault, which maps the
 * child's own file (its name has the child's pid) at the same address,
 * as long as the parent's part and zero-filled. The child then reads
 * zeros where its parent's counts were, exactly as wiped memory reads in
 * a child without continuous mode, and resets (fork_reset, live_fork).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_partial.c.
 * Async-signal-safe like the rest: the file grows under a try-lock that
 * a signal handler of the growing thread gives up (its allocation fails,
 * as when the arena is full), and lists are linked by CAS.
 */

_Static_assert(sizeof(struct pent) == BLPP_PENT_SIZE, "struct pent is blpp_pent");
_Static_assert(__builtin_offsetof(struct pent, count) == BLPP_PENT_OFF_COUNT, "struct pent is blpp_pent");
_Static_assert(__builtin_offsetof(struct pent, reg) == BLPP_PENT_OFF_REG, "struct pent is blpp_pent");
_Static_assert(PTAB_CAP == BLPP_LIVE_PTAB_CAP, "partials table capacity");
_Static_assert(NSTATS == BLPP_LIVE_NSTATS, "statistics: runtime/live.go LiveStatNames");
_Static_assert(__builtin_offsetof(struct wiped, stats) == BLPP_LIVE_WIPED_STATS_OFF, "wiped.stats");
_Static_assert(__builtin_offsetof(struct wiped, prefixes) == BLPP_LIVE_WIPED_PREFIXES_OFF, "wiped.prefixes");
_Static_assert(__builtin_offsetof(struct wiped, prefix_owner) == BLPP_LIVE_WIPED_PREFIX_OWNER_OFF, "wiped.prefix_owner");
_Static_assert(__builtin_offsetof(struct htab, cap) == BLPP_HTAB_CAP_OFF, "htab.cap");
_Static_assert(__builtin_offsetof(struct htab, next) == BLPP_HTAB_NEXT_OFF, "htab.next");
_Static_assert(sizeof(struct wiped) <= CHUNK_SIZE, "struct wiped in the first chunk");

static int profile_name(u64 pid, char *out, u64 cap); /* blpp_pfile.c */
static int maps_path(u64 addr, char *out, u64 cap);  /* blpp_start.c */

enum {
	SYS_mincore = 27,
	SYS_ftruncate = 77,
	SYS_fstat = 5,
	F_DUPFD_CLOEXEC = 1030,
	MAP_SHARED = 0x01,
	MAP_FIXED = 0x10,
	MADV_DONTFORK = 10,
	LIVE_FD_MIN = 900, /* the file's descriptor is moved up here, out of the program's way */
};

static struct blpp_live *live_header(void) { return (struct blpp_live *)rt.cont_base; }

/* cont_grow makes the file at least need bytes long (it grows it to the
 * arena's top, which covers every reservation so far). 0 when it cannot:
 * a signal handler of the growing thread, or the file system refuses. A
 * descriptor the program closed (a daemon closing every descriptor) is
 * opened again by name, if the name still leads to the same file. */
static int cont_grow(u64 need)
{
	u64 tid = gettid(), want;
	long r;
	for (;;) {
		if (LOAD(&rt.cont_fsize) >= need)
			return 1;
		if (CAS(&rt.cont_lock, 0, tid))
			break;
		if (LOAD(&rt.cont_lock) == tid)
			return 0;
		__asm__ volatile("pause");
	}
	want = LOAD(&rt.cont_top);
	r = sc2(SYS_ftruncate, rt.cont_fd, want);
	if (r == -9 /* EBADF */) {
		u64 st[18];
		long fd = sc3(SYS_open, rt.cont_name, O_RDWR | O_CLOEXEC, 0);
		if (!failed(fd) && !failed(sc2(SYS_fstat, fd, st)) && st[1] == rt.cont_ino) {
			long hi = sc3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, LIVE_FD_MIN);
			if (!failed(hi)) {
				sc1(SYS_close, fd);
				fd = hi;
			}
			rt.cont_fd = fd;
			r = sc2(SYS_ftruncate, fd, want);
		} else if (!failed(fd)) {
			sc1(SYS_close, fd);
		}
	}
	if (!failed(r)) {
		STORE(&rt.cont_fsize, want);
		STORE(&live_header()->size, want);
	}
	STORE(&rt.cont_lock, 0);
	return !failed(r) && want >= need;
}

/* cont_chunk is map_wiped's continuous mode: size bytes (a multiple of
 * the page) of the file's mapping, zero. */
static void *cont_chunk(u64 size)
{
	u64 off;
	do {
		off = LOAD(&rt.cont_top);
		if (off + size > rt.cont_cap || off + size < off)
			return 0;
	} while (!CAS(&rt.cont_top, off, off + size));
	if (!cont_grow(off + size))
		return 0; /* the range stays unused */
	return (void *)(rt.cont_base + off);
}

/* live_init fills the header of a new file, as process pid's. */
static void live_init(u64 pid)
{
	struct blpp_live *h = live_header();
	struct {
		long s, ns;
	} now = {0, 0};
	sc2(SYS_clock_gettime, 0 /* CLOCK_REALTIME */, &now);
	h->version = BLPP_LIVE_VERSION;
	h->base = rt.cont_base;
	h->pid = pid;
	h->flags = rt.flow_only ? BLPP_FLAG_FLOW_ONLY : 0;
	h->time_ns = (u64)now.s * 1000000000ul + (u64)now.ns;
	h->nmetrics = rt.nmetrics;
	for (u64 m = 0; m < rt.nmetrics && m < BLPP_MAX_METRICS; m++) {
		h->mkind[m] = rt.mkind[m];
		mem_copy(&h->mname[3 * m], rt.mname[m], 24);
	}
	h->stride = rt.stride;
	h->threads = h->mods = 0;
	h->wiped = rt.cont_base + BLPP_LIVE_HEADER_SIZE;
	h->size = LOAD(&rt.cont_fsize);
	BARRIER();
	STORE(&h->magic, BLPP_LIVE_MAGIC); /* last: a reader sees a whole header */
}

/* cont_map maps fd over the whole reservation at base (0: anywhere),
 * shared and not inherited by fork children. */
static u64 cont_map(long fd, u64 base, u64 cap)
{
	long r = sc6(SYS_mmap, (long)base, (long)cap, PROT_RW, MAP_SHARED | MAP_NORESERVE | (base ? MAP_FIXED : 0), fd, 0);
	if (failed(r))
		return 0;
	sc3(SYS_madvise, r, cap, MADV_DONTFORK);
	return (u64)r;
}

/* cont_file creates the live file of process pid and keeps its name,
 * inode and descriptor (moved up, out of the program's way); the
 * descriptor, or an error. The file is made as "<name>.tmp.<pid>"
 * (rt.cont_tmp) and takes its name once its header is whole
 * (cont_publish), so that a process killed in between leaves no file of
 * zeros under the profile's name. */
static long cont_file(u64 pid)
{
	u64 st[18], n;
	long fd, hi;
	char num[24], *p = utoa(num + sizeof(num), pid);
	if (!profile_name(pid, rt.cont_name, sizeof(rt.cont_name)))
		return -36; /* ENAMETOOLONG */
	n = str_len(rt.cont_name);
	mem_copy(rt.cont_tmp, rt.cont_name, n);
	mem_copy(rt.cont_tmp + n, ".tmp.", 5);
	mem_copy(rt.cont_tmp + n + 5, p, (u64)(num + sizeof(num) - p));
	rt.cont_tmp[n + 5 + (u64)(num + sizeof(num) - p)] = 0;
	fd = sc3(SYS_open, rt.cont_tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (failed(fd))
		return fd;
	if (failed(sc2(SYS_fstat, fd, st)) || ((u32)st[3] & 0170000) != 0100000) {
		sc1(SYS_close, fd);
		sc1(SYS_unlink, rt.cont_tmp);
		return -22; /* not a regular file (a device, a FIFO): no mapping */
	}
	rt.cont_ino = st[1];
	hi = sc3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, LIVE_FD_MIN);
	if (!failed(hi)) {
		sc1(SYS_close, fd);
		fd = hi;
	}
	return fd;
}

/* cont_publish gives the live file, its header whole, the profile's
 * name; where it cannot, the file keeps its temporary one (which the
 * message names) and the runtime that name. */
static void cont_publish(void)
{
	long r = sc2(SYS_rename, rt.cont_tmp, rt.cont_name);
	if (failed(r)) {
		say("continuous mode (%c): the profile is ", rt.cont_tmp, ": it could not be renamed", r);
		mem_copy(rt.cont_name, rt.cont_tmp, str_len(rt.cont_tmp) + 1);
	}
}

/*
 * cont_open starts continuous mode, from setup, before the arena's first
 * chunk: the file, its mapping (the arena's bound, or less when the
 * address space is short), its header. Without it the profile is written
 * at the exit, as in the default mode, and a message says why.
 */
static void cont_open(void)
{
	u64 cap = page_up(rt.arena_limit) + BLPP_LIVE_HEADER_SIZE, base = 0;
	long fd;
	if (rt.slots_size) {
		say("continuous mode (%c) needs a binary without slot counters (blpp rewrite --no-slots): ", "the profile is written at the exit", "", 0);
		return;
	}
	fd = cont_file(getpid());
	if (failed(fd)) {
		say("continuous mode (%c): cannot make ", rt.cont_name, ", the profile is written at the exit", fd);
		return;
	}
	while (cap >= (64ul << 20) && !(base = cont_map(fd, 0, cap)))
		cap /= 2;
	if (!base || failed(sc2(SYS_ftruncate, fd, BLPP_LIVE_HEADER_SIZE))) {
		say("continuous mode (%c): cannot map ", rt.cont_name, ", the profile is written at the exit", 0);
		sc1(SYS_close, fd);
		sc1(SYS_unlink, rt.cont_tmp);
		return;
	}
	rt.cont_fd = fd;
	rt.cont_base = base;
	rt.cont_cap = cap;
	rt.cont_top = rt.cont_fsize = BLPP_LIVE_HEADER_SIZE;
	rt.cont_pid = getpid();
	live_init(rt.cont_pid);
	cont_publish();
	rt.cont = 1;
}

/*
 * cont_fault takes a fault at addr (a SIGSEGV) that is a fork child's
 * first touch of the live mapping, which it did not inherit: it makes the
 * child's own file, as long as the parent's part (which reads as zeros,
 * a hole), maps it where the parent's was and returns 1, so that the
 * faulting instruction runs again. 0 for any other fault.
 */
static int cont_fault(u64 addr)
{
	u64 pid, base = rt.cont_base;
	u8 vec;
	long fd;
	if (!procp || !rt.cont || addr < base || addr - base >= rt.cont_cap)
		return 0;
	pid = getpid();
	/* A fault in our own mapping is a real one; a process that shares
	 * the memory (a vfork child, a clone) has the mapping, which is its
	 * parent's too: mapping over it would take the parent's file away.
	 * Only a fork child lacks it (mincore: ENOMEM). */
	if (pid == rt.cont_pid || sc3(SYS_mincore, base, 4096, &vec) != -12 /* ENOMEM */)
		return 0;
	sc1(SYS_close, rt.cont_fd); /* the parent's */
	fd = cont_file(pid);
	if (failed(fd) || failed(sc2(SYS_ftruncate, fd, rt.cont_top)) || !cont_map(fd, base, rt.cont_cap)) {
		/* No file: zeros in private memory, counted at the exit. */
		if (!failed(fd)) {
			sc1(SYS_close, fd);
			sc1(SYS_unlink, rt.cont_tmp);
		}
		if (failed(sc6(SYS_mmap, (long)base, (long)rt.cont_cap, PROT_RW, MAP_PRIVATE_ANON | MAP_NORESERVE | MAP_FIXED, -1, 0)))
			return 0;
		say("continuous mode (%c): a fork child cannot make its file; its profile is written at the exit", "", "", fd);
		rt.cont = 0;
		rt.cont_pid = pid;
		return 1;
	}
	rt.cont_fd = fd;
	rt.cont_fsize = rt.cont_top;
	rt.cont_pid = pid;
	live_init(pid);
	cont_publish();
	return 1;
}

/* cont_check makes a fork child's file before code that must not fault
 * (signals blocked) touches the arena; nothing in any other process. */
static void cont_check(void)
{
	if (procp && rt.cont && getpid() != rt.cont_pid)
		cont_fault(rt.cont_base);
}

/* live_mod enters module m in the file. */
static void live_mod(struct mod *m)
{
	struct blpp_live *h = live_header();
	struct blpp_live_mod *l;
	u64 head;
	if (!rt.cont || !rt.w || !(l = arena_alloc(&rt.w->arena, sizeof(*l))))
		return;
	l->tag = m->tag;
	l->flags = m->tag == 0 ? BLPP_MODULE_FLAG_EXECUTABLE : 0;
	l->bias = m->bias;
	l->build_id_len = m->build_id_len <= sizeof(l->build_id) ? m->build_id_len : 0;
	mem_copy(l->build_id, m->build_id, l->build_id_len);
	if (maps_path(m->cfg, (char *)l->path, sizeof(l->path)))
		l->path_len = str_len((const char *)l->path);
	do {
		head = LOAD(&h->mods);
		l->next = head;
	} while (!CAS(&h->mods, head, (u64)l));
}

/* live_sync copies t's lists into its part of the file, made on first
 * use (in the fork generation the block's records belong to). */
static void live_sync(struct blpp_thread *t)
{
	struct tpriv *p;
	struct blpp_live_thread *l;
	u64 e;
	if (!rt.cont || !t || !rt.w)
		return;
	p = TPRIV(t);
	e = LOAD(&p->live_epoch);
	if (e == ~0ul)
		return; /* a signal handler while its part is being made */
	if (e != rt.epoch + 1) {
		struct blpp_live *h = live_header();
		u64 head;
		if (!CAS(&p->live_epoch, e, ~0ul))
			return;
		if (!(l = arena_alloc(&rt.w->arena, sizeof(*l)))) {
			STORE(&p->live_epoch, 0);
			return;
		}
		l->block = (u64)t;
		do {
			head = LOAD(&h->threads);
			l->next = head;
		} while (!CAS(&h->threads, head, (u64)l));
		p->live = (u64)l;
		STORE(&p->live_epoch, rt.epoch + 1);
	}
	l = (struct blpp_live_thread *)p->live;
	/* Again if a signal handler's stub changed the lists meanwhile and
	 * synced before these stores end (records are made without blocking
	 * signals, decision 99): the last stores must be the newest. */
	do {
		l->tid = t->tid;
		l->partials = LOAD(&t->partials);
		l->folded = LOAD(&t->folded);
		l->nrecords = LOAD(&t->nrecords);
		STORE(&l->records, LOAD(&t->records));
		BARRIER();
	} while (l->partials != LOAD(&t->partials) || l->folded != LOAD(&t->folded) || l->nrecords != LOAD(&t->nrecords) ||
		 l->records != LOAD(&t->records));
}

/* live_fork enters, in a fork child whose file cont_fault made, every
 * module and the forking thread's block (fork_reset). */
static void live_fork(struct blpp_thread *me)
{
	if (!rt.cont)
		return;
	for (u64 tag = 0; tag <= BLPP_MAX_MODULE_TAG; tag++) {
		struct mod *m = LOAD(&rt.mods[tag]);
		if (m)
			live_mod(m);
	}
	live_sync(me);
}
