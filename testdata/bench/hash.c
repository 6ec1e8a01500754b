/*
 * hash.c - benchmark workload: hash tables under a mixed operation stream.
 *
 * Two tables hold the same key set: an open-addressing table with linear
 * probing and tombstones (grown and rehashed when full), and a chained
 * table of string keys with a multiplicative string hash.  A generated
 * stream of inserts, lookups and deletes drives both; every lookup must
 * give the same answer in both, and the checksum mixes in the answers and
 * the final sizes.  The mix of probe loops, string comparisons, allocation
 * and rehashing is the shape of a symbol table or a cache.
 *
 * usage: hash [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

/* ---- open addressing, unsigned long keys ---- */

enum { SLOT_EMPTY, SLOT_FULL, SLOT_DEAD };

struct oa_table {
	unsigned long *keys;
	long *vals;
	unsigned char *state;
	long cap, used, live; /* used counts full and dead slots */
};

static unsigned long mix64(unsigned long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdul;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ul;
	x ^= x >> 33;
	return x;
}

static void oa_alloc(struct oa_table *t, long cap)
{
	t->keys = calloc(cap, sizeof *t->keys);
	t->vals = calloc(cap, sizeof *t->vals);
	t->state = calloc(cap, 1);
	if (!t->keys || !t->vals || !t->state) {
		fprintf(stderr, "hash: out of memory\n");
		exit(1);
	}
	t->cap = cap;
	t->used = t->live = 0;
}

static void oa_free(struct oa_table *t)
{
	free(t->keys), free(t->vals), free(t->state);
}

NOINLINE static long oa_find(const struct oa_table *t, unsigned long key)
{
	long mask = t->cap - 1;
	for (long i = (long)mix64(key) & mask;; i = (i + 1) & mask) {
		if (t->state[i] == SLOT_EMPTY)
			return -1;
		if (t->state[i] == SLOT_FULL && t->keys[i] == key)
			return i;
	}
}

static void oa_put(struct oa_table *t, unsigned long key, long val);

NOINLINE static void oa_grow(struct oa_table *t)
{
	struct oa_table old = *t;
	/* double only when live keys need it; otherwise just drop tombstones */
	oa_alloc(t, old.live * 2 >= old.cap / 2 ? old.cap * 2 : old.cap);
	for (long i = 0; i < old.cap; i++)
		if (old.state[i] == SLOT_FULL)
			oa_put(t, old.keys[i], old.vals[i]);
	oa_free(&old);
}

NOINLINE static void oa_put(struct oa_table *t, unsigned long key, long val)
{
	if ((t->used + 1) * 4 > t->cap * 3)
		oa_grow(t);
	long mask = t->cap - 1, dead = -1, i;
	for (i = (long)mix64(key) & mask;; i = (i + 1) & mask) {
		if (t->state[i] == SLOT_EMPTY)
			break;
		if (t->state[i] == SLOT_DEAD) {
			if (dead < 0)
				dead = i;
		} else if (t->keys[i] == key) {
			t->vals[i] = val;
			return;
		}
	}
	if (dead >= 0)
		i = dead;
	else
		t->used++;
	t->state[i] = SLOT_FULL;
	t->keys[i] = key;
	t->vals[i] = val;
	t->live++;
}

NOINLINE static int oa_del(struct oa_table *t, unsigned long key)
{
	long i = oa_find(t, key);
	if (i < 0)
		return 0;
	t->state[i] = SLOT_DEAD;
	t->live--;
	return 1;
}

/* ---- separate chaining, string keys ---- */

struct node {
	struct node *next;
	long val;
	char key[24];
};

struct ch_table {
	struct node **bucket;
	long nbuckets, live;
	struct node *free_list;
};

NOINLINE static unsigned str_hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

NOINLINE static struct node *ch_new(struct ch_table *t)
{
	struct node *n = t->free_list;
	if (n != NULL) {
		t->free_list = n->next;
		return n;
	}
	n = malloc(sizeof *n);
	if (n == NULL) {
		fprintf(stderr, "hash: out of memory\n");
		exit(1);
	}
	return n;
}

NOINLINE static struct node **ch_slot(struct ch_table *t, const char *key)
{
	struct node **p = &t->bucket[str_hash(key) & (t->nbuckets - 1)];
	while (*p != NULL && strcmp((*p)->key, key) != 0)
		p = &(*p)->next;
	return p;
}

NOINLINE static void ch_put(struct ch_table *t, const char *key, long val)
{
	struct node **p = ch_slot(t, key);
	if (*p != NULL) {
		(*p)->val = val;
		return;
	}
	struct node *n = ch_new(t);
	strcpy(n->key, key);
	n->val = val;
	n->next = NULL;
	*p = n;
	t->live++;
}

NOINLINE static int ch_del(struct ch_table *t, const char *key)
{
	struct node **p = ch_slot(t, key);
	if (*p == NULL)
		return 0;
	struct node *n = *p;
	*p = n->next;
	n->next = t->free_list;
	t->free_list = n;
	t->live--;
	return 1;
}

static void key_name(char *buf, unsigned long k)
{
	/* "k" followed by the key in base 36, reversed: cheap and unique */
	char *p = buf;
	*p++ = 'k';
	do {
		unsigned d = (unsigned)(k % 36);
		*p++ = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		k /= 36;
	} while (k != 0);
	*p = '\0';
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	long ops = 10000 + scale * 30000, universe = 1000 + scale * 2000;
	unsigned long seed = 0x9e3779b97f4a7c15ul, check = 0;
	long hits = 0, dels = 0;
	struct oa_table oa;
	struct ch_table ch = {0};
	char name[32];
	if (scale <= 0) {
		fprintf(stderr, "usage: hash [SCALE>0]\n");
		return 2;
	}
	oa_alloc(&oa, 16);
	ch.nbuckets = 1;
	while (ch.nbuckets < universe)
		ch.nbuckets <<= 1;
	ch.bucket = calloc(ch.nbuckets, sizeof *ch.bucket);
	if (ch.bucket == NULL) {
		fprintf(stderr, "hash: out of memory\n");
		return 1;
	}
	for (long i = 0; i < ops; i++) {
		seed = seed * 6364136223846793005ul + 1442695040888963407ul;
		unsigned long r = seed >> 24;
		unsigned long key = mix64(r % (unsigned long)universe) | 1;
		key_name(name, key);
		switch (r >> 36 & 7) {
		case 0:
		case 1:
		case 2: /* insert or update */
			oa_put(&oa, key, (long)i);
			ch_put(&ch, name, (long)i);
			break;
		case 3: { /* delete */
			int a = oa_del(&oa, key), b = ch_del(&ch, name);
			if (a != b) {
				fprintf(stderr, "hash: delete disagrees at op %ld\n", i);
				return 1;
			}
			dels += a;
			break;
		}
		default: { /* lookup */
			long at = oa_find(&oa, key);
			struct node *n = *ch_slot(&ch, name);
			if ((at >= 0) != (n != NULL) || (n != NULL && n->val != oa.vals[at])) {
				fprintf(stderr, "hash: lookup disagrees at op %ld\n", i);
				return 1;
			}
			if (n != NULL) {
				hits++;
				check = check * 1000003u + (unsigned long)n->val;
			}
		}
		}
	}
	if (oa.live != ch.live) {
		fprintf(stderr, "hash: sizes disagree: %ld vs %ld\n", oa.live, ch.live);
		return 1;
	}
	printf("hash scale=%ld ops=%ld live=%ld hits=%ld deletes=%ld checksum=%016lx\n",
	       scale, ops, oa.live, hits, dels, check);
	oa_free(&oa);
	return 0;
}
