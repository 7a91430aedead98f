/*
 * `mmc-bench data`: batch put and get through libmmc between client-only processes and target processes holding
 * the pools, next to the baselines measured in the same run on the same bytes: single-thread memcpy (hot and
 * cold), raw libfabric RMA on the same provider (bench_rma.c), and Redis SET/GET (bench_redis.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_data.h"
#include "bench_memcpy.h"
#include "bench_redis.h"
#include "bench_rma.h"

#define MAX_CASES (2 * BENCH_MAX_LIST * BENCH_MAX_LIST)

static const char usage[] =
    "usage: mmc-bench data [options]\n"
    "  --protocol tcp|shm[,..]  providers (default shm,tcp)\n"
    "  --sizes B[,B..]          block bytes per key, K/M suffixes (default 64K,1M)\n"
    "  --batch N[,N..]          keys per call (default 16)\n"
    "  --layers L               split each block into L equal buffers (the layer calls)\n"
    "  --shape dsr1             DeepSeek-R1 blocks: 61 x (128 KiB + 16 KiB) buffers per key, plus the same\n"
    "                           bytes as one buffer for comparison (ignores --sizes, --layers)\n"
    "  --threads T --procs P    client threads per client process, client processes (default 1, 1)\n"
    "  --targets N              processes lending a pool, 1..8 (default 1)\n"
    "  --sync on|off|both       LMDB fsync per group commit in mmc-metaserver (default on, the server's default)\n"
    "  --seconds S              per measurement (default 2); --quick: 0.2 s, checks that everything works\n"
    "  --no-raw --no-redis      skip those baselines\n"
    "  --no-host-path           same-host peers use the network provider (the stand-in for two hosts)\n"
    "  --checksum off|on|both   client stores with ock.mmc.client.verify_checksum off (default) or on; both:\n"
    "                           alternate rounds between the two and print the checked/unchecked ratio\n";

struct dcase {
	struct shape sh;
	int batch;
	double hot, cold;             /* memcpy GB/s */
	double raw_wdc, raw_w, raw_r; /* libfabric GB/s: write with/without FI_DELIVERY_COMPLETE, read */
	double raw_wlast;             /* write with FI_DELIVERY_COMPLETE on the last op of each call only */
	double raw_wflush;            /* plain writes, then one 8-byte read */
	double raw_ms[4];             /* p50 and p99 per call, ms: write with FI_DELIVERY_COMPLETE, read */
	double redis_set, redis_get;  /* GB/s, persistence off */
	double redis_set_fs;          /* GB/s, SET with appendfsync always (GET does not touch the disk) */
};

static int make_cases(const struct bench_opts *o, struct dcase *cs)
{
	int n = 0;

	for (int b = 0; b < o->nbatches; b++) {
		if (o->dsr1) {
			struct bench_opts flat = *o;

			flat.dsr1 = false;
			flat.layers = 1;
			bench_shape(o, 0, &cs[n].sh);
			bench_shape(&flat, cs[n].sh.block, &cs[n + 1].sh);
			cs[n].batch = cs[n + 1].batch = o->batches[b];
			n += 2;
			continue;
		}
		for (int s = 0; s < o->nsizes; s++) {
			bench_shape(o, o->sizes[s], &cs[n].sh);
			cs[n++].batch = o->batches[b];
		}
	}
	return n;
}

static uint64_t case_bytes(const struct dcase *c)
{
	return (uint64_t)c->batch * c->sh.block;
}

static double gbs(uint64_t bytes, struct samples *s)
{
	double med = samples_median(s);

	samples_free(s);
	return med > 0 ? (double)bytes / med / 1e9 : 0;
}

/* ---- baselines ---- */

static int memcpy_baselines(struct dcase *c, double seconds)
{
	struct kbufs b;

	if (kbufs_alloc(&b, &c->sh, c->batch)) {
		kbufs_free(&b);
		return -1;
	}
	c->hot = memcpy_hot(&c->sh, b.src, b.dst, c->batch, seconds);
	c->cold = memcpy_cold(&c->sh, c->batch, seconds);
	kbufs_free(&b);
	return 0;
}

/* ---- raw RMA, interleaved with the mmc calls of the same case ---- */

/* The raw ops in the order each round measures them; the columns of struct dcase they fill. */
static const enum rma_op raw_ops[] = {RMA_WRITE_DC, RMA_WRITE, RMA_READ, RMA_WRITE_DC_LAST, RMA_WRITE_FLUSH};
#define NRAW ((int)(sizeof(raw_ops) / sizeof(raw_ops[0])))

/* Seconds of one round of each: short enough that mmc and the baseline see the same load on a shared machine. */
#define ROUND_S 0.2

static int rounds_of(double seconds)
{
	int n = (int)(seconds / ROUND_S + 0.5);

	return n > 0 ? n : 1;
}

struct raw_round {
	struct rma_bench *r;
	const struct dcase *c;
	struct kbufs b;
	double seconds;
	struct samples s[NRAW];
};

static int raw_between(void *arg)
{
	struct raw_round *w = arg;
	int rc = 0;

	for (int k = 0; k < NRAW && rc == 0; k++)
		rc = rma_measure(w->r, raw_ops[k], &w->c->sh, raw_ops[k] == RMA_READ ? w->b.dst : w->b.src, w->c->batch,
		                 w->seconds, &w->s[k]);
	return rc;
}

static void raw_finish(struct raw_round *w, struct dcase *c)
{
	double *col[NRAW] = {&c->raw_wdc, &c->raw_w, &c->raw_r, &c->raw_wlast, &c->raw_wflush};

	c->raw_ms[0] = samples_median(&w->s[0]) * 1e3; /* RMA_WRITE_DC */
	c->raw_ms[1] = samples_p99(&w->s[0]) * 1e3;
	c->raw_ms[2] = samples_median(&w->s[2]) * 1e3; /* RMA_READ */
	c->raw_ms[3] = samples_p99(&w->s[2]) * 1e3;
	for (int k = 0; k < NRAW; k++)
		*col[k] = gbs(case_bytes(c), &w->s[k]);
	kbufs_free(&w->b);
}

/* Both Redis set-ups, so each mmc row is compared with the Redis that makes the same durability promise. */
static int redis_baselines(const struct bench_opts *o, struct dcase *cs, int n)
{
	struct redis_server r;
	double get;
	int rc = 0;

	for (int fs = 0; fs < 2 && rc == 0; fs++) {
		if (redis_start(&r, fs))
			return -1;
		for (int i = 0; i < n && rc == 0; i++)
			rc = redis_measure(&r, &cs[i].sh, cs[i].batch, o->threads * o->procs, o->seconds,
			                   fs ? &cs[i].redis_set_fs : &cs[i].redis_set, fs ? &get : &cs[i].redis_get);
		redis_stop(&r);
	}
	return rc;
}

/* ---- the table ---- */

static const char *checksum_str(int mode)
{
	return mode == BENCH_CK_ON ? "on" : mode == BENCH_CK_BOTH ? "off (and on, below)" : "off";
}

static void header(const char *protocol, int sync, const struct bench_opts *o, uint64_t pool)
{
	printf("\n# mmc data path: provider %s, LMDB sync %s, %d target(s) lending %llu MiB each, %d client "
	       "process(es) x %d "
	       "thread(s), verify_checksum %s, host path %s\n",
	       bench_proto_str(protocol), sync ? "on" : "off", o->targets, (unsigned long long)(pool >> 20), o->procs,
	       o->threads, checksum_str(o->checksum),
	       o->no_host_path ? "off (every byte by the provider, as between hosts)"
	                       : "on (same-host peers by memcpy)");
	printf("# GB/s = clients x bytes per call / median call; baselines measured in this run on the same bytes;\n");
	if (!o->no_raw)
		printf("# raw RMA interleaved with mmc (alternate rounds of %.2g s, %.3g s of each in all), into a "
		       "pre-faulted %llu MiB target region (the pool's size), each call after the last one's bytes;\n",
		       o->seconds / rounds_of(o->seconds), o->seconds, (unsigned long long)(pool >> 20));
	printf("# redis: SET %s, GET\n",
	       sync ? "with appendfsync always (same durability as LMDB sync on)" : "without persistence");
	printf("%-4s %-6s %8s %5s %7s %8s %8s | %7s %7s %7s %7s %7s | %6s %6s %6s %6s\n", "op", "shape", "block",
	       "batch", "GB/s", "p50ms", "p99ms", "mcpyH", "mcpyC", "rawDC", "raw", "redis", "/mcpyC", "/raw", "/rawnd",
	       "/redis");
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* A put under LMDB sync is compared with an fsynced SET; everything else with Redis without persistence. */
static void row(const char *op, const struct dcase *c, int clients, int sync, struct samples *s)
{
	bool put = op[0] == 'p';
	double med = samples_median(s), p99 = samples_p99(s);
	double g = med > 0 ? (double)clients * case_bytes(c) / med / 1e9 : 0;
	double raw = put ? c->raw_wdc : c->raw_r, rawnd = put ? c->raw_w : c->raw_r;
	double red = put ? (sync ? c->redis_set_fs : c->redis_set) : c->redis_get;
	char blk[32];

	printf("%-4s %-6s %8s %5d %7.2f %8.3f %8.3f | %7.2f %7.2f %7.2f %7.2f %7.2f | %6.2f %6.2f %6.2f %6.2f\n", op,
	       c->sh.name, bench_size_str(c->sh.block, blk, sizeof(blk)), c->batch, g, med * 1e3, p99 * 1e3, c->hot,
	       c->cold, put ? c->raw_wdc : 0, rawnd, red, ratio(g, c->cold), ratio(g, raw), ratio(g, rawnd),
	       ratio(g, red));
	fflush(stdout);
}

/* ---- the checksum's cost (--checksum both) ---- */

/* GB/s and p50 of one case: put off, put on, get off, get on. */
struct ck_cost {
	double gbs[4], p50[4];
};

static void ck_note(struct ck_cost *k, const struct dcase *c, int clients, struct dsamples *d)
{
	struct samples *s[4] = {&d->put, &d->put_ck, &d->get, &d->get_ck};

	for (int i = 0; i < 4; i++) {
		double med = samples_median(s[i]);

		k->p50[i] = med * 1e3;
		k->gbs[i] = med > 0 ? (double)clients * case_bytes(c) / med / 1e9 : 0;
	}
}

static void ck_table(const struct dcase *cs, const struct ck_cost *k, int n, const char *protocol, int sync)
{
	char blk[32];

	printf("\n# checksum cost: ock.mmc.client.verify_checksum off vs on, provider %s, LMDB sync %s; each client "
	       "thread alternates rounds between a store without and one with it (same buffers, same targets)\n",
	       bench_proto_str(protocol), sync ? "on" : "off");
	printf("%-4s %-6s %8s %5s %8s %8s %7s %9s %9s\n", "op", "shape", "block", "batch", "GB/s-off", "GB/s-on",
	       "on/off", "p50ms-off", "p50ms-on");
	for (int i = 0; i < n; i++) {
		for (int op = 0; op < 2; op++)
			printf("%-4s %-6s %8s %5d %8.2f %8.2f %7.2f %9.3f %9.3f\n", op ? "get" : "put", cs[i].sh.name,
			       bench_size_str(cs[i].sh.block, blk, sizeof(blk)), cs[i].batch, k[i].gbs[2 * op],
			       k[i].gbs[2 * op + 1], ratio(k[i].gbs[2 * op + 1], k[i].gbs[2 * op]), k[i].p50[2 * op],
			       k[i].p50[2 * op + 1]);
	}
	fflush(stdout);
}

/* ---- the run ---- */

/* What an engine lends at the least: a store's extent (at most 1/16 of the pool) then holds several batches, as it
 * does in a deployment, instead of one grant per batch. */
#define DATA_POOL_MIN (1ull << 30)

/* One case: the mmc calls and (r not NULL) the raw baselines in alternating rounds, o->seconds of each in all. */
static int measure_case(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                        struct rma_bench *r, struct dcase *dc, struct dsamples *d)
{
	struct raw_round w = {.r = r, .c = dc};
	struct data_gate g = {.rounds = rounds_of(o->seconds)};
	int rc;

	g.round_s = w.seconds = o->seconds / g.rounds;
	if (r) {
		if (kbufs_alloc(&w.b, &dc->sh, dc->batch)) {
			kbufs_free(&w.b);
			return -1;
		}
		g.between = raw_between;
		g.arg = &w;
	}
	rc = data_measure(c, protocol, o, &dc->sh, dc->batch, &g, d);
	if (r)
		raw_finish(&w, dc);
	return rc;
}

static int mmc_section(const struct bench_opts *o, const char *protocol, int sync, struct dcase *cs, int n)
{
	static struct ck_cost ck[MAX_CASES];
	struct bench_cluster c;
	struct rma_bench r;
	uint64_t most = 0, pool;
	int clients = o->threads * o->procs, rc = 0;

	for (int i = 0; i < n; i++)
		most = case_bytes(&cs[i]) > most ? case_bytes(&cs[i]) : most;
	pool = 2 * most * (uint64_t)clients + (64u << 20);
	pool = pool > DATA_POOL_MIN ? pool : DATA_POOL_MIN;
	if (!o->no_raw && rma_start(&r, o->self, protocol, pool))
		return -1;
	if (bench_cluster_start(&c, o->self, protocol, o->targets, pool, sync)) {
		if (!o->no_raw)
			rma_stop(&r);
		return -1;
	}
	header(protocol, sync, o, pool);
	for (int i = 0; i < n && rc == 0; i++) {
		struct dsamples d = {0};

		rc = measure_case(&c, protocol, o, o->no_raw ? NULL : &r, &cs[i], &d);
		if (rc == 0) {
			row("put", &cs[i], clients, sync, &d.put);
			row("get", &cs[i], clients, sync, &d.get);
			ck_note(&ck[i], &cs[i], clients, &d);
		}
		dsamples_free(&d);
	}
	if (rc == 0 && o->checksum == BENCH_CK_BOTH)
		ck_table(cs, ck, n, protocol, sync);
	bench_cluster_stop(&c);
	if (!o->no_raw) {
		printf("\n# provider %s orders: write after write %s, read after write %s\n", bench_proto_str(protocol),
		       rma_orders(&r, false) ? "yes" : "no", rma_orders(&r, true) ? "yes" : "no");
		rma_stop(&r);
	}
	return rc;
}

static void print_baselines(const struct dcase *cs, int n, const char *protocol)
{
	char blk[32];

	printf("\n# baselines, provider %s (GB/s): memcpy hot/cold single thread; raw libfabric RMA window %d "
	       "(interleaved with the mmc calls above), "
	       "write with FI_DELIVERY_COMPLETE (DC) and without; Redis pipelined SET/GET without persistence, and SET "
	       "with appendfsync always (SETfs)\n",
	       bench_proto_str(protocol), RMA_WINDOW);
	printf("# wrDC1: FI_DELIVERY_COMPLETE on the last write of each call only; wr+rd: plain writes then one 8-byte "
	       "read\n");
	printf("%-6s %8s %5s %7s %7s %8s %8s %8s %8s %8s %8s %8s %8s\n", "shape", "block", "batch", "mcpyH", "mcpyC",
	       "wrDC", "wrDC1", "wr+rd", "write", "read", "SET", "GET", "SETfs");
	for (int i = 0; i < n; i++)
		printf("%-6s %8s %5d %7.2f %7.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", cs[i].sh.name,
		       bench_size_str(cs[i].sh.block, blk, sizeof(blk)), cs[i].batch, cs[i].hot, cs[i].cold,
		       cs[i].raw_wdc, cs[i].raw_wlast, cs[i].raw_wflush, cs[i].raw_w, cs[i].raw_r, cs[i].redis_set,
		       cs[i].redis_get, cs[i].redis_set_fs);
	/* the transport's own tail, next to the mmc rows' p99 (both measured interleaved) */
	for (int i = 0; i < n && cs[i].raw_ms[0] > 0; i++)
		printf("# raw p50/p99 ms, %s %s x %d: wrDC %.3f/%.3f, read %.3f/%.3f\n", cs[i].sh.name,
		       bench_size_str(cs[i].sh.block, blk, sizeof(blk)), cs[i].batch, cs[i].raw_ms[0], cs[i].raw_ms[1],
		       cs[i].raw_ms[2], cs[i].raw_ms[3]);
}

int bench_data_main(int argc, char **argv, const char *self)
{
	static struct dcase cs[MAX_CASES];
	struct bench_opts o;
	int rc = bench_parse(argc, argv, &o, usage), n;

	if (rc)
		return rc > 0 ? 0 : 2;
	o.self = self;
	n = make_cases(&o, cs);
	for (int i = 0; i < n && rc == 0; i++)
		rc = memcpy_baselines(&cs[i], o.seconds / 2);
	memcpy_cold_free();
	if (!o.no_redis && redis_baselines(&o, cs, n))
		fprintf(stderr, "mmc-bench: no Redis baseline in this run\n");
	for (int p = 0; p < o.nprotocols && rc == 0; p++) {
		bench_use_protocol(&o, o.protocols[p]);
		for (int y = 0; y < o.nsync && rc == 0; y++) {
			rc = mmc_section(&o, o.protocols[p], o.sync[y], cs, n);
			if (rc == 0)
				print_baselines(cs, n, o.protocols[p]);
		}
	}
	if (rc)
		fprintf(stderr, "mmc-bench data: FAILED\n");
	return rc ? 1 : 0;
}
