/*
 * hash.c - string hashing and a chained hash table: byte loops whose trip
 * count is the string length (unknown to the compiler, so no vectorising),
 * a lookup loop with an early return, and strcmp calls into libc.
 *
 * Words are generated from a fixed seed by a linear congruential
 * generator, so the output is the same on every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int vol_n = 400;

#define NBUCKETS 64
#define MAXWORDS 1024

struct entry {
	const char *key;
	int count;
	struct entry *next;
};

static struct entry pool[MAXWORDS];
static int npool;
static struct entry *buckets[NBUCKETS];
static char words[MAXWORDS][12];

/* FNV-1a.  loops: 1, depths: [1]. */
NOINLINE unsigned fnv1a(const char *s)
{
	unsigned h = 2166136261u;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

/* Bernstein's hash.  loops: 1, depths: [1]. */
NOINLINE unsigned long djb2(const char *s)
{
	unsigned long h = 5381;
	int c;
	while ((c = (unsigned char)*s++) != 0)
		h = h * 33 + (unsigned long)c;
	return h;
}

/* Counts key in the table.  loops: 1, depths: [1] (the chain walk, which
 * returns early on a hit). */
NOINLINE int insert(const char *key)
{
	unsigned b = fnv1a(key) % NBUCKETS;
	for (struct entry *e = buckets[b]; e != NULL; e = e->next) {
		if (strcmp(e->key, key) == 0)
			return ++e->count;
	}
	struct entry *e = &pool[npool++];
	e->key = key;
	e->count = 1;
	e->next = buckets[b];
	buckets[b] = e;
	return 1;
}

static unsigned long lcg_state = 12345;

static unsigned lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ul + 1442695040888963407ul;
	return (unsigned)(lcg_state >> 33);
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 400 when run without arguments */
	unsigned long mix = 0;
	int dups = 0;

	if (n > MAXWORDS)
		n = MAXWORDS;
	for (int i = 0; i < n; i++) {
		int len = 1 + lcg() % 3;
		for (int j = 0; j < len; j++)
			words[i][j] = (char)('a' + lcg() % 6);
		words[i][len] = '\0';
		if (insert(words[i]) > 1)
			dups++;
		mix ^= djb2(words[i]) + (unsigned long)i;
	}
	printf("words %d distinct %d dups %d mix %lu\n", n, npool, dups, mix);
	for (int b = 0; b < 4; b++)
		for (struct entry *e = buckets[b]; e != NULL; e = e->next)
			printf("bucket %d: %s x%d\n", b, e->key, e->count);
	return 0;
}
