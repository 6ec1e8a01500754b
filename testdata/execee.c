/* The program a shell execs in blpp run's exec-following tests (decision
 * 167): it prints its arguments and whether blpp's variables reached it
 * (they must not: the program sees its own environment), does some
 * counted work and exits with status 3. */
#include <stdio.h>
#include <stdlib.h>

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
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);
		printf("%s %s\n", names[i], v ? v : "(unset)");
	}
	printf("work %ld\n", work(argc * 1000));
	return 3;
}
