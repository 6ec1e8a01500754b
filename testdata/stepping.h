/*
 * stepping.h - what the single-stepped fixtures share (stepmix.c,
 * steplong.c, cxx/stepthrow.cpp; decision 163): the handler's own
 * instrumented code, a call and a loop (probe_leaf, probe_loop), and
 * trap_flag, which sets or clears the trap flag (EFLAGS.TF) so that the
 * CPU raises SIGTRAP after each instruction, and on_sigtrap, which
 * installs the handler. The includer defines NOINLINE first; in C++ these
 * keep their C names, which the tests look for.
 */
#include <signal.h>
#include <string.h>

#ifdef __cplusplus
#define STEPPING_C extern "C"
#else
#define STEPPING_C static
#endif

NOINLINE unsigned long probe_leaf(unsigned long x) { return x * 2654435761u + 1; }

NOINLINE unsigned long probe_loop(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += (i & 1) ? probe_leaf(i) : i;
	return s;
}

STEPPING_C void trap_flag(int on)
{
	if (on)
		__asm__ volatile("pushf; orl $0x100, (%%rsp); popf" ::: "memory", "cc");
	else
		__asm__ volatile("pushf; andl $~0x100, (%%rsp); popf" ::: "memory", "cc");
}

/* on_sigtrap makes h the SIGTRAP handler; with nodefer, a handler's own
 * instructions may be stepped too (a second handler inside the first). */
STEPPING_C void on_sigtrap(void (*h)(int), int nodefer)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = nodefer ? SA_NODEFER : 0;
	sigaction(SIGTRAP, &sa, 0);
}
