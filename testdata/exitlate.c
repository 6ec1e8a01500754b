/*
 * exitlate.c: work that runs after the last DT_FINI of an exiting
 * process. A stream made by fopencookie holds buffered output when main
 * returns; the C library flushes it in _IO_cleanup, after every module's
 * DT_FINI has run and before it calls _exit, so late_write runs there.
 * With the argument "abort", late_write then aborts: SIGABRT after the
 * last DT_FINI, which the profile's fatal-signal handler must still
 * catch (decision 164: whole-process runs write the exit profile at
 * _exit's leave hook, not at the last DT_FINI, and keep the handlers
 * until then). With "pipe", it also writes to a pipe whose reader has
 * gone, as a flush to `prog | true` does: SIGPIPE, whose default action
 * kills the process there. With "midpipe", main itself writes to such a
 * pipe, as `prog | head -1` does to a program with more to say: SIGPIPE
 * in main, before any exit hook.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int aborting, broken = -1;

static ssize_t late_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	/* write(2) directly: stdout may be flushed already */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n' && write(1, "late\n", 5) != 5)
			return -1;
	if (aborting)
		abort();
	if (broken >= 0 && write(broken, buf, n) < 0)
		return -1; /* not reached: SIGPIPE */
	return (ssize_t)n;
}

int main(int argc, char **argv)
{
	cookie_io_functions_t io = {0, late_write, 0, 0};
	aborting = argc > 1 && strcmp(argv[1], "abort") == 0;
	if (argc > 1 && (strcmp(argv[1], "pipe") == 0 || strcmp(argv[1], "midpipe") == 0)) {
		int fd[2];
		if (pipe(fd) != 0)
			return 1;
		close(fd[0]);
		broken = fd[1];
	}
	FILE *f = fopencookie(0, "w", io);
	if (!f)
		return 1;
	setvbuf(f, 0, _IOFBF, 4096);
	fprintf(f, "one\ntwo\n");
	printf("main\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "midpipe") == 0 && write(broken, "x", 1) < 0)
		return 2; /* not reached: SIGPIPE */
	return 0; /* f is flushed by exit's _IO_cleanup */
}
