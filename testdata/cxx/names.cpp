// Names that mangle: a namespace, a class with a constructor and an
// overloaded operator, overloads, a function template instantiated for
// two types, a static function and a lambda. No standard library beyond
// printf, so the binary's functions are these. The output depends on
// every call, so a wrong count or jump shows.
#include <cstdio>

namespace geo {
struct Vec {
	long x, y;
	Vec(long x, long y) : x(x), y(y) {}
	Vec operator+(const Vec &o) const { return Vec(x + o.x, y + o.y); }
	long dot(const Vec &o) const { return x * o.x + y * o.y; }
};

long scale(long v, int k) { return k > 0 ? v * k : v; }
double scale(double v, int k) { return k > 0 ? v * k : v / 2; }
} // namespace geo

template <typename T> T sum(const T *v, int n)
{
	T acc = 0;
	for (int i = 0; i < n; i++)
		if (v[i] > 0)
			acc += v[i];
	return acc;
}

static long mix(long a, long b)
{
	return (a ^ b) + (a & 3);
}

int main()
{
	long ls[] = {3, -1, 4, 1, -5, 9};
	double ds[] = {2.5, -0.5, 1.0};
	geo::Vec acc(0, 0);
	long h = 0;
	auto step = [&h](long v) { h = mix(h, v); };
	for (int i = 0; i < 10; i++) {
		acc = acc + geo::Vec(i, 2 * i);
		step(geo::scale((long)i, i % 3));
	}
	double d = geo::scale(sum(ds, 3), 2);
	std::printf("%ld %ld %ld %ld %.1f\n", acc.dot(geo::Vec(1, 1)), sum(ls, 6), h, acc.x, d);
	return 0;
}
