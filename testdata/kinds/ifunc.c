/*
 * ifunc.c - GNU indirect functions defined in the executable: the symbol
 * sum_ifunc is STT_GNU_IFUNC and every reference goes through an
 * R_X86_64_IRELATIVE relocation whose resolver runs before main: in a
 * dynamic executable ld.so runs it while relocating, before the entry
 * point (so before blpp's runtime is initialised); in a static one
 * __libc_start_main (apply_irel) runs it, after the entry point.
 * The resolver calls a helper of its own (pick), which runs early too,
 * and again from main.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

typedef long sum_fn(const int *, int);

volatile int vol_mode = 1;
int resolver_runs;

NOINLINE static long sum_plain(const int *a, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += a[i];
	return s;
}

NOINLINE static long sum_unrolled(const int *a, int n)
{
	long s = 0;
	int i = 0;
	for (; i + 2 <= n; i += 2)
		s += a[i] + a[i + 1];
	if (i < n)
		s += a[i];
	return s;
}

/* pick: a helper the resolver calls; it loops so that its paths are not
 * all one. */
NOINLINE int pick(int mode)
{
	int k = 0;
	for (int i = 0; i < mode + 3; i++)
		if (i & 1)
			k++;
	return k & 1;
}

/* The resolver: no relocation of its own may be needed before it runs
 * (it runs while the program is being relocated), so it only takes
 * addresses of local functions and touches local data. */
static sum_fn *resolve_sum(void)
{
	resolver_runs++;
	if (pick(vol_mode))
		return sum_unrolled;
	return sum_plain;
}

long sum_ifunc(const int *, int) __attribute__((ifunc("resolve_sum")));

int main(int argc, char **argv)
{
	(void)argv;
	int a[37];
	for (int i = 0; i < 37; i++)
		a[i] = i * 3 - argc;
	long t = 0;
	for (int n = 0; n < 37; n += 4)
		t += sum_ifunc(a, n);
	/* Called directly too, after the runtime is ready. */
	printf("ifunc: sum %ld, pick %d, resolver ran %d time(s)\n", t, pick(argc + 2), resolver_runs);
	return 0;
}
