#include <stdio.h>
#include <stdlib.h>
#include "units.h"

__attribute__((cold, noinline)) static void fail(int n) {
	fprintf(stderr, "bad %d\n", n);
	exit(2);
}

int ua(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += mix(i, s);
	if (s == 12345)
		fail(s);
	return s;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d\n", ua(n) + ub(n) + uc(n));
	return 0;
}
