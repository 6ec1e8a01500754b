/*
 * ucontext2.c - user contexts that move: a coroutine resumed by another
 * thread, many coroutines made one after another in the same
 * ucontext_t (each abandoned or finished), and a suspended coroutine
 * resumed in a fork child. The output is deterministic; the profile must
 * have no inexact-count statistic.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static ucontext_t co, back;
static char stack[1 << 16];
volatile int sink;
static long total;

NOINLINE static int mix(int x)
{
	if (x & 1)
		return x * 5 + 1;
	return x >> 1;
}

NOINLINE static void pause_here(int x)
{
	sink = mix(x);
	if (swapcontext(&co, &back) != 0)
		abort();
	sink += mix(x + 3);
}

/* Runs a few steps, yielding between them, then returns (uc_link). */
NOINLINE static void body(int n)
{
	for (int i = 0; i < n; i++) {
		total += mix(i * n);
		pause_here(i);
	}
}

NOINLINE static void start(int n)
{
	getcontext(&co);
	co.uc_stack.ss_sp = stack;
	co.uc_stack.ss_size = sizeof(stack);
	co.uc_link = &back;
	makecontext(&co, (void (*)(void))body, 1, n);
}

/* resume switches to the coroutine from the calling thread's context. */
NOINLINE static void resume(void)
{
	if (swapcontext(&back, &co) != 0)
		abort();
}

static void *other_thread(void *arg)
{
	(void)arg;
	resume(); /* the coroutine's second step runs on this thread */
	resume();
	return 0;
}

int main(void)
{
	pthread_t th;
	/* Migration: steps 1 here, 2 and 3 on another thread, the rest here. */
	start(5);
	resume();
	if (pthread_create(&th, 0, other_thread, 0) || pthread_join(th, 0))
		return 1;
	for (int i = 0; i < 3; i++)
		resume();
	printf("migrated total %ld\n", total);
	/* Many coroutines in one ucontext_t: every other one abandoned
	 * after its first step. */
	for (int k = 0; k < 300; k++) {
		start(2 + k % 3);
		resume();
		if (k % 2)
			for (int i = 0; i < 2 + k % 3; i++)
				resume();
	}
	printf("remade total %ld\n", total);
	/* Fork with the coroutine suspended; the child resumes it. */
	start(4);
	resume();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 4; i++)
			resume();
		printf("child total %ld\n", total);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	resume();
	printf("parent total %ld status %d\n", total, WEXITSTATUS(st));
	return 0;
}
