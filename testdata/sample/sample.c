/*
 * sample.c: sampled attribution (issue 28, decision 92) with known
 * answers. Modes (argv[1]), scaled by argv[2]:
 *
 *   split    a loop whose two paths do 3:1 work (by instruction count:
 *            one path runs 1,536 rounds, the other 512: enough that the
 *            runtime's path end at each iteration, which a sampling
 *            image takes at every backedge and which costs the same for
 *            both paths, does not blur the 3:1 of their time), and work()
 *            called from two contexts with 1:4 work (ctx_a, ctx_b);
 *   threads  two threads, each spinning in its own function (each
 *            thread's CPU time goes to stderr);
 *   places   the program's own SIGPROF timer (setitimer) with a handler
 *            that works in instrumented code, and a loop calling libc's
 *            memset (an uninstrumented library).
 *
 * The standard output depends on the scale only, never on timing.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* One round: not foldable by the compiler (xorshift-multiply). */
#define ROUND(x) (x ^= x >> 29, x *= 0xbf58476d1ce4e5b9ul)
#define R8(x) (ROUND(x), ROUND(x), ROUND(x), ROUND(x), ROUND(x), ROUND(x), ROUND(x), ROUND(x))
#define R32(x) (R8(x), R8(x), R8(x), R8(x))
#define R512(x) (R32(x), R32(x), R32(x), R32(x), R32(x), R32(x), R32(x), R32(x), \
		 R32(x), R32(x), R32(x), R32(x), R32(x), R32(x), R32(x), R32(x))

__attribute__((noinline)) unsigned long loop(unsigned long n, unsigned long x)
{
	for (unsigned long i = 0; i < n; i++) {
		if (i & 1) {
			R512(x);
			R512(x);
			R512(x);
		} else {
			R512(x);
		}
	}
	return x;
}

__attribute__((noinline)) unsigned long work(unsigned long n, unsigned long x)
{
	for (unsigned long i = 0; i < n; i++)
		R8(x);
	return x;
}

__attribute__((noinline)) unsigned long ctx_a(unsigned long x) { return work(100, x); }
__attribute__((noinline)) unsigned long ctx_b(unsigned long x) { return work(400, x); }

static void split(unsigned long scale)
{
	unsigned long x = 1;
	for (unsigned long r = 0; r < scale * 60; r++) {
		x = ctx_a(x);
		x = ctx_b(x);
	}
	x = loop(scale * 200, x);
	printf("split %lu\n", x & 1);
}

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long spin_a(unsigned long n)
{
	unsigned long x = 3;
	for (unsigned long i = 0; i < n; i++)
		R8(x);
	return x;
}

__attribute__((noinline)) unsigned long spin_b(unsigned long n)
{
	unsigned long x = 5;
	for (unsigned long i = 0; i < n; i++)
		R8(x);
	return x;
}

/* Each thread's own CPU time, which is what its samples measure: the
 * test compares the samples' split with these, taken in the same run
 * (two spinners sharing a busy machine do not run at the same speed). */
static unsigned long long cpu_a, cpu_b;

static unsigned long long thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *thread_a(void *arg) { sink += spin_a((unsigned long)arg); cpu_a = thread_cpu(); return 0; }
static void *thread_b(void *arg) { sink += spin_b((unsigned long)arg); cpu_b = thread_cpu(); return 0; }

static void threads(unsigned long scale)
{
	pthread_t a, b;
	pthread_create(&a, 0, thread_a, (void *)(scale * 20000));
	pthread_create(&b, 0, thread_b, (void *)(scale * 40000));
	pthread_join(a, 0);
	pthread_join(b, 0);
	printf("threads done\n");
	fprintf(stderr, "thread cpu ns: a %llu b %llu\n", cpu_a, cpu_b);
}

static volatile unsigned long ticks;

__attribute__((noinline)) void in_handler(void)
{
	unsigned long x = ticks;
	for (int i = 0; i < 12000; i++)
		R8(x);
	sink += x;
}

static void on_prof(int sig)
{
	(void)sig;
	ticks++;
	in_handler();
}

__attribute__((noinline)) void use_lib(unsigned long n)
{
	static char buf[1 << 16];
	for (unsigned long i = 0; i < n; i++) {
		memset(buf, (int)i, sizeof(buf));
		sink += buf[i & 0xffff];
	}
}

static void places(unsigned long scale)
{
	struct sigaction sa;
	struct itimerval it = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sigaction(SIGPROF, &sa, 0);
	setitimer(ITIMER_PROF, &it, 0);
	use_lib(scale * 300);
	unsigned long x = 7;
	for (unsigned long i = 0; i < scale * 20000; i++)
		R8(x);
	sink += x;
	setitimer(ITIMER_PROF, &off, 0);
	printf("places: sigprof %s\n", ticks > 0 ? "delivered" : "missing");
}

int main(int argc, char **argv)
{
	unsigned long scale = argc > 2 ? strtoul(argv[2], 0, 10) : 1;
	const char *mode = argc > 1 ? argv[1] : "split";
	if (!strcmp(mode, "split"))
		split(scale);
	else if (!strcmp(mode, "threads"))
		threads(scale);
	else if (!strcmp(mode, "places"))
		places(scale);
	else
		return 2;
	return 0;
}
