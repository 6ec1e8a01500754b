/* The bundled example of `blpp demo`: a small word-frequency counter with
 * a loop nest, a switch and an early exit, so its paths are worth looking
 * at. Input is generated, so runs are deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKET 64

struct entry { char word[16]; int count; struct entry *next; };
static struct entry *table[NBUCKET];

__attribute__((noinline)) static unsigned hash(const char *s) {
	unsigned h = 2166136261u;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h % NBUCKET;
}

__attribute__((noinline)) static void count(const char *w) {
	unsigned h = hash(w);
	for (struct entry *e = table[h]; e; e = e->next)
		if (strcmp(e->word, w) == 0) {
			e->count++;
			return;
		}
	struct entry *e = calloc(1, sizeof *e);
	if (!e)
		exit(1);
	strncpy(e->word, w, sizeof e->word - 1);
	e->count = 1;
	e->next = table[h];
	table[h] = e;
}

__attribute__((noinline)) static char classify(int c) {
	switch (c % 7) {
	case 0: return 'a';
	case 1: return 'e';
	case 2: return 'l';
	case 3: return 'p';
	case 4: return 'r';
	case 5: return 's';
	default: return 't';
	}
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	unsigned seed = 12345;
	char w[8];
	for (int i = 0; i < n; i++) {
		int len = 1 + (seed >> 16) % 3;
		for (int j = 0; j < len; j++) {
			seed = seed * 1103515245u + 12345u;
			w[j] = classify((int)(seed >> 16));
		}
		w[len] = 0;
		count(w);
	}
	int distinct = 0, best = 0;
	const char *bw = "";
	for (int h = 0; h < NBUCKET; h++)
		for (struct entry *e = table[h]; e; e = e->next) {
			distinct++;
			if (e->count > best) {
				best = e->count;
				bw = e->word;
			}
		}
	printf("%d words, %d distinct, most frequent \"%s\" x%d\n", n, distinct, bw, best);
	return 0;
}
