// Exceptions through instrumented frames: a throw three frames below its
// catch, a rethrow, cleanups (destructors run during unwinding), a catch
// of a derived class by base, catch(...), and an exception thrown and
// caught inside one function. The output says which handler ran, so any
// difference in control flow shows in stdout.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

struct Noisy {
	const char *name;
	explicit Noisy(const char *n) : name(n) {}
	~Noisy() { std::printf("  ~%s\n", name); }
};

struct Base { int code; explicit Base(int c) : code(c) {} virtual ~Base() {} };
struct Derived : Base { explicit Derived(int c) : Base(c) {} };

static int depth3(int i)
{
	Noisy n("depth3");
	if (i % 3 == 0)
		throw std::runtime_error("three " + std::to_string(i));
	if (i % 5 == 0)
		throw Derived(i);
	if (i % 7 == 0)
		throw i;
	return i * 2;
}

__attribute__((noinline)) int depth2(int i)
{
	Noisy n("depth2");
	return depth3(i) + 1;
}

__attribute__((noinline)) int depth1(int i)
{
	try {
		return depth2(i) + 1;
	} catch (const Base &b) {
		std::printf("  depth1 rethrows Base %d\n", b.code);
		throw;
	}
}

__attribute__((noinline)) int local(int i)
{
	int r = 0;
	for (int k = 0; k < i % 4; k++) {
		try {
			if (k == 1)
				throw k;
			r += k;
		} catch (int v) {
			r += 10 * v;
		}
	}
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 40;
	long sum = 0;
	for (int i = 1; i <= n; i++) {
		try {
			sum += depth1(i);
		} catch (const std::exception &e) {
			std::printf("%d: exception %s\n", i, e.what());
		} catch (const Base &b) {
			std::printf("%d: Base %d\n", i, b.code);
		} catch (...) {
			std::printf("%d: something\n", i);
		}
		sum += local(i);
	}
	std::printf("sum %ld\n", sum);
	return 0;
}
