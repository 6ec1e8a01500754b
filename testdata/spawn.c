/*
 * spawn.c - processes made by code the program does not instrument: the C
 * library's daemon(), posix_spawn() and system(), and vfork() followed by
 * exec (issue 29). Every process does work of its own and prints it.
 *
 *   spawn daemon       daemon(1, 1): the parent leaves inside it (_exit),
 *                      the child goes on in main and works
 *   spawn posix_spawn  runs "spawn x child" with posix_spawn and waits
 *   spawn system       runs it with system() (through /bin/sh)
 *   spawn vfork        runs it with vfork and execv (after a call of
 *                      setup() in the child), then waits
 *   spawn vfork_exit   vfork, and the child calls setup() and _exit(0)
 *                      without an exec (its work is counted nowhere:
 *                      decision 101)
 *   spawn x child      the child: works and exits
 *
 * The spawning process works before and after (the daemon's child works
 * after), so every process's own blocks run. stdout is flushed before
 * each process is made, so nothing is printed twice, and the parent waits
 * for the child before it prints again (the daemon's parent prints
 * nothing after it), so the output has one order.
 */
#include <spawn.h>
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

extern char **environ;
volatile int sink;

NOINLINE int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i % 3 == 0 ? i : 1;
	sink = s;
	return s;
}

/* What a vfork child runs before it execs: it may call functions of the
 * program, if only to set things up (POSIX leaves that undefined, and
 * programs do it). */
NOINLINE int setup(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s ^= i * 5;
	return s;
}

NOINLINE int child_work(int n)
{
	int s = 1;
	for (int i = 0; i < n; i++)
		s = s * 7 % 1009 + (i & 1);
	sink = s;
	return s;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	char *child[] = {argv[0], "x", "child", 0};
	pid_t pid = 0;
	int st = 0;
	if (argc > 2 && strcmp(argv[2], "child") == 0) {
		printf("child: %d\n", child_work(700));
		return 0;
	}
	printf("before: %d\n", work(300 + (int)strlen(how)));
	fflush(stdout);
	if (strcmp(how, "daemon") == 0) {
		if (daemon(1, 1) != 0) {
			perror("daemon");
			return 1;
		}
		printf("daemon: %d\n", work(500));
		return 0;
	} else if (strcmp(how, "posix_spawn") == 0) {
		if (posix_spawn(&pid, argv[0], 0, 0, child, environ) != 0) {
			perror("posix_spawn");
			return 1;
		}
		waitpid(pid, &st, 0);
	} else if (strcmp(how, "system") == 0) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "exec '%s' x child", argv[0]);
		st = system(cmd);
	} else if (strcmp(how, "vfork") == 0) {
		pid = vfork();
		if (pid == 0) {
			sink = setup(20);
			execv(argv[0], child);
			_exit(127);
		}
		waitpid(pid, &st, 0);
	} else if (strcmp(how, "vfork_exit") == 0) {
		pid = vfork();
		if (pid == 0) {
			sink = setup(30);
			_exit(0);
		}
		waitpid(pid, &st, 0);
	} else {
		fprintf(stderr, "usage: spawn daemon|posix_spawn|system|vfork|vfork_exit\n");
		return 2;
	}
	printf("after: child status %d, %d\n", WEXITSTATUS(st), work(400));
	return 0;
}
