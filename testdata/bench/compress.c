/*
 * compress.c - benchmark workload: an LZ77 compressor with a bit packer.
 *
 * The input is generated text: words drawn from a small vocabulary with a
 * skewed distribution, so it has the repeats a dictionary coder finds.
 * compress() walks it with a hash of the next three bytes, follows a
 * bounded hash chain to find the longest earlier match, and emits literals
 * (9 bits) or (length, distance) pairs (1 + 8 + 15 bits) through a bit
 * writer.  decompress() reads the bits back, the result must equal the
 * input, and a table-driven CRC-32 of the compressed stream is the
 * checksum.  This is the loop structure of deflate's longest_match and of
 * every bit-level encoder.
 *
 * usage: compress [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

#define WINDOW (1 << 15)
#define HASH_BITS 14
#define MIN_MATCH 3
#define MAX_MATCH 258
#define MAX_CHAIN 48

struct bitwriter {
	unsigned char *buf;
	long pos;        /* bytes written */
	unsigned long acc; /* pending bits, low first */
	int nbits;
};

NOINLINE static void put_bits(struct bitwriter *w, unsigned long v, int n)
{
	w->acc |= v << w->nbits;
	w->nbits += n;
	while (w->nbits >= 8) {
		w->buf[w->pos++] = (unsigned char)w->acc;
		w->acc >>= 8;
		w->nbits -= 8;
	}
}

static void flush_bits(struct bitwriter *w)
{
	if (w->nbits > 0)
		w->buf[w->pos++] = (unsigned char)w->acc;
	w->acc = 0;
	w->nbits = 0;
}

struct bitreader {
	const unsigned char *buf;
	long pos, len;
	unsigned long acc;
	int nbits;
};

NOINLINE static unsigned long get_bits(struct bitreader *r, int n)
{
	while (r->nbits < n) {
		unsigned long b = r->pos < r->len ? r->buf[r->pos] : 0;
		r->pos++;
		r->acc |= b << r->nbits;
		r->nbits += 8;
	}
	unsigned long v = r->acc & ((1ul << n) - 1);
	r->acc >>= n;
	r->nbits -= n;
	return v;
}

static inline unsigned hash3(const unsigned char *p)
{
	unsigned v = p[0] | p[1] << 8 | p[2] << 16;
	return (v * 2654435761u) >> (32 - HASH_BITS);
}

/* longest_match returns the length of the longest match for in[pos..]
 * along the hash chain, storing its distance in *dist. */
NOINLINE static int longest_match(const unsigned char *in, long pos, long len,
				  const int *head, const int *prev, long *dist)
{
	int best = 0;
	long limit = len - pos < MAX_MATCH ? len - pos : MAX_MATCH;
	long cand = head[hash3(in + pos)];
	for (int chain = 0; cand >= 0 && chain < MAX_CHAIN; chain++) {
		if (pos - cand > WINDOW - 1)
			break;
		if (in[cand + best] == in[pos + best]) {
			int l = 0;
			while (l < limit && in[cand + l] == in[pos + l])
				l++;
			if (l > best) {
				best = l;
				*dist = pos - cand;
				if (l == limit)
					break;
			}
		}
		cand = prev[cand & (WINDOW - 1)];
	}
	return best;
}

NOINLINE static long compress(const unsigned char *in, long len, unsigned char *out)
{
	static int head[1 << HASH_BITS];
	static int prev[WINDOW];
	struct bitwriter w = {out, 0, 0, 0};
	memset(head, 0xff, sizeof head);
	long pos = 0;
	while (pos < len) {
		long dist = 0;
		int l = pos + MIN_MATCH <= len ? longest_match(in, pos, len, head, prev, &dist) : 0;
		if (l >= MIN_MATCH) {
			put_bits(&w, 1, 1);
			put_bits(&w, (unsigned long)(l - MIN_MATCH), 8);
			put_bits(&w, (unsigned long)dist, 15);
		} else {
			l = 1;
			put_bits(&w, 0, 1);
			put_bits(&w, in[pos], 8);
		}
		/* insert every position of the token into the hash chains */
		for (long end = pos + l; pos < end; pos++) {
			if (pos + MIN_MATCH <= len) {
				unsigned h = hash3(in + pos);
				prev[pos & (WINDOW - 1)] = head[h];
				head[h] = (int)pos;
			}
		}
	}
	flush_bits(&w);
	return w.pos;
}

NOINLINE static long decompress(const unsigned char *in, long len, unsigned char *out, long max)
{
	struct bitreader r = {in, 0, len, 0, 0};
	long pos = 0;
	while (pos < max) {
		if (get_bits(&r, 1)) {
			long l = (long)get_bits(&r, 8) + MIN_MATCH;
			long dist = (long)get_bits(&r, 15);
			if (dist == 0 || dist > pos || pos + l > max)
				return -1;
			for (long i = 0; i < l; i++, pos++)
				out[pos] = out[pos - dist];
		} else {
			out[pos++] = (unsigned char)get_bits(&r, 8);
		}
	}
	return pos;
}

static unsigned crc_table[256];

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		unsigned c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

NOINLINE static unsigned crc32(const unsigned char *p, long n)
{
	unsigned c = 0xffffffffu;
	for (long i = 0; i < n; i++)
		c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static const char *const words[] = {
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as",
	"with", "was", "on", "be", "by", "path", "profile", "counter", "branch",
	"edge", "block", "loop", "function", "return", "value", "register",
	"instrumentation", "overhead", "binary", "executable", "acyclic",
};

NOINLINE static long gen_text(unsigned char *buf, long n, unsigned long seed)
{
	long pos = 0;
	int nwords = (int)(sizeof words / sizeof words[0]);
	while (pos < n) {
		seed = seed * 6364136223846793005ul + 1442695040888963407ul;
		unsigned r = (unsigned)(seed >> 33);
		/* squaring a uniform value skews the choice towards early words */
		unsigned u = r % 1024;
		const char *wd = words[((u * u) >> 10) * (unsigned)nwords >> 10];
		for (const char *c = wd; *c && pos < n; c++)
			buf[pos++] = (unsigned char)*c;
		if (pos < n)
			buf[pos++] = (r & 0x700) == 0 ? '\n' : ' ';
		if ((r & 0xff) == 7) { /* the occasional number */
			char digits[12];
			int k = 0;
			unsigned v = r % 100000;
			do
				digits[k++] = (char)('0' + v % 10);
			while ((v /= 10) != 0);
			while (k > 0 && pos < n)
				buf[pos++] = (unsigned char)digits[--k];
			if (pos < n)
				buf[pos++] = ' ';
		}
	}
	return pos;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	long n = 20000 + scale * 60000;
	unsigned long check = 0;
	if (scale <= 0) {
		fprintf(stderr, "usage: compress [SCALE>0]\n");
		return 2;
	}
	unsigned char *in = malloc(n), *z = malloc(n * 2 + 16), *back = malloc(n);
	if (!in || !z || !back) {
		fprintf(stderr, "compress: out of memory\n");
		return 1;
	}
	crc_init();
	long total = 0;
	for (int round = 0; round < 3; round++) {
		gen_text(in, n, 12345u + (unsigned)round);
		long zlen = compress(in, n, z);
		if (decompress(z, zlen, back, n) != n || memcmp(in, back, n) != 0) {
			fprintf(stderr, "compress: round %d: round trip failed\n", round);
			return 1;
		}
		total += zlen;
		check = check * 1000003u + crc32(z, zlen);
	}
	printf("compress scale=%ld in=%ld out=%ld checksum=%016lx\n", scale, 3 * n, total, check);
	free(in), free(z), free(back);
	return 0;
}
