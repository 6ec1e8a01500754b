/*
 * stencil.c - benchmark workload: dense numeric loops.
 *
 * A blocked matrix multiply and a five-point Jacobi relaxation on a 2-D
 * grid with fixed boundaries, the inner loops of most numeric codes: long
 * counted loops with few branches, where a path profiler's per-iteration
 * cost (one path end per backedge) is most visible.  The checksum is taken
 * from the integer parts of scaled results, so it does not depend on the
 * last bits of floating point.
 *
 * usage: stencil [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define BLOCK 32

NOINLINE static void matmul(const double *a, const double *b, double *c, int n)
{
	memset(c, 0, (size_t)n * n * sizeof *c);
	for (int ii = 0; ii < n; ii += BLOCK)
		for (int kk = 0; kk < n; kk += BLOCK)
			for (int jj = 0; jj < n; jj += BLOCK) {
				int ie = ii + BLOCK < n ? ii + BLOCK : n;
				int ke = kk + BLOCK < n ? kk + BLOCK : n;
				int je = jj + BLOCK < n ? jj + BLOCK : n;
				for (int i = ii; i < ie; i++)
					for (int k = kk; k < ke; k++) {
						double aik = a[i * n + k];
						for (int j = jj; j < je; j++)
							c[i * n + j] += aik * b[k * n + j];
					}
			}
}

/* jacobi runs steps sweeps and returns the largest change of the last. */
NOINLINE static double jacobi(double *u, double *v, int n, int steps)
{
	double delta = 0;
	for (int s = 0; s < steps; s++) {
		delta = 0;
		for (int i = 1; i < n - 1; i++)
			for (int j = 1; j < n - 1; j++) {
				double x = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
						   u[i * n + j - 1] + u[i * n + j + 1]);
				double d = x > v[i * n + j] ? x - v[i * n + j] : v[i * n + j] - x;
				if (d > delta)
					delta = d;
				v[i * n + j] = x;
			}
		double *t = u;
		u = v;
		v = t;
	}
	return delta;
}

NOINLINE static unsigned long digest(const double *m, long count)
{
	unsigned long h = 1469598103934665603ul;
	for (long i = 0; i < count; i++)
		h = (h ^ (unsigned long)(long)(m[i] * 1000.0)) * 1099511628211ul;
	return h;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	unsigned long check = 0;
	if (scale <= 0) {
		fprintf(stderr, "usage: stencil [SCALE>0]\n");
		return 2;
	}
	int n = 64 + (int)(scale * 5), g = 64 + (int)(scale * 4), steps = 20 + (int)(scale * 16);
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
	double *c = malloc(sizeof(double) * n * n);
	double *u = calloc((size_t)g * g, sizeof(double)), *v = calloc((size_t)g * g, sizeof(double));
	if (!a || !b || !c || !u || !v) {
		fprintf(stderr, "stencil: out of memory\n");
		return 1;
	}
	for (int i = 0; i < n * n; i++) {
		a[i] = (double)((i * 7 + 3) % 17) / 8.0;
		b[i] = (double)((i * 11 + 5) % 13) / 4.0;
	}
	matmul(a, b, c, n);
	check = digest(c, (long)n * n);
	/* hot left edge, cold elsewhere */
	for (int i = 0; i < g; i++)
		u[i * g] = v[i * g] = 100.0;
	double delta = jacobi(u, v, g, steps);
	check = check * 1000003u + digest(steps % 2 ? v : u, (long)g * g);
	printf("stencil scale=%ld n=%d grid=%d delta=%.3f checksum=%016lx\n", scale, n, g, delta, check);
	free(a), free(b), free(c), free(u), free(v);
	return 0;
}
