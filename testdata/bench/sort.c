/*
 * sort.c - benchmark workload: sorting pseudo-random integers.
 *
 * Each round fills an array from a xorshift generator and sorts copies of
 * it three ways: an introsort-like quicksort (median of three, insertion
 * sort below a cutoff, recursion on the smaller side), a top-down merge
 * sort with a scratch buffer, and a heap sort.  The three results must
 * agree; the checksum mixes in samples of the sorted data.  Comparisons go
 * through a small non-inlined function in the merge sort, as a generic
 * library sort's would.
 *
 * usage: sort [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static unsigned long rng_state;

NOINLINE static unsigned long next_rand(void)
{
	unsigned long x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

NOINLINE static void insertion_sort(int *a, long n)
{
	for (long i = 1; i < n; i++) {
		int v = a[i];
		long j = i - 1;
		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}

static inline void swap(int *a, int *b)
{
	int t = *a;
	*a = *b;
	*b = t;
}

NOINLINE static void quick_sort(int *a, long n)
{
	while (n > 24) {
		long mid = n / 2, i = 0, j = n - 1;
		/* median of three into a[mid] */
		if (a[mid] < a[0])
			swap(&a[mid], &a[0]);
		if (a[n - 1] < a[0])
			swap(&a[n - 1], &a[0]);
		if (a[n - 1] < a[mid])
			swap(&a[n - 1], &a[mid]);
		int pivot = a[mid];
		for (;;) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i >= j)
				break;
			swap(&a[i], &a[j]);
			i++;
			j--;
		}
		/* recurse on the smaller part, loop on the larger */
		long left = j + 1;
		if (left < n - left) {
			quick_sort(a, left);
			a += left;
			n -= left;
		} else {
			quick_sort(a + left, n - left);
			n = left;
		}
	}
	insertion_sort(a, n);
}

NOINLINE static int less(int x, int y)
{
	return x < y;
}

NOINLINE static void merge_sort(int *a, int *tmp, long n)
{
	if (n < 16) {
		insertion_sort(a, n);
		return;
	}
	long h = n / 2;
	merge_sort(a, tmp, h);
	merge_sort(a + h, tmp, n - h);
	if (!less(a[h], a[h - 1]))
		return; /* already in order */
	long i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = less(a[j], a[i]) ? a[j++] : a[i++];
	while (i < h)
		tmp[k++] = a[i++];
	memcpy(a, tmp, k * sizeof *a);
}

NOINLINE static void sift_down(int *a, long root, long n)
{
	for (;;) {
		long child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && a[child] < a[child + 1])
			child++;
		if (a[root] >= a[child])
			return;
		swap(&a[root], &a[child]);
		root = child;
	}
}

NOINLINE static void heap_sort(int *a, long n)
{
	for (long i = n / 2 - 1; i >= 0; i--)
		sift_down(a, i, n);
	for (long end = n - 1; end > 0; end--) {
		swap(&a[0], &a[end]);
		sift_down(a, 0, end);
	}
}

NOINLINE static int check_sorted(const int *a, long n)
{
	for (long i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	long n = 1000 + scale * 2000, rounds = 10;
	unsigned long check = 0;
	if (scale <= 0) {
		fprintf(stderr, "usage: sort [SCALE>0]\n");
		return 2;
	}
	int *orig = malloc(n * sizeof *orig), *q = malloc(n * sizeof *q);
	int *m = malloc(n * sizeof *m), *h = malloc(n * sizeof *h), *tmp = malloc(n * sizeof *tmp);
	if (!orig || !q || !m || !h || !tmp) {
		fprintf(stderr, "sort: out of memory\n");
		return 1;
	}
	rng_state = 88172645463325252ul;
	for (long r = 0; r < rounds; r++) {
		/* later rounds have fewer distinct values: more equal keys */
		unsigned long range = r == 0 ? 0x7fffffff : (unsigned long)n >> r;
		for (long i = 0; i < n; i++)
			orig[i] = (int)(next_rand() % range);
		memcpy(q, orig, n * sizeof *q);
		memcpy(m, orig, n * sizeof *m);
		memcpy(h, orig, n * sizeof *h);
		quick_sort(q, n);
		merge_sort(m, tmp, n);
		heap_sort(h, n);
		if (!check_sorted(q, n) || memcmp(q, m, n * sizeof *q) || memcmp(q, h, n * sizeof *q)) {
			fprintf(stderr, "sort: round %ld: results differ\n", r);
			return 1;
		}
		for (long i = 0; i < n; i += n / 97 + 1)
			check = check * 1000003u + (unsigned)q[i];
	}
	printf("sort scale=%ld n=%ld checksum=%016lx\n", scale, n, check);
	free(orig), free(q), free(m), free(h), free(tmp);
	return 0;
}
