/*
 * rw_lib.c: a small shared library for blpp's shared-object tests
 * (rewriter/module_test.go): loops, a switch (a jump table), recursion, a
 * callback into the caller, qsort calling back into the library, a
 * constructor and a destructor, exported data. rw_main.c uses it.
 */
#include <stdio.h>
#include <stdlib.h>

int rw_counter;
static int inits;

__attribute__((constructor)) static void rw_init(void) { inits++; }

__attribute__((destructor)) static void rw_fini(void)
{
	if (getenv("RW_VERBOSE"))
		fprintf(stderr, "rw_fini: counter %d\n", rw_counter);
}

int rw_inits(void) { return inits; }

long rw_sum(const int *a, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++) {
		if (a[i] > 0)
			s += a[i];
		else
			rw_counter++;
	}
	return s;
}

const char *rw_kind(int c)
{
	switch (c % 9) {
	case 0: return "zero";
	case 1: return "one";
	case 2: return "two";
	case 3: return "three";
	case 4: return "four";
	case 5: return "five";
	case 6: return "six";
	case 7: return "seven";
	default: return "many";
	}
}

int rw_apply(int (*f)(int), int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += f(i);
	return s;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	rw_counter++;
	return (x > y) - (x < y);
}

void rw_sort(int *a, int n) { qsort(a, n, sizeof *a, cmp_int); }

unsigned rw_hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

long rw_fib(int n) { return n < 2 ? n : rw_fib(n - 1) + rw_fib(n - 2); }
