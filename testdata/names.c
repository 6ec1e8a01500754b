/*
 * names.c - three nested calls that report where they are, for the tests
 * of symbols and unwind tables of relocated code.
 *
 *   names bt     outer -> middle -> inner; inner prints backtrace() through
 *                backtrace_symbols_fd on stdout (build with -rdynamic so
 *                glibc's dladdr can name the functions)
 *   names segv   the same calls; inner writes through a NULL pointer
 *   names        the same calls, then returns 0
 *
 * Each caller uses the callee's result after the call, so no call is a
 * tail call and every frame is live when inner runs.
 */
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
int *volatile null_ptr;

NOINLINE int inner(int mode)
{
	if (mode == 1) {
		void *buf[64];
		int n = backtrace(buf, 64);
		fflush(stdout);
		backtrace_symbols_fd(buf, n, 1);
		return n;
	}
	if (mode == 2)
		*null_ptr = mode;
	return sink;
}

NOINLINE int middle(int mode)
{
	int r = inner(mode);
	sink += r;
	return r + 1;
}

NOINLINE int outer(int mode)
{
	int r = middle(mode);
	sink += r;
	return r + 1;
}

int main(int argc, char **argv)
{
	int mode = 0;
	if (argc > 1 && strcmp(argv[1], "bt") == 0)
		mode = 1;
	if (argc > 1 && strcmp(argv[1], "segv") == 0)
		mode = 2;
	printf("depth %d\n", outer(mode) - 2);
	return 0;
}
