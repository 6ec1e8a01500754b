/*
 * rw_main.c: a program that uses rw_lib.c's library (linked against it
 * as librw.so) and prints what it computes; rewriter/module_test.go runs
 * it, uninstrumented, with the original and the rewritten library.
 */
#include <stdio.h>

extern int rw_counter;
int rw_inits(void);
long rw_sum(const int *a, int n);
const char *rw_kind(int c);
int rw_apply(int (*f)(int), int n);
void rw_sort(int *a, int n);
unsigned rw_hash(const char *s);
long rw_fib(int n);

static int square(int x) { return x * x; }

int main(int argc, char **argv)
{
	int a[64];
	for (int i = 0; i < 64; i++)
		a[i] = (i * 37 + argc) % 23 - 7;
	printf("inits %d\n", rw_inits());
	printf("sum %ld\n", rw_sum(a, 64));
	for (int i = 0; i < 12; i++)
		printf("kind %d %s\n", i, rw_kind(i));
	printf("apply %d\n", rw_apply(square, 100));
	rw_sort(a, 64);
	printf("sorted %d %d %d\n", a[0], a[31], a[63]);
	printf("hash %u\n", rw_hash(argv[0] ? "blpp" : ""));
	printf("fib %ld\n", rw_fib(20));
	printf("counter %d\n", rw_counter);
	return rw_counter % 7;
}
