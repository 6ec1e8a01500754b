/* tscloop: nearly all of the time goes to one loop in spin, so that
 * loop's paths must carry nearly all of the program's tsc. */
#include <stdio.h>

__attribute__((noinline)) static unsigned setup(unsigned n)
{
	unsigned s = 0;
	for (unsigned i = 0; i < n; i++)
		s += i * 7;
	return s;
}

__attribute__((noinline)) unsigned spin(unsigned n, unsigned seed)
{
	unsigned x = seed;
	for (unsigned i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if (x & 0x100)
			x ^= x >> 7;
		else
			x += i;
	}
	return x;
}

int main(void)
{
	unsigned s = setup(100);
	s += spin(20000000, s);
	printf("%u\n", s);
	return 0;
}
