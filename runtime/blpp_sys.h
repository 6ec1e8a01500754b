/*
 * blpp_sys.h: the runtime's ground floor. Integer types, atomics and the
 * signal fence, the raw system calls it makes (numbers and constants from
 * the Linux x86-64 ABI, the syscall instruction from blpp_pmu.h), and the
 * few libc functions it needs, written out: copy, compare, length,
 * prefix, string equality, decimal, anonymous mmap.
 *
 * Part of the runtime's one translation unit (blpp_rt.c includes it first,
 * after the generated headers and blpp_pmu.h). Freestanding: no libc, no
 * system header; nothing here may make gcc emit a call (mem_copy is
 * inline asm, not a loop gcc could turn into memcpy), and nothing holds
 * state, so every function is safe in a signal handler.
 */

typedef unsigned long u64;
typedef long s64;
typedef unsigned int u32;
typedef unsigned char u8;

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOADR(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CAS(p, o, n)                                                                   \
	({                                                                             \
		__typeof__(*(p)) cas_old_ = (o);                                       \
		__atomic_compare_exchange_n((p), &cas_old_, (n), 0, __ATOMIC_ACQ_REL, \
					    __ATOMIC_ACQUIRE);                         \
	})
/*
 * ADD1 and CAS1 are ADD (without its result) and CAS for words that only
 * their thread writes: its records' counters, its tables, its node and
 * record lists. A signal handler on the thread runs between two of its
 * instructions, never inside one, so one instruction is atomic against
 * it without a lock prefix, and other threads only read these words (an
 * aligned store does not tear). A locked instruction waits for the store
 * buffer to drain: tens of cycles, in every stub's path end, 0.5 M times
 * in python3's start-up in context mode (decision 151).
 */
#define ADD1(p, v)                                                                     \
	({                                                                             \
		__typeof__(*(p)) add1_v_ = (v);                                        \
		__asm__ volatile("add %1, %0" : "+m"(*(p)) : "r"(add1_v_) : "memory", "cc"); \
	})
#define CAS1(p, o, n)                                                                  \
	({                                                                             \
		__typeof__(*(p)) cas1_old_ = (o), cas1_new_ = (n);                     \
		_Bool cas1_ok_;                                                        \
		__asm__ volatile("cmpxchg %3, %1"                                      \
				 : "+a"(cas1_old_), "+m"(*(p)), "=@ccz"(cas1_ok_)      \
				 : "r"(cas1_new_)                                      \
				 : "memory");                                          \
		cas1_ok_;                                                              \
	})
/* Orders memory accesses against a signal handler on the same thread. */
#define BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* ---- system calls [Linux x86-64 syscall ABI] ---- */

enum {
	SYS_read = 0,
	SYS_write = 1,
	SYS_open = 2,
	SYS_close = 3,
	SYS_stat = 4,
	SYS_mmap = 9,
	SYS_mprotect = 10,
	SYS_munmap = 11,
	SYS_rt_sigaction = 13,
	SYS_rt_sigprocmask = 14,
	SYS_mremap = 25,
	SYS_madvise = 28,
	SYS_nanosleep = 35,
	SYS_getpid = 39,
	SYS_uname = 63,
	SYS_getcwd = 79,
	SYS_rename = 82,
	SYS_unlink = 87,
	SYS_arch_prctl = 158,
	SYS_gettid = 186,
	SYS_clock_gettime = 228,
	SYS_exit_group = 231,
	SYS_access = 21,
	SYS_execve = 59,
	SYS_readlink = 89,
	SYS_tgkill = 234,
};

enum {
	SYS_fcntl = 72, /* blpp_live.c, blpp_sample.c */
	SYS_pread64 = 17, /* blpp_obuf.c */
	SYS_pwrite64 = 18,
	ARCH_SET_GS = 0x1001,
	ARCH_SET_FS = 0x1002,
	ARCH_GET_GS = 0x1004,
	ARCH_GET_FS = 0x1003,
	PROT_NONE = 0,
	PROT_RW = 3,
	MAP_PRIVATE_ANON = 0x22,
	MAP_NORESERVE = 0x4000,
	MREMAP_MAYMOVE = 1,
	MADV_WIPEONFORK = 18,
	MADV_POPULATE_WRITE = 23,
	O_RDONLY = 0,
	O_WRONLY = 01,
	O_RDWR = 02,
	O_CREAT = 0100,
	O_TRUNC = 01000,
	O_CLOEXEC = 02000000,
	AT_IGNORE = 1,
	AT_HWCAP2 = 26,
	HWCAP2_FSGSBASE = 1 << 1,
	SA_SIGINFO = 0x4,
	SA_RESTART = 0x10000000,
	SA_ONSTACK = 0x08000000,
	SA_RESTORER = 0x04000000,
	SA_RESETHAND = (int)0x80000000u,
	SIG_BLOCK = 0,
	SIG_SETMASK = 2,
	SIGHUP = 1,
	SIGINT = 2,
	SIGQUIT = 3,
	SIGILL = 4,
	SIGTRAP = 5,
	SIGABRT = 6,
	SIGBUS = 7,
	SIGFPE = 8,
	SIGKILL = 9,
	SIGUSR1 = 10,
	SIGSEGV = 11,
	SIGPIPE = 13,
	SIGALRM = 14,
	SIGTERM = 15,
	SIGSTKFLT = 16,
	SIGSTOP = 19,
	SIGXCPU = 24,
	SIGXFSZ = 25,
	SIGVTALRM = 26,
	SIGPROF = 27,
	SIGIO = 29,
	SIGPWR = 30,
	SIGSYS = 31,
	NSIG = 64,
};

/* The kernel's struct sigaction on x86-64 [arch/x86/include/uapi/asm/signal.h]:
 * what rt_sigaction reads and writes, 8-byte signal set. */
struct ksigaction {
	u64 handler; /* SIG_DFL 0, SIG_IGN 1, or a function */
	u64 flags;
	u64 restorer;
	u64 mask;
};

/* The raw system call is blpp_pmu.h's (one copy of the asm). */
#define sc6 blpp_pmu_syscall6
#define sc0(n) sc6((n), 0, 0, 0, 0, 0, 0)
#define sc1(n, a) sc6((n), (long)(a), 0, 0, 0, 0, 0)
#define sc2(n, a, b) sc6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define sc3(n, a, b, c) sc6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sc4(n, a, b, c, d) sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sc5(n, a, b, c, d, e) sc6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

static inline int failed(long r) { return (unsigned long)r > -4096ul; }

static u64 getpid(void) { return (u64)sc0(SYS_getpid); }

/* mono_ns is CLOCK_MONOTONIC in nanoseconds (0 if the call fails). */
static u64 mono_ns(void)
{
	struct {
		long s, ns;
	} ts = {0, 0};
	if (failed(sc2(SYS_clock_gettime, 1 /* CLOCK_MONOTONIC */, &ts)))
		return 0;
	return (u64)ts.s * 1000000000ul + (u64)ts.ns;
}
static u64 gettid(void) { return (u64)sc0(SYS_gettid); }

/* ---- memory and strings (no libc) ---- */

static void mem_copy(void *d, const void *s, u64 n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static void mem_zero(void *d, u64 n)
{
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(0) : "memory");
}

static u64 str_len(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

/* prefix returns the rest of s after p, or 0 when s does not start with p. */
static const char *prefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return 0;
	return s;
}

/* str_eq compares two NUL-terminated strings. */
static int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* utoa writes v in decimal ending just before end; returns its start. */
static char *utoa(char *end, u64 v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static void *map_anon(u64 size, int flags)
{
	long r = sc6(SYS_mmap, 0, (long)size, PROT_RW, MAP_PRIVATE_ANON | flags, -1, 0);
	return failed(r) ? 0 : (void *)r;
}

static u64 page_up(u64 n) { return (n + 4095) & ~4095ul; }
