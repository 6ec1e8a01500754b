/* The program a shell execs in blpp run's exec-following tests (decision
 * 167): it prints its arguments, whether blpp's variables reached it
 * (they must not: the program sees its own environment) and which
 * signals it starts with ignored or blocked (an exec keeps both), does
 * some counted work and exits with status 3. "execee reexec ARGS..."
 * blocks SIGUSR2 and SIGCHLD, ignores SIGQUIT and execs itself with
 * ARGS; "execee self ARGS..." execs /proc/self/exe with ARGS. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static long work(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += i % 7 ? i : -i;
	return s;
}

int main(int argc, char **argv)
{
	const char *names[] = {"BLPP_FOLLOW", "BLPP_PROFILE", "LD_AUDIT", "LD_LIBRARY_PATH"};
	if (argc > 1 && strcmp(argv[1], "self") == 0) {
		argv[1] = argv[0];
		execv("/proc/self/exe", argv + 1);
		perror("execv");
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "reexec") == 0) {
		sigset_t m;
		sigemptyset(&m);
		sigaddset(&m, SIGUSR2);
		sigaddset(&m, SIGCHLD);
		sigprocmask(SIG_BLOCK, &m, 0);
		signal(SIGQUIT, SIG_IGN);
		argv[1] = argv[0];
		execv(argv[0], argv + 1);
		perror("execv");
		return 1;
	}
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);
		printf("%s %s\n", names[i], v ? v : "(unset)");
	}
	sigset_t blocked;
	sigprocmask(SIG_BLOCK, 0, &blocked);
	for (int s = 1; s < 32; s++) {
		struct sigaction a;
		if (sigaction(s, 0, &a) == 0 && a.sa_handler == SIG_IGN)
			printf("ignored %d\n", s);
		if (sigismember(&blocked, s))
			printf("blocked %d\n", s);
	}
	printf("work %ld\n", work(argc * 1000));
	return 3;
}
