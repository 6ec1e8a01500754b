/* latency: one function of one path (no branch: the byte count is
 * computed, and rep stosb is one instruction) whose execution takes
 * about 100 ns, or, one time in a hundred, about 10 us: it clears 8 KiB
 * of a buffer, or 1.5 MiB. Its latency histogram (decision 93) must show
 * both modes, and p99 in the slow one: 20001 calls, 201 slow (i % 100 ==
 * 0), so the execution of rank ceil(0.99 * 20001) = 19801 is slow. The
 * fences make the time-stamp counter read at the path's end wait for the
 * stores: rdtsc is not ordered with them, and would otherwise measure
 * how long the stores took to issue. */
#include <stdio.h>

static unsigned char buf[3 << 19];

__attribute__((noinline)) void step(unsigned long slow)
{
	void *d = buf;
	unsigned long n = (8ul << 10) + slow * (sizeof(buf) - (8ul << 10));
	__asm__ volatile("rep stosb; mfence; lfence" : "+D"(d), "+c"(n) : "a"(0) : "memory");
}

int main(void)
{
	unsigned long sum = 0;
	for (unsigned i = 0; i < 20001; i++) {
		step(i % 100 == 0);
		sum += buf[i & 1023];
	}
	printf("%lu\n", sum);
	return 0;
}
