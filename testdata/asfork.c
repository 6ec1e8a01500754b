/*
 * asfork.c - what a child made in its parent's memory changes there
 * (internal/testsupport/asfork): a vfork child sets a variable before
 * _exit, and posix_spawn of a file that does not exist reports the
 * child's failure through the memory they share. Natively the parent
 * sees both; where the calls are made forks (valgrind, asfork.Fork) it
 * sees neither: posix_spawn returns 0 and the child exits 127.
 */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
volatile int seen;

int main(void)
{
	pid_t pid = vfork();
	int st = 0, r;
	if (pid == 0) {
		seen = 1;
		_exit(3);
	}
	waitpid(pid, &st, 0);
	printf("vfork: seen %d, status %d\n", seen, WEXITSTATUS(st));
	char *argv[] = {"/nonexistent/blpp", 0};
	r = posix_spawn(&pid, argv[0], 0, 0, argv, environ);
	st = 0;
	if (r == 0)
		waitpid(pid, &st, 0);
	printf("posix_spawn: %d, status %d\n", r, WEXITSTATUS(st));
	return 0;
}
