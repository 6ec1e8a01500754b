/*
 * forkio.c - a fixture for the callgrind oracle's own tests: arguments,
 * environment, standard input, working directory, exit status, a fork
 * whose child must not report the parent's work a second time, and death
 * by a signal.
 *
 *   before() runs argv[1] times (default 1), before the fork;
 *   child() runs $FORKIO_CHILD times (default 1), in the child only;
 *   parent() runs once per 'x' on standard input, in the parent only.
 *
 * The child exits with status 3; the parent prints the child's status and
 * its working directory, then exits with status 5, or calls abort() when
 * argv[2] is "abort".
 */
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

volatile int sink;

NOINLINE void before(int x) { sink += x; }
NOINLINE void child(int x) { sink -= x; }
NOINLINE void parent(int x) { sink ^= x; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	const char *e = getenv("FORKIO_CHILD");
	int m = e ? atoi(e) : 1;
	int k = 0, c;

	while ((c = getchar()) != EOF)
		if (c == 'x')
			k++;
	for (int i = 0; i < n; i++)
		before(i);
	fflush(stdout);

	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		for (int i = 0; i < m; i++)
			child(i);
		exit(3);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return 2;
	for (int i = 0; i < k; i++)
		parent(i);

	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		return 2;
	printf("child %d cwd %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1, cwd);
	fflush(stdout);
	if (argc > 2 && strcmp(argv[2], "abort") == 0)
		abort();
	return 5;
}
