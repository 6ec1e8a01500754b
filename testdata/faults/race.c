/*
 * race.c - two threads released together by a barrier, each calling a
 * small function in a loop long enough that they overlap on two cores.
 * Counts are deterministic (each thread's work depends only on its
 * index); the fault-injection test (internal/testsupport/corpus TestFaultsDetected)
 * plants a fault that makes the threads share one thread block, whose
 * lost and misplaced updates the exactness check must catch. Not in the
 * fixture matrix: it lives in a subdirectory.
 */
#include <pthread.h>
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define ROUNDS 3000000

static pthread_barrier_t start;

NOINLINE unsigned long step(unsigned long x, int i)
{
	if (i & 1)
		x += (unsigned long)i;
	else
		x ^= (unsigned long)i << 3;
	return x * 3 + 1;
}

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < ROUNDS; i++)
		x = step(x, i);
	return (void *)x;
}

int main(void)
{
	pthread_t t[2];
	unsigned long sum = 0;
	pthread_barrier_init(&start, 0, 2);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], 0, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (unsigned long)r;
	}
	printf("%lx\n", sum);
	return 0;
}
