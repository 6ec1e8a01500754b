/*
 * livekill.c - a program that runs until it is killed, for continuous
 * mode (decision 94): the test kills it with SIGKILL at random moments
 * and reads the live profile it leaves.
 *
 *   livekill [threads|fork] [ROUNDS]
 *
 * Each worker loops ROUNDS times (0, the default: until killed) over
 * calls of every kind a calling context tree has: a helper with a loop of
 * its own, a recursion (folded onto its first record), a function with
 * many paths (counted in a hash table), and a callback through a function
 * pointer. With "threads" three workers run at once; with "fork" the
 * process forks first, and parent and child both work. With ROUNDS it
 * prints a checksum and exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile unsigned long sink;
static long rounds;

NOINLINE unsigned long helper(unsigned long x)
{
	unsigned long h = x * 0x9e3779b97f4a7c15ul;
	for (unsigned long i = 0; i < (x & 7) + 1; i++)
		h ^= (h >> 29) + i;
	return h;
}

NOINLINE unsigned long rec(int n)
{
	if (n <= 0)
		return 1;
	return rec(n - 1) * 3 + (unsigned long)n;
}

/* 2^14 paths: more than a dense array holds, so it counts in a hash
 * table. A volatile store on one side of each branch keeps it a branch. */
volatile int vs;
NOINLINE unsigned long many(unsigned long x)
{
	unsigned long s = 0;
#define B(k) \
	if (x & (1ul << k)) { \
		s += k * 7 + 1; \
		vs = k; \
	}
	B(0) B(1) B(2) B(3) B(4) B(5) B(6) B(7) B(8) B(9) B(10) B(11) B(12) B(13)
	return s;
}

NOINLINE unsigned long twice(unsigned long (*f)(unsigned long), unsigned long x) { return f(x) + f(x + 1); }

static void *worker(void *arg)
{
	unsigned long id = (unsigned long)arg, s = 0;
	for (long i = 0; rounds == 0 || i < rounds; i++) {
		s += helper(i + id);
		if (i % 7 == 0)
			s += rec((int)(i % 5));
		s += many((unsigned long)i * 2654435761u + id);
		s += twice(helper, s & 15);
		sink = s;
	}
	return (void *)s;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	unsigned long sum = 0;
	rounds = argc > 2 ? atol(argv[2]) : 0;
	if (strcmp(how, "threads") == 0) {
		pthread_t t[3];
		for (unsigned long i = 0; i < 3; i++)
			pthread_create(&t[i], 0, worker, (void *)i);
		for (int i = 0; i < 3; i++) {
			void *r;
			pthread_join(t[i], &r);
			sum += (unsigned long)r;
		}
	} else if (strcmp(how, "fork") == 0) {
		pid_t p = fork();
		sum = (unsigned long)worker((void *)(unsigned long)(p == 0));
		if (p > 0)
			waitpid(p, 0, 0);
		else if (p == 0) {
			printf("child %lu\n", sum);
			return 0;
		}
	} else {
		sum = (unsigned long)worker(0);
	}
	printf("%lu\n", sum);
	return 0;
}
