//go:build ignore

/*
 * blpp_obuf.c: the profile writer's buffers and sorts [DESIGN 11,
 * docs/profile-format.md]: a growable buffer in its own mapping, varints
 * written in place, sections from their pieces, and sorts without libc
 * (a heapsort of partials, an insertion and merge sort of hash entries).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_resume.c and
 * before blpp_writer.c, which is its only user. Async-signal-safe like
 * the writer: memory from mmap/mremap, nothing else.
 */

/*
 * obuf is a growable buffer in its own mapping; err sticks. A sink (the
 * profile itself, ob_sink) is one that never grows: what it holds goes
 * to its file whenever the next piece would not fit, and a piece larger
 * than half of it goes there straight, so writing a profile holds its
 * largest section in memory, not the whole file beside it (decision
 * 136). sum is the FNV-1a hash of every byte a sink has written, which
 * the profile's trailer carries [docs/profile-format.md]; werr, the
 * system call's error that stopped it (0: out of memory).
 */
struct obuf {
	u8 *p;
	u64 len, cap;
	int err;
	int sink;
	long fd, werr;
	u64 sum;
	u64 off;    /* a sink's bytes written to its file */
	int unsummed; /* a sink's bytes from hold on are not hashed yet (ob_hold) */
	u64 hold;
};

enum { SINK_CAP = 1 << 16 };

/*
 * The writer's buffers start in one mapping of OB_SLOTS slots of
 * OB_SLOT bytes (ob_pool_open), not a mapping each: a short run's
 * profile then costs two system calls for them instead of ten (decision
 * 136). A buffer that outgrows its slot moves out of it (mremap); one
 * that does not goes with the pool (ob_pool_close). The writer's lock
 * makes the pool the writing thread's.
 */
enum { OB_SLOT = 1 << 16, OB_SLOTS = 8 };
static u8 *ob_pool;
static int ob_pool_used;

static void ob_pool_open(void)
{
	long r = sc6(SYS_mmap, 0, (long)OB_SLOT * OB_SLOTS, PROT_RW, MAP_PRIVATE_ANON, -1, 0);
	ob_pool = failed(r) ? 0 : (u8 *)r;
	ob_pool_used = 0;
}

static void ob_pool_close(void)
{
	if (ob_pool)
		sc2(SYS_munmap, ob_pool, (long)OB_SLOT * OB_SLOTS);
	ob_pool = 0;
}

/* in_slot says whether b is still the pool slot it started in. */
static int in_slot(const struct obuf *b)
{
	return ob_pool && b->p >= ob_pool && b->p < ob_pool + (u64)OB_SLOT * OB_SLOTS && b->cap == OB_SLOT;
}

/* fnv_more continues FNV-1a hash h over n bytes at p. Eight bytes a
 * turn, the prime in a register: a byte costs its load, xor and multiply
 * (3 instructions) instead of 7 with the loop's own and the prime
 * reloaded (decision 152); the sum is the same, byte by byte in order. */
static u64 fnv_more(u64 h, const u8 *p, u64 n)
{
	u64 prime = BLPP_FNV_PRIME64, i = 0;
	__asm__("" : "+r"(prime)); /* kept in a register, not rematerialised */
	for (; i + 8 <= n; i += 8) {
		h = (h ^ p[i]) * prime;
		h = (h ^ p[i + 1]) * prime;
		h = (h ^ p[i + 2]) * prime;
		h = (h ^ p[i + 3]) * prime;
		h = (h ^ p[i + 4]) * prime;
		h = (h ^ p[i + 5]) * prime;
		h = (h ^ p[i + 6]) * prime;
		h = (h ^ p[i + 7]) * prime;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * prime;
	return h;
}

/* ob_write writes n bytes at p to sink b's file, hashed into b->sum. */
static void ob_write(struct obuf *b, const u8 *p, u64 n)
{
	if (b->err)
		return;
	if (!b->unsummed)
		b->sum = fnv_more(b->sum, p, n);
	for (u64 off = 0; off < n;) {
		long r = sc3(SYS_write, b->fd, p + off, n - off);
		if (r == -4 /* EINTR */)
			continue;
		if (failed(r) || r == 0) {
			b->werr = r ? r : -28 /* ENOSPC */;
			b->err = 1;
			return;
		}
		off += (u64)r;
	}
	b->off += n;
}

/* ob_flush sends what sink b holds to its file. */
static void ob_flush(struct obuf *b)
{
	if (b->sink && b->len) {
		ob_write(b, b->p, b->len);
		b->len = 0;
	}
}

/* ob_sink makes b, empty, the sink of file fd. */
static void ob_sink(struct obuf *b, long fd)
{
	b->sink = 1;
	b->fd = fd;
	b->sum = BLPP_FNV_OFFSET64;
}

static int ob_reserve(struct obuf *b, u64 n)
{
	u64 cap;
	long r;
	if (b->err)
		return 0;
	if (b->len + n <= b->cap)
		return 1;
	if (b->sink && b->cap && n <= b->cap) {
		ob_flush(b);
		return !b->err;
	}
	cap = b->cap ? b->cap : OB_SLOT;
	while (cap < b->len + n)
		cap *= 2;
	if (!b->p && cap == OB_SLOT && ob_pool && ob_pool_used < OB_SLOTS) {
		b->p = ob_pool + (u64)OB_SLOT * (u64)ob_pool_used++;
		b->cap = cap;
		return 1;
	}
	if (b->p)
		r = sc5(SYS_mremap, b->p, b->cap, cap, MREMAP_MAYMOVE, 0);
	else
		r = sc6(SYS_mmap, 0, (long)cap, PROT_RW, MAP_PRIVATE_ANON, -1, 0);
	if (failed(r)) {
		b->err = 1;
		return 0;
	}
	b->p = (u8 *)r;
	b->cap = cap;
	return 1;
}

static void ob_free(struct obuf *b)
{
	if (b->p && !in_slot(b))
		sc2(SYS_munmap, b->p, b->cap);
	b->p = 0;
	b->len = b->cap = 0;
}

/* ob_put appends n bytes; a short piece (most are: varints, path
 * entries) by word and byte moves, not rep movsb, whose start-up costs
 * more than the few bytes it moves. */
static void ob_put(struct obuf *b, const void *s, u64 n)
{
	if (b->sink && n > SINK_CAP / 2) {
		ob_flush(b);
		ob_write(b, s, n);
		return;
	}
	if (!n || (b->len + n > b->cap && !ob_reserve(b, n)))
		return;
	u8 *d = b->p + b->len;
	const u8 *c = s;
	b->len += n;
	if (n > 32) {
		mem_copy(d, s, n);
		return;
	}
	for (; n >= 8; n -= 8, d += 8, c += 8)
		__builtin_memcpy(d, c, 8);
	if (n & 4) {
		__builtin_memcpy(d, c, 4);
		d += 4, c += 4;
	}
	if (n & 2) {
		__builtin_memcpy(d, c, 2);
		d += 2, c += 2;
	}
	if (n & 1)
		*d = *c;
}

/* ob_u8 is ob_put of one byte, without its call: the writer puts one
 * before every record's paths (decision 152). */
static inline void ob_u8(struct obuf *b, u8 v)
{
	if (b->len + 1 > b->cap && !ob_reserve(b, 1))
		return;
	b->p[b->len++] = v;
}

static void ob_le(struct obuf *b, u64 v, int n)
{
	u8 x[8];
	for (int i = 0; i < n; i++)
		x[i] = (u8)(v >> (8 * i));
	ob_put(b, x, (u64)n);
}

/* ob_uv appends v as a varint, written in place. */
static inline void ob_uv(struct obuf *b, u64 v)
{
	u8 *p;
	if (b->len + 10 > b->cap && !ob_reserve(b, 10))
		return;
	p = b->p + b->len;
	while (v >= 0x80) {
		*p++ = (u8)(v | 0x80);
		v >>= 7;
	}
	*p++ = (u8)v;
	b->len = (u64)(p - b->p);
}

static void ob_sv(struct obuf *b, s64 v) { ob_uv(b, ((u64)v << 1) ^ (u64)(v >> 63)); }

static void ob_str(struct obuf *b, const char *s)
{
	u64 n = str_len(s);
	ob_uv(b, n);
	ob_put(b, s, n);
}

/*
 * A section whose length is known only once it is written (a thread's
 * records, which may run to megabytes: decision 142) goes to a regular
 * file's sink as it is made, with its length, and any count before its
 * items, first written as UV_FIXED-byte placeholders (ob_pos says where)
 * and set later (ob_patch): a varint with continuation bits on its
 * first nine bytes, which every LEB128 reader takes; a THREAD section
 * made whole has them in the same width (cct.FixedLen). The sink hashes
 * nothing from ob_hold on, since the file's bytes are not final there;
 * ob_sum_held reads them back once they are and hashes them in order.
 */
enum { UV_FIXED = 10 };

static u64 ob_pos(const struct obuf *b) { return b->off + b->len; }

/* uv_fixed writes v at p as a varint of UV_FIXED bytes. */
static void uv_fixed(u8 *p, u64 v)
{
	for (int i = 0; i < UV_FIXED - 1; i++, v >>= 7)
		p[i] = (u8)(v | 0x80);
	p[UV_FIXED - 1] = (u8)v;
}

/* ob_fixed appends v as a varint of UV_FIXED bytes: with 0, a
 * placeholder that ob_patch sets later. */
static void ob_fixed(struct obuf *b, u64 v)
{
	u8 x[UV_FIXED];
	uv_fixed(x, v);
	ob_put(b, x, UV_FIXED);
}

/* file_at reads or writes (nr: SYS_pread64, SYS_pwrite64) n bytes at
 * file offset pos, all of them; 0 on an error. */
static int file_at(long nr, long fd, u8 *p, u64 n, u64 pos)
{
	for (u64 done = 0; done < n;) {
		long r = sc4(nr, fd, p + done, n - done, pos + done);
		if (r == -4 /* EINTR */)
			continue;
		if (failed(r) || r == 0)
			return 0;
		done += (u64)r;
	}
	return 1;
}

/* ob_hold flushes sink b and stops hashing what it writes next. */
static void ob_hold(struct obuf *b)
{
	ob_flush(b);
	b->unsummed = 1;
	b->hold = b->off;
}

/* ob_patch sets the placeholder at file offset pos, written since
 * ob_hold, to v. */
static void ob_patch(struct obuf *b, u64 pos, u64 v)
{
	u8 x[UV_FIXED];
	uv_fixed(x, v);
	if (b->err)
		return;
	if (pos >= b->off) { /* still in the buffer */
		for (int i = 0; i < UV_FIXED; i++)
			b->p[pos - b->off + i] = x[i];
		return;
	}
	ob_flush(b);
	if (!file_at(SYS_pwrite64, b->fd, x, UV_FIXED, pos)) {
		b->werr = -5 /* EIO */;
		b->err = 1;
	}
}

/* ob_sum_held hashes sink b's bytes since ob_hold, final now, reading
 * back from its file what it has written (through its own buffer, empty
 * once flushed), and hashes what it writes next again. */
static void ob_sum_held(struct obuf *b)
{
	ob_flush(b);
	b->unsummed = 0;
	if (b->off > b->hold && !b->p && !ob_reserve(b, SINK_CAP))
		return;
	for (u64 pos = b->hold; pos < b->off && !b->err;) {
		u64 n = b->off - pos < b->cap ? b->off - pos : b->cap;
		if (!file_at(SYS_pread64, b->fd, b->p, n, pos)) {
			b->werr = -5 /* EIO */;
			b->err = 1;
			return;
		}
		b->sum = fnv_more(b->sum, b->p, n);
		pos += n;
	}
}

/* ob_section_of appends a section: its tag, its payload's length (a
 * varint of UV_FIXED bytes if fixed says so) and the payload, made of the
 * pieces p[0..n) in order, each copied once; ob_section, of one piece. */
static void ob_section_of(struct obuf *out, u8 tag, int fixed, const struct obuf *const *p, int n)
{
	u64 len = 0;
	for (int i = 0; i < n; i++) {
		len += p[i]->len;
		if (p[i]->err)
			out->err = 1;
	}
	ob_u8(out, tag);
	if (fixed)
		ob_fixed(out, len);
	else
		ob_uv(out, len);
	for (int i = 0; i < n; i++)
		ob_put(out, p[i]->p, p[i]->len);
}

static void ob_section(struct obuf *out, u8 tag, struct obuf *payload)
{
	const struct obuf *p[] = {payload};
	ob_section_of(out, tag, 0, p, 1);
}

/* Heapsorts (no libc qsort): path entries by id, partials by (rec, func, block, reg). */
static int pent_less(const struct pent *a, const struct pent *b)
{
	if (a->rec != b->rec)
		return a->rec < b->rec;
	if (a->func != b->func)
		return a->func < b->func;
	if (a->block != b->block)
		return a->block < b->block;
	return a->reg < b->reg;
}

/* hent: a hash entry found for sorting: its key and its values in the
 * table (rt.stride words). */
struct hent {
	u64 key;
	u64 *v;
};


#define DEFINE_HEAPSORT(name, T, less)                                         \
	static void name(T *a, u64 n)                                          \
	{                                                                      \
		for (u64 k = n; k-- > 0;)                                      \
			name##_sift(a, k, n);                                  \
		while (n > 1) {                                                \
			T x = a[0];                                            \
			a[0] = a[n - 1];                                       \
			a[n - 1] = x;                                          \
			name##_sift(a, 0, --n);                                \
		}                                                              \
	}
#define DEFINE_SIFT(name, T, less)                                             \
	static void name##_sift(T *a, u64 i, u64 n)                            \
	{                                                                      \
		for (;;) {                                                     \
			u64 c = 2 * i + 1;                                     \
			T x;                                                   \
			if (c >= n)                                            \
				return;                                        \
			if (c + 1 < n && less(&a[c], &a[c + 1]))               \
				c++;                                           \
			if (!less(&a[i], &a[c]))                               \
				return;                                        \
			x = a[i];                                              \
			a[i] = a[c];                                           \
			a[c] = x;                                              \
			i = c;                                                 \
		}                                                              \
	}
DEFINE_SIFT(sort_pents, struct pent, pent_less)
DEFINE_HEAPSORT(sort_pents, struct pent, pent_less)

/* sort_few sorts a few hents by key, by insertion (a cold record's
 * table holds two). */
static void sort_few(struct hent *a, u64 n)
{
	for (u64 i = 1; i < n; i++) {
		struct hent x = a[i];
		u64 j = i;
		for (; j > 0 && a[j - 1].key > x.key; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

/* sort_hents sorts n hents by key and returns where they are, a or tmp
 * (room for n): a bottom-up merge sort of runs sorted by insertion
 * [Knuth, TAOCP 3, 5.2.4], some half the comparisons and moves of a
 * heapsort, and no worse on any input. */
static struct hent *sort_hents(struct hent *a, struct hent *tmp, u64 n)
{
	enum { RUN = 16 };
	for (u64 i = 0; i < n; i += RUN)
		sort_few(a + i, n - i < RUN ? n - i : RUN);
	for (u64 w = RUN; w < n; w *= 2) {
		struct hent *x;
		for (u64 lo = 0; lo < n; lo += 2 * w) {
			u64 mid = n - lo < w ? n : lo + w, hi = n - lo < 2 * w ? n : lo + 2 * w, i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = a[j].key < a[i].key ? a[j++] : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		x = a;
		a = tmp;
		tmp = x;
	}
	return a;
}
