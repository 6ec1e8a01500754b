/*
 * leave.c - a process that ends its image without exit(): through _exit,
 * _Exit, a bare exit_group system call, or an exec; and a failed exec, a
 * vfork child and a fork child that leave through _exit (decision 59).
 *
 * usage: leave HOW [EXEC-PATH]
 *   _exit, _Exit, syscall: work, then end in leave() with status 3;
 *   exec: work, then exec EXEC-PATH (default /bin/echo) with "exec N";
 *         when the exec fails, say so and return 1;
 *   exec-fails: an exec that fails, more work, return 0;
 *   vfork: a vfork child that leaves through _exit(7);
 *   fork: a fork child that works and leaves through _exit(0) while the
 *         parent waits, then works too.
 * The output depends only on the arguments.
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

NOINLINE int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i % 7 == 0 ? i : 1;
	sink = s;
	return s;
}

NOINLINE void leave(const char *how, int code)
{
	if (strcmp(how, "_exit") == 0)
		_exit(code);
	if (strcmp(how, "_Exit") == 0)
		_Exit(code);
	/* exit_group with no C library in between, as a static C library's
	 * _exit makes it */
	__asm__ volatile("mov %0, %%edi\n\tmov $231, %%eax\n\tsyscall" : : "r"(code) : "rax", "rdi", "rcx", "r11", "memory");
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "_exit";
	printf("%s: %d\n", how, work(1000 + (int)strlen(how)));
	fflush(stdout);
	if (strcmp(how, "exec") == 0) {
		char num[32];
		snprintf(num, sizeof num, "%d", work(50));
		execl(argc > 2 ? argv[2] : "/bin/echo", "echo", "exec", num, (char *)0);
		printf("exec failed\n");
		return 1;
	}
	if (strcmp(how, "exec-fails") == 0) {
		execl("/nonexistent/leave", "leave", (char *)0);
		printf("exec failed, then %d\n", work(30));
		return 0;
	}
	if (strcmp(how, "vfork") == 0) {
		pid_t p = vfork();
		if (p == 0)
			_exit(7);
		int st;
		waitpid(p, &st, 0);
		printf("child %d, then %d\n", WEXITSTATUS(st), work(40));
		return 0;
	}
	if (strcmp(how, "fork") == 0) {
		pid_t p = fork();
		if (p == 0) {
			printf("child %d\n", work(70));
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		printf("parent %d, child status %d\n", work(90), WEXITSTATUS(st));
		return 0;
	}
	leave(how, 3);
	return 0;
}
