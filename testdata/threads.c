/*
 * threads.c - four POSIX threads, each doing its own deterministic work.
 *
 * main starts four workers, joins them in order and prints each worker's
 * checksum and their sum. A worker's work depends only on its index: a
 * loop over a trip count taken from a volatile array, a branch on the loop
 * variable, and calls to three out-of-line helpers (one with a loop of its
 * own, one with a switch, one of a single path that calls nothing), so
 * every thread runs paths of its own and the merged block counts of the
 * helpers are the sums over the threads. A fifth thread runs idle, a
 * one-path start routine, and nothing else (decision 55).
 *
 * The output and the exit status (0) are the same on every run whatever
 * the scheduling: the threads share nothing but the volatile sink, whose
 * value is never printed.
 */
#include <pthread.h>
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
/* noipa: no clones (.constprop/.isra/.part), so symbol names stay put. */
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define NTHREADS 4

volatile int sink;
volatile int trips[NTHREADS] = {300, 700, 1100, 1500};

/* One loop; the trip count depends on x. */
NOINLINE unsigned long mix(unsigned long x)
{
	unsigned long h = x * 0x9e3779b97f4a7c15ul;
	for (unsigned long i = 0; i < (x & 7) + 1; i++)
		h ^= (h >> 29) + i;
	sink = (int)h;
	return h;
}

/* A switch: which case runs depends on the thread and the round. */
NOINLINE unsigned long classify(int id, int round)
{
	switch ((id + round) % 5) {
	case 0:
		return 11;
	case 1:
		return (unsigned long)round * 3;
	case 2:
		return mix((unsigned long)round);
	case 3:
		return (unsigned long)id << 4;
	default:
		return 1;
	}
}

/* One path, no calls: flow-only images count it at its entry alone. */
NOINLINE unsigned long step(unsigned long x)
{
	return x * 3 + 1;
}

/* A one-path start routine: its thread's first instrumented code, run
 * while that thread's %gs is still its creator's block. */
NOINLINE void *idle(void *arg)
{
	return (char *)arg + 1;
}

struct job {
	int id;
	unsigned long sum;
};

/* The thread function: called by the C library, not by the program. */
NOINLINE void *worker(void *arg)
{
	struct job *j = arg;
	unsigned long acc = (unsigned long)j->id;
	int n = trips[j->id];
	for (int r = 0; r < n; r++) {
		acc = step(acc);
		if (r % 3 == j->id % 3)
			acc += mix(acc + (unsigned long)r);
		else
			acc ^= classify(j->id, r);
	}
	j->sum = acc;
	return 0;
}

int main(void)
{
	pthread_t th[NTHREADS];
	struct job jobs[NTHREADS];
	unsigned long total = 0;
	for (int i = 0; i < NTHREADS; i++) {
		jobs[i].id = i;
		jobs[i].sum = 0;
		if (pthread_create(&th[i], 0, worker, &jobs[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	pthread_t it;
	void *ret = 0;
	if (pthread_create(&it, 0, idle, (void *)jobs) != 0 || pthread_join(it, &ret) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	printf("idle: %d\n", (int)((char *)ret - (char *)jobs));
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], 0);
		printf("thread %d: %lu\n", i, jobs[i].sum);
		total += jobs[i].sum;
	}
	printf("total: %lu\n", total);
	return 0;
}
