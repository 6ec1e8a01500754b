//go:build ignore

/*
 * blpp_writer.c: the profile writer [DESIGN 11, docs/profile-format.md,
 * blpp_format.h], on blpp_obuf.c's buffers and sorts: per thread its
 * records parents first, paths (dense and
 * hashed, with their latencies: blpp_latency.c), partials (found while
 * running, and the live frames of the calling thread), folded calls and
 * fork prefixes; STATS; the checksum; writing to "<name>.tmp.<pid>" and
 * renaming, or in place for a device or FIFO (the name and the lock:
 * blpp_pfile.c).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_pfile.c.
 * Runs at exit, in signal handlers and at the dump signal, so everything
 * is async-signal-safe: memory from mmap/mremap, raw syscalls, and one
 * try-lock (rt.write_lock) that a second writer waits on briefly or gives
 * up. The output is canonical: what cct's writer makes of the same model.
 */

/* put_path encodes one path entry: id, count, metric sums (unavailable
 * metrics are written as 0, as the format wants). */
static inline __attribute__((always_inline)) void put_path(struct obuf *out, u64 id, const u64 *v)
{
	ob_uv(out, id);
	ob_uv(out, v[0]);
	for (u64 m = 0; m < rt.nmetrics; m++)
		ob_uv(out, rt.mkind[m] == BLPP_METRIC_UNAVAILABLE ? 0 : v[1 + m]);
}

/* next_ran is the first path id from id on, below n, whose count in the
 * dense array c (stride words a path) is not 0; n if none. Most are 0:
 * with counts alone (stride 1) they are skipped four at a time. */
static u64 next_ran(const u64 *c, u64 id, u64 n, u64 stride)
{
	for (; stride == 1 && id + 4 <= n; id += 4)
		if (LOADR(&c[id]) | LOADR(&c[id + 1]) | LOADR(&c[id + 2]) | LOADR(&c[id + 3]))
			break;
	while (id < n && !LOADR(&c[id * stride]))
		id++;
	return id;
}


/* FEW_PATHS is how many distinct keys hash_paths_few sorts on its stack. */
enum { FEW_PATHS = 32 };

/* hash_paths_few is hash_paths for the common record: counts alone, no
 * latencies, no hot twin, at most FEW_PATHS keys in its tables (a cold
 * record's table of 2 to 16 entries, decision 99). Each key found goes
 * into its place in a sorted array on the stack as the tables are read,
 * a key already there adding its count, and the paths go out from it:
 * no scratch buffer, no sort, no merge with a dense array (decision
 * 152). The output is hash_paths' to the byte. Returns the number of
 * paths, or ~0 with nothing written when there are more keys. */
static u64 hash_paths_few(struct htab *h, struct obuf *out)
{
	struct {
		u64 key, c;
	} few[FEW_PATHS];
	u64 n = 0, np = 0, hw = hent_words();
	for (; h; h = (struct htab *)LOAD(&h->next)) {
		u64 *src = h->e, *end = src + h->cap * hw;
		for (; src < end; src += hw) {
			u64 key = LOAD(&src[0]), j = n;
			if (!key)
				continue; /* most entries: tables stay at most half full */
			while (j > 0 && few[j - 1].key > key)
				j--;
			if (j > 0 && few[j - 1].key == key) { /* in an earlier table too */
				few[j - 1].c += LOADR(&src[1]);
				continue;
			}
			if (n == FEW_PATHS)
				return ~(u64)0;
			for (u64 k = n++; k > j; k--)
				few[k] = few[k - 1];
			few[j].key = key;
			few[j].c = LOADR(&src[1]);
		}
	}
	for (u64 i = 0; i < n; i++) {
		if (!few[i].c)
			continue;
		put_path(out, few[i].key - 1, &few[i].c);
		np++;
	}
	return np;
}

/* hash_paths encodes the paths of a hashed record into out, summing a
 * path found in several tables and in the dense array of its hot twin tw
 * (0: none, decision 99), and their latency entries into lat (rec: the
 * record's index in the thread; *nlat counts them); returns the number
 * of paths. The tables' entries are gathered and sorted by key; the
 * twin's array, in key order already, is merged with them as it is
 * scanned. */
static u64 hash_paths(struct htab *h, struct blpp_record *tw, struct obuf *out, struct obuf *scratch, u64 rec, struct obuf *lat,
		      u64 *nlat)
{
	struct hent *e;
	u64 n = 0, np = 0, hw = hent_words(), stride = rt.stride, nv = 1 + rt.nmetrics;
	u64 dn = tw ? tw->dense_n : 0, di = 0, *dv = tw ? counts_of(tw) + 1 : 0;
	int keep_lat = rt.latency, wl = writes_latency();
	struct lat a;
	if (keep_lat) /* 552 bytes, then reset path by path: most images keep no latencies */
		mem_zero(&a, sizeof(a));
	scratch->len = 0;
	for (; h; h = (struct htab *)LOAD(&h->next)) {
		u64 cap = h->cap;
		if (!ob_reserve(scratch, cap * sizeof(struct hent)))
			return 0;
		e = (struct hent *)(scratch->p + scratch->len);
		for (u64 i = 0; i < cap; i++) {
			u64 *src = &h->e[i * hw], key = LOAD(&src[0]);
			if (!key)
				continue; /* most entries: tables stay at most half full */
			e->key = key;
			e->v = src + 1;
			e++;
		}
		scratch->len = (u64)((u8 *)e - scratch->p);
	}
	n = scratch->len / sizeof(*e);
	if (!ob_reserve(scratch, scratch->len)) /* sort_hents' room */
		return 0;
	e = sort_hents((struct hent *)scratch->p, (struct hent *)(scratch->p + scratch->len), n);
	for (u64 i = 0;;) {
		u64 key, sum[1 + BLPP_MAX_METRICS] = {0}, le;
		di = next_ran(dv, di, dn, stride);
		if (di < dn && (i >= n || di + 1 <= e[i].key))
			key = di + 1;
		else if (i < n)
			key = e[i].key;
		else
			break;
		if (keep_lat)
			lat_reset(&a);
		if (di < dn && di + 1 == key) {
			const u64 *v = &dv[di * stride];
			for (u64 j = 0; j < nv; j++)
				sum[j] += LOADR(&v[j]);
			if (keep_lat && (le = LOADR(&v[nv])))
				lat_word(&a, le);
			di++;
		}
		if (nv == 1 && !keep_lat) { /* counts alone: most images */
			for (; i < n && e[i].key == key; i++)
				sum[0] += LOADR(&e[i].v[0]);
		}
		for (; i < n && e[i].key == key; i++) {
			for (u64 j = 0; j < nv; j++)
				sum[j] += LOADR(&e[i].v[j]);
			if (keep_lat && (le = LOADR(&e[i].v[nv])))
				lat_word(&a, le);
		}
		if (!sum[0])
			continue;
		put_path(out, key - 1, sum);
		np++;
		if (wl)
			*nlat += (u64)put_latency(lat, rec, key - 1, &a);
	}
	return np;
}

/* local_site is the file's call-site number of id site in record p: the
 * local index + 1, 0 for none. */
static u64 local_site(struct blpp_record *p, u64 site)
{
	if (!p || !site || site < p->first_site || site - p->first_site >= p->nsites)
		return 0;
	return 1 + site - p->first_site;
}

/* recs_out moves the records gathered in recs to sink to: pieces of more
 * than half a sink's buffer go to its file straight. */
static void recs_out(struct obuf *recs, struct obuf *to)
{
	ob_put(to, recs->p, recs->len);
	if (recs->err)
		to->err = 1;
	recs->len = 0;
}

/* write_records encodes the records of thread t, parents first (the
 * list order), numbering them in rec->index, and the latency entries of
 * their paths into lat (*nlat counts them): into recs, or, with to,
 * through recs into to (a sink) some 32 KiB at a time (decision 142). */
static u64 write_records(struct blpp_thread *t, struct obuf *recs, struct obuf *paths, struct obuf *scratch, struct obuf *lat, u64 *nlat,
			 struct obuf *to)
{
	u64 nrec = 0, limit = LOAD(&t->nrecords), stride = rt.stride;
	int wl = writes_latency();
	struct lat a; /* lat_of resets it path by path */
	if (wl)
		mem_zero(&a, sizeof(a));
	for (struct blpp_record *r = R(LOAD(&t->records)); r && nrec < limit; r = R(LOAD(&r->next))) {
		u64 *c = counts_of(r), np = 0, dn = r->dense_n, at;
		struct blpp_record *p = R(r->parent), *tw = dn ? 0 : R(twin_of(r));
		u64 via = via_of(r);
		ob_uv(recs, r->func);
		if (via) { /* called back from an uninstrumented function (decision 70) */
			ob_uv(recs, (u64)R(via)->index + 1);
			ob_uv(recs, 0);
		} else {
			ob_uv(recs, p ? (u64)p->index + 1 : 0);
			ob_uv(recs, local_site(p, r->site));
		}
		ob_uv(recs, (LOADR(&c[0]) & ~SLOT_LIVE) + (tw ? LOADR(counts_of(tw)) : 0)); /* calls */
		/* The paths go straight after a byte kept for their number,
		 * which takes one byte below 128 paths: most records. */
		at = recs->len;
		ob_u8(recs, 0);
		/* most records have no dense array (cold: decision 99) */
		for (u64 id = dn ? next_ran(c + 1, 0, dn, stride) : 0; id < dn; id = next_ran(c + 1, id + 1, dn, stride)) {
			u64 *v = c + 1 + id * stride;
			put_path(recs, id, v);
			np++;
			if (wl && lat_of(&a, v))
				*nlat += (u64)put_latency(lat, nrec, id, &a);
		}
		if (r->hash || tw) {
			u64 k = ~(u64)0;
			if (!tw && stride == 1 && !rt.latency)
				k = hash_paths_few((struct htab *)r->hash, recs);
			np += k != ~(u64)0 ? k : hash_paths((struct htab *)r->hash, tw, recs, scratch, nrec, lat, nlat);
		}
		nrec++;
		if (!recs->err && np < 0x80) {
			recs->p[at] = (u8)np;
		} else if (!recs->err) { /* a longer number: the paths move up behind it */
			paths->len = 0;
			ob_put(paths, recs->p + at + 1, recs->len - at - 1);
			recs->len = at;
			ob_uv(recs, np);
			ob_put(recs, paths->p, paths->len);
			if (paths->err)
				recs->err = 1;
		}
		if (to && (recs->len > SINK_CAP / 2 || recs->err))
			recs_out(recs, to);
	}
	if (to)
		recs_out(recs, to);
	return nrec;
}

/* write_folded encodes t's folded calls (recursion folded onto an
 * ancestor record, or a second call site of the same parent reaching one
 * record): from, call site, to, count. */
static u64 write_folded(struct blpp_thread *t, u64 nrec, struct obuf *out)
{
	u64 n = 0;
	for (struct blpp_node *x = N(LOAD(&t->folded)); x; x = N(x->fnext)) {
		u64 c = LOADR(&x->count);
		if (!c || R(x->owner)->index >= nrec || R(x->rec)->index >= nrec || (x->via && R(x->via)->index >= nrec))
			continue;
		if (x->via) {
			ob_uv(out, R(x->via)->index);
			ob_uv(out, 0);
		} else {
			ob_uv(out, R(x->owner)->index);
			ob_uv(out, local_site(R(x->owner), x->site));
		}
		ob_uv(out, R(x->rec)->index);
		ob_uv(out, c);
		n++;
	}
	return n;
}

/*
 * write_partials encodes t's partial activations: those found while the
 * program ran, and, when t is the calling thread (the one exiting,
 * crashing or handling the dump signal), its live activations. When the
 * calling thread was inside a stub (a signal handler interrupted it) its
 * newest frame may be half made and is left out.
 */
/* collect_pents appends the entries of table pt (0: none) to scratch. */
static void collect_pents(struct ptab *pt, struct obuf *scratch)
{
	if (!pt)
		return;
	for (u64 i = 0; i < PTAB_CAP; i++) {
		struct pent *e = &pt->e[i];
		u64 c = LOAD(&e->count); /* published last, so read first */
		if (c) {
			struct pent x = {e->rec, e->func, e->block, e->reg, c};
			ob_put(scratch, &x, sizeof(x));
		}
	}
}

/* encode_pents sorts the pents in scratch, adds up equal ones and
 * encodes them as the format's partials; it returns how many. */
static u64 encode_pents(struct obuf *scratch, u64 nrec, struct obuf *out)
{
	struct pent *e = (struct pent *)scratch->p;
	u64 n = scratch->len / sizeof(*e), np = 0;
	sort_pents(e, n);
	for (u64 i = 0; i < n;) {
		struct pent k = e[i];
		u64 c = 0;
		for (; i < n && e[i].rec == k.rec && e[i].func == k.func && e[i].block == k.block && e[i].reg == k.reg; i++)
			c += e[i].count;
		ob_uv(out, k.rec && R(k.rec)->index < nrec ? (u64)R(k.rec)->index + 1 : 0);
		ob_uv(out, k.func);
		ob_uv(out, k.block);
		ob_sv(out, k.reg);
		ob_uv(out, c);
		np++;
	}
	return np;
}

static u64 write_partials(struct blpp_thread *t, int self, int dead, int left, u64 nrec, struct obuf *parts, struct obuf *scratch)
{
	scratch->len = 0;
	collect_pents((struct ptab *)t->partials, scratch);
	if (self || dead || left) {
		struct blpp_frame *f = frames(t);
		struct stop_walk w;
		/* Where each activation stopped: the newest at its last call
		 * when the program is exiting (exit() is a call), unknown at a
		 * signal (it stopped at any instruction); every older one at
		 * the call its callee's frame recorded (or its return address,
		 * decision 57). When busy, the newest frame may be half made:
		 * it is left out and its caller's stop is unknown. */
		int half = t->busy && depth(t) > 0;
		/* A thread that has ended (its own exit system call, which
		 * no hook sees) stopped somewhere in its newest activation; a
		 * user context that was switched away from, at the call that
		 * switched (decision 122). */
		stop_start(&w, t, (left || (self && (rt.writing_why & ~BLPP_FLAG_EXEC) == 0)) && !t->busy ? t->call_site : 0);
		while (w.next > 0) {
			stop_step(&w);
			u64 i = w.next;
			if (half && i + 1 == depth(t))
				continue;
			struct blpp_record *rec = frame_record(t, i);
			u64 site = half && i + 2 == depth(t) ? 0 : w.site;
			struct pent x = {(u64)rec, f[i].func, site_block(f[i].func, site), w.reg, 1};
			if (rec && rec->func != f[i].func)
				x.rec = 0;
			ob_put(scratch, &x, sizeof(x));
		}
	}
	if (scratch->err)
		return 0;
	return encode_pents(scratch, nrec, parts);
}

/* write_prefixes encodes the fork prefixes (blpp_rt_fork_child) when t is
 * the thread that recorded them. */
static u64 write_prefixes(struct blpp_thread *t, u64 nrec, struct obuf *out, struct obuf *scratch)
{
	struct wiped *w = rt.w;
	struct ptab *pt = w ? (struct ptab *)LOAD(&w->prefixes) : 0;
	struct ptab *own = (struct ptab *)LOAD(&TPRIV(t)->ctx_pref); /* a resumed user context's (decision 122) */
	scratch->len = 0;
	if (pt && LOAD(&w->prefix_owner) == (u64)t)
		collect_pents(pt, scratch);
	if (own)
		collect_pents(own, scratch);
	if (!scratch->len)
		return 0;
	if (scratch->err)
		return 0;
	return encode_pents(scratch, nrec, out);
}

static void write_stat(struct obuf *b, const char *key, u64 v)
{
	ob_str(b, key);
	ob_uv(b, v);
}

/* write_stats encodes the STATS payload, keys in byte order (canonical);
 * held is the most bytes the writer's buffers held at once (decision
 * 136). */
static void write_stats(struct obuf *b, u64 nrec, u64 held)
{
	u64 s[NSTATS] = {0};
	if (rt.w)
		for (int k = 0; k < NSTATS; k++)
			s[k] = LOADR(&rt.w->stats[k]);
	/* the stubs' counts are the threads' (stub_stat): every block on
	 * the list, dead threads' and contexts' included */
	for (struct blpp_thread *t = LOAD(&rt.threads); t && rt.w; t = (struct blpp_thread *)t->next)
		for (int k = ST_STUB_ENTRIES; k <= ST_STUB_DARK; k++)
			s[k] += LOADR(&TPRIV(t)->stub_stats[k - ST_STUB_ENTRIES]);
	int tsc = 0;
	for (u64 m = 0; m < rt.nmetrics; m++)
		tsc |= rt.msrc[m] == MSRC_TSC;
	u64 lat_bytes = 0, lat_dropped = 0;
	for (struct blpp_thread *t = LOAD(&rt.threads); t && rt.latency; t = (struct blpp_thread *)t->next) {
		u64 base = TPRIV(t)->lat_base, next = LOADR(&t->lat_next);
		if (base)
			lat_bytes += next < t->lat_limit ? next - base : t->lat_limit - 1 + BLPP_LATENCY_ENTRY_SIZE - base;
		lat_dropped += LOADR(&t->lat_dropped);
	}
	ob_uv(b, 26 + 2 * (u64)tsc + 2 * (u64)rt.latency);
	write_stat(b, BLPP_STAT_ARENA_BYTES, LOADR(&rt.arena_bytes));
	write_stat(b, "bad_funcs", LOADR(&s[ST_BAD_FUNCS]));
	write_stat(b, "bad_paths", LOADR(&s[ST_BAD_PATHS]));
	write_stat(b, "contexts_untracked", LOADR(&rt.ctx_untracked));
	write_stat(b, "dropped_counts", LOADR(&s[ST_DROPPED_COUNTS]));
	write_stat(b, "dropped_partials", LOADR(&s[ST_DROPPED_PARTIALS]));
	write_stat(b, BLPP_STAT_DROPPED_RECORDS, LOADR(&s[ST_DROPPED_RECORDS]));
	write_stat(b, "dumps", rt.dumps);
	write_stat(b, "early_start", rt.early_start);
	write_stat(b, "early_uncounted", LOADR(&rt.early_uncounted));
	write_stat(b, "exit_mismatch", LOADR(&s[ST_EXIT_MISMATCH]));
	write_stat(b, "fork_child", rt.forked);
	if (rt.latency) {
		/* The latency entries taken, and the executions that found no
		 * room for one (decision 93). */
		write_stat(b, "latency_bytes", lat_bytes);
		write_stat(b, "latency_dropped", lat_dropped);
	}
	write_stat(b, "no_record", LOADR(&s[ST_NO_RECORD]));
	write_stat(b, "record_bytes", BLPP_RECORD_INLINE_COUNTS); /* the record and the gap before its counters */
	write_stat(b, BLPP_STAT_RECORDS, nrec);
	write_stat(b, "shadow_overflow", LOADR(&s[ST_SHADOW_OVERFLOW]));
	write_stat(b, "stub_backedges", LOADR(&s[ST_STUB_BACKEDGES]));
	write_stat(b, "stub_dark", LOADR(&s[ST_STUB_DARK]));
	write_stat(b, "stub_entries", LOADR(&s[ST_STUB_ENTRIES]));
	write_stat(b, "stub_exits", LOADR(&s[ST_STUB_EXITS]));
	write_stat(b, "tables_kept", LOADR(&rt.tables_kept)); /* modules unloadable when finalised (decision 145) */
	write_stat(b, BLPP_STAT_THREADS, LOADR(&rt.nthreads));
	if (tsc) {
		/* The counter's ticks and the nanoseconds over the same span:
		 * their ratio is its rate, by which reports show times
		 * (decision 93). */
		u64 ns = mono_ns(), ticks = rdtsc() - rt.tsc_init;
		write_stat(b, "tsc_ns", ns > rt.ns_init ? ns - rt.ns_init : 0);
		write_stat(b, "tsc_total", ticks);
	}
	write_stat(b, "unwound_frames", LOADR(&s[ST_UNWOUND]));
	write_stat(b, "vm_children", LOADR(&rt.vm_children));
	write_stat(b, "vm_exits", LOADR(&rt.vm_exits));
	write_stat(b, "writer_bytes", held);
}

/* The SAMPLES section's parts (blpp_sample.c, decision 92). */
static u64 sample_maps(struct obuf *maps, struct obuf *names);
static void sample_thread_write(struct blpp_thread *t, u64 ti, u64 nrec, const struct obuf *maps, struct obuf *out,
				struct obuf *scratch);
static void sample_section(struct obuf *sec, const struct obuf *names, u64 nnames, const struct obuf *body, u64 nthreads);

static void write_profile_now(u32 why, int wait);

/*
 * write_profile writes the profile with every signal blocked in the
 * writing thread: a fatal signal that came during an exit's write (a
 * multiprocessing worker told to stop by SIGTERM as it leaves through
 * _exit) found the exit claimed and killed the process with its profile
 * half made (decision 121). It comes once the write is done, and kills
 * the process as it would have without blpp.
 */
static void write_profile(u32 why, int wait)
{
	u64 all = ~0ul, old;
	sc4(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, 8);
	write_profile_now(why, wait);
	sc4(SYS_rt_sigprocmask, SIG_SETMASK, &old, 0, 8);
}

static void write_profile_now(u32 why, int wait)
{
	struct obuf out = {0}, sec = {0}, recs = {0}, parts = {0}, paths = {0}, scratch = {0}, folded = {0}, pref = {0}, lat = {0};
	struct obuf smaps = {0}, snames = {0}, sbody = {0}; /* samples (blpp_sample.c) */
	u64 nsnames = 0, ti = 0, nsthreads = 0, held = 0;
	struct blpp_thread *self;
	u64 pid, tid, nrec, npart, npref;
	struct {
		long s, ns;
	} now = {0, 0};
	long fd = -1, r = 0;
	int direct = 0;
	if (!rt.ready)
		return;
	cont_check(); /* a fork child's live file first, without a fault */
	fork_check();
	pid = getpid();
	tid = gettid();
	if (pid != rt.pid)
		return; /* a vfork child: the state is its parent's */
	if (!lock_writer(tid, wait))
		return;
	rt.writing_why = why;
	ob_pool_open();

	/* The file first: the profile goes there as it is made (out is its
	 * sink), written whole or, a regular file, renamed into place only
	 * once whole. Where it cannot be opened the profile is still made
	 * (the records get their indices), in memory, and dropped. */
	if (!profile_names(pid)) {
		say("profile name too long: ", rt.tmpl, "", 0);
	} else if ((direct = special_file(rt.name)) && failed(fd = sc3(SYS_open, rt.name, O_WRONLY | O_CLOEXEC, 0))) {
		say("cannot open ", rt.name, "", fd);
	} else if (!direct && failed(fd = sc3(SYS_open, rt.tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644))) {
		say("cannot create ", rt.tmp, "", fd);
	} else {
		ob_sink(&out, fd);
	}

	ob_put(&out, BLPP_MAGIC, BLPP_MAGIC_LEN);
	ob_le(&out, BLPP_VERSION, 4);
	ob_le(&out, (rt.flow_only ? BLPP_FLAG_FLOW_ONLY : 0) | why, 4);
	{
		/* The header names the executable (tag 0), when it is
		 * instrumented; MODULES names every module. */
		struct mod *exe = LOAD(&rt.mods[0]);
		ob_uv(&out, exe ? exe->build_id_len : 0);
		if (exe)
			ob_put(&out, exe->build_id, exe->build_id_len);
	}
	ob_uv(&out, pid);
	sc2(SYS_clock_gettime, 0 /* CLOCK_REALTIME */, &now);
	ob_uv(&out, (u64)now.s * 1000000000ul + (u64)now.ns);
	ob_uv(&out, 1 + rt.nmetrics);
	ob_str(&out, BLPP_METRIC_FREQ);
	ob_u8(&out, BLPP_METRIC_REAL);
	for (u64 m = 0; m < rt.nmetrics; m++) {
		ob_str(&out, rt.mname[m]);
		ob_u8(&out, rt.mkind[m]);
	}

	sec.len = 0;
	write_modules(&sec);
	ob_section(&out, BLPP_TAG_MODULES, &sec);

	/* One THREAD section per thread block (the list is newest first;
	 * the order carries no meaning). */
	nrec = 0;
	self = thread_peek();
	if (rt.samp)
		nsnames = sample_maps(&smaps, &snames);
	for (struct blpp_thread *t = LOAD(&rt.threads); t; t = (struct blpp_thread *)t->next) {
		u64 nlat = 0, lenpos = 0, npos = 0;
		/* A regular file (read back: ob_sum_held) takes the thread's
		 * records as they are made, after placeholders for the
		 * section's length and their number; a special file or none,
		 * the section whole (decision 142). */
		int stream = out.sink && !direct;
		lat.len = 0;
		if (stream) {
			ob_u8(&out, BLPP_TAG_THREAD);
			ob_hold(&out);
			lenpos = ob_pos(&out);
			ob_fixed(&out, 0);
			ob_uv(&out, t->tid);
			npos = ob_pos(&out);
			ob_fixed(&out, 0);
		}
		u64 n = write_records(t, &recs, &paths, &scratch, &lat, &nlat, stream ? &out : 0), nf;
		/* A thread that has ended without its block being taken over
		 * (blocks are reused only by threads with the same thread
		 * pointer) still holds its last activations, which ended
		 * nowhere: record them as partials, as for the writing thread;
		 * so does one that waits in the kernel (a worker blocked on a
		 * condition variable when the program exits). A thread that
		 * runs is left alone: its frames change under the writer. */
		/* A user context's block that a switch left (decision 122):
		 * its activations wait at that call. */
		int left = t != self && LOAD(&TPRIV(t)->ctx_left) && TPRIV(t)->ctx_epoch == rt.epoch + 1;
		int dead = !left && t != self && t->tid && rt.pid == pid && !t->busy &&
			   (sc3(SYS_tgkill, (long)pid, (long)t->tid, 0) == -3 /* ESRCH */ || thread_waits(t->tid));
		nrec += n;
		npart = write_partials(t, t == self, dead, left, n, &parts, &scratch);
		folded.len = 0;
		nf = write_folded(t, n, &folded);
		pref.len = 0;
		npref = write_prefixes(t, n, &pref, &scratch);
		{
			/* The section from its pieces, not gathered first
			 * (a thread's records may run to megabytes); the
			 * counts before them in buffers on the stack, which
			 * never grow (ob_uv takes 10 bytes at most). */
			u8 hb[32], pb[16], fb[16], rb[16];
			struct obuf hd = {.p = hb, .cap = sizeof(hb)}, pn = {.p = pb, .cap = sizeof(pb)},
				    fn = {.p = fb, .cap = sizeof(fb)}, rn = {.p = rb, .cap = sizeof(rb)};
			const struct obuf *pieces[] = {&hd, &recs, &pn, &parts, &fn, &folded, &rn, &pref};
			int np = 4;
			ob_uv(&hd, t->tid);
			ob_fixed(&hd, n);
			ob_uv(&pn, npart);
			if (nf || npref) { /* an empty folded list only before prefixes */
				ob_uv(&fn, nf);
				np = 6;
			}
			if (npref) {
				ob_uv(&rn, npref);
				np = 8;
			}
			if (!stream) {
				ob_section_of(&out, BLPP_TAG_THREAD, 1, pieces, np);
			} else {
				for (int i = 2; i < np; i++) {
					ob_put(&out, pieces[i]->p, pieces[i]->len);
					if (pieces[i]->err)
						out.err = 1;
				}
				ob_patch(&out, lenpos, ob_pos(&out) - lenpos - UV_FIXED);
				ob_patch(&out, npos, n);
				ob_sum_held(&out);
			}
		}
		{
			/* What the buffers hold once a thread's section is
			 * out, its records the most: the writer's own memory
			 * (the STATS' writer_bytes). */
			const struct obuf *all[] = {&out, &sec, &recs, &parts, &paths, &scratch, &folded, &pref, &lat, &smaps, &snames, &sbody};
			u64 h = 0;
			for (u64 i = 0; i < sizeof(all) / sizeof(all[0]); i++)
				h += all[i]->len;
			held = h > held ? h : held;
		}
		recs.len = parts.len = 0;
		/* The thread's latency entries, when it has any (decision 93):
		 * the thread's index among the THREAD sections, the metric
		 * (the first after freq), the entries. */
		if (nlat) {
			sec.len = 0;
			ob_uv(&sec, ti);
			ob_uv(&sec, 1);
			ob_uv(&sec, nlat);
			ob_put(&sec, lat.p, lat.len);
			if (lat.err)
				sec.err = 1;
			ob_section(&out, BLPP_TAG_LATENCY, &sec);
		}
		if (rt.samp) {
			u64 before = sbody.len;
			sample_thread_write(t, ti, n, &smaps, &sbody, &scratch);
			nsthreads += sbody.len != before;
		}
		ti++;
	}
	if (rt.samp) {
		sec.len = 0;
		sample_section(&sec, &snames, nsnames, &sbody, nsthreads);
		ob_section(&out, BLPP_TAG_SAMPLES, &sec);
	}
	sec.len = 0;
	write_stats(&sec, nrec, held);
	ob_section(&out, BLPP_TAG_STATS, &sec);
	ob_u8(&out, BLPP_TAG_TRAILER);
	ob_flush(&out);
	ob_le(&out, out.sum, 8);
	ob_flush(&out);

	if (out.sink) {
		long c = sc1(SYS_close, fd);
		r = out.err ? (out.werr ? out.werr : -12 /* ENOMEM */) : c;
		if (!failed(r) && !direct)
			r = sc2(SYS_rename, rt.tmp, rt.name);
		if (out.err && !out.werr)
			say("out of memory writing the profile", "", "", 0);
		else if (failed(r))
			say("cannot write profile ", rt.name, "", r);
		else if (why == BLPP_FLAG_DUMP_SIGNAL)
			rt.dumps++;
		if (failed(r) && !direct)
			sc1(SYS_unlink, rt.tmp);
	}
	ob_free(&out);
	ob_free(&sec);
	ob_free(&recs);
	ob_free(&parts);
	ob_free(&paths);
	ob_free(&scratch);
	ob_free(&folded);
	ob_free(&pref);
	ob_free(&lat);
	ob_free(&smaps);
	ob_free(&snames);
	ob_free(&sbody);
	ob_pool_close();
	STORE(&rt.write_lock, 0);
}
