/*
 * Test harness for the blpp runtime. It plays the rewriter's part: it is
 * linked with the runtime's sources, its entry point is blpp_start and its
 * exit hook blpp_fini, and the Go test patches blpp_config and the
 * function table (harness_funcs, counters in harness_counters) into the
 * linked file, as the rewriter patches an instrumented binary. Its
 * "instrumented" functions call the stubs through inline asm with exactly
 * the sequences the rewriter emits.
 *
 * Function ids and path counts must match harnessFuncs in harness_test.go.
 *
 * Usage: harness MODE [ARGS]; see main.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blpp_layout.h"

enum {
	F_BASIC = 0,  /* 4 paths: r = (i&1) + (i&2) */
	F_LOOP = 1,   /* 8 paths: backedges */
	F_REC = 2,    /* 4 paths: recursion, r = 3 around the recursive call */
	F_WORKER = 3, /* 2 paths: thread body */
	F_BIG = 4,    /* 2^40 paths: hash table */
	F_A = 5,      /* longjmp: A calls B calls C calls D, D longjmps to A */
	F_B = 6,
	F_C = 7,
	F_D = 8,
	F_MAIN = 9, /* 4 paths */
	F_CRASH = 10,
	F_REGS = 11, /* 2 paths, regs.S */
	F_IFUNC = 12,
	F_G = 13,
	F_WIDE = 14, /* 128 paths: cold records that get hot (decision 99) */
	F_P = 15,    /* 4 paths: calls f, wide and big in turn */
	F_Q = 16,    /* 1 path: calls P */
	NFUNCS_USED = 17,
};

/* Patched by the test: the function table and the dense counters. */
struct blpp_func harness_funcs[32] = {{1, 1, 0, 0}};
unsigned long long harness_counters[8192];

#define ENTER(fid)                                                                           \
	__asm__ volatile("lea -128(%%rsp),%%rsp\n\tpushq %0\n\tcall blpp_enter\n\tlea 136(%%rsp),%%rsp" \
			 :                                                                   \
			 : "i"(fid)                                                          \
			 : "memory")
#define EXIT(fid)                                                                           \
	__asm__ volatile("lea -128(%%rsp),%%rsp\n\tpushq %0\n\tcall blpp_exit\n\tlea 136(%%rsp),%%rsp" \
			 :                                                                  \
			 : "i"(fid)                                                         \
			 : "memory")
#define BACKEDGE(fid, k, restart)                                                      \
	__asm__ volatile("lea -128(%%rsp),%%rsp\n\tpushq %2\n\tpushq %1\n\tpushq %0\n\t" \
			 "call blpp_backedge\n\tlea 152(%%rsp),%%rsp"                  \
			 :                                                             \
			 : "i"(fid), "i"(k), "i"(restart)                              \
			 : "memory")
#define ADD_R(k) __asm__ volatile("addq %0, %%gs:%c1" : : "i"(k), "i"(BLPP_THREAD_OFF_R) : "cc", "memory")
#define ADD_R_REG(v) __asm__ volatile("addq %0, %%gs:%c1" : : "r"(v), "i"(BLPP_THREAD_OFF_R) : "cc", "memory")

static unsigned long long gs_self(void)
{
	unsigned long long v;
	__asm__ volatile("movq %%gs:0, %0" : "=r"(v));
	return v;
}

static unsigned long long fs_self(void)
{
	unsigned long long v;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(v));
	return v;
}

/* f: path (i&1) + (i&2). */
__attribute__((noinline)) void f(int i)
{
	ENTER(F_BASIC);
	if (i & 1)
		ADD_R(1);
	if (i & 2)
		ADD_R(2);
	EXIT(F_BASIC);
}

/*
 * loop: n iterations; the first starts with r = 0, later ones with
 * r = restart 2; an odd iteration adds 1; each iteration ends at the
 * backedge with count[r + 4]; the exit counts r (0 when n == 0, else 2).
 */
__attribute__((noinline)) void loop(int n)
{
	ENTER(F_LOOP);
	for (int i = 0; i < n; i++) {
		if (i & 1)
			ADD_R(1);
		BACKEDGE(F_LOOP, 4, 2);
	}
	EXIT(F_LOOP);
}

/* rec: path 3 for n > 0 (1 before the call, 2 after), 0 for n == 0. */
__attribute__((noinline)) long rec(int n)
{
	long v = 0;
	ENTER(F_REC);
	if (n > 0) {
		ADD_R(1);
		v = rec(n - 1) + 1;
		ADD_R(2);
	}
	EXIT(F_REC);
	return v;
}

/* big: one path, numbered id, of a function with 2^40 paths. */
__attribute__((noinline)) void big(unsigned long long id)
{
	ENTER(F_BIG);
	ADD_R_REG(id);
	EXIT(F_BIG);
}

/* wide: path x % 128 of a 128-path function. */
__attribute__((noinline)) void wide(unsigned long long x)
{
	ENTER(F_WIDE);
	ADD_R_REG(x % 128);
	EXIT(F_WIDE);
}

/* P: path 0; calls f(i), wide(i) or big(i % 100) as i % 3 says. */
__attribute__((noinline)) void P(int i)
{
	ENTER(F_P);
	if (i % 3 == 0)
		f(i);
	else if (i % 3 == 1)
		wide((unsigned long long)i);
	else
		big((unsigned long long)(i % 100));
	EXIT(F_P);
}

/* Q: path 0; calls P(i). */
__attribute__((noinline)) void Q(int i)
{
	ENTER(F_Q);
	P(i);
	EXIT(F_Q);
}

/* badpath ends a path outside [0, num_paths) of F_BASIC. */
__attribute__((noinline)) void badpath(void)
{
	ENTER(F_BASIC);
	ADD_R(100);
	EXIT(F_BASIC);
}

static jmp_buf jb;

__attribute__((noinline)) void D(void)
{
	ENTER(F_D);
	ADD_R(5);
	longjmp(jb, 1);
}

__attribute__((noinline)) void C(void)
{
	ENTER(F_C);
	ADD_R(3);
	D();
	EXIT(F_C);
}

__attribute__((noinline)) void B(void)
{
	ENTER(F_B);
	ADD_R(2);
	C();
	EXIT(F_B);
}

/* A: path 1 when B returns through longjmp (r restored to A's value at
 * the call of B); D, C and B become partials with r 5, 3 and 2. */
__attribute__((noinline)) void A(void)
{
	ENTER(F_A);
	if (setjmp(jb) == 0) {
		ADD_R(1);
		B();
		ADD_R(2); /* not reached */
	}
	EXIT(F_A);
}

__attribute__((noinline)) void crash(int how)
{
	ENTER(F_CRASH);
	ADD_R(1);
	if (how == 0)
		*(volatile int *)(uintptr_t)8 = 1;
	else
		abort();
	EXIT(F_CRASH);
}

__attribute__((noinline)) void g_exit(void)
{
	ENTER(F_G);
	ADD_R(1);
	exit(3);
}

__attribute__((noinline)) void main_like(void)
{
	ENTER(F_MAIN);
	ADD_R(2);
	g_exit();
	EXIT(F_MAIN);
}

/* ---- threads ---- */

enum { NTHREADS = 4, PER_THREAD = 20000 };
static pthread_barrier_t barrier;
static unsigned long long blocks[NTHREADS];

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	ENTER(F_WORKER);
	blocks[t] = gs_self();
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < PER_THREAD; i++) {
		f(i + t);
		big((unsigned long long)i * 7919 % (1ull << 40));
		if (i % 1000 == 0)
			rec(3);
	}
	ADD_R(1);
	EXIT(F_WORKER);
	return 0;
}

static int run_threads(void)
{
	pthread_t th[NTHREADS];
	unsigned long long main_block;
	pthread_barrier_init(&barrier, 0, NTHREADS);
	f(0); /* the main thread's block */
	main_block = gs_self();
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], 0, worker, (void *)(intptr_t)t);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], 0);
	for (int t = 0; t < NTHREADS; t++) {
		if (blocks[t] == main_block || blocks[t] == 0)
			return printf("thread %d uses the main block\n"), 1;
		for (int u = 0; u < t; u++)
			if (blocks[t] == blocks[u])
				return printf("threads %d and %d share a block\n", t, u), 1;
	}
	if (gs_self() != main_block)
		return printf("main block changed\n"), 1;
	printf("distinct blocks\n");
	return 0;
}

/* ---- register checks (regs.S) ---- */

void regcheck_enter(unsigned long long out[17]);
void regcheck_exit(unsigned long long out[17]);
void regcheck_backedge(unsigned long long out[17]);
void regcheck_enter_bad(unsigned long long out[17]);
void regcheck_exit_bad(unsigned long long out[17]);
void regcheck_backedge_bad(unsigned long long out[17]);
extern unsigned long long rc_flags;

static int check_regs(const char *what, const unsigned long long out[17])
{
	static const char *names[15] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
					"r9", "r10", "r11", "r12", "r13", "r14", "r15"};
	static const unsigned long long want[15] = {
		0x1111111111111111ull, 0x2222222222222222ull, 0x3333333333333333ull,
		0x4444444444444444ull, 0x5555555555555555ull, 0x6666666666666666ull,
		0x7777777777777777ull, 0x8888888888888888ull, 0x9999999999999999ull,
		0xaaaaaaaaaaaaaaaaull, 0xbbbbbbbbbbbbbbbbull, 0xccccccccccccccccull,
		0xddddddddddddddddull, 0xeeeeeeeeeeeeeeeeull, 0x0f0f0f0f0f0f0f0full};
	const unsigned long long mask = 0xcd5; /* CF PF AF ZF SF DF OF */
	int bad = 0;
	for (int i = 0; i < 15; i++)
		if (out[i] != want[i])
			bad = printf("%s: %s = %#llx, want %#llx\n", what, names[i], out[i], want[i]);
	if ((out[15] & mask) != (rc_flags & mask))
		bad = printf("%s: flags = %#llx, want %#llx\n", what, out[15] & mask, rc_flags & mask);
	if (out[16] != 0)
		bad = printf("%s: rsp moved by %lld\n", what, (long long)out[16]);
	return bad;
}

static int run_regs(void)
{
	/* DF and every status flag set, then all clear, twice: the first
	 * round resolves the counters (slow paths), later ones are fast. */
	static const unsigned long long flags[4] = {0xcd7, 0x2, 0xcd7, 0x2};
	static const struct {
		void (*check)(unsigned long long out[17]);
		const char *what;
	} stubs[] = {
		{regcheck_enter, "enter"},
		{regcheck_backedge, "backedge"},
		{regcheck_exit, "exit"},
		{regcheck_enter_bad, "enter (bad id)"},
		{regcheck_backedge_bad, "backedge (bad id)"},
		{regcheck_exit_bad, "exit (bad id)"},
	};
	unsigned long long out[17];
	int bad = 0;
	for (int k = 0; k < 4; k++) {
		rc_flags = flags[k];
		for (size_t i = 0; i < sizeof(stubs) / sizeof(stubs[0]); i++) {
			stubs[i].check(out);
			bad |= check_regs(stubs[i].what, out);
		}
	}
	if (!bad)
		printf("regs ok\n");
	return bad;
}

static void *regs_thread(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)run_regs();
}

/* ---- dead threads: each leaves F_WORKER live (pthread_exit inside) ---- */

static void *exiting_thread(void *arg)
{
	ENTER(F_WORKER);
	ADD_R(1);
	if (arg)
		pthread_exit(0);
	EXIT(F_WORKER);
	return 0;
}

static void *child_thread(void *arg)
{
	(void)arg;
	for (int i = 100; i < 105; i++)
		f(i);
	return 0;
}

/* ---- fork children ---- */

/* fork_run runs f(0..9) and forks; the child runs child, says
 * "child <pid>" and exits, the parent waits and returns its status. */
static int fork_run(void (*child)(void))
{
	pid_t pid;
	int st;
	for (int i = 0; i < 10; i++)
		f(i);
	pid = fork();
	if (pid == 0) {
		child();
		printf("child %d\n", (int)getpid());
		exit(0);
	}
	waitpid(pid, &st, 0);
	return st;
}

static void fork_child(void)
{
	child_thread(0);
	loop(3);
}

/* fork_thread makes the child's first counts come from a new thread. */
static void fork_thread(void)
{
	pthread_t th;
	pthread_create(&th, 0, child_thread, 0);
	pthread_join(th, 0);
}

/* ---- a signal handler that runs instrumented code ---- */

static volatile long handled;

static void on_alarm(int sig)
{
	(void)sig;
	f(1);
	handled++;
}

static int run_signals(long n)
{
	struct sigaction sa;
	struct itimerval it = {{0, 50}, {0, 50}};
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);
	setitimer(ITIMER_REAL, &it, 0);
	for (long i = 0; i < n; i++) {
		f((int)i);
		if (i % 64 == 0)
			rec(2);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, 0);
	printf("handled %ld\n", handled);
	return 0;
}

/* ---- a handler's stub in the middle of another (decision 99) ---- */

/* The runtime built with BLPP_TEST_NEST calls this hook at each place a
 * signal handler's stub may interrupt a stub that makes a record or node
 * (blpp_cct.c NEST_POINT); it then enters function fid (0: f) from the
 * running record, as a handler would, every other time it is called. */
extern void (*blpp_test_nest)(int where, unsigned long fid) __attribute__((weak));
static long nest_where[8], nest_seen[8], nest_ran[NFUNCS_USED];
static int in_nest;

static void nest_hook(int where, unsigned long fid)
{
	/* Every other time, so that the stub interrupted is sometimes the
	 * first to get there (the nested one runs without the hook). */
	if (in_nest || where < 1 || where > 7 || nest_seen[where]++ % 2)
		return;
	in_nest = 1;
	nest_where[where]++;
	/* Point 7 is a record about to take its place in the list: a
	 * handler that links a record of its own first, then reaches the
	 * interrupted one through its node, moves that place on. */
	if (where == 7) {
		wide(0);
		nest_ran[F_WIDE]++;
	}
	switch (fid) {
	case F_WIDE:
		wide(0);
		break;
	case F_BIG:
		big(0);
		break;
	case F_P:
		P(0); /* and f(0) */
		nest_ran[F_BASIC]++;
		break;
	default:
		fid = F_BASIC;
		f(0);
	}
	nest_ran[fid]++;
	in_nest = 0;
}

static int run_nest(void)
{
	if (!&blpp_test_nest)
		return printf("runtime built without BLPP_TEST_NEST\n"), 1;
	blpp_test_nest = nest_hook;
	nest_seen[4] = 1; /* P's root record made plainly: its lists are, with the hook */
	for (int i = 0; i < 3000; i++)
		P(i);
	for (unsigned long long i = 0; i < 200; i++)
		wide(i);
	for (int i = 0; i < 300; i++)
		Q(i);
	blpp_test_nest = 0;
	for (int w = 1; w < 8; w++)
		printf("where %d %ld\n", w, nest_where[w]);
	for (int f = 0; f < NFUNCS_USED; f++)
		printf("ran %d %ld\n", f, nest_ran[f]);
	return 0;
}

/* ---- static binaries: an IRELATIVE resolver runs before libc's TLS ---- */

#ifdef HARNESS_STATIC
void blpp_fini(void);
__attribute__((section(".fini_array"), used)) static void (*fini_hook)(void) = blpp_fini;

static unsigned long long ifunc_tp;
static int ifunc_impl(void) { return 42; }
static void *resolve_ifn(void)
{
	ENTER(F_IFUNC);
	ifunc_tp = fs_self();
	ADD_R(1);
	EXIT(F_IFUNC);
	return (void *)ifunc_impl;
}
int ifn(void) __attribute__((ifunc("resolve_ifn")));
#endif

static void basic(int n)
{
	for (int i = 0; i < n; i++)
		f(i);
	loop(0);
	loop(5);
	loop(6);
	for (int i = 0; i < 5; i++)
		rec(10);
	for (unsigned long long i = 0; i < 3000; i++)
		big(i * 1000003 % 5000);
	badpath();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";
	setvbuf(stdout, 0, _IONBF, 0);
#ifdef HARNESS_STATIC
	if (ifn() != 42)
		return printf("ifunc broken\n"), 1;
	printf("ifunc tp %s\n", ifunc_tp == fs_self() ? "same" : "differs");
#endif
	if (!strcmp(mode, "basic")) {
		basic(100);
		return 0;
	}
	if (!strcmp(mode, "threads"))
		return run_threads();
	if (!strcmp(mode, "regs"))
		return run_regs();
	if (!strcmp(mode, "regs-thread")) {
		pthread_t th;
		void *ret;
		pthread_create(&th, 0, regs_thread, 0);
		pthread_join(th, &ret);
		return (int)(intptr_t)ret;
	}
	if (!strcmp(mode, "dead-threads")) {
		/* ten threads one after the other, all but the last leave
		 * F_WORKER through pthread_exit */
		for (int i = 0; i < 10; i++) {
			pthread_t th;
			pthread_create(&th, 0, exiting_thread, (void *)(intptr_t)(i < 9));
			pthread_join(th, 0);
		}
		return 0;
	}
	if (!strcmp(mode, "nest"))
		return run_nest();
	if (!strcmp(mode, "signals"))
		return run_signals(argc > 2 ? atol(argv[2]) : 1000000);
	if (!strcmp(mode, "bench")) {
		/* ns per f() call: an enter and an exit stub */
		long n = argc > 2 ? atol(argv[2]) : 10000000;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long i = 0; i < n; i++)
			f((int)i);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%.1f ns per call\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
		return 0;
	}
	if (!strcmp(mode, "overflow")) {
		rec(100);
		f(2);
		return 0;
	}
	if (!strcmp(mode, "longjmp")) {
		for (int i = 0; i < 3; i++)
			A();
		f(1); /* the shadow stack is consistent again */
		return 0;
	}
	if (!strcmp(mode, "exit-inside")) {
		f(3);
		main_like();
		return 0;
	}
	if (!strcmp(mode, "segv") || !strcmp(mode, "abort")) {
		for (int i = 0; i < 10; i++)
			f(i);
		crash(!strcmp(mode, "abort"));
		return 0;
	}
	if (!strcmp(mode, "fork")) {
		/* parent: f(0..9), child: f(100..104) + loop(3), parent: f(1) x 7 */
		int st = fork_run(fork_child);
		for (int i = 0; i < 7; i++)
			f(1);
		printf("parent %d child status %d\n", (int)getpid(), st);
		return 0;
	}
	if (!strcmp(mode, "fork-thread"))
		/* parent: f(0..9); child: a new thread runs f(100..104) */
		return fork_run(fork_thread) != 0;
	if (!strcmp(mode, "dump-self")) {
		/* f(0..9), a dump, which is renamed to <profile>.dump, f(2) x 5 */
		char dumped[4200];
		const char *prof = getenv("BLPP_PROFILE");
		for (int i = 0; i < 10; i++)
			f(i);
		raise(SIGUSR2);
		snprintf(dumped, sizeof(dumped), "%s.dump", prof);
		if (rename(prof, dumped) != 0)
			return printf("no dump: %s\n", strerror(errno)), 1;
		for (int i = 0; i < 5; i++)
			f(2);
		return 0;
	}
	if (!strcmp(mode, "dump-loop")) {
		/* f(i) until the dump appears (sent from outside), rename it,
		 * then 1000 more; print the total. */
		char dumped[4200];
		const char *prof = getenv("BLPP_PROFILE");
		long i = 0;
		printf("ready\n");
		for (;; i++) {
			f((int)i);
			if (i % 256 == 0 && access(prof, F_OK) == 0)
				break;
		}
		snprintf(dumped, sizeof(dumped), "%s.dump", prof);
		if (rename(prof, dumped) != 0)
			return printf("rename: %s\n", strerror(errno)), 1;
		for (long j = 0; j < 1000; j++, i++)
			f((int)i + 1);
		printf("total %ld\n", i + 1);
		return 0;
	}
	if (!strcmp(mode, "sigterm")) {
		printf("ready\n");
		for (long i = 0;; i++) {
			f((int)i);
			if (i % 1024 == 0)
				usleep(100);
		}
	}
	if (!strcmp(mode, "chdir")) {
		if (chdir("/") != 0)
			return 1;
		basic(8);
		return 0;
	}
	printf("unknown mode %s\n", mode);
	return 2;
}
