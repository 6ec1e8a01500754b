/*
 * Test program for blpp_pmu.h, built and checked by runtime/pmu_test.go.
 *
 * With -DPMU_FREESTANDING it is only compiled, with the runtime's own
 * flags, to prove the header builds freestanding, without relocations or
 * calls to anything it does not define.
 *
 * Otherwise it is a hosted program that prints one line per check,
 * "name key=value ...", for the Go test to assert: first the rdpmc
 * protocol on fake pages (BLPP_PMU_RDPMC is replaced), then real events
 * on this kernel.
 */

#ifdef PMU_FREESTANDING

#include "blpp_pmu.h"

/* Uses every function so that each one is compiled. */
long pmu_use(unsigned type, unsigned long long config)
{
	struct blpp_pmu_ev ev;
	unsigned long long v = 0, w = 0;
	long r = blpp_pmu_open(type, config, &ev);

	if (r == 0) {
		if (blpp_pmu_has_rdpmc(ev.page))
			r += blpp_pmu_read(ev.page, &v);
		r += blpp_pmu_read_fd(ev.fd, &w);
		blpp_pmu_close(&ev);
	}
	return r + (long)(v + w + blpp_rdtsc());
}

#else

#include <stdio.h>

static unsigned long long test_rdpmc(unsigned counter);
#define BLPP_PMU_RDPMC(counter) test_rdpmc(counter)
#include "blpp_pmu.h"

/* The fake: while fake_page is set, rdpmc returns fake_value, counts its
 * calls and remembers the counter asked for; when bump is set, the first
 * call plays the kernel updating the page in the middle of the read. */
static struct blpp_perf_page *fake_page;
static unsigned long long fake_value;
static int fake_calls, fake_bump;
static unsigned fake_counter;

static unsigned long long test_rdpmc(unsigned counter)
{
	if (!fake_page)
		return blpp_pmu_rdpmc_insn(counter);
	fake_counter = counter;
	if (fake_calls++ == 0 && fake_bump) {
		fake_page->lock += 2;
		fake_page->offset = 2000;
	}
	return fake_value;
}

static void fake(const char *name, unsigned index, unsigned long long caps, unsigned width,
		 long long offset, unsigned long long pmc, int bump)
{
	static struct blpp_perf_page pg;
	unsigned long long v = 0;
	int rc;

	pg = (struct blpp_perf_page){0};
	pg.lock = 4;
	pg.index = index;
	pg.capabilities = caps;
	pg.pmc_width = (unsigned short)width;
	pg.offset = offset;
	fake_page = &pg;
	fake_value = pmc;
	fake_calls = 0;
	fake_bump = bump;
	fake_counter = ~0u;
	rc = blpp_pmu_read(&pg, &v);
	printf("%s rc=%d val=%llu reads=%d counter=%d\n", name, rc, v, fake_calls, (int)fake_counter);
	fake_page = 0;
}

static volatile unsigned long long sink;

static void busy(void)
{
	for (unsigned long long i = 0; i < 5000000; i++)
		sink += i;
}

static void real_event(const char *name, unsigned type, unsigned long long config)
{
	struct blpp_pmu_ev ev;
	unsigned long long v0 = 0, v1 = 0, r0 = 0, r1 = 0;
	int rc = blpp_pmu_open(type, config, &ev), fd0, fd1, rd0, rd1;

	if (rc != 0) {
		printf("%s open=%d fd=%d\n", name, rc, ev.fd);
		return;
	}
	/* rdpmc first, straight after read(2), so the two are close. */
	fd0 = blpp_pmu_read_fd(ev.fd, &v0);
	rd0 = blpp_pmu_read(ev.page, &r0);
	busy();
	fd1 = blpp_pmu_read_fd(ev.fd, &v1);
	rd1 = blpp_pmu_read(ev.page, &r1);
	printf("%s open=0 version=%u caps=%llu index=%u width=%u fd0=%d v0=%llu fd1=%d v1=%llu "
	       "rdpmc=%d rd0=%d r0=%llu rd1=%d r1=%llu",
	       name, ev.page->version, ev.page->capabilities, ev.page->index, ev.page->pmc_width, fd0,
	       v0, fd1, v1, blpp_pmu_has_rdpmc(ev.page), rd0, r0, rd1, r1);
	{
		int fd = ev.fd;

		blpp_pmu_close(&ev);
		printf(" closed_fd=%d closed_page=%d after_close=%d\n", ev.fd, ev.page != 0,
		       blpp_pmu_read_fd(fd, &v0));
	}
}

int main(void)
{
	const unsigned long long caps = BLPP_PERF_CAP_BIT0_IS_DEPRECATED | BLPP_PERF_CAP_USER_RDPMC;
	unsigned long long t0, t1;

	setvbuf(stdout, 0, _IONBF, 0);
	/* The kernel changes the page during the first read: the second
	 * read sees offset 2000. */
	fake("fake-retry", 3, caps, 48, 1000, 5, 1);
	/* 48-bit counter at -16, offset 32. */
	fake("fake-width", 1, caps, 48, 32, 0xfffffffffff0ULL, 0);
	/* Bits above the width are dropped, the offset is added. */
	fake("fake-offset", 1, caps, 40, 1LL << 40, 0xdead000000000007ULL, 0);
	/* A full-width counter: -1 + 1. */
	fake("fake-width64", 1, caps, 64, 1, ~0ULL, 0);
	fake("fake-index0", 0, caps, 48, 32, 7, 0);
	fake("fake-nocap", 2, BLPP_PERF_CAP_BIT0_IS_DEPRECATED, 48, 32, 7, 0);

	real_event("task-clock", BLPP_PERF_TYPE_SOFTWARE, BLPP_PERF_COUNT_SW_TASK_CLOCK);
	real_event("cycles", BLPP_PERF_TYPE_HARDWARE, BLPP_PERF_COUNT_HW_CPU_CYCLES);
	real_event("instructions", BLPP_PERF_TYPE_HARDWARE, BLPP_PERF_COUNT_HW_INSTRUCTIONS);

	t0 = blpp_rdtsc();
	busy();
	t1 = blpp_rdtsc();
	printf("tsc t0=%llu t1=%llu\n", t0, t1);
	return 0;
}

#endif
