// A call-heavy C workload for blpp-bench --suite real, built from source
// so that gcc -fprofile-arcs can be measured beside blpp: a tree-walking
// evaluator of expression trees (one call per node, through a table of
// operations), a sort with a comparator, closures as function pointer and
// environment, recursion and a string-keyed hash table, much as an
// interpreter spends its time. Usage: calls N (N = scale).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node;
typedef long (*evalfn)(const struct node *, long);
struct node {
	evalfn eval;
	const struct node *l, *r;
	long k;
};

static long ev(const struct node *n, long x) { return n->eval(n, x); }
static long op_const(const struct node *n, long x) { (void)x; return n->k; }
static long op_var(const struct node *n, long x) { (void)n; return x; }
static long op_add(const struct node *n, long x) { return ev(n->l, x) + ev(n->r, x); }
static long op_mul(const struct node *n, long x) { return ev(n->l, x) * ev(n->r, x) % 1000003; }
static long op_sub(const struct node *n, long x) { return ev(n->l, x) - ev(n->r, x); }
static long op_if(const struct node *n, long x) { return ev(n->l, x) & 1 ? ev(n->r, x) : n->k; }

static const evalfn ops[] = {op_add, op_mul, op_sub, op_if};

static struct node pool[1 << 12];
static int used;
static unsigned long seed = 12345;

static unsigned long rnd(void) {
	seed = seed * 6364136223846793005UL + 1442695040888963407UL;
	return seed >> 33;
}

static const struct node *build(int depth) {
	struct node *n = &pool[used++ % (1 << 12)];
	if (depth <= 0) {
		if (rnd() % 2) {
			n->eval = op_const;
			n->k = (long)(rnd() % 100);
		} else {
			n->eval = op_var;
		}
		return n;
	}
	n->eval = ops[rnd() % 4];
	n->k = (long)(rnd() % 10);
	n->l = build(depth - 1);
	n->r = build(depth - 1 - (int)(rnd() % 2));
	return n;
}

struct closure {
	long (*fn)(struct closure *, long);
	long acc, step;
};

static long bump(struct closure *c, long x) { return c->acc += c->step * x; }
static long call(struct closure *c, long x) { return c->fn(c, x); }

static int cmp_desc(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return (x < y) - (x > y);
}

static long fib(int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }

#define NBUCKET 1024
struct entry {
	struct entry *next;
	char key[16];
	long count;
};
static struct entry *table[NBUCKET];

static unsigned hash(const char *s) {
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static struct entry *lookup(const char *key) {
	unsigned h = hash(key) % NBUCKET;
	for (struct entry *e = table[h]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	struct entry *e = calloc(1, sizeof *e);
	snprintf(e->key, sizeof e->key, "%s", key);
	e->next = table[h];
	table[h] = e;
	return e;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1, total = 0, words = 0;
	const struct node *tree = build(10);
	struct closure c = {bump, 0, 3};
	long xs[500];
	char key[16];
	for (long round = 0; round < 160 * n; round++) {
		for (long x = 0; x < 20; x++)
			total = (total + ev(tree, x + round)) % 1000003;
		for (int i = 0; i < 500; i++)
			xs[i] = call(&c, i) % 1009;
		qsort(xs, 500, sizeof xs[0], cmp_desc);
		total = (total + xs[0] + xs[499] + fib(15)) % 1000003;
		for (int i = 0; i < 200; i++) {
			snprintf(key, sizeof key, "w%lx", (round * 200 + i) * 2654435761UL % 4093);
			if (lookup(key)->count++ == 0)
				words++;
		}
	}
	printf("%ld %ld %ld\n", n, total, words);
	return 0;
}
