/*
 * `mmc-bench meta`: the meta server's key operations in keys/s as the index grows: mmc_batch_is_exist and
 * mmc_batch_get_key_info of random existing keys, tiny gets of them (lease + 64-byte read + release), tiny puts
 * (alloc + 64-byte RMA write + commit), and the GVA
 * alloc + commit (batch_malloc + batch_write_finish, no data at all) that fills the index. Next to the client's
 * rate, the server loop's own CPU time per key: on a shared machine the rate moves with the load, the CPU time
 * much less, and it is what grows if the index does not scale. Keys look like an engine's: 64 hex digits of a
 * prefix hash, then a suffix. With --unbacked the pool is a range no process maps (bench_unbacked.h), so 10^7 and
 * more objects fit a small machine; every measured put is then metadata only (malloc + write_finish).
 */
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_meta.h"
#include "bench_unbacked.h"
#include "http_client.h"

#define SLOT                                                                                                           \
	4096 /* the allocator granule: one tiny object costs this much pool; pools are sized 2x so eviction never runs \
	      */

static const char usage[] =
    "usage: mmc-bench meta [options]\n"
    "  --keys N[,N..]     keys in the index, grown in this order (default 1000; e.g. 1K,10K,100K,1M)\n"
    "  --batch N          keys per call (default 1024)\n"
    "  --protocol tcp|shm provider of the target and client (default shm; metadata always goes over TCP)\n"
    "  --sync on|off|both LMDB fsync per group commit (default on)\n"
    "  --seconds S        per measurement (default 2); --quick\n"
    "  --procs P --threads T  then P client processes x T threads against the one leader (exist, put_meta):\n"
    "                     aggregate keys/s and the leader's CPU, at the largest index\n"
    "  --tenant           every store connects as a tenant (a tenants file on the server): the cost of tenancy\n"
    "  --unbacked         lend an unbacked range: the server tracks offsets, no byte is written, no pool memory\n"
    "                     is used (10^7+ keys on a small machine); puts are then metadata only (put_meta)\n"
    "  --no-redis         no Redis baseline\n"
    "srv_us/key: CPU time of the server's loop thread per key (tiny_get includes the releases, tiny_put the\n"
    "untimed removes);\n"
    "all_us/key: of all its threads (the loop, the metadata store's writer, KVCM's), from /proc.\n"
    "poll_us/key: the part of srv_us/key the loop spent polling for a next request that did not come\n"
    "(ock.mmc.meta.loop_spin_us; mmc_loop_spin_seconds_total): CPU spent waiting, which a busy leader does not\n"
    "spend; srv_us/key less poll_us/key is the work.\n"
    "redis:* rows: a private redis-server (persistence off) holding the same keys, one pipeline per call of the\n"
    "same batch: EXISTS, GET of a 64-byte value, SET of fresh keys (their DELs untimed); srv_us/key is Redis's\n"
    "CPU per key, and a line gives the leader's over Redis's.\n"
    "At the end the server is restarted on its data dir: the reload time and RSS are printed, the server's\n"
    "own account of its load (its op=load log line: each pass's ms), and with --unbacked the time the lender\n"
    "and 100 empty local services take to rejoin it.\n";

/* Keys 0 .. n-1 (key_name) are in the index. */
struct index {
	size_t n;
};

static int index_fill(mmc_store *s, struct index *ix, size_t want, double *keys_per_s)
{
	static char names[FILL_CHUNK][KEY_CHARS];
	const char *k[FILL_CHUNK];
	size_t sizes[FILL_CHUNK];
	mmc_gva gvas[FILL_CHUNK];
	int32_t ok[FILL_CHUNK] = {0};
	int res[FILL_CHUNK];
	size_t from = ix->n;
	double t0 = now_s();

	while (ix->n < want) {
		size_t m = want - ix->n < FILL_CHUNK ? want - ix->n : FILL_CHUNK;

		for (size_t i = 0; i < m; i++) {
			k[i] = key_name(names[i], ix->n + i);
			sizes[i] = TINY;
		}
		if (mmc_batch_malloc(s, k, sizes, m, MMC_MEDIA_DRAM, 0, gvas) ||
		    mmc_batch_write_finish(s, k, ok, m, res))
			return -1;
		for (size_t i = 0; i < m; i++)
			if (!gvas[i] || res[i])
				return -1;
		ix->n += m;
	}
	*keys_per_s = ix->n > from ? (double)(ix->n - from) / (now_s() - t0) : 0;
	return 0;
}

static void pick(const struct index *ix, char **names, const char **out, int batch, unsigned *seed)
{
	for (int i = 0; i < batch; i++)
		out[i] = key_name(names[i], (size_t)rand_r(seed) % ix->n);
}

/* us: the loop's (or Redis's) CPU per key, all threads', the loop's polls' (< 0: not measured, as for Redis) */
static void row(const char *op, size_t nkeys, int batch, struct samples *s, const double us[3])
{
	double med = samples_median(s), p99 = samples_p99(s);

	printf("%-14s %9zu %6d %12.0f %9.3f %9.3f %10.3f %10.3f ", op, nkeys, batch, med > 0 ? batch / med : 0,
	       med * 1e3, p99 * 1e3, us[0], us[1]);
	if (us[2] < 0)
		printf("%11s\n", "-");
	else
		printf("%11.3f\n", us[2]);
	samples_free(s);
	fflush(stdout);
}

enum meta_op { OP_EXIST, OP_INFO, OP_TINY_GET, OP_TINY_PUT, OP_PUT_META };

static int one_call(mmc_store *s, enum meta_op op, const char **keys, int batch, int *res, mmc_key_info *info,
                    const void **bufs, void **gets, const size_t *sizes)
{
	switch (op) {
	case OP_TINY_GET:
		if (mmc_batch_get_into(s, keys, gets, sizes, (size_t)batch, MMC_COPY_G2H, res))
			return -1;
		for (int i = 0; i < batch; i++)
			if (res[i])
				return -1;
		return 0;
	case OP_EXIST:
		if (mmc_batch_is_exist(s, keys, (size_t)batch, res))
			return -1;
		for (int i = 0; i < batch; i++)
			if (res[i] != 1)
				return -1;
		return 0;
	case OP_INFO:
		if (mmc_batch_get_key_info(s, keys, (size_t)batch, 0, info))
			return -1;
		for (int i = 0; i < batch; i++)
			if (info[i].size != TINY)
				return -1;
		return 0;
	case OP_PUT_META:
		return put_meta(s, keys, batch, res);
	default:
		if (mmc_batch_put_from(s, keys, bufs, sizes, (size_t)batch, MMC_COPY_H2G, NULL, res))
			return -1;
		for (int i = 0; i < batch; i++)
			if (res[i])
				return -1;
		return 0;
	}
}

/* Tiny puts use fresh keys, removed after each (untimed) call so the index keeps its size. */
static void tiny_keys(char **names, const char **keys, int batch, int seq)
{
	for (int i = 0; i < batch; i++) {
		snprintf(names[i], KEY_CHARS, "t/%d/%d", seq, i);
		keys[i] = names[i];
	}
}

static int measure(mmc_store *s, enum meta_op op, const struct index *ix, int batch, double seconds,
                   struct samples *out)
{
	const char **keys = calloc((size_t)batch, sizeof(*keys));
	const void **bufs = calloc((size_t)batch, sizeof(*bufs));
	size_t *sizes = calloc((size_t)batch, sizeof(*sizes));
	char **names = calloc((size_t)batch, sizeof(*names)), tiny[TINY] = "tiny";
	void **gets = calloc((size_t)batch, sizeof(*gets));
	char *got = calloc((size_t)batch, TINY);
	int *res = calloc((size_t)batch, sizeof(*res)), rc = keys && bufs && sizes && names && res ? 0 : -1, seq = 0;
	mmc_key_info *info = calloc((size_t)batch, sizeof(*info));
	unsigned seed = 12345;
	double end = now_s() + seconds;

	for (int i = 0; rc == 0 && i < batch; i++) {
		bufs[i] = tiny;
		sizes[i] = TINY;
		rc = (names[i] = malloc(KEY_CHARS)) ? 0 : -1;
	}
	for (int i = 0; got && gets && i < batch; i++)
		gets[i] = got + (size_t)i * TINY;
	rc = rc || !info || !gets || !got ? -1 : 0;
	while (rc == 0 && (now_s() < end || out->n < 3)) {
		double t0;

		if (op >= OP_TINY_PUT)
			tiny_keys(names, keys, batch, seq++);
		else
			pick(ix, names, keys, batch, &seed);
		t0 = now_s();
		rc = one_call(s, op, keys, batch, res, info, bufs, gets, sizes);
		samples_add(out, now_s() - t0);
		if (op >= OP_TINY_PUT)
			mmc_batch_remove(s, keys, (size_t)batch, res);
	}
	if (rc)
		fprintf(stderr, "mmc-bench meta: an operation failed\n");
	for (int i = 0; names && i < batch; i++)
		free(names[i]);
	free(names);
	free(gets);
	free(got);
	free(keys);
	free(bufs);
	free(sizes);
	free(res);
	free(info);
	return rc;
}

/* The server's anonymous memory at the previous size of the sweep. */
struct anon_mark {
	uint64_t bytes;
	size_t n;
};

/*
 * The server's memory with n keys: all of it, then its anonymous part (the index, the allocators, the heap) per key
 * above what the empty server had (at->bytes at first), and per key added since the previous size (what each
 * object costs, without the fixed part: LMDB keeps the dirty pages of its largest transaction, ~15 MiB after
 * batches of 4096 puts), then the file-backed part: mostly LMDB's map of data.mdb, page cache the kernel can take
 * back, which grows with the records the server has read or written since it started.
 */
static void rss_line(pid_t server, size_t n, uint64_t anon0, struct anon_mark *at)
{
	uint64_t rss = proc_rss_bytes(server), anon = proc_status_bytes(server, "RssAnon"),
	         file = proc_status_bytes(server, "RssFile");

	printf("# server RSS with %zu keys: %.1f MiB (%.0f B/key); anonymous %.1f MiB, %.0f B/key over the empty "
	       "server's %.1f MiB, %.0f B/key since %zu keys; file-backed (LMDB's map) %.1f MiB\n",
	       n, (double)rss / (1 << 20), (double)rss / (double)n, (double)anon / (1 << 20),
	       anon > anon0 ? (double)(anon - anon0) / (double)n : 0.0, (double)anon0 / (1 << 20),
	       anon > at->bytes && n > at->n ? (double)(anon - at->bytes) / (double)(n - at->n) : 0.0, at->n,
	       (double)file / (1 << 20));
	*at = (struct anon_mark){anon, n};
}

/* The Redis baseline at the index's size: its rows, then the leader's loop CPU per key over Redis's. */
static int redis_rows(struct meta_redis *rd, size_t n, int batch, double seconds, const double *srv, int put_op)
{
	static const char *const names[] = {"redis:EXISTS", "redis:GET", "redis:SET"};
	pid_t pid = meta_redis_pid(rd);
	double us[3] = {0};

	if (meta_redis_fill(rd, n)) {
		fprintf(stderr, "mmc-bench meta: filling Redis failed\n");
		return -1;
	}
	for (int op = META_REDIS_EXISTS; op <= META_REDIS_SET; op++) {
		struct samples sm = {0};
		uint64_t t0 = cpu_ns(pid), a0 = cpu_all_ns(pid);

		if (meta_redis_measure(rd, (enum meta_redis_op)op, batch, seconds, &sm)) {
			samples_free(&sm);
			return -1;
		}
		us[op] = (double)(cpu_ns(pid) - t0) / 1e3 / ((double)sm.n * batch);
		row(names[op], n, batch, &sm,
		    (const double[3]){us[op], (double)(cpu_all_ns(pid) - a0) / 1e3 / ((double)sm.n * batch), -1});
	}
	printf("# the leader's loop CPU per key over Redis's, same keys and batch: batch_is_exist / EXISTS %.2f, "
	       "get_key_info / GET %.2f, %s / SET %.2f (Redis keeps no placement, lease, LRU order or durable "
	       "record)\n",
	       srv[OP_EXIST] / us[0], srv[OP_INFO] / us[1], put_op == OP_PUT_META ? "put_meta" : "tiny_put",
	       srv[put_op] / us[2]);
	return 0;
}

/* The loop's CPU so far in polls for a request that did not come, ns (0 if /metrics cannot say). */
static uint64_t polled_ns(const struct metaserver *meta)
{
	double s = 0;

	return hc_metric(meta->admin_port, "mmc_loop_spin_seconds_total", &s) == 200 ? (uint64_t)(s * 1e9) : 0;
}

/* The server's CPU counters at the start of a measurement: the loop's, all threads', the loop's polls'. */
struct cpu_mark {
	uint64_t loop, all, polled;
};

/* The /metrics request is served by the server too: it is made before the CPU is read here, and after it is read
 * in cpu_per_key, so that its own cost falls outside the measurement. */
static struct cpu_mark cpu_mark(const struct metaserver *meta)
{
	uint64_t polled = polled_ns(meta);

	return (struct cpu_mark){cpu_ns(meta->pid), cpu_all_ns(meta->pid), polled};
}

/* µs per key since at, for row(): the loop's, all threads', the loop's polls' */
static void cpu_per_key(const struct metaserver *meta, const struct cpu_mark *at, double keys, double us[3])
{
	us[0] = (double)(cpu_ns(meta->pid) - at->loop) / 1e3 / keys;
	us[1] = (double)(cpu_all_ns(meta->pid) - at->all) / 1e3 / keys;
	us[2] = (double)(polled_ns(meta) - at->polled) / 1e3 / keys;
}

static int sweep(mmc_store *s, const struct bench_opts *o, int batch, const struct metaserver *meta,
                 struct meta_redis *rd)
{
	pid_t server = meta->pid;
	uint64_t anon0 = proc_status_bytes(server, "RssAnon");
	struct anon_mark at = {anon0, 0};
	static const char *const names[] = {"batch_is_exist", "get_key_info", "tiny_get", "tiny_put", "put_meta"};
	int last = o->unbacked ? OP_PUT_META : OP_TINY_PUT;
	struct index ix = {0};
	int rc = 0;

	for (int k = 0; k < o->nindex && rc == 0; k++) {
		double fill_rate, srv[OP_PUT_META + 1] = {0};
		size_t from = ix.n;
		struct cpu_mark cpu = cpu_mark(meta);
		uint64_t w0 = proc_write_bytes(server);
		double us[3];

		if ((rc = index_fill(s, &ix, o->index[k], &fill_rate))) {
			fprintf(stderr, "mmc-bench meta: filling the index failed\n");
			break;
		}
		if (fill_rate > 0) {
			cpu_per_key(meta, &cpu, (double)(ix.n - from), us);
			printf("%-14s %9zu %6d %12.0f %9s %9s %10.3f %10.3f %11.3f\n", "malloc+finish",
			       (size_t)o->index[k], FILL_CHUNK, fill_rate, "-", "-", us[0], us[1], us[2]);
			printf("# the fill wrote %.0f B per key to storage (the server's write_bytes in /proc: the "
			       "metadata "
			       "store's pages, written back so far)\n",
			       (double)(proc_write_bytes(server) - w0) / (double)(ix.n - from));
		}
		for (int op = OP_EXIST; op <= last && rc == 0; op++) {
			struct samples sm = {0};

			if (o->unbacked && (op == OP_TINY_GET || op == OP_TINY_PUT))
				continue; /* their 64 bytes would come from or go to a pool nobody maps */
			cpu = cpu_mark(meta);
			rc = measure(s, (enum meta_op)op, &ix, batch, o->seconds, &sm);
			cpu_per_key(meta, &cpu, (double)sm.n * batch, us);
			srv[op] = us[0];
			if (rc == 0)
				row(names[op], ix.n, batch, &sm, us);
			samples_free(&sm);
		}
		if (rc == 0 && rd)
			rc = redis_rows(rd, ix.n, batch, o->seconds, srv, last);
		rss_line(server, ix.n, anon0, &at);
	}
	return rc;
}

/* Bytes of memory the kernel could still give (MemAvailable), 0 if unknown. */
static uint64_t mem_available(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

/*
 * Refuses a run this machine cannot hold, before it starts: a backed pool is allocated in full (/dev/shm), and
 * the server takes about SERVER_BYTES_PER_KEY per key at its peak: 145-150 B per object measured at 10^7, about
 * 64 B more while a restart sorts what it loaded, and room for the index's doubling and for LMDB's pages of the
 * newest records (the rest of data.mdb is page cache the kernel can drop, counted in MemAvailable). An over-large
 * run would have the kernel's OOM killer pick a victim, maybe not this benchmark.
 */
#define SERVER_BYTES_PER_KEY 320u
#define REDIS_BYTES_PER_KEY  256u /* the baseline's Redis: a 71-byte key and a 64-byte value, ~200 B measured */

static int fits(const struct bench_opts *o, uint64_t most, uint64_t pool)
{
	uint64_t need =
	             most * (SERVER_BYTES_PER_KEY + (o->no_redis ? 0 : REDIS_BYTES_PER_KEY)) + (o->unbacked ? 0 : pool),
	         have = mem_available();

	if (!have || need < have)
		return 0;
	fprintf(stderr,
	        "mmc-bench meta: %llu keys need about %.1f GiB here (%s%s), and %.1f GiB are available: "
	        "%s%s\n",
	        (unsigned long long)most, (double)need / (1 << 30),
	        o->unbacked ? "the index" : "a pool of 4 KiB per key, allocated in full, and the index",
	        o->no_redis ? "" : ", and Redis's copy for the baseline", (double)have / (1 << 30),
	        o->unbacked ? "use fewer keys" : "use --unbacked, or fewer keys", o->no_redis ? "" : ", or --no-redis");
	return -1;
}

/* Local services beside the unbacked lender (no pool memory, no objects), for the time a restarted server takes to
 * have them all back. */
#define REJOINERS 100

static int rejoiners_start(struct bench_unbacked *r, uint16_t port)
{
	for (int i = 0; i < REJOINERS; i++)
		if (bench_unbacked_start(&r[i], port, 1ull << 30)) {
			while (i--)
				bench_unbacked_stop(&r[i]);
			return -1;
		}
	return 0;
}

/* Every lender registers again with the restarted server (as local services do when their connection drops). */
static void rejoin_all(struct bench_unbacked *u, struct bench_unbacked *r, uint16_t port)
{
	double t0;
	int failed;

	for (int i = 0; i < REJOINERS; i++) /* their heartbeat threads end, untimed */
		atomic_store(&r[i].stop, true);
	bench_unbacked_detach(u);
	for (int i = 0; i < REJOINERS; i++)
		bench_unbacked_detach(&r[i]);
	t0 = now_s();
	failed = bench_unbacked_rejoin(u, port) != 0;
	for (int i = 0; i < REJOINERS; i++)
		failed += bench_unbacked_rejoin(&r[i], port) != 0;
	printf("# %d local services (the lender and %d empty) rejoined the restarted server in %.3f s%s\n",
	       REJOINERS + 1, REJOINERS, now_s() - t0, failed ? " (some failed)" : "");
}

/* The server's own account of its last load (its log's op=load line: objects, and the time of each pass). */
static void print_load_line(const char *log)
{
	char line[512], last[512] = "";
	const char *at;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if ((at = strstr(line, "op=load objects=")))
			snprintf(last, sizeof(last), "%s", at + strlen("op=load "));
	fclose(f);
	if (last[0])
		printf("# the server's load: %s", last);
}

/* Restarts the server on its data dir (targets and client stay up) and reports how long the reload took. */
static int reload(struct bench_cluster *c, int sync)
{
	double t0;

	if (metaserver_stop(&c->meta))
		return -1;
	t0 = now_s();
	c->meta.ready_ms = 600 * 1000; /* a load of 5 * 10^7 objects takes tens of seconds; one that fails exits */
	if (metaserver_restart(&c->meta, bench_server_extras(sync)))
		return -1;
	printf("# restart on the same data dir: ready after %.2f s, RSS %.1f MiB (anonymous %.1f MiB, file-backed "
	       "%.1f MiB)\n",
	       now_s() - t0, (double)proc_rss_bytes(c->meta.pid) / (1 << 20),
	       (double)proc_status_bytes(c->meta.pid, "RssAnon") / (1 << 20),
	       (double)proc_status_bytes(c->meta.pid, "RssFile") / (1 << 20));
	print_load_line(c->meta.log);
	return 0;
}

int bench_meta_main(int argc, char **argv, const char *self)
{
	struct bench_opts o;
	int rc = bench_parse(argc, argv, &o, usage), batch;
	uint64_t most = 0, pool;

	if (rc)
		return rc > 0 ? 0 : 2;
	o.self = self;
	batch = o.batch_given ? o.batches[0] : 1024;
	for (int k = 0; k < o.nindex; k++)
		most = o.index[k] > most ? o.index[k] : most;
	pool = 2 * most * SLOT + (uint64_t)batch * SLOT * 4 + (64u << 20);
	if (fits(&o, most, pool))
		return 2;
	for (int y = 0; y < o.nsync && rc == 0; y++) {
		struct bench_cluster c;
		struct bench_unbacked u, rejoiners[REJOINERS];
		struct meta_redis *rd = NULL;
		bool joined;
		mmc_store *s;

		/* before any client thread: the fork of redis-server must not copy a process with threads */
		if (!o.no_redis && !(rd = meta_redis_start(batch)))
			fprintf(stderr, "mmc-bench meta: no Redis baseline: redis-server did not start\n");
		if (bench_cluster_start(&c, self, o.protocols[0], o.unbacked ? 0 : 1, pool, o.sync[y])) {
			meta_redis_stop(rd);
			return 1;
		}
		if (o.unbacked && bench_unbacked_start(&u, c.meta.rpc_port, pool)) {
			bench_cluster_stop(&c);
			meta_redis_stop(rd);
			return 1;
		}

		s = bench_client(&c, o.protocols[0], 0, 0);
		printf("\n# meta ops: provider %s, LMDB sync %s, one client thread, random existing keys, %s pool of "
		       "%.1f GiB%s\n",
		       bench_proto_str(o.protocols[0]), o.sync[y] ? "on" : "off", o.unbacked ? "an unbacked" : "a",
		       (double)pool / (1 << 30), o.tenant ? ", every store tenant \"bench\"" : "");
		printf("%-14s %9s %6s %12s %9s %9s %10s %10s %11s\n", "op", "index", "batch", "keys/s", "p50ms",
		       "p99ms", "srv_us/key", "all_us/key", "poll_us/key");
		rc = s ? sweep(s, &o, batch, &c.meta, rd) : -1;
		meta_redis_stop(rd);
		if (rc == 0 && (o.procs > 1 || o.threads > 1))
			rc = bench_meta_many(self, c.meta.url, o.protocols[0], o.index[o.nindex - 1], batch, o.procs,
			                     o.threads, o.seconds, c.meta.pid);
		/* the others join only now: 101 services would change what the sweep measures (placement and the
		 * watermark check walk every service for each key) */
		joined = rc == 0 && o.unbacked && rejoiners_start(rejoiners, c.meta.rpc_port) == 0;
		if (rc == 0 && reload(&c, o.sync[y]))
			fprintf(stderr, "mmc-bench meta: restarting the server failed\n");
		else if (joined)
			rejoin_all(&u, rejoiners, c.meta.rpc_port);
		mmc_destroy(s);
		for (int i = 0; joined && i < REJOINERS; i++)
			bench_unbacked_stop(&rejoiners[i]);
		if (o.unbacked)
			bench_unbacked_stop(&u);
		bench_cluster_stop(&c);
	}
	if (rc)
		fprintf(stderr, "mmc-bench meta: FAILED\n");
	return rc ? 1 : 0;
}
