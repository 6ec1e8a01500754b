/*
 * coldhit.c - path ends in cold records that the inline code counts
 * (decision 151).
 *
 * pick() has 1,024 paths (ten independent choices) and spin() 256
 * before a loop whose body chooses between two ways, so in context mode
 * their records start cold: a small table instead of a dense array. Each
 * is called many times from one call site with two alternating
 * arguments, so its record's table holds its two paths after their first
 * ends, and the inline code counts the later ends there until the
 * record's twin is due. Two more call sites give records that stay cold
 * (called fewer times than the twin needs). The output is a checksum.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile long sink;

NOINLINE long pick(unsigned f)
{
	long acc = 1;
	if (f & 1)
		sink += 1;
	if (f & 2)
		sink ^= 2;
	if (f & 4)
		sink += 3;
	if (f & 8)
		sink ^= 4;
	if (f & 16)
		sink += 5;
	if (f & 32)
		sink ^= 6;
	if (f & 64)
		sink += 7;
	if (f & 128)
		sink ^= 8;
	if (f & 256)
		sink += 9;
	if (f & 512)
		sink ^= 10;
	return acc + sink;
}

NOINLINE long spin(unsigned f, long n)
{
	long acc = 0;
	if (f & 1)
		sink += 1;
	if (f & 2)
		sink ^= 2;
	if (f & 4)
		sink += 3;
	if (f & 8)
		sink ^= 4;
	if (f & 16)
		sink += 5;
	if (f & 32)
		sink ^= 6;
	if (f & 64)
		sink += 7;
	if (f & 128)
		sink ^= 8;
	for (long i = 0; i < n; i++) {
		if ((i ^ f) & 1)
			sink += i;
		else
			sink ^= i;
		acc += sink & 7;
	}
	return acc;
}

int main(void)
{
	long sum = 0;
	for (int i = 0; i < 3000; i++)
		sum += pick(i & 1 ? 0x155 : 0x2aa);
	for (int i = 0; i < 20; i++)
		sum += pick(i & 1 ? 0x0f0 : 0x30f);
	for (int i = 0; i < 600; i++)
		sum += spin(i & 1 ? 0x55 : 0xaa, 3);
	for (int i = 0; i < 10; i++)
		sum += spin(0x3c, 4);
	printf("%ld\n", sum);
	return 0;
}
