// mod_main.cc: the executable of the modules fixture (issue 25 acceptance
// 1): libmoda.so is DT_NEEDED (mod_a.c), libmodb.so (mod_b.cc, C++) is
// dlopen'ed by the path in argv[1], used, dlclose'd, and opened again.
// Callbacks go both ways, an exception thrown in libmodb is caught here,
// libmoda makes threads. Everything it prints is deterministic; it exits
// with status 3 so that the status is seen to pass through.
#include <dlfcn.h>
#include <cstdio>
#include <stdexcept>

extern "C" {
void moda_sort(int *v, int n, int (*cmp)(const int *, const int *));
int moda_apply(int (*f)(int), int n);
long (*moda_op(int which))(long);
long moda_parallel(int nthreads, long n);
}

static int by_digit_sum(const int *a, const int *b)
{
	int da = 0, db = 0;
	for (int x = *a; x; x /= 10)
		da += x % 10;
	for (int x = *b; x; x /= 10)
		db += x % 10;
	if (da != db)
		return da - db;
	return *a < *b ? -1 : *a > *b;
}

static int mix(int x) { return x * 2654435761u >> 7; }

static int use_modb(const char *path, int round)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		std::fprintf(stderr, "dlopen failed\n");
		return 1;
	}
	auto loaded = (int (*)())dlsym(h, "modb_loaded");
	auto check = (int (*)(int))dlsym(h, "modb_check");
	auto map = (int (*)(int (*)(int), int))dlsym(h, "modb_map");
	if (!loaded || !check || !map) {
		std::fprintf(stderr, "dlsym failed\n");
		return 1;
	}
	std::printf("round %d: loaded %d\n", round, loaded());
	for (int x = round - 2; x < 20; x += 3) {
		try {
			std::printf("  check(%d) = %d\n", x, check(x));
		} catch (const std::exception &e) {
			std::printf("  check(%d) threw: %s\n", x, e.what());
		}
	}
	std::printf("  map = %d\n", map(mix, 50 + round));
	return dlclose(h) != 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: mod_main LIBMODB\n");
		return 2;
	}
	int v[40];
	for (int i = 0; i < 40; i++)
		v[i] = (i * 7919) % 1000;
	moda_sort(v, 40, by_digit_sum);
	for (int i = 0; i < 40; i++)
		std::printf("%d%c", v[i], i % 10 == 9 ? '\n' : ' ');
	std::printf("apply = %d\n", moda_apply(mix, 100));
	for (int i = 0; i < 6; i++)
		std::printf("op %d(%d) = %ld\n", i, 27 + i, moda_op(i)(27 + i));
	std::printf("parallel = %ld\n", moda_parallel(3, 3000));
	for (int round = 1; round <= 2; round++)
		if (use_modb(argv[1], round))
			return 1;
	std::fprintf(stderr, "mod_main: done\n");
	return 3;
}
