/*
 * init.c - code the C library and ld.so run before main and after it:
 * a DT_PREINIT_ARRAY entry (in a dynamic executable ld.so runs it before
 * the entry point, so before blpp's runtime is initialised; in a static
 * one __libc_start_main runs it), constructors with and without
 * priorities, a pointer placed by hand in .init_array.00042 (sorted by
 * the linker among the prioritised constructors) and one in .ctors (which
 * GNU ld folds into .init_array, in reverse), and destructors, one with a
 * priority. Each calls work(), which loops, so the order and the counts
 * show in the output and in the profile.
 */
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static char order[64];
static int norder;
static long acc;

NOINLINE static void work(char tag, int n)
{
	if (norder < (int)sizeof(order) - 1)
		order[norder++] = tag;
	for (int i = 0; i < n; i++)
		acc += (i & 1) ? i : tag;
}

NOINLINE static void preinit(void) { work('P', 3); }
NOINLINE static void by_section(void) { work('S', 4); }
NOINLINE static void by_ctors(void) { work('C', 2); }

__attribute__((constructor)) static void ctor_plain(void) { work('c', 5); }
__attribute__((constructor(101))) static void ctor_101(void) { work('1', 6); }
__attribute__((constructor(65535))) static void ctor_last(void) { work('9', 1); }
__attribute__((destructor)) static void dtor_plain(void)
{
	work('d', 2);
	printf("after main: %s acc %ld\n", order, acc);
}
__attribute__((destructor(200))) static void dtor_200(void) { work('D', 3); }

__attribute__((section(".preinit_array"), used)) static void (*const preinit_p)(void) = preinit;
__attribute__((section(".init_array.00042"), used)) static void (*const section_p)(void) = by_section;
__attribute__((section(".ctors"), used)) static void (*const ctors_p)(void) = by_ctors;

int main(int argc, char **argv)
{
	(void)argv;
	work('m', argc + 7);
	printf("in main: %s acc %ld\n", order, acc);
	return 0;
}
