/*
 * fragcall.c - a real function that, in a stripped gcc -O2 build, looks
 * like a cold fragment of another until every call is known.
 *
 * jumper() ends in a tail jump to target(), and target() is called only
 * from caller(), whose hot part jumps into the middle of caller.cold
 * (its second cold block) before it reaches
 * those calls. Decoding caller stops at that jump (into code not yet
 * known to be caller's), so until caller.cold is joined and caller
 * rebuilt, target() seems called by nobody and jumped to by one
 * procedure only: what a cold fragment of jumper would look like.
 * Joining it would leave caller's calls running target's original,
 * uncounted bytes.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noipa))

volatile int sink;

NOINLINE __attribute__((cold)) void report(const char *what, int where)
{
	fprintf(stderr, "error: %s at %d\n", what, where);
}

/* target: a real function, called only from caller() after caller's jump
 * to its cold part, and tail-jumped to by jumper(). */
NOINLINE int target(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += i * sink;
	sink = s;
	return s;
}

NOINLINE int jumper(int x)
{
	if (x > 1000)
		sink = 1;
	return target(x + 1);
}

NOINLINE int caller(int x, int y)
{
	int r = sink + y;
	if (x < 0) {
		report("negative x", x);
		r += sink;
	}
	if (y < 0) {
		report("negative y", y);
		r -= sink;
	}
	r += target(x);
	r += target(y);
	return r + sink;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d %d\n", jumper(n), caller(n, 3));
	return 0;
}
