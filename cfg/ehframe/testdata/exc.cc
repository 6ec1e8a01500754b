// exc.cc: C++ exception shapes for the .eh_frame / LSDA tests of
// cfg/ehframe and rewriter/ehwrite. Built at -O0 and -O2 (gcc splits the
// throwing paths into .cold fragments), PIE and not, as C++03 (dynamic
// exception specifications) and C++17 (noexcept).
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#if __cplusplus >= 201103L
#define THROWS_INT
#define NOTHROW noexcept
#else
#define THROWS_INT throw(int)
#define NOTHROW throw()
#endif

struct Guard {
	const char *name;
	explicit Guard(const char *n) : name(n) {}
	~Guard() { std::printf("~%s\n", name); }
};

struct MyError : std::runtime_error {
	int code;
	MyError(const char *m, int c) : std::runtime_error(m), code(c) {}
};

__attribute__((noinline)) int thrower(int x) {
	Guard g("thrower");
	if (__builtin_expect(x == 1, 0))
		throw 42;
	if (__builtin_expect(x == 2, 0))
		throw MyError("my", 7);
	if (__builtin_expect(x == 3, 0))
		throw std::string("str");
	if (__builtin_expect(x == 4, 0))
		throw 2.5;
	return x * 3;
}

__attribute__((noinline)) int spec(int x) THROWS_INT {
	Guard g("spec");
	return thrower(x);
}

__attribute__((noinline)) int nothrow(int x) NOTHROW {
	Guard g("nothrow");
	return x + 1;
}

__attribute__((noinline)) int catcher(int x) {
	Guard outer("outer");
	try {
		Guard inner("inner");
		return thrower(x);
	} catch (int i) {
		std::printf("int %d\n", i);
		return i;
	} catch (const MyError &e) {
		std::printf("MyError %s %d\n", e.what(), e.code);
		return e.code;
	} catch (const std::exception &e) {
		std::printf("exception %s\n", e.what());
		return -1;
	} catch (...) {
		std::printf("something\n");
		try {
			throw;
		} catch (double d) {
			std::printf("double %g\n", d);
		} catch (...) {
			std::printf("other\n");
		}
		return -2;
	}
}

__attribute__((noinline)) int nested(int x) {
	try {
		try {
			return x <= 1 ? spec(x) : thrower(x);
		} catch (const std::string &s) {
			std::printf("string %s\n", s.c_str());
			throw std::logic_error("rethrown " + s);
		}
	} catch (const std::logic_error &e) {
		std::printf("logic %s\n", e.what());
		return -3;
	} catch (...) {
		return -4;
	}
}

int main(int argc, char **argv) {
	int n = argc > 1 ? std::atoi(argv[1]) : 5;
	int sum = 0;
	for (int i = 0; i < n; i++) {
		sum += catcher(i % 5);
		sum += nested(i % 5);
		sum += nothrow(i);
	}
	std::printf("sum %d\n", sum);
	return 0;
}
