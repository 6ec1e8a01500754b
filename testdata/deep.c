/*
 * deep.c - a recursion deeper than the runtime's shadow stack.
 *
 * The runtime keeps 2^20 shadow frames per thread; past that, entries
 * push nothing and count an overflow, and exits of the activations that
 * pushed nothing must not pop their callers' frames.  down() only calls
 * itself, so a flow-only image makes it a closed function (rewriter
 * decision 57), whose self calls take the internal entry that tests only
 * the shadow stack's limit (decision 61), and whose exits test no
 * overflow count.  A thread with a large stack descends 1,300,000 deep
 * twice, with two ways to each call and to each return so that every
 * level counts more than one path.  The output depends on every value.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define DEPTH 1300000L

static long acc[8];

NOINLINE long down(long n)
{
	long x = acc[n & 7];
	if (n == 0)
		return x;
	if (n % 3 == 0)
		x += 5; /* two ways to the call */
	long r = down(n - 1);
	acc[n & 7] += r & 0xff; /* after the call: no tail call, no loop */
	if (r & 4)
		return r + x;
	return r - x + 1;
}

static void *run(void *arg)
{
	long *out = arg;
	out[0] = down(DEPTH);
	out[1] = down(DEPTH - 17);
	return 0;
}

int main(void)
{
	pthread_attr_t attr;
	pthread_t th;
	long out[2];
	for (int i = 0; i < 8; i++)
		acc[i] = i * 3 + 1;
	/* About 48 bytes of native stack per level at -O0. */
	if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 256ul << 20) != 0 ||
	    pthread_create(&th, &attr, run, out) != 0 || pthread_join(th, 0) != 0) {
		fprintf(stderr, "deep: cannot run the deep thread\n");
		return 1;
	}
	printf("deep %ld %ld", out[0], out[1]);
	for (int i = 0; i < 8; i++)
		printf(" %ld", acc[i]);
	printf("\n");
	return 0;
}
