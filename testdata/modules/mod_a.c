/* mod_a.c: libmoda.so, the DT_NEEDED library of the modules fixture
 * (mod_main.cc; issue 25 acceptance 1). It calls back into the executable
 * (moda_sort's comparator, moda_apply's function), hands the executable
 * pointers to its own functions (moda_op), and creates threads
 * (moda_parallel). Output is deterministic. */
#include <pthread.h>
#include <stddef.h>

/* moda_sort is an insertion sort with the caller's comparator: every
 * comparison is a call from the library into the executable. */
void moda_sort(int *v, int n, int (*cmp)(const int *, const int *))
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i - 1;
		while (j >= 0 && cmp(&v[j], &x) > 0) {
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = x;
	}
}

int moda_apply(int (*f)(int), int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += f(i) & 0xff;
	return s;
}

static long twice(long x) { return 2 * x; }
static long square(long x) { return x * x; }
static long collatz(long x)
{
	long steps = 0;
	while (x > 1) {
		x = (x & 1) ? 3 * x + 1 : x / 2;
		steps++;
	}
	return steps;
}

/* moda_op gives the executable a function of the library to call through
 * a pointer. */
long (*moda_op(int which))(long)
{
	switch (which % 3) {
	case 0:
		return twice;
	case 1:
		return square;
	default:
		return collatz;
	}
}

struct job {
	long from, to, result;
};

static void *work(void *arg)
{
	struct job *j = arg;
	long s = 0;
	for (long x = j->from; x < j->to; x++)
		s += collatz(x) % 7 == 0 ? x : 1;
	j->result = s;
	return NULL;
}

/* moda_parallel splits [1, n) over nthreads threads made here, in the
 * library, and sums their results in a fixed order. */
long moda_parallel(int nthreads, long n)
{
	pthread_t t[8];
	struct job jobs[8];
	long total = 0;
	if (nthreads > 8)
		nthreads = 8;
	for (int i = 0; i < nthreads; i++) {
		jobs[i].from = 1 + i * n / nthreads;
		jobs[i].to = 1 + (i + 1) * n / nthreads;
		if (pthread_create(&t[i], NULL, work, &jobs[i]) != 0)
			return -1;
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		total += jobs[i].result;
	}
	return total;
}
