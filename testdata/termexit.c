/*
 * termexit.c: a child told to stop by SIGTERM while it leaves through
 * _exit, as Python's multiprocessing pool terminates its workers. The
 * child maps many separate regions (so that reading /proc/self/maps,
 * which the profile writer does, takes a while), tells the parent it is
 * leaving, and calls _exit; the parent sends SIGTERM a moment later,
 * while the child's exit profile is being written. The signal must wait
 * for the write: before, the fatal-signal handler found the exit
 * claimed and let the signal kill the child with its profile unwritten
 * (decision 121). Whether the child ends by _exit or by the signal
 * depends on timing, with blpp or without: the output does not say.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	int fd[2];
	char c;
	if (pipe(fd) != 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		long page = sysconf(_SC_PAGESIZE);
		char *base = mmap(0, 40000 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED)
			_exit(2);
		for (long i = 0; i < 40000; i += 2)
			mprotect(base + i * page, page, PROT_NONE);
		if (write(fd[1], "x", 1) != 1)
			_exit(3);
		_exit(0);
	}
	if (read(fd[0], &c, 1) != 1)
		return 1;
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, 0);
	kill(pid, SIGTERM);
	waitpid(pid, 0, 0);
	printf("done\n");
	return 0;
}
