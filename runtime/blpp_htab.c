//go:build ignore

/*
 * blpp_htab.c: hash tables of path counts, for the records of functions
 * with more paths than a dense array should hold (Func.hashed) [DESIGN 6;
 * PP's hashed counters]. The layout and hash are shared with the inline
 * code the rewriter emits (decision 48): BLPP_HASH_MUL, BLPP_HTAB_*.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_metrics.c.
 * Tables come from the arena and are never resized in place or freed; a
 * full one gets a bigger one in front. Lock-free: a signal handler on the
 * same thread may count in the middle of an insertion.
 */


/* A hash table of path counts for one record of a function with many
 * paths. Entries are a key (path+1; 0 marks an empty entry) followed by
 * rt.stride values (count, then metric sums). Tables are never resized
 * in place. The record points at the newest table, which is where paths
 * are counted: when it is half full and a path it lacks comes, a table
 * four times bigger goes in front of it (linked to it through next). A
 * path already in an older table starts a new entry in the newest; the
 * older counts stay where they are, and the writer sums a path over all
 * tables. So the hot paths live in the first table, the one the inline
 * code probes [decision 48], and a function that sees few paths keeps a
 * small table. A record belongs to one thread, but a signal handler on
 * that thread may count while a count is interrupted: the atomics keep
 * the tables consistent. */
struct htab {
	u64 cap;   /* power of two */
	s64 left;  /* keys it still takes: its room less those put in (decision 161) */
	u64 next;  /* the next older table */
	u64 bytes; /* cap * entry size: the inline code's scale (home) */
	u64 e[];
};

/* HTAB_INIT is the first table of a hashed function's record in a
 * flow-only image; in context mode a record starts cold, with a table
 * of COLD_CAP entries (blpp_cct.c, decision 99). PROMOTE_ENDS: see
 * Record.cold. */
enum { HTAB_INIT = BLPP_HTAB_INIT_CAP, COLD_CAP = 2, PROMOTE_ENDS = BLPP_PROMOTE_ENDS };

/* A path that lies beyond the inline probes of a record's newest
 * table and has been counted there FAR_HITS times by the runtime moves
 * to a new table in front, where it most likely lies within them: else
 * every run of it takes the stub (decision 99). Not above FAR_CAP, and
 * not with metrics, whose path ends all take the stub. */
enum { FAR_HITS = 256, FAR_CAP = 1 << 20 };
_Static_assert(__builtin_offsetof(struct htab, e) == BLPP_HTAB_ENTRIES_OFF, "htab header");
_Static_assert(__builtin_offsetof(struct htab, bytes) == BLPP_HTAB_BYTES_OFF, "htab bytes");
_Static_assert(__builtin_offsetof(struct htab, left) == BLPP_HTAB_LEFT_OFF, "htab left");
_Static_assert((BLPP_HTAB_INIT_CAP & (BLPP_HTAB_INIT_CAP - 1)) == 0, "htab capacity");

/* fib32 is the 32-bit Fibonacci hash of x's low 32 bits, the one inline
 * code computes with imul $BLPP_HASH_MUL (hash tables, call cache). */
static u32 fib32(u64 x) { return (u32)x * (u32)BLPP_HASH_MUL; }

/* home is key's first probe in a table of cap entries: fib32 scaled to
 * [0, cap) by a multiply and a shift. The second probe is the next entry,
 * wrapping at cap (the inline code looks at entry cap instead, which
 * stays empty). The inline code computes the same (imul $BLPP_HASH_MUL;
 * imul bytes; shr $32) in the record's newest table and counts a path
 * found there itself [decision 48]. */
static u64 home(u64 key, u64 cap) { return ((u64)fib32(key) * cap) >> 32; }

static u64 mix(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdul;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ul;
	x ^= x >> 33;
	return x;
}

static u64 hent_words(void) { return 1 + rt.stride; }

/* htab_bytes is the size of a table of cap entries: one entry more than
 * cap, never written, for the inline code's second probe (home + 1)
 * [decision 48]. */
static u64 htab_bytes(u64 cap) { return sizeof(struct htab) + (cap + 1) * hent_words() * 8; }

/* htab_room is how many keys a table of cap entries takes: half its
 * entries, so that the inline code's two probes find most keys; all of
 * a cold record's small tables (decision 99), whose paths the runtime
 * mostly counts itself (hash_slot puts a table of HTAB_INIT in front
 * once it is hot). */
static u64 htab_room(u64 cap) { return cap < HTAB_INIT ? cap : cap / 2; }

/* htab_at makes the memory at h (htab_bytes(cap), zeroed) an empty table. */
static struct htab *htab_at(void *m, u64 cap)
{
	struct htab *h = m;
	if (h) {
		h->cap = cap;
		h->bytes = cap * hent_words() * 8;
		h->left = (s64)htab_room(cap);
	}
	return h;
}

/* htab_new makes a table of cap entries: the small ones of cold records
 * (decision 99) in the small objects' arena. */
static struct htab *htab_new(struct wiped *w, u64 cap)
{
	u64 size = htab_bytes(cap);
	return htab_at(cap < HTAB_INIT ? small_alloc(size) : arena_alloc(&w->arena, size), cap);
}

/* htab_slot returns the values of key in h, inserting it if insert says
 * so and h has room (h->left), else 0; with values, *far says whether
 * the key lies beyond the inline code's two probes (home and the entry
 * after it, not wrapping). */
static u64 *htab_slot(struct htab *h, u64 key, int insert, int *far)
{
	u64 cap = h->cap, mask = cap - 1, i = home(key, cap), hw = hent_words();
	for (u64 n = 0; n < cap; n++, i = (i + 1) & mask) {
		u64 *e = &h->e[i * hw];
		u64 k = LOAD(&e[0]);
		if (k == 0) {
			if (!insert || (s64)LOADR((u64 *)&h->left) <= 0)
				return 0;
			if (!CAS1(&e[0], 0, key)) {
				if (LOAD(&e[0]) != key)
					continue;
			} else {
				ADD1((u64 *)&h->left, ~(u64)0);
			}
		} else if (k != key) {
			continue;
		}
		*far = n > 1 || (n == 1 && i == 0);
		return e + 1;
	}
	return 0;
}

/*
 * promote_ends is how many path ends the runtime counts in a cold record
 * of f before the record is hot (decision 99): PROMOTE_ENDS, and for a
 * dense function one for every PROMOTE_BYTES bytes of the hot twin's
 * dense array, so that a twin's memory waits for the work it saves
 * (decision 136). python3's twins ran 4.4 of their functions' 715 paths
 * on average: at 32 path ends most records of 500 paths or more that
 * got a twin were not called much more, and held 5.7 KB of dense array
 * for a few words of counts. Every path end the runtime counts costs it
 * the same whatever the function's paths, so the bound on the work the
 * later twin costs is one stub per PROMOTE_BYTES bytes it does not
 * hold.
 */
enum { PROMOTE_BYTES = BLPP_PROMOTE_BYTES };
static u64 promote_ends(const struct blpp_func *f)
{
	u64 n = f && !f->hashed ? f->num_paths * rt.stride * 8 / PROMOTE_BYTES : 0;
	return n > PROMOTE_ENDS ? n : PROMOTE_ENDS;
}

/* hot_record says whether r's paths should go to a table the inline code
 * counts in: a cold record's path ends the runtime counted reached ends,
 * its function's promote_ends (decision 99). */
static int hot_record(const struct blpp_record *r, u64 ends) { return LOADR(&r->cold) >= ends; }

/* grown is the capacity of the table that goes in front of h when it
 * is full (or, a small one, when r is hot): four times h's, and at least
 * HTAB_INIT once r is hot. */
static u64 grown(const struct blpp_record *r, const struct htab *h, u64 ends)
{
	u64 cap = h->cap * 4;
	return hot_record(r, ends) && cap < HTAB_INIT ? HTAB_INIT : cap;
}

/* hash_slot returns where record r counts path path, 0 when no table
 * can take it (the arena is full and no older table has it); ends is
 * promote_ends of r's function, which the caller has at hand. */
static u64 *hash_slot(struct wiped *w, struct blpp_record *r, u64 ends, u64 path)
{
	u64 key = path + 1;
	for (;;) {
		struct htab *h = (struct htab *)LOAD(&r->hash), *n;
		/* A hot record's small table is full, or nearly: its paths
		 * move to a table of HTAB_INIT entries, where the inline
		 * code's two probes find them. So does a path the runtime
		 * keeps counting because it lies beyond them (FAR_HITS). */
		int far = 0;
		u64 *v = h->cap < HTAB_INIT && hot_record(r, ends) ? 0 : htab_slot(h, key, 1, &far);
		if (v && !(far && LOADR(&v[0]) >= FAR_HITS && h->cap < FAR_CAP && !rt.nmetrics))
			return v;
		if (!(n = htab_new(w, grown(r, h, ends)))) {
			for (; h; h = (struct htab *)LOAD(&h->next))
				if ((v = htab_slot(h, key, 0, &far)))
					return v;
			return 0;
		}
		n->next = (u64)h;
		/* A signal handler's count may have put a table in front
		 * meanwhile: then n stays unused in the arena, and we retry. */
		CAS1(&r->hash, (u64)h, (u64)n);
	}
}
