// Everyday C++ through instrumented code: virtual calls through a base
// pointer, templates instantiated for several types, std::thread workers
// that each throw and catch, std::function callbacks, and a destructor
// chain. Output depends on every branch taken, so a wrong jump shows.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct Shape {
	virtual ~Shape() {}
	virtual long area() const = 0;
	virtual const char *name() const = 0;
};

struct Rect : Shape {
	long w, h;
	Rect(long w, long h) : w(w), h(h) {}
	long area() const override { return w * h; }
	const char *name() const override { return "rect"; }
};

struct Tri : Shape {
	long b, h;
	Tri(long b, long h) : b(b), h(h) {}
	long area() const override
	{
		if (b < 0 || h < 0)
			throw std::invalid_argument("negative triangle");
		return b * h / 2;
	}
	const char *name() const override { return "tri"; }
};

template <typename T> T accumulate(const std::vector<T> &v, std::function<T(T, T)> op)
{
	T acc{};
	for (const T &x : v)
		acc = op(acc, x);
	return acc;
}

template <typename K> std::map<K, int> histogram(const std::vector<K> &v)
{
	std::map<K, int> h;
	for (const K &k : v)
		h[k]++;
	return h;
}

static long checked(const Shape &s)
{
	try {
		return s.area();
	} catch (const std::invalid_argument &e) {
		return -1;
	}
}

static void worker(int id, long *out)
{
	long sum = 0;
	for (int i = 0; i < 200; i++) {
		try {
			if ((i + id) % 17 == 0)
				throw std::runtime_error("odd " + std::to_string(i));
			sum += i * id;
		} catch (const std::runtime_error &e) {
			sum -= (long)e.what()[4];
		}
	}
	*out = sum;
}

int main()
{
	std::vector<std::unique_ptr<Shape>> shapes;
	for (int i = -3; i < 12; i++) {
		if (i % 2)
			shapes.emplace_back(new Rect(i, i + 1));
		else
			shapes.emplace_back(new Tri(i, 4));
	}
	long total = 0;
	for (auto &s : shapes) {
		long a = checked(*s);
		std::printf("%s %ld\n", s->name(), a);
		total += a;
	}
	std::vector<int> ints{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
	std::vector<double> dbls{0.5, 1.25, 2.0};
	std::vector<std::string> strs{"a", "bb", "a", "ccc", "bb", "a"};
	std::printf("sum %d max %d prod %.3f\n", accumulate<int>(ints, [](int a, int b) { return a + b; }),
		    accumulate<int>(ints, [](int a, int b) { return a > b ? a : b; }),
		    accumulate<double>(dbls, [](double a, double b) { return (a == 0 ? 1 : a) * b; }));
	for (auto &kv : histogram(strs))
		std::printf("%s=%d ", kv.first.c_str(), kv.second);
	for (auto &kv : histogram(ints))
		std::printf("%d=%d ", kv.first, kv.second);
	std::printf("\n");
	std::vector<std::thread> ts;
	long outs[4];
	for (int id = 0; id < 4; id++)
		ts.emplace_back(worker, id + 1, &outs[id]);
	for (auto &t : ts)
		t.join();
	for (long o : outs)
		total += o;
	std::printf("total %ld\n", total);
	return 0;
}
