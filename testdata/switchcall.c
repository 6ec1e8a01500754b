/*
 * switchcall.c - switches whose table base the compiler loads into a
 * callee-saved register once, before a loop whose cases call functions:
 * lea T(%rip),%r13 (or %rbx, %rbp...) then, after the calls, movslq
 * (%r13,%rax,4),%rax.  A call clobbers only the caller-saved registers,
 * so the base is still the table's address at the jump.
 *
 * tokens(): a tokenizer loop whose switch cases call out; classify():
 * the same with a range check that is not directly before the jump.
 */
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static long counts[8];

NOINLINE void note(int kind, int c)
{
	counts[kind] += c;
}

NOINLINE long tokens(const char *s)
{
	long sum = 0;
	for (; *s; s++) {
		switch (*s) {
		case 'a': note(0, *s); sum += 1; break;
		case 'b': note(1, *s); sum += 3; break;
		case 'c': note(2, *s); sum ^= 5; break;
		case 'd': note(3, *s); sum += 7; break;
		case 'e': note(4, *s); sum *= 3; break;
		case 'f': note(5, *s); sum -= 2; break;
		case 'g': note(6, *s); sum += 11; break;
		case 'h': note(7, *s); sum >>= 1; break;
		case 'i': note(0, 2); sum += 13; break;
		case 'j': note(1, 3); sum -= 17; break;
		default: note(7, 1); break;
		}
	}
	return sum;
}

NOINLINE int classify(const char *s, int n)
{
	int r = 0;
	for (int i = 0; i < n; i++) {
		unsigned k = (unsigned char)s[i] - '0';
		if (k > 9) {
			note(6, 1);
			continue;
		}
		switch (k) {
		case 0: note(0, 1); r += 2; break;
		case 1: note(1, 1); r += 3; break;
		case 2: note(2, 1); r *= 2; break;
		case 3: note(3, 1); r -= 1; break;
		case 4: note(4, 1); r += 9; break;
		case 5: note(5, 1); r ^= 6; break;
		case 6: note(0, 2); r += 4; break;
		case 7: note(1, 2); r -= 3; break;
		case 8: note(2, 2); r += 1; break;
		default: note(3, 2); r += 8; break;
		}
	}
	return r;
}

int main(void)
{
	static const char *texts[] = {
		"abcdefghij", "the quick brown fox jumps over the lazy dog",
		"jihgfedcba", "aaaabbbbccccddddeeeeffffgggghhhhiiiijjjj",
	};
	long t = 0;
	for (int r = 0; r < 5; r++)
		for (unsigned i = 0; i < sizeof texts / sizeof *texts; i++) {
			t += tokens(texts[i]);
			t += classify(texts[i], (int)strlen(texts[i]));
			t += classify("0123456789x9876543210", 21);
		}
	printf("total %ld\n", t);
	for (int k = 0; k < 8; k++)
		printf("count %d: %ld\n", k, counts[k]);
	return 0;
}
