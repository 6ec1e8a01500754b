/*
 * static.c - the parts of glibc a static link pulls in: memcpy and strlen
 * (IFUNCs chosen through IRELATIVE relocations that __libc_start_main
 * applies), qsort calling back into the program's comparator, and printf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static const char *words[] = {"pear", "fig", "apple", "kiwi", "banana", "cherry", "date", "plum", "lime", "grape"};

NOINLINE static int by_length(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

int main(int argc, char **argv)
{
	(void)argv;
	const char *w[10];
	char buf[256];
	memcpy(w, words, sizeof w);
	qsort(w, 10, sizeof w[0], by_length);
	size_t n = 0;
	for (int i = 0; i < 10; i++) {
		size_t l = strlen(w[i]);
		memcpy(buf + n, w[i], l);
		n += l;
		buf[n++] = i + argc < 10 ? ',' : '.';
	}
	buf[n] = 0;
	printf("static: %s (%zu bytes)\n", buf, strlen(buf));
	return 0;
}
