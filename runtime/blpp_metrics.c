//go:build ignore

/*
 * blpp_metrics.c: metrics at path boundaries [DESIGN 8]. Opening a
 * thread's perf events (each thread counts its own) and reading every
 * metric of the calling thread: rdtsc, or rdpmc through the event's user
 * page (blpp_pmu.h). Where each metric comes from is decided once at
 * start-up (metrics_init, blpp_start.c).
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_thread.c.
 * Reads make no system call (rdpmc under the page's seqlock, rdtsc); only
 * opening an event does, once per thread and fork generation.
 */


#define rdtsc() ((u64)blpp_rdtsc())

/* metrics_open opens the calling thread's perf events (each thread counts
 * its own: perf events follow one task). */
static void metrics_open(struct blpp_thread *t)
{
	struct tpriv *p = TPRIV(t);
	for (u64 m = 0; m < BLPP_MAX_METRICS && p->epoch; m++)
		blpp_pmu_close(&p->ev[m]); /* a fork child's copies of its parent's */
	p->epoch = rt.epoch + 1;
	for (u64 m = 0; m < BLPP_MAX_METRICS; m++) {
		p->ev[m].fd = -1;
		p->ev[m].page = 0;
		if (m < rt.nmetrics && rt.msrc[m] == MSRC_PMU)
			blpp_pmu_open(rt.mtype[m], rt.mconfig[m], &p->ev[m]);
	}
}

/* metrics_read reads every metric of the calling thread into v. */
static void metrics_read(struct blpp_thread *t, u64 *v)
{
	struct tpriv *p = TPRIV(t);
	u64 tsc = 0;
	int have_tsc = 0;
	for (u64 m = 0; m < rt.nmetrics; m++) {
		switch (rt.msrc[m]) {
		case MSRC_TSC:
			if (!have_tsc) {
				tsc = rdtsc();
				have_tsc = 1;
			}
			v[m] = tsc;
			break;
		case MSRC_PMU:
			if (!p->ev[m].page || blpp_pmu_read(p->ev[m].page, (unsigned long long *)&v[m]) != 0)
				v[m] = 0;
			break;
		default:
			v[m] = 0;
		}
	}
}
