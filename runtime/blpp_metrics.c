//go:build ignore

/*
 * blpp_metrics.c: metrics at path boundaries [DESIGN 8]. Opening a
 * thread's perf events (each thread counts its own) and reading every
 * metric of the calling thread: rdtsc, or rdpmc through the event's user
 * page (blpp_pmu.h); and deciding once, at start-up (metrics_init, from
 * setup), where each metric comes from: rdpmc, the rdtsc fallback for
 * cycles, or nothing, said once on stderr.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_thread.c.
 * Reads make no system call (rdpmc under the page's seqlock, rdtsc); only
 * opening an event does, once per thread and fork generation, and once
 * per metric at start-up to probe it.
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

/*
 * metrics_init reads the metric table and decides, by opening each perf
 * event once on the main thread, where every metric comes from
 * [DESIGN 8]: rdpmc when the kernel allows user reads of it, else for
 * "cycles" (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES) the time-stamp
 * counter, recorded as "tsc" of kind fallback, else nothing (kind
 * unavailable, values 0). What is missing is said once on stderr.
 */
static void metrics_init(const volatile struct blpp_config *c, u64 bias)
{
	const struct blpp_metric *mt = (const struct blpp_metric *)(c->metrics_vaddr + bias);
	char missing[256];
	u64 nmiss = 0;
	long err = 0;
	int fell_back = 0;
	rt.nmetrics = c->metrics_vaddr && c->nmetrics <= BLPP_MAX_METRICS ? c->nmetrics : 0;
	/* With metrics, each path also keeps the distribution of its first
	 * metric's per-execution values (decision 93), unless the image says
	 * not to (--no-latency). */
	rt.latency = rt.nmetrics && !(rt.flags & BLPP_CONFIG_FLAG_NO_LATENCY);
	rt.stride = 1 + rt.nmetrics + (rt.latency ? 1 : 0);
	rt.lat_entries = c->latency_entries && c->latency_entries <= (1ul << 30) ? c->latency_entries : BLPP_LATENCY_ENTRIES;
	for (u64 m = 0; m < rt.nmetrics; m++) {
		mem_copy(rt.mname[m], (const void *)mt[m].name, sizeof(mt[m].name));
		rt.mname[m][sizeof(rt.mname[m]) - 1] = 0;
		rt.mtype[m] = (u32)mt[m].type;
		rt.mconfig[m] = mt[m].config;
	}
	for (u64 m = 0; m < rt.nmetrics; m++) {
		struct blpp_pmu_ev ev;
		int r;
		if (mt[m].type == BLPP_METRIC_TYPE_TSC) {
			rt.msrc[m] = MSRC_TSC;
			rt.mkind[m] = BLPP_METRIC_REAL;
			continue;
		}
		r = blpp_pmu_open(rt.mtype[m], rt.mconfig[m], &ev);
		if (r == 0 && blpp_pmu_has_rdpmc(ev.page)) {
			rt.msrc[m] = MSRC_PMU;
			rt.mkind[m] = BLPP_METRIC_REAL;
			blpp_pmu_close(&ev);
			continue;
		}
		if (r == 0)
			blpp_pmu_close(&ev);
		else if (!err)
			err = r;
		if (rt.mtype[m] == 0 && rt.mconfig[m] == 0) { /* cycles */
			int named = 0;
			for (u64 k = 0; k < rt.nmetrics; k++)
				named |= str_eq(rt.mname[k], "tsc");
			rt.msrc[m] = MSRC_TSC;
			rt.mkind[m] = BLPP_METRIC_FALLBACK;
			if (!named)
				mem_copy(rt.mname[m], "tsc", 4);
			fell_back = 1;
			continue;
		}
		rt.msrc[m] = MSRC_NONE;
		rt.mkind[m] = BLPP_METRIC_UNAVAILABLE;
		for (const char *p = nmiss ? ", " : ""; *p && nmiss < sizeof(missing) - 1; p++)
			missing[nmiss++] = *p;
		for (const char *p = rt.mname[m]; *p && nmiss < sizeof(missing) - 1; p++)
			missing[nmiss++] = *p;
	}
	missing[nmiss] = 0;
	if (fell_back || nmiss) {
		if (err)
			say("no hardware performance counters (perf_event_open)", "", "", err);
		else
			say("hardware counters cannot be read in user space (rdpmc)", "", "", 0);
		if (fell_back)
			say("  cycles are measured with rdtsc: the profile calls them tsc (fallback)", "", "", 0);
		if (nmiss)
			say("  not measured (recorded as unavailable, values 0): ", missing, "", 0);
	}
}

/* metrics_same says whether a module that joins the process's runtime
 * (decision 81) reads the metrics the first module's configuration named
 * (metrics_init), in the same order: its instrumentation indexes them. */
static int metrics_same(const volatile struct blpp_config *c, u64 bias)
{
	const struct blpp_metric *mt = (const struct blpp_metric *)(c->metrics_vaddr + bias);
	u64 n = c->metrics_vaddr && c->nmetrics <= BLPP_MAX_METRICS ? c->nmetrics : 0;
	if (n != rt.nmetrics)
		return 0;
	for (u64 m = 0; m < n; m++)
		if (mt[m].type != rt.mtype[m] || mt[m].config != rt.mconfig[m])
			return 0;
	return 1;
}
