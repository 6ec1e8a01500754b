/* multi_main.c - calls every entry point of multi.S. */
#include <stdio.h>

int sum_all(const int *a, int n);
int sum_from(const int *a, int n, int start);
int twice(int x);
int once(int x);

int main(int argc, char **argv)
{
	(void)argv;
	int a[16], s = 0;
	for (int i = 0; i < 16; i++)
		a[i] = i * i - argc;
	for (int n = 0; n < 16; n += 3)
		s += sum_all(a, n) + sum_from(a, n, n / 2);
	printf("multi: %d %d %d\n", s, twice(argc), once(argc));
	return 0;
}
