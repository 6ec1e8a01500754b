/*
 * profile_write: the workload of `blpp-bench --profile-write`. THREADS
 * threads (default 4) make CALLS calls in total (default 10 million)
 * through five levels of functions; each level calls the next from one of
 * four call sites chosen by bits of a pseudo-random number, so a calling
 * context tree has 4 + 16 + 64 + 256 records for them under each thread's
 * worker. stdout gets a checksum that does not depend on the scheduling;
 * the last line on stderr is "end MONO REAL", CLOCK_MONOTONIC and
 * CLOCK_REALTIME in nanoseconds just before main returns, so that the
 * harness can tell how long the process took to exit after it (an
 * instrumented binary writes its profile then).
 *
 *	profile_write [CALLS [THREADS]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LEVELS 5 /* calls per iteration of a worker */
#define NOINLINE __attribute__((noinline, noclone))
/* An empty asm the compiler must assume reads and writes x: keeps the four
 * call sites of a level apart (no merging into one call) and the calls
 * real (no folding of the arithmetic). */
#define KEEP(x) __asm__ volatile("" : "+r"(x))

NOINLINE static unsigned long l5(unsigned long x)
{
	x ^= x >> 13;
	KEEP(x);
	return x * 0x9e3779b97f4a7c15ul;
}

NOINLINE static unsigned long l4(unsigned long x)
{
	unsigned long r;
	switch (x & 3) {
	case 0: r = l5(x >> 2) + 1; break;
	case 1: r = l5(x >> 2) ^ 0x55; break;
	case 2: r = l5(x >> 2) * 3; break;
	default: r = l5(x >> 2) - 7; break;
	}
	KEEP(r);
	return r;
}

NOINLINE static unsigned long l3(unsigned long x)
{
	unsigned long r;
	switch (x & 3) {
	case 0: r = l4(x >> 2) + 11; break;
	case 1: r = l4(x >> 2) ^ 0x5a5a; break;
	case 2: r = l4(x >> 2) * 5; break;
	default: r = l4(x >> 2) - 13; break;
	}
	KEEP(r);
	return r;
}

NOINLINE static unsigned long l2(unsigned long x)
{
	unsigned long r;
	switch (x & 3) {
	case 0: r = l3(x >> 2) + 17; break;
	case 1: r = l3(x >> 2) ^ 0x3c3c; break;
	case 2: r = l3(x >> 2) * 7; break;
	default: r = l3(x >> 2) - 19; break;
	}
	KEEP(r);
	return r;
}

NOINLINE static unsigned long l1(unsigned long x)
{
	unsigned long r;
	switch (x & 3) {
	case 0: r = l2(x >> 2) + 23; break;
	case 1: r = l2(x >> 2) ^ 0x0f0f; break;
	case 2: r = l2(x >> 2) * 9; break;
	default: r = l2(x >> 2) - 29; break;
	}
	KEEP(r);
	return r;
}

struct job {
	long iters;
	unsigned long seed, sum;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	unsigned long s = j->seed, sum = 0;
	for (long i = 0; i < j->iters; i++) {
		s = s * 6364136223846793005ul + 1442695040888963407ul;
		sum += l1(s >> 33);
	}
	j->sum = sum;
	return 0;
}

static unsigned long long ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 10000000;
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	if (calls < 0 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: profile_write [CALLS [THREADS]]\n");
		return 2;
	}
	long iters = calls / LEVELS / threads;
	pthread_t tid[64];
	struct job jobs[64];
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct job){.iters = iters, .seed = 0x1234567u + (unsigned long)t};
		if (pthread_create(&tid[t], 0, worker, &jobs[t])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	unsigned long sum = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], 0);
		sum ^= jobs[t].sum;
	}
	printf("%d threads, %ld calls, checksum %lx\n", threads, iters * LEVELS * threads, sum);
	fflush(stdout);
	unsigned long long mono = ns(CLOCK_MONOTONIC), real = ns(CLOCK_REALTIME);
	fprintf(stderr, "end %llu %llu\n", mono, real);
	return 0;
}
