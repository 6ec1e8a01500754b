/*
 * boltprof.c - the kinds of function a BOLT profile has to name: local
 * (static) functions, gcc's .cold fragments and its .isra/.constprop
 * clones, and a callback from uninstrumented code (the C library's qsort
 * calling cmp_int, a million times and more for one call).
 *
 * Built with gcc -O2: scale_by.constprop.0 (a static function whose
 * argument is always 3), weigh.isra.0 (a static function given a struct
 * whose one field it reads), check.cold and parse.cold (blocks that only
 * lead to a cold function).  The output does not depend on the C library.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define unlikely(x) __builtin_expect(!!(x), 0)

struct item {
	long key;
	long pad[3];
};

volatile int sink;
volatile int vol_n = 60000;

NOINLINE __attribute__((cold)) static void complain(const char *what, long v)
{
	fprintf(stderr, "bad %s: %ld\n", what, v);
}

NOINLINE static long scale_by(long x, int k)
{
	long r = 0;
	for (int i = 0; i < k; i++)
		r += x ^ i;
	return r;
}

NOINLINE static long weigh(struct item it)
{
	if (it.key % 7 == 0)
		return it.key / 7;
	return it.key * 3 + 1;
}

NOINLINE static long check(long v)
{
	if (unlikely(v < 0)) {
		complain("value", v);
		sink = 1;
		return 0;
	}
	return v % 1000;
}

NOINLINE static int parse(const char *s)
{
	int v = 0;
	for (; *s; s++) {
		if (unlikely(*s < '0' || *s > '9')) {
			complain("digit", *s);
			return -1;
		}
		v = v * 10 + (*s - '0');
	}
	return v;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	int n = vol_n;
	int *v = malloc(sizeof *v * (size_t)n);
	long sum = 0;
	if (v == NULL)
		return 1;
	for (int i = 0; i < n; i++) {
		struct item it = {.key = i};
		v[i] = (int)((i * 7919L) % 100003);
		sum += scale_by(i, 3) % 11;
		sum += weigh(it) % 13;
		sum += check(v[i]);
	}
	qsort(v, (size_t)n, sizeof v[0], cmp_int);
	sum += parse("12345") + v[0] + v[n - 1];
	printf("%ld\n", sum);
	free(v);
	return 0;
}
