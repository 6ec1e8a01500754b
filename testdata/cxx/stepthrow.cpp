// stepthrow.cpp - a signal handler after every instruction of C++
// exceptions thrown through instrumented frames, in two threads at once
// (decision 163; stepmix.c does the same for C shapes).
//
// "stepthrow 1" runs the work with the trap flag (EFLAGS.TF) set in
// both threads: the CPU raises SIGTRAP after each instruction, the
// thread's own, and the handler calls instrumented code of its own
// (probe_*) that never calls the work's functions, on the way into the
// throw, through the C++ runtime's unwinder and landing pads, and back.
// "stepthrow 0" runs the same work without it, as valgrind does, so the
// work's block counts must be callgrind's of the plain run. The output
// is the same either way.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

// C names, as the test knows them.
#define NOINLINE extern "C" __attribute__((noinline))

static volatile unsigned long sink;
static thread_local unsigned long handled;

#include "../stepping.h"

extern "C" void on_trap(int)
{
	handled++;
	sink += probe_loop(2 + handled % 3);
}

struct Cleanup {
	unsigned long *to;
	explicit Cleanup(unsigned long *t) : to(t) {}
	~Cleanup() { *to += 1; }
};

NOINLINE unsigned long thrower(unsigned long i, unsigned long *cleanups)
{
	Cleanup c(cleanups);
	if (i % 3 == 1)
		throw std::runtime_error("odd");
	if (i % 3 == 2)
		throw (int)i;
	return i * 5;
}

NOINLINE unsigned long middle(unsigned long i, unsigned long *cleanups)
{
	Cleanup c(cleanups);
	return thrower(i, cleanups) + 1;
}

NOINLINE unsigned long catcher(unsigned long i, unsigned long *cleanups)
{
	try {
		return middle(i, cleanups);
	} catch (const std::exception &e) {
		return std::strlen(e.what());
	} catch (int k) {
		return (unsigned long)k * 7;
	}
}


NOINLINE void work(bool step, unsigned long *out)
{
	unsigned long s = 0, cleanups = 0;
	if (step)
		trap_flag(true);
	for (unsigned long i = 0; i < 3; i++)
		s += catcher(i, &cleanups);
	if (step)
		trap_flag(false);
	*out = s * 1000 + cleanups;
}

int main(int argc, char **argv)
{
	// The handler is there in both runs: only the flag differs.
	bool step = argc > 1 && argv[1][0] == '1';
	unsigned long a = 0, b = 0;
	on_sigtrap(on_trap, 0);
	// A throw before the threads: the unwinder's first-use set-up runs
	// unstepped, once.
	unsigned long warm = 0;
	catcher(1, &warm);
	std::thread t(work, step, &b);
	work(step, &a);
	t.join();
	std::printf("%lu %lu %lu\n", a, b, warm);
	return 0;
}
