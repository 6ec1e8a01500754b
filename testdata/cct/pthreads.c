/*
 * pthreads.c - four POSIX threads, each with a known call pattern.
 *
 * Thread id (0..3) runs worker: it calls step() id + 1 times (step calls
 * leaf() each time), and for id >= 2 it calls down(id), which recurses
 * down to 0: id + 1 activations, id of them recursive.  main calls step()
 * once itself before starting the threads.  Each thread's work depends
 * only on its id, so the output is the same whatever the scheduling.
 */
#include <pthread.h>
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define NTHREADS 4

volatile int sink;

NOINLINE int leaf(int x)
{
	sink = x;
	return x + 1;
}

NOINLINE int step(int x)
{
	int r = leaf(x) * 2;
	sink = r;
	return r;
}

NOINLINE int down(int n)
{
	if (n == 0)
		return 1;
	int r = down(n - 1);
	sink = r;
	return r * 2 + n;
}

struct job {
	int id;
	int result;
};

NOINLINE void *worker(void *arg)
{
	struct job *j = arg;
	int acc = 0;
	for (int i = 0; i <= j->id; i++)
		acc += step(j->id * 10 + i);
	if (j->id >= 2)
		acc += down(j->id);
	j->result = acc;
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	struct job jobs[NTHREADS];

	printf("main step %d\n", step(100));
	for (int i = 0; i < NTHREADS; i++) {
		jobs[i].id = i;
		if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0)
			return 1;
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		printf("thread %d: %d\n", i, jobs[i].result);
	}
	return 0;
}
