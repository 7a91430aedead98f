/*
 * `mmc-bench prefix`: mmc_batch_get_into_prefix(), the deadline-aware read of a cached prefix, next to
 * mmc_batch_get_into() of the same pages. Two target processes lend the pools: the first half of the pages lives on
 * one, the second half on the other. With nothing slow, the table says what the prefix form costs; with the second
 * lender stopped (SIGSTOP), it says how long each call keeps the engine waiting: the prefix read until its deadline,
 * the plain get until rma_timeout_ms.
 */
#include <errno.h>
#include <mmc/mmc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_data.h"

#define PREFIX_GENEROUS_MS 10000 /* nothing slow: a deadline every call meets, so it reads every page */
#define PREFIX_DEADLINE_MS 50    /* a lender stopped: what an engine would grant before recomputing */
#define PREFIX_RMA_MS      1000  /* rma_timeout_ms of that reader: the plain get's wait */
#define PREFIX_POOL_MIN    (256ull << 20)
#define PREFIX_STOP_MAX_S  8 /* the longest a lender stays stopped: under the meta server's heartbeat timeout */

static const char usage[] =
    "usage: mmc-bench prefix [options]\n"
    "  --protocol tcp|shm[,..]  providers (default shm,tcp)\n"
    "  --sizes B[,B..]          bytes per page, K/M suffixes (default 64K,1M)\n"
    "  --pages N[,N..]          pages per prefix, the first half on one lender, the rest on another (default 64)\n"
    "  --seconds S              per measurement (default 2); --quick: 0.2 s, and 2 calls of each form while a\n"
    "                           lender is stopped (else 3)\n"
    "  --no-host-path           same-host peers use the network provider (two hosts)\n"
    "The stalled-lender rows need the network provider: their reader turns the host path off (a reader on the host\n"
    "path copies from the stopped lender's mapped pool, which a stopped process does not stall). libfabric's shm\n"
    "provider reads without the lender's CPU too; tcp shows the stall.\n";

/* One prefix of pages in two halves. */
struct prefix_case {
	struct shape sh;
	int pages, first; /* pages [0, first) on lender 0, the rest on lender 1 */
	struct kbufs b;
	size_t *sizes; /* sh.block each */
};

static int put_half(mmc_store *s, struct prefix_case *p, int from, int to, uint32_t rank)
{
	mmc_replicate_config rc = {.replica_num = 1, .preferred_count = 1};
	int rv;

	rc.preferred_local_service_ids[0] = (int32_t)rank;
	rv = mmc_batch_put_from(s, (const char *const *)p->b.keys + from, (const void *const *)p->b.src + from,
	                        p->sizes + from, (size_t)(to - from), MMC_COPY_H2G, &rc, p->b.results + from);
	for (int i = from; i < to && rv == 0; i++)
		rv = p->b.results[i];
	if (rv)
		fprintf(stderr, "mmc-bench prefix: put to service %u: %s\n", rank, mmc_strerror(rv));
	return rv ? -1 : 0;
}

static int case_setup(mmc_store *s, const struct bench_cluster *c, struct prefix_case *p)
{
	char blk[32];

	p->sizes = calloc((size_t)p->pages, sizeof(*p->sizes));
	if (!p->sizes || kbufs_alloc(&p->b, &p->sh, p->pages))
		return -1;
	for (int i = 0; i < p->pages; i++) {
		p->sizes[i] = p->sh.block;
		snprintf(p->b.keys[i], 96, "prefix/%s/%d/%d", bench_size_str(p->sh.block, blk, sizeof(blk)), p->pages,
		         i);
	}
	p->first = p->pages - p->pages / 2;
	if (put_half(s, p, 0, p->first, c->ranks[0]))
		return -1;
	return p->first < p->pages ? put_half(s, p, p->first, p->pages, c->ranks[1]) : 0;
}

static void case_teardown(mmc_store *s, struct prefix_case *p)
{
	if (p->b.keys)
		mmc_batch_remove(s, (const char *const *)p->b.keys, (size_t)p->pages, p->b.results);
	kbufs_free(&p->b);
	free(p->sizes);
	p->sizes = NULL;
}

/* One call of either form: its seconds, or -1 when the call itself failed; *landed: leading pages that came. */
static double one_get(mmc_store *s, struct prefix_case *p, bool prefix, uint32_t timeout_ms, size_t *landed)
{
	size_t n = (size_t)p->pages, got = 0;
	double t0 = now_s(), t;
	int rc;

	if (prefix)
		rc = mmc_batch_get_into_prefix(s, (const char *const *)p->b.keys, p->b.dst, p->sizes, n, MMC_COPY_G2H,
		                               timeout_ms, &got);
	else
		rc = mmc_batch_get_into(s, (const char *const *)p->b.keys, p->b.dst, p->sizes, n, MMC_COPY_G2H,
		                        p->b.results);
	t = now_s() - t0;
	for (size_t i = 0; !prefix && rc == 0 && i < n && p->b.results[i] == 0; i++)
		got++;
	*landed = got;
	if (rc)
		fprintf(stderr, "mmc-bench prefix: %s: %s\n", prefix ? "prefix get" : "batch get", mmc_strerror(rc));
	return rc ? -1 : t;
}

/* ---- nothing slow: the prefix form's cost ---- */

static double gbs_of(size_t bytes, double med)
{
	return med > 0 ? (double)bytes / med / 1e9 : 0;
}

static void cost_header(const char *protocol, const struct bench_opts *o, uint64_t pool)
{
	printf("\n# prefix read, nothing slow: provider %s, 2 targets lending %llu MiB each (first half of the pages "
	       "on one, the rest on the other), host path %s\n",
	       bench_proto_str(protocol), (unsigned long long)(pool >> 20),
	       o->no_host_path ? "off (every byte by the provider, as between hosts)"
	                       : "on (same-host peers by memcpy)");
	printf("# get: mmc_batch_get_into; prefix: mmc_batch_get_into_prefix, timeout %d ms; calls alternate; "
	       "/get: prefix GB/s over get GB/s\n",
	       PREFIX_GENEROUS_MS);
	printf("%-6s %-6s %8s %5s %7s %8s %8s | %6s\n", "op", "shape", "block", "pages", "GB/s", "p50ms", "p99ms",
	       "/get");
}

static void cost_row(const char *op, const struct prefix_case *p, struct samples *s, double base)
{
	double med = samples_median(s), p99 = samples_p99(s), g = gbs_of((size_t)p->pages * p->sh.block, med);
	char blk[32];

	printf("%-6s %-6s %8s %5d %7.2f %8.3f %8.3f | %6.2f\n", op, p->sh.name,
	       bench_size_str(p->sh.block, blk, sizeof(blk)), p->pages, g, med * 1e3, p99 * 1e3,
	       base > 0 ? g / base : 1.0);
	fflush(stdout);
}

static int measure_cost(mmc_store *s, struct prefix_case *p, double seconds)
{
	struct samples plain = {0}, pfx = {0};
	double end = now_s() + seconds, base;
	size_t landed;
	int rc = 0;

	while (rc == 0 && (now_s() < end || plain.n < 3)) {
		double tp = one_get(s, p, false, 0, &landed);

		rc = tp < 0 || landed != (size_t)p->pages ? -1 : 0;
		if (rc == 0)
			samples_add(&plain, tp);
		tp = rc ? -1 : one_get(s, p, true, PREFIX_GENEROUS_MS, &landed);
		rc = tp < 0 || landed != (size_t)p->pages ? -1 : 0;
		if (rc == 0)
			samples_add(&pfx, tp);
	}
	if (rc)
		fprintf(stderr, "mmc-bench prefix: %zu of %d pages came with nothing slow\n", landed, p->pages);
	base = gbs_of((size_t)p->pages * p->sh.block, samples_median(&plain));
	cost_row("get", p, &plain, 0);
	cost_row("prefix", p, &pfx, base);
	samples_free(&plain);
	samples_free(&pfx);
	return rc;
}

/* ---- one lender stopped ---- */

struct stall {
	struct samples t;
	size_t landed_min, landed_max;
};

static void stall_note(struct stall *st, double t, size_t landed)
{
	if (!st->t.n || landed < st->landed_min)
		st->landed_min = landed;
	if (!st->t.n || landed > st->landed_max)
		st->landed_max = landed;
	samples_add(&st->t, t);
}

static void stall_row(const char *op, const char *when, const struct prefix_case *p, const char *deadline,
                      struct stall *st)
{
	double p50 = samples_median(&st->t), most = samples_p99(&st->t); /* the slowest of these few calls */
	char blk[32], landed[32];

	snprintf(landed, sizeof(landed), "%zu-%zu/%d", st->landed_min, st->landed_max, p->pages);
	printf("%-6s %-5s %-6s %8s %5d %8s %10s %9.1f %9.1f %5zu\n", op, when, p->sh.name,
	       bench_size_str(p->sh.block, blk, sizeof(blk)), p->pages, deadline, landed, p50 * 1e3, most * 1e3,
	       st->t.n);
	samples_free(&st->t);
	fflush(stdout);
}

static void stall_header(const char *protocol)
{
	printf("\n# prefix read, second lender stopped (SIGSTOP, SIGCONT after): provider %s, host path off for this "
	       "reader, its rma_timeout_ms %d\n",
	       bench_proto_str(protocol), PREFIX_RMA_MS);
	printf("# first: the first call after the stop (connections up); later: the calls after it (the reader has "
	       "given the peer up, it refuses RMA)\n");
	printf("# landed: leading pages that came, min-max (the first half lives on the running lender)\n");
	printf("%-6s %-5s %-6s %8s %5s %8s %10s %9s %9s %5s\n", "op", "call", "shape", "block", "pages", "deadline",
	       "landed", "p50ms", "maxms", "calls");
}

/* Calls that overran the deadline by more than a generous scheduling slice on a loaded machine. */
static int late_calls(const struct stall *st)
{
	int n = 0;

	for (size_t i = 0; i < st->t.n; i++)
		n += st->t.v[i] > (PREFIX_DEADLINE_MS + 100) / 1e3;
	return n;
}

static int stall_log_lines;

/* The stopped peer's failing RMAs log a line each: counted, not printed between the table's rows. */
static void stall_log(int level, const char *msg)
{
	(void)level;
	(void)msg;
	__atomic_add_fetch(&stall_log_lines, 1, __ATOMIC_RELAXED);
}

/* A plain get that lands every page: after a SIGCONT the reader may need a call or two to reconnect. */
static int all_land(mmc_store *s, struct prefix_case *p)
{
	size_t landed = 0;

	for (int i = 0; i < 5; i++)
		if (one_get(s, p, false, 0, &landed) >= 0 && landed == (size_t)p->pages)
			return 0;
	fprintf(stderr, "mmc-bench prefix: %zu of %d pages with every lender running\n", landed, p->pages);
	return -1;
}

/* Continues the stopped lender after PREFIX_STOP_MAX_S even while a call still waits for it (one that cannot cut
 * connections, a provider without sockets, waits until the peer runs again: without this, for ever). */
struct watchdog {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, fired;
	pid_t pid;
	pthread_t thread;
};

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PREFIX_STOP_MAX_S;
	pthread_mutex_lock(&w->mu);
	while (!w->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
	if (!w->done) {
		w->fired = true;
		kill(w->pid, SIGCONT);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int stop_lender(struct watchdog *w, pid_t pid)
{
	*w = (struct watchdog){.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .pid = pid};
	if (pthread_create(&w->thread, NULL, watchdog_main, w))
		return -1;
	kill(pid, SIGSTOP);
	return 0;
}

/* Returns whether the watchdog had to continue it. */
static bool continue_lender(struct watchdog *w)
{
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	kill(w->pid, SIGCONT);
	return w->fired;
}

/* calls of one form while target 1 is stopped; it is always continued before this returns. */
static int stopped_calls(mmc_store *s, const struct bench_cluster *c, struct prefix_case *p, bool prefix, int calls,
                         struct stall *first, struct stall *later)
{
	struct watchdog w;
	size_t landed;
	int rc = all_land(s, p); /* connections to both lenders are up before one stops */

	if (rc || (rc = stop_lender(&w, c->targets[1])))
		return rc;
	for (int i = 0; i < calls && rc == 0; i++) {
		double t = one_get(s, p, prefix, PREFIX_DEADLINE_MS, &landed);

		rc = t < 0 ? -1 : 0;
		if (rc == 0)
			stall_note(i ? later : first, t, landed);
	}
	if (continue_lender(&w))
		printf("# a %s call still waited for the stopped lender after %d s: continued it\n",
		       prefix ? "prefix" : "plain", PREFIX_STOP_MAX_S);
	return rc;
}

/* The prefix read, then the plain get, each in its own stop (well within the meta server's heartbeat timeout). */
static int measure_stall(mmc_store *s, const struct bench_cluster *c, struct prefix_case *p, int later_calls)
{
	struct stall pf = {0}, pl = {0}, gf = {0}, gl = {0};
	char deadline[16];
	int rc, late;

	stall_log_lines = 0;
	mmc_set_log_handler(stall_log);
	rc = stopped_calls(s, c, p, true, 1 + later_calls, &pf, &pl);
	if (rc == 0)
		rc = stopped_calls(s, c, p, false, 1 + later_calls, &gf, &gl);
	if (rc == 0)
		rc = all_land(s, p);
	mmc_set_log_handler(NULL);
	late = late_calls(&pf) + late_calls(&pl);
	snprintf(deadline, sizeof(deadline), "%dms", PREFIX_DEADLINE_MS);
	stall_row("prefix", "first", p, deadline, &pf);
	stall_row("prefix", "later", p, deadline, &pl);
	stall_row("get", "first", p, "-", &gf);
	stall_row("get", "later", p, "-", &gl);
	printf("# %d libmmc log lines while stopped (the stalled RMAs given up), not shown\n",
	       __atomic_load_n(&stall_log_lines, __ATOMIC_RELAXED));
	if (late)
		printf("# %d prefix call(s) returned over 100 ms past the %d ms deadline (mmc.h: timeout_ms plus a "
		       "scheduling slice)\n",
		       late, PREFIX_DEADLINE_MS);
	return rc;
}

/* ---- the run ---- */

/* The stalled rows need a reader that goes through the provider: with host_shm that is libfabric's shm provider,
 * which only --no-host-path sets up for the targets too. */
static bool stall_possible(const struct bench_opts *o, const char *protocol)
{
	return o->no_host_path || strcmp(protocol, "host_shm") != 0;
}

static mmc_store *stall_reader(const struct bench_cluster *c, const char *protocol)
{
	const char *was = getenv("MMC_HOST_PATH");
	char *saved = was ? strdup(was) : NULL;
	mmc_store *s;

	setenv("MMC_HOST_PATH", "off", 1);
	s = bench_client_rma_timeout(c, protocol, PREFIX_RMA_MS);
	if (saved)
		setenv("MMC_HOST_PATH", saved, 1);
	else
		unsetenv("MMC_HOST_PATH");
	free(saved);
	return s;
}

static uint64_t pool_for(const struct bench_opts *o)
{
	uint64_t most = 0;

	for (int s = 0; s < o->nsizes; s++)
		for (int b = 0; b < o->nbatches; b++)
			if ((uint64_t)o->sizes[s] * (uint64_t)o->batches[b] > most)
				most = (uint64_t)o->sizes[s] * (uint64_t)o->batches[b];
	most += 64u << 20;
	return most > PREFIX_POOL_MIN ? most : PREFIX_POOL_MIN;
}

/* Every pages x size case, put before and removed after: with later_calls, the calls while a lender is stopped; else
 * the cost. */
static int for_cases(const struct bench_opts *o, const struct bench_cluster *c, mmc_store *owner, mmc_store *reader,
                     int later_calls)
{
	int rc = 0;

	for (int b = 0; b < o->nbatches && rc == 0; b++) {
		for (int z = 0; z < o->nsizes && rc == 0; z++) {
			struct prefix_case p = {.pages = o->batches[b]};

			bench_shape(o, o->sizes[z], &p.sh);
			rc = case_setup(owner, c, &p);
			if (rc == 0 && later_calls)
				rc = p.first < p.pages ? measure_stall(reader, c, &p, later_calls) : 0;
			else if (rc == 0)
				rc = measure_cost(reader, &p, o->seconds);
			case_teardown(owner, &p);
		}
	}
	return rc;
}

static int prefix_section(const struct bench_opts *o, const char *protocol)
{
	uint64_t pool = pool_for(o);
	struct bench_cluster c;
	mmc_store *s = NULL, *slow = NULL;
	int rc;

	if (bench_cluster_start(&c, o->self, protocol, 2, pool, 1))
		return -1;
	s = bench_client(&c, protocol, 0, 0);
	rc = s ? 0 : -1;
	if (rc == 0)
		cost_header(protocol, o, pool);
	if (rc == 0)
		rc = for_cases(o, &c, s, s, 0);
	if (rc == 0 && stall_possible(o, protocol)) {
		slow = stall_reader(&c, protocol);
		rc = slow ? 0 : -1;
		if (rc == 0)
			stall_header(protocol);
		if (rc == 0)
			rc = for_cases(o, &c, s, slow, o->quick ? 1 : 2);
	} else if (rc == 0) {
		printf("\n# stalled lender: not measured over %s with the host path on (see --help)\n",
		       bench_proto_str(protocol));
	}
	mmc_destroy(slow);
	mmc_destroy(s);
	bench_cluster_stop(&c);
	return rc;
}

/* --pages is --batch under the name this benchmark gives it. */
static char **pages_as_batch(int argc, char **argv)
{
	char **v = calloc((size_t)argc + 1, sizeof(*v));

	for (int i = 0; v && i < argc; i++)
		v[i] = strcmp(argv[i], "--pages") == 0 ? "--batch" : argv[i];
	return v;
}

int bench_prefix_main(int argc, char **argv, const char *self)
{
	char **args = pages_as_batch(argc, argv);
	struct bench_opts o;
	int rc = args ? bench_parse(argc, args, &o, usage) : -1;

	free(args);
	if (rc)
		return rc > 0 ? 0 : 2;
	o.self = self;
	if (!o.batch_given)
		o.batches[0] = 64;
	for (int p = 0; p < o.nprotocols && rc == 0; p++) {
		bench_use_protocol(&o, o.protocols[p]);
		rc = prefix_section(&o, o.protocols[p]);
	}
	if (rc)
		fprintf(stderr, "mmc-bench prefix: FAILED\n");
	return rc ? 1 : 0;
}
