//go:build ignore

/*
 * blpp_latency.c: a path's latency distribution [decisions 93, 148]: the word each
 * path of a record keeps, its entries in the thread's latency region,
 * and their summary at the writer (struct lat), summed over a record's
 * tables and written as a LATENCY entry.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_obuf.c:
 * blpp_cct.c's count_f calls lat_count through its declaration there.
 */

/* lat_bucket is the log2 bucket of value x: floor(log2(x|1)), what the
 * inline code's bsr of x|1 gives [decision 93]. */
static u64 lat_bucket(u64 x) { return 63 - (u64)__builtin_clzll(x | 1); }

/*
 * A path's latency word [decision 148]: 0 until the path first runs in
 * its record; then the value of that execution, complemented, when the
 * value is below 2^62 (the word's top two bits set: lat_kept); from the
 * second execution on (or the first, when its value does not fit), the
 * address of its entry (a user-space address: top bit clear); LAT_DROPPED
 * when its thread's region had no entry left for it, its executions then
 * counted in lat_dropped alone, the kept one included, so that a path's
 * histogram holds all the executions of its record or none, as when
 * every path took an entry at its first execution.
 */
#define LAT_DROPPED (1ul << 63)
static int lat_kept(u64 w) { return (w >> 62) == 3; }
static int lat_fits(u64 x) { return (x >> 62) == 0; }

/* inc1 adds 1 to *p in one instruction: a signal handler on the thread
 * (the only other writer of its records) lands before or after it, and
 * no lock prefix is needed [decision 28]. */
static inline void inc1(u64 *p) { __asm__ volatile("incq %0" : "+m"(*p) : : "memory"); }

/*
 * lat_add adds value x of one execution to a path's latency entry l
 * (BLPP_LATENCY_SLOWEST largest values in ascending order, the pending
 * word, then the histogram), as the inline path ends do (rewriter
 * tscLatency): a value above the smallest kept one goes into its place
 * in the order, the smaller ones shifting down and the smallest dropping
 * out; then the bucket the path's previous execution left pending is
 * counted, and this one's left pending (an increment at an address
 * computed from the counter just read would wait for the read; the
 * writer counts what is left). A signal handler that counts the same
 * path of the same record in the middle of this may leave the kept
 * values out of order or one short, or move one execution to another
 * bucket; the histogram's total stays exact.
 */
static void lat_add(u64 *l, u64 x)
{
	u64 p;
	if (x > LOADR(&l[0])) {
		u64 i = 0;
		for (; i + 1 < BLPP_LATENCY_SLOWEST && LOADR(&l[i + 1]) < x; i++)
			l[i] = LOADR(&l[i + 1]);
		l[i] = x;
	}
	p = LOADR(&l[BLPP_LATENCY_PENDING]);
	if (p > BLPP_LATENCY_BUCKETS)
		p = 0; /* never: only this code and the inline code write it */
	inc1(&l[BLPP_LATENCY_PENDING + p]); /* p = 0: the pending word, overwritten next */
	__atomic_store_n(&l[BLPP_LATENCY_PENDING], lat_bucket(x) + 1, __ATOMIC_RELAXED);
}

/*
 * lat_count adds value x of one execution to the latency word *slot of
 * a path in its record (see LAT_DROPPED), as the inline path ends do
 * (rewriter tscLatency, which comes here for all but a first execution
 * whose value fits in the word). A second execution takes an entry from
 * t's region (lat_next, as the inline code's xadd did), puts the kept
 * value in it and installs it. The word changes by compare-and-swap
 * only, so that a signal handler counting the same path of the same
 * record in the middle either finds the word as it was and does the same
 * (then this one's entry, holding only the kept value, goes unused), or
 * has moved it on, and this one starts again from the word it finds: no
 * execution is lost from the histogram's total, and none counted twice.
 */
static void lat_count(struct blpp_thread *t, u64 *slot, u64 x)
{
	u64 w = LOAD(slot), s;
	for (;;) {
		if (w == LAT_DROPPED) {
			ADD(&t->lat_dropped, 1);
			return;
		}
		if (w && !lat_kept(w)) {
			lat_add((u64 *)w, x);
			return;
		}
		if (!w && lat_fits(x)) {
			if (CAS(slot, 0, ~x))
				return;
			w = LOAD(slot);
			continue;
		}
		s = ADD(&t->lat_next, BLPP_LATENCY_ENTRY_SIZE);
		if (s >= t->lat_limit) {
			if (CAS(slot, w, LAT_DROPPED)) {
				ADD(&t->lat_dropped, w ? 2 : 1);
				return;
			}
		} else {
			if (w)
				lat_add((u64 *)s, ~w);
			if (CAS(slot, w, s)) {
				lat_add((u64 *)s, x);
				return;
			}
		}
		w = LOAD(slot); /* a signal handler's count moved it on; s stays unused */
	}
}

/* blpp_rt_lat_word: lat_count for the inline path ends (blpp_lat_word in
 * blpp_stubs.S), in the block %gs points at, whose records they count
 * in. */
void blpp_rt_lat_word(u64 *slot, u64 x)
{
	struct blpp_thread *t = gs_block();
	if (t)
		lat_count(t, slot, x);
}


_Static_assert(BLPP_LATENCY_BUCKETS == BLPP_LATENCY_FORMAT_BUCKETS, "latency buckets");
_Static_assert(BLPP_LATENCY_SLOWEST <= BLPP_LATENCY_MAX_SLOWEST, "slowest values");

/* lat is one path's latency words summed over hash tables: the slowest
 * values in ascending order (0: none), the histogram, and which of its
 * buckets were added to (bit b: hist[b]), so that writing and clearing
 * it look at those alone: most paths fill one or a few of the 64. */
struct lat {
	u64 slow[BLPP_LATENCY_SLOWEST];
	u64 hist[BLPP_LATENCY_BUCKETS];
	u64 used;
};

_Static_assert(BLPP_LATENCY_BUCKETS <= 64, "one bit per bucket in lat.used");

/* lat_add1 adds n executions to bucket b of a. */
static void lat_add1(struct lat *a, u64 b, u64 n)
{
	a->hist[b] += n;
	a->used |= 1ull << b;
}

/* lat_reset makes a (all zero once, then only reset) empty again. */
static void lat_reset(struct lat *a)
{
	for (u64 m = a->used; m; m &= m - 1)
		a->hist[__builtin_ctzll(m)] = 0;
	for (u64 k = 0; k < BLPP_LATENCY_SLOWEST; k++)
		a->slow[k] = 0;
	a->used = 0;
}

/* lat_slow puts x among a's slowest values when it is larger than the
 * smallest of them (0: none). */
static void lat_slow(struct lat *a, u64 x)
{
	u64 i = 0;
	if (x <= a->slow[0])
		return;
	for (; i + 1 < BLPP_LATENCY_SLOWEST && a->slow[i + 1] < x; i++)
		a->slow[i] = a->slow[i + 1];
	a->slow[i] = x;
}

/* lat_merge adds the latency words l (lat_add's layout) to a: buckets are
 * summed, the pending bucket of the inline code's last execution counted
 * in its bucket, and a keeps the largest of both sets of slowest values. */
static void lat_merge(struct lat *a, const u64 *l)
{
	u64 pend = LOADR(&l[BLPP_LATENCY_PENDING]);
	for (u64 b = 0; b < BLPP_LATENCY_BUCKETS; b++) {
		u64 n = LOADR(&l[BLPP_LATENCY_HIST + b]);
		if (n)
			lat_add1(a, b, n);
	}
	if (pend >= 1 && pend <= BLPP_LATENCY_BUCKETS)
		lat_add1(a, pend - 1, 1);
	for (u64 k = 0; k < BLPP_LATENCY_SLOWEST; k++)
		lat_slow(a, LOADR(&l[k]));
}

/* lat_word adds a path's latency word w (not 0) to a: its entry, or the
 * one value it keeps itself (lat_kept, decision 148), counted and kept
 * as an entry holding that value alone would be; nothing for
 * LAT_DROPPED. It returns whether it added anything. */
static int lat_word(struct lat *a, u64 w)
{
	if (w == LAT_DROPPED)
		return 0;
	if (!lat_kept(w)) {
		lat_merge(a, (const u64 *)w);
		return 1;
	}
	lat_add1(a, lat_bucket(~w), 1);
	lat_slow(a, ~w);
	return 1;
}

/* put_latency encodes the LATENCY entry of path id of record rec (its
 * index in the thread) from a: the non-empty buckets in order, the
 * slowest values from the largest down. It writes nothing for a path
 * without executions in its histogram (a count racing the writer) and
 * returns whether it wrote. */
static int put_latency(struct obuf *out, u64 rec, u64 id, const struct lat *a)
{
	u64 nb = 0, ns = 0;
	for (u64 m = a->used; m; m &= m - 1)
		nb += a->hist[__builtin_ctzll(m)] != 0;
	if (!nb)
		return 0;
	for (u64 k = 0; k < BLPP_LATENCY_SLOWEST; k++)
		ns += a->slow[k] != 0;
	ob_uv(out, rec);
	ob_uv(out, id);
	ob_uv(out, nb);
	for (u64 m = a->used; m; m &= m - 1) { /* ascending buckets */
		u64 b = (u64)__builtin_ctzll(m);
		if (a->hist[b]) {
			ob_uv(out, b);
			ob_uv(out, a->hist[b]);
		}
	}
	ob_uv(out, ns);
	for (u64 k = BLPP_LATENCY_SLOWEST; k-- > 0;) {
		/* A slot an interrupted insertion left out of order is
		 * written in order all the same: the format wants them
		 * descending. */
		u64 x = a->slow[k];
		if (!x)
			continue;
		for (u64 j = k + 1; j < BLPP_LATENCY_SLOWEST; j++)
			if (a->slow[j] < x)
				x = a->slow[j];
		ob_uv(out, x);
	}
	return 1;
}

/* lat_of reads the latency word of a path's values v (rt.stride
 * words) into a, emptied first (lat_reset); 0 when the path has none
 * (all its executions were dropped, or it ran only before the count was
 * made). */
static int lat_of(struct lat *a, const u64 *v)
{
	u64 e = LOADR(&v[1 + rt.nmetrics]);
	lat_reset(a);
	return e && lat_word(a, e);
}

/* writes_latency says whether the profile has LATENCY sections: the
 * image keeps latencies, and of a metric that is measured. */
static int writes_latency(void) { return rt.latency && rt.mkind[0] != BLPP_METRIC_UNAVAILABLE; }
