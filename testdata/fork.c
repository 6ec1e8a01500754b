/*
 * fork.c - a process that forks; parent and child each do deterministic
 * work and print it.
 *
 * main runs work() before the fork, then the child runs child_work() and
 * returns from main (exit status 0, through exit, so an instrumented
 * child writes its own profile), while the parent waits for the child,
 * runs parent_work() and prints the child's status. The child prints
 * before the parent's wait returns, so the combined output has one order.
 * stdout is flushed before the fork, so nothing is printed twice.
 *
 * main is active across the fork: each process finishes main's path, so
 * main's blocks before the fork belong to both processes' paths. Every
 * other function runs in one process only.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int n_before = 500, n_child = 1300, n_parent = 900;

NOINLINE long step(long x)
{
	sink = (int)x;
	if (x & 1)
		return x * 3 + 1;
	return x / 2;
}

NOINLINE long work(int n)
{
	long acc = 7;
	for (int i = 0; i < n; i++)
		acc += step(acc + i) & 0xffff;
	return acc;
}

NOINLINE long child_work(int n)
{
	long acc = 1;
	for (int i = 0; i < n; i++) {
		if (i % 4 == 0)
			acc += step(i);
		else
			acc ^= i;
	}
	return acc;
}

NOINLINE long parent_work(int n)
{
	long acc = 3;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < (i & 3); k++)
			acc += step(acc ^ k) & 0xff;
	}
	return acc;
}

int main(void)
{
	long a = work(n_before);
	printf("before fork: %ld\n", a);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		printf("child: %ld\n", child_work(n_child));
		return 0;
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		return 1;
	}
	printf("parent: %ld, child exit status %d\n", parent_work(n_parent), WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
