/*
 * alias.c - several symbols for one body of code: __attribute__((alias))
 * (strong and weak), so the symbol table holds two or three names at one
 * address, and the program calls each name.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

NOINLINE int impl_count(int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (i % 3 == 0)
			k++;
	return k;
}

int count_alias(int n) __attribute__((alias("impl_count")));
int count_weak(int n) __attribute__((weak, alias("impl_count")));

/* Called through a pointer too, so the compiler cannot fold the names. */
int (*volatile via_ptr)(int) = count_alias;

int main(int argc, char **argv)
{
	(void)argv;
	int a = impl_count(10 + argc), b = count_alias(20), c = count_weak(30), d = via_ptr(40);
	printf("alias: %d %d %d %d\n", a, b, c, d);
	return 0;
}
