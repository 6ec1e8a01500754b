// mod_b.cc: libmodb.so, the C++ library the modules fixture (mod_main.cc)
// dlopen's and dlclose's twice. modb_check throws an exception that the
// executable catches; modb_map calls back into the executable; a static
// constructor and destructor run at every load and unload.
#include <stdexcept>
#include <string>
#include <vector>

namespace {
struct Loaded {
	int loads = 0;
	Loaded() { loads = 1; }
	~Loaded() { loads = 0; }
};
Loaded state;

int digits(int x)
{
	int n = 0;
	do {
		n++;
		x /= 10;
	} while (x);
	return n;
}
} // namespace

extern "C" int modb_loaded() { return state.loads; }

// modb_check returns a checksum of x, or throws for a multiple of 7 and
// for a negative number.
extern "C" int modb_check(int x)
{
	if (x < 0)
		throw std::invalid_argument("negative: " + std::to_string(x));
	if (x % 7 == 0)
		throw std::runtime_error("multiple of seven: " + std::to_string(x));
	std::vector<int> v;
	for (int i = 0; i < x % 13 + 3; i++)
		v.push_back(i * x % 17);
	int s = 0;
	for (int y : v)
		s = s * 31 + y + digits(y);
	return s & 0xffff;
}

extern "C" int modb_map(int (*f)(int), int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s ^= f(i * 3 + 1);
	return s;
}
