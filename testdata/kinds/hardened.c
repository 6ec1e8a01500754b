/*
 * hardened.c - code shapes that hardening and ABI flags produce, built
 * with -fcf-protection=full (endbr64 at every function and address-taken
 * label, notrack jumps through switch tables, the .note.gnu.property
 * IBT/SHSTK bits), -fstack-clash-protection (probing loops for big and
 * variable frames), -mno-red-zone and -fno-omit-frame-pointer.
 */
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int vol_n = 7;

NOINLINE static int op_add(int a, int b) { return a + b; }
NOINLINE static int op_sub(int a, int b) { return a - b; }
NOINLINE static int op_mul(int a, int b) { return a * b; }
NOINLINE static int op_xor(int a, int b) { return a ^ b; }

static int (*const ops[])(int, int) = {op_add, op_sub, op_mul, op_xor};

/* A switch dense enough for a jump table (notrack jmp under CET). */
NOINLINE static int classify(int x)
{
	switch (x % 9) {
	case 0: return 10;
	case 1: return 3;
	case 2: return x * 2;
	case 3: return x - 7;
	case 4: return 44;
	case 5: return x ^ 5;
	case 6: return 61;
	case 7: return x + 1;
	default: return -1;
	}
}

/* A big frame: stack-clash protection probes it page by page. */
NOINLINE static long big_frame(int n)
{
	char buf[64 * 1024];
	memset(buf, n, sizeof buf);
	long s = 0;
	for (int i = 0; i < (int)sizeof buf; i += 4096)
		s += buf[i] + i;
	return s;
}

/* A variable-length array: probed in a loop at run time. */
NOINLINE static long vla(int n)
{
	int a[n * 1024];
	for (int i = 0; i < n * 1024; i++)
		a[i] = i;
	long s = 0;
	for (int i = 0; i < n * 1024; i += 333)
		s += a[i];
	return s;
}

/* A leaf that uses its stack below %rsp when the red zone is allowed. */
NOINLINE static int leaf(int a, int b, int c, int d)
{
	volatile int t[8] = {a, b, c, d, a + b, b + c, c + d, d + a};
	int s = 0;
	for (int i = 0; i < 8; i++)
		s += t[i];
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1;
	int r = 0;
	for (int i = 0; i < 20; i++)
		r += ops[i & 3](i, n) + classify(i * n);
	printf("hardened: r %d big %ld vla %ld leaf %d\n", r, big_frame(n), vla(n), leaf(1, 2, 3, n));
	return 0;
}
