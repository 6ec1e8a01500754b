/* tls_main.c - runs tls_lib.c's function and prints the GLIBC_TUNABLES
 * it sees, which must be its own under blpp run (decision 124). */
#include <stdio.h>
#include <stdlib.h>
int tls_sum(int n);
int main(void)
{
	const char *t = getenv("GLIBC_TUNABLES");
	printf("%d %s\n", tls_sum(30000), t ? t : "(unset)");
	return 0;
}
