/* The executable half of the constructor test: hook runs before main
 * (called by lib.c's constructor) and again from main. */
#include <stdio.h>

extern int from_ctor;

__attribute__((noinline)) int hook(int x)
{
	int s = 0;
	for (int i = 0; i <= x; i++)
		s += i * i;
	return s;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += hook(i);
	printf("ctor %d main %d\n", from_ctor, s);
	return 0;
}
