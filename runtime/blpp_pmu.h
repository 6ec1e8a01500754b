/*
 * blpp_pmu.h: reading hardware counters from user space, for the runtime
 * [DESIGN 8; package counters].
 *
 * Each metric is a perf event opened on the calling thread (pid 0, cpu -1,
 * user space only) with its first page mapped read-only. The count is read
 * without a system call: rdpmc of the hardware counter the kernel names on
 * that page, plus the page's offset, under the page's seqlock
 * [linux/perf_event.h, struct perf_event_mmap_page]. Where the kernel
 * offers no rdpmc (cap_user_rdpmc clear, or index 0: a software event, or
 * a hardware event not on a counter right now), blpp_pmu_read returns -1
 * and the caller falls back: rdtsc for cycles, read(2) of the descriptor
 * (blpp_pmu_read_fd, a system call), or nothing.
 *
 * Header only, for inclusion by blpp_rt.c, and held to its constraints:
 * freestanding (no libc, no other header), raw system calls, no data
 * (nothing that needs a relocation), general registers only, and no call
 * gcc could turn into memset/memcpy. Every function is static inline, so
 * the includer pays only for what it uses.
 *
 * A test may define BLPP_PMU_RDPMC(counter) before including this file to
 * replace the rdpmc instruction (runtime/testdata/pmu_test.c does, to
 * drive the seqlock retry and the sign extension with a fake page).
 */
#ifndef BLPP_PMU_H
#define BLPP_PMU_H

/* ---- perf ABI [linux/perf_event.h] ---- */

enum {
	BLPP_PERF_TYPE_HARDWARE = 0,
	BLPP_PERF_TYPE_SOFTWARE = 1,
	BLPP_PERF_TYPE_HW_CACHE = 3,
	BLPP_PERF_TYPE_RAW = 4,
	BLPP_PERF_COUNT_HW_CPU_CYCLES = 0,
	BLPP_PERF_COUNT_HW_INSTRUCTIONS = 1,
	BLPP_PERF_COUNT_SW_TASK_CLOCK = 1,
	BLPP_PERF_FLAG_FD_CLOEXEC = 1 << 3,
	BLPP_PERF_ATTR_SIZE_VER5 = 112,
};

/* perf_event_attr flag bits (the bitfield word at offset 40). */
#define BLPP_PERF_ATTR_DISABLED (1ULL << 0)
#define BLPP_PERF_ATTR_EXCLUDE_KERNEL (1ULL << 5)
#define BLPP_PERF_ATTR_EXCLUDE_HV (1ULL << 6)

/* struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (kernels since 4.1
 * accept it; newer fields default to 0). */
struct blpp_perf_attr {
	unsigned int type;
	unsigned int size;
	unsigned long long config;
	unsigned long long sample_period;
	unsigned long long sample_type;
	unsigned long long read_format;
	unsigned long long flags; /* disabled, inherit, ..., exclude_kernel, ... */
	unsigned int wakeup_events;
	unsigned int bp_type;
	unsigned long long config1;
	unsigned long long config2;
	unsigned long long branch_sample_type;
	unsigned long long sample_regs_user;
	unsigned int sample_stack_user;
	int clockid;
	unsigned long long sample_regs_intr;
	unsigned int aux_watermark;
	unsigned short sample_max_stack;
	unsigned short reserved_2;
};

/* The prefix of struct perf_event_mmap_page this code and its tests use;
 * the kernel's page is 4096 bytes. */
struct blpp_perf_page {
	unsigned int version;
	unsigned int compat_version;
	unsigned int lock; /* seqlock: odd or changed while the kernel updates */
	unsigned int index; /* hardware counter + 1; 0: none (no rdpmc) */
	long long offset; /* added to the counter's value */
	unsigned long long time_enabled;
	unsigned long long time_running;
	unsigned long long capabilities; /* BLPP_PERF_CAP_* */
	unsigned short pmc_width; /* bits rdpmc returns */
	unsigned short time_shift;
	unsigned int time_mult;
	unsigned long long time_offset;
	unsigned long long time_zero;
	unsigned int size;
	unsigned int reserved_1;
	unsigned long long time_cycles;
	unsigned long long time_mask;
};

/* Bits of capabilities (a union of a u64 and bitfields in the kernel's
 * header; explicit masks here). */
#define BLPP_PERF_CAP_BIT0 (1ULL << 0)
#define BLPP_PERF_CAP_BIT0_IS_DEPRECATED (1ULL << 1) /* always set since 3.12 */
#define BLPP_PERF_CAP_USER_RDPMC (1ULL << 2)
#define BLPP_PERF_CAP_USER_TIME (1ULL << 3)
#define BLPP_PERF_CAP_USER_TIME_ZERO (1ULL << 4)
#define BLPP_PERF_CAP_USER_TIME_SHORT (1ULL << 5)

#define BLPP_PMU_ASSERT_OFF(T, f, off) \
	_Static_assert(__builtin_offsetof(struct T, f) == (off), #T "." #f " at " #off)
BLPP_PMU_ASSERT_OFF(blpp_perf_attr, config, 8);
BLPP_PMU_ASSERT_OFF(blpp_perf_attr, flags, 40);
BLPP_PMU_ASSERT_OFF(blpp_perf_attr, config1, 56);
BLPP_PMU_ASSERT_OFF(blpp_perf_attr, sample_regs_intr, 96);
BLPP_PMU_ASSERT_OFF(blpp_perf_attr, aux_watermark, 104);
_Static_assert(sizeof(struct blpp_perf_attr) == BLPP_PERF_ATTR_SIZE_VER5, "perf_event_attr VER5 size");
BLPP_PMU_ASSERT_OFF(blpp_perf_page, version, 0x00);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, compat_version, 0x04);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, lock, 0x08);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, index, 0x0c);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, offset, 0x10);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_enabled, 0x18);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_running, 0x20);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, capabilities, 0x28);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, pmc_width, 0x30);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_shift, 0x32);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_mult, 0x34);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_offset, 0x38);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_zero, 0x40);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, size, 0x48);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_cycles, 0x50);
BLPP_PMU_ASSERT_OFF(blpp_perf_page, time_mask, 0x58);
#undef BLPP_PMU_ASSERT_OFF

/* ---- system calls [Linux x86-64 syscall ABI] ---- */

enum {
	BLPP_PMU_SYS_read = 0,
	BLPP_PMU_SYS_close = 3,
	BLPP_PMU_SYS_mmap = 9,
	BLPP_PMU_SYS_munmap = 11,
	BLPP_PMU_SYS_perf_event_open = 298,
	BLPP_PMU_PROT_READ = 1,
	BLPP_PMU_MAP_SHARED = 1,
	BLPP_PMU_PAGE_SIZE = 4096,
	BLPP_PMU_EIO = 5,
};

static inline long blpp_pmu_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* ---- instructions ---- */

/* Compiler barrier: x86 keeps loads in order, so the seqlock needs only
 * the compiler's (the kernel's barrier() in the documented loop). */
#define BLPP_PMU_BARRIER() __asm__ volatile("" ::: "memory")

static inline unsigned long long blpp_pmu_rdpmc_insn(unsigned int counter)
{
	unsigned int lo, hi;
	__asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
	return (unsigned long long)hi << 32 | lo;
}

#ifndef BLPP_PMU_RDPMC
#define BLPP_PMU_RDPMC(counter) blpp_pmu_rdpmc_insn(counter)
#endif

static inline unsigned long long blpp_rdtsc(void)
{
	unsigned int lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (unsigned long long)hi << 32 | lo;
}

/* rep stosb, so that gcc has no loop to turn into a memset call. */
static inline void blpp_pmu_zero(void *p, unsigned long n)
{
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
}

/* ---- events ---- */

/* One open event: fd -1 and page 0 when closed. */
struct blpp_pmu_ev {
	int fd;
	const volatile struct blpp_perf_page *page;
};

/* Opens event (type, config) on the calling thread, counting user space
 * only, enabled, close-on-exec, and maps its first page read-only.
 * Returns 0, or -errno of the failing system call (ev is then closed:
 * -ENOENT or -EOPNOTSUPP without a PMU, -EACCES under perf_event_paranoid).
 * A thread opens its own events: a descriptor counts the thread that
 * opened it, and is inherited by neither threads nor forks (a child must
 * reopen; the mapping survives fork but counts the parent). */
static inline int blpp_pmu_open(unsigned type, unsigned long long config, struct blpp_pmu_ev *ev)
{
	struct blpp_perf_attr attr;
	long fd, p;

	ev->fd = -1;
	ev->page = 0;
	blpp_pmu_zero(&attr, sizeof attr);
	attr.type = type;
	attr.size = sizeof attr;
	attr.config = config;
	attr.flags = BLPP_PERF_ATTR_EXCLUDE_KERNEL | BLPP_PERF_ATTR_EXCLUDE_HV;
	fd = blpp_pmu_syscall6(BLPP_PMU_SYS_perf_event_open, (long)&attr, 0, -1, -1,
			       BLPP_PERF_FLAG_FD_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	p = blpp_pmu_syscall6(BLPP_PMU_SYS_mmap, 0, BLPP_PMU_PAGE_SIZE, BLPP_PMU_PROT_READ,
			      BLPP_PMU_MAP_SHARED, fd, 0);
	if ((unsigned long)p > -4096UL) {
		blpp_pmu_syscall6(BLPP_PMU_SYS_close, fd, 0, 0, 0, 0, 0);
		return (int)p;
	}
	ev->fd = (int)fd;
	ev->page = (const volatile struct blpp_perf_page *)p;
	return 0;
}

/* Whether the kernel lets user space rdpmc this event at all; index may
 * still be 0 at a given moment (multiplexing), which blpp_pmu_read
 * reports. */
static inline int blpp_pmu_has_rdpmc(const volatile struct blpp_perf_page *pg)
{
	return (pg->capabilities & BLPP_PERF_CAP_USER_RDPMC) != 0;
}

/* Reads the event's count with rdpmc: the lock-free read documented in
 * linux/perf_event.h. Returns 0 and the count in *val, or -1 when the page
 * offers no rdpmc now (cap_user_rdpmc clear or index 0: the caller falls
 * back). The counter's value is sign-extended from pmc_width bits
 * (garbage above them is dropped) and added to offset; if the kernel
 * updated the page meanwhile (lock changed) the read starts over. */
static inline int blpp_pmu_read(const volatile struct blpp_perf_page *pg, unsigned long long *val)
{
	unsigned int seq, idx, width;
	unsigned long long count, pmc;

	do {
		seq = pg->lock;
		BLPP_PMU_BARRIER();
		idx = pg->index;
		if (!(pg->capabilities & BLPP_PERF_CAP_USER_RDPMC) || idx == 0)
			return -1;
		count = (unsigned long long)pg->offset;
		width = pg->pmc_width;
		pmc = BLPP_PMU_RDPMC(idx - 1);
		if (width - 1u < 63u) { /* 1..63; shifting by 64 is undefined */
			pmc <<= 64 - width;
			pmc = (unsigned long long)((long long)pmc >> (64 - width));
		}
		count += pmc;
		BLPP_PMU_BARRIER();
	} while (pg->lock != seq);
	*val = count;
	return 0;
}

/* Reads the event's count with read(2) (read_format 0: one u64).
 * Returns 0, or -errno (-EIO on a short read). */
static inline int blpp_pmu_read_fd(int fd, unsigned long long *val)
{
	unsigned long long v = 0;
	long n = blpp_pmu_syscall6(BLPP_PMU_SYS_read, fd, (long)&v, sizeof v, 0, 0, 0);

	if (n < 0)
		return (int)n;
	if (n != (long)sizeof v)
		return -BLPP_PMU_EIO;
	*val = v;
	return 0;
}

/* Unmaps the page and closes the descriptor; harmless on a closed event. */
static inline void blpp_pmu_close(struct blpp_pmu_ev *ev)
{
	if (ev->page)
		blpp_pmu_syscall6(BLPP_PMU_SYS_munmap, (long)ev->page, BLPP_PMU_PAGE_SIZE, 0, 0, 0, 0);
	if (ev->fd >= 0)
		blpp_pmu_syscall6(BLPP_PMU_SYS_close, ev->fd, 0, 0, 0, 0, 0);
	ev->fd = -1;
	ev->page = 0;
}

#endif /* BLPP_PMU_H */
