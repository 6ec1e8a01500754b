/*
 * longrun.c - a program that runs until it is told to stop.
 *
 * It loops over rounds of work for at most 10 s and prints one line at
 * the end, to stdout: how many rounds ran (a timing-dependent number) and
 * why it stopped. With argv[1] == "handle" it catches SIGTERM, stops at
 * the end of the round and returns 0 from main ("stopped by SIGTERM");
 * otherwise SIGTERM has its default action and kills it. Reaching 10 s
 * prints "timed out" and exits 0. The program never touches SIGUSR2.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

NOINLINE int tick(int x)
{
	sink = x;
	if (x & 4)
		return x + 1;
	return x - 1;
}

/* One round: a short loop, so the program checks stop often. */
NOINLINE long round_of_work(long r)
{
	long acc = r;
	for (int i = 0; i < 2000; i++)
		acc += tick(i ^ (int)r) & 0xf;
	return acc;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "handle") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_term;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, 0);
	}
	double start = now();
	long rounds = 0, acc = 0;
	while (!stop) {
		acc += round_of_work(rounds);
		rounds++;
		if (now() - start > 10.0) {
			printf("longrun: %ld rounds, timed out\n", rounds);
			return 0;
		}
	}
	sink = (int)acc;
	printf("longrun: %ld rounds, stopped by SIGTERM\n", rounds);
	return 0;
}
