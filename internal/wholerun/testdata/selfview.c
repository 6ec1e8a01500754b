/* selfview prints what a program learns about how it was started: its
 * argv[0], /proc/self/exe, the page size found by walking past the
 * environment's terminating null into the auxiliary vector (as the Go
 * runtime does), and its environment, entry by entry, in order. With an
 * argument it runs /proc/self/exe again with the argument removed (as
 * programs that re-execute themselves do) and prints what the child saw. */
#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 2;
	self[n] = 0;
	if (argc > 1) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			char *args[] = {argv[0], 0};
			execv("/proc/self/exe", args);
			_exit(127);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return 0;
	}
	char **e = environ;
	while (*e)
		e++;
	unsigned long pagesz = 0;
	for (Elf64_auxv_t *a = (Elf64_auxv_t *)(e + 1); a->a_type != AT_NULL; a++)
		if (a->a_type == AT_PAGESZ)
			pagesz = a->a_un.a_val;
	printf("argv0=%s\nexe=%s\npagesz=%lu\n", argv[0], self, pagesz);
	for (e = environ; *e; e++)
		printf("env %s\n", *e);
	return 0;
}
