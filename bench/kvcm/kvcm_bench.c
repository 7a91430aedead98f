/*
 * mmc-kvcm-bench: load generator for the KVCM HTTP API. Closed-loop clients on keep-alive connections measure
 * requests per second and p50/p99 latency of getCacheLocation prefix matches (1, 128 and 2048 keys, all hits)
 * and of startWriteCache+finishWriteCache pairs.
 *
 * It also measures reportEvent (ADD batches of 100, 1000, 5000 and 20000 blocks, each client its own reporter,
 * with the time per event), getHostCacheState over 100 to 20000 consecutive blocks one reporter holds, and the
 * reference's PERF rows (kvcm.md §6.13): PERF-01, fixed counts of ADD requests from 100 clients and of mixed
 * ADD/DELETE/HEARTBEAT batches from 50, which must see no error; PERF-02, a 5000-block snapshot from each of 10
 * reporters, then the first, middle and last block looked up with getCacheLocation.
 *
 *   mmc-kvcm-bench [--quick] [--threads N] [--seconds S] [--port HTTP_PORT] [--server PATH] [--no-sync]
 *                  [--only TEXT]
 *
 * --only runs just the cases whose name contains TEXT (e.g. --only reportEvent, to profile the server under one
 * kind of load), or ends in it when TEXT ends in '$' (--only 'x100$').
 *
 * Without --port it starts its own mmc-metaserver (--server PATH, else $MMC_METASERVER, else the one of the same
 * build tree, else mmc-metaserver on $PATH) on free ports in a temporary directory and stops it at the end.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "http_client.h"
#include "proc.h"

struct opts {
	int threads;
	double seconds;
	uint16_t port;
	bool sync;
	const char *only; /* run only the cases whose name contains it */
	bool quick;       /* also scales PERF-01's fixed request counts down */
};

/* One case: what each client sends, for how long or how many times. */
struct bench_case {
	const char *name;
	const char *api, *body; /* a read case: the same request again and again */
	bool write_pairs;
	bool mixed;     /* reportEvent: ADDs, DELETEs of the previous batch's keys and a HEARTBEAT */
	int batch;      /* reportEvent: blocks per request (the request body is built per call) */
	int net;        /* reportEvent: client i reports as host 10.0.<net>.<i+1> */
	long long key0; /* reportEvent: the first block key; client i adds i * key_stride */
	long long key_stride;
	int cycle;   /* reportEvent: keys repeat after this many requests, so the index stays bounded */
	int threads; /* 0: --threads */
	int count;   /* requests per client; 0: --seconds */
};

struct worker {
	pthread_t t;
	int id;
	const struct opts *o;
	const struct bench_case *bc;
	uint64_t *lat_ns;
	size_t n, cap;
	uint64_t errors;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(struct worker *w, uint64_t ns)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 65536;
		uint64_t *p = realloc(w->lat_ns, cap * sizeof(*p));

		if (!p)
			return;
		w->lat_ns = p;
		w->cap = cap;
	}
	w->lat_ns[w->n++] = ns;
}

/* One startWriteCache of a fresh key and its finishWriteCache; false on any error. */
static bool write_pair(struct hc *c, int id, uint64_t seq)
{
	char body[256], path[] = "/api/startWriteCache", *out = NULL, sid[40] = "", *p;
	int n = snprintf(body, sizeof(body),
	                 "{\"instance_id\":\"bench\",\"block_keys\":[%llu],\"write_timeout_seconds\":60}",
	                 (unsigned long long)(1000000000ull * (uint64_t)(id + 1) + seq));
	bool ok;

	if (hc_request(c, "POST", path, body, (size_t)n, &out) != 200 ||
	    !(p = strstr(out, "\"write_session_id\":\""))) {
		free(out);
		return false;
	}
	snprintf(sid, sizeof(sid), "%.32s", p + 20);
	free(out);
	n = snprintf(body, sizeof(body),
	             "{\"instance_id\":\"bench\",\"write_session_id\":\"%s\",\"success_blocks\":{\"offset\":1}}", sid);
	ok = hc_request(c, "POST", "/api/finishWriteCache", body, (size_t)n, &out) == 200 &&
	     strstr(out, "\"code\":\"OK\"");
	free(out);
	return ok;
}

static size_t add_event(char *b, size_t cap, bool first, const char *host, long long key)
{
	return (size_t)snprintf(b, cap,
	                        "%s{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%lld\","
	                        "\"medium\":\"gpu\",\"specs\":[{\"name\":\"tp0\",\"uri\":"
	                        "\"event_report://%s/gpu/%lld?size=65536\"}]}}",
	                        first ? "" : ",", key, host, key);
}

/* PERF-01's mixed batch: the ADDs, then DELETEs of half the previous batch's keys, then a HEARTBEAT. */
static size_t mixed_events(char *b, size_t cap, const char *host, long long key, int batch)
{
	size_t n = 0;

	for (int i = 0; i < batch; i++)
		n += add_event(b + n, cap - n, i == 0, host, key + i);
	for (int i = 0; i < batch / 2 && key >= batch; i++)
		n += (size_t)snprintf(b + n, cap - n,
		                      ",{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":"
		                      "\"%lld\",\"medium\":\"gpu\",\"spec_names\":[\"tp0\"]}}",
		                      key - batch + i);
	n += (size_t)snprintf(b + n, cap - n, ",{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{}}");
	return n;
}

/* A reportEvent of bc->batch blocks from client id's reporter; request seq of the client. */
static char *report_body(const struct bench_case *bc, int id, uint64_t seq, size_t *len)
{
	size_t cap = (size_t)bc->batch * 400 + 512, n;
	char *b = malloc(cap), host[32];
	long long key = bc->key0 + id * bc->key_stride + (long long)(seq % (uint64_t)bc->cycle) * bc->batch;

	snprintf(host, sizeof(host), "10.0.%d.%d:8000", bc->net, id + 1);
	n = (size_t)snprintf(b, cap,
	                     "{\"instance_id\":\"bench\",\"host_ip_port\":\"%s\",\"storage_type\":"
	                     "\"ST_EVENT_REPORT_L2\",\"events\":[",
	                     host);
	if (bc->mixed) {
		n += mixed_events(b + n, cap - n, host, key, bc->batch);
	} else {
		for (int i = 0; i < bc->batch; i++)
			n += add_event(b + n, cap - n, i == 0, host, key + i);
	}
	n += (size_t)snprintf(b + n, cap - n, "]}");
	*len = n;
	return b;
}

/* One request of the case; false on any error. */
static bool one_request(struct hc *c, const struct bench_case *bc, int id, uint64_t seq, uint64_t *ns)
{
	size_t len = 0;
	/* built before the clock starts: the server's answer is timed, not the client's printf */
	char *body = bc->batch ? report_body(bc, id, seq, &len) : NULL, *out = NULL;
	uint64_t t0 = now_ns();
	bool ok;

	if (bc->write_pairs)
		ok = write_pair(c, id, seq);
	else
		ok = hc_request(c, "POST", bc->batch ? "/api/reportEvent" : bc->api, body ? body : bc->body,
		                body ? len : strlen(bc->body), &out) == 200 &&
		     strstr(out, "\"code\":\"OK\"") != NULL;
	*ns = now_ns() - t0;
	free(body);
	free(out);
	return ok;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct hc c = {-1, w->o->port};
	uint64_t end = now_ns() + (uint64_t)(w->o->seconds * 1e9), ns;

	for (uint64_t seq = 0; w->bc->count ? seq < (uint64_t)w->bc->count : now_ns() < end; seq++) {
		if (one_request(&c, w->bc, w->id, seq, &ns))
			record(w, ns);
		else
			w->errors++;
	}
	hc_close(&c);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t total_errors;

/* --only TEXT: names containing TEXT; TEXT$: names ending in TEXT. */
static bool selected(const struct opts *o, const char *name)
{
	size_t n, len;

	if (!o->only)
		return true;
	n = strlen(o->only);
	if (!n || o->only[n - 1] != '$')
		return strstr(name, o->only) != NULL;
	len = strlen(name);
	return len >= n - 1 && memcmp(name + len - (n - 1), o->only, n - 1) == 0;
}

/* A table row; lat (sorted) holds n latencies over secs of wall time. ADD batches also show µs per event at p50. */
static void print_row(const char *name, const uint64_t *lat, size_t n, double secs, uint64_t errors, int batch)
{
	double p50 = n ? (double)lat[n / 2] / 1e6 : 0.0, p99 = n ? (double)lat[(size_t)((double)n * 0.99)] / 1e6 : 0.0;

	printf("%-40s %9.0f %9.3f %9.3f %8llu", name, (double)n / secs, p50, p99, (unsigned long long)errors);
	if (batch > 1)
		printf(" %8.2f", p50 * 1000 / batch);
	printf("\n");
	fflush(stdout);
	total_errors += errors;
}

static void run_case(const struct opts *o, const struct bench_case *bc)
{
	int threads = bc->threads ? bc->threads : o->threads;
	struct worker *w;
	uint64_t *all, errors = 0, t0 = now_ns();
	size_t n = 0, k = 0;

	if (!selected(o, bc->name))
		return;
	w = calloc((size_t)threads, sizeof(*w));
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){.id = i, .o = o, .bc = bc};
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		n += w[i].n;
		errors += w[i].errors;
	}
	all = malloc((n + 1) * sizeof(*all));
	for (int i = 0; i < threads; i++) {
		memcpy(all + k, w[i].lat_ns, w[i].n * sizeof(*all));
		k += w[i].n;
		free(w[i].lat_ns);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	print_row(bc->name, all, n, bc->count ? (double)(now_ns() - t0) / 1e9 : o->seconds, errors,
	          bc->mixed ? 0 : bc->batch);
	free(all);
	free(w);
}

/* {"instance_id":"bench",<fields>"block_keys":[0,1,...,nkeys-1]} */
static char *keys_body(const char *fields, int nkeys)
{
	size_t cap = (size_t)nkeys * 8 + 256, len;
	char *b = malloc(cap);

	len = (size_t)snprintf(b, cap, "{\"instance_id\":\"bench\",%s\"block_keys\":[0", fields);
	for (int i = 1; i < nkeys; i++)
		len += (size_t)snprintf(b + len, cap - len, ",%d", i);
	snprintf(b + len, cap - len, "]}");
	return b;
}

static int populate(uint16_t port)
{
	struct hc c = {-1, port};
	char *body = keys_body("\"write_timeout_seconds\":60,", 2048), *out = NULL, sid[40], *p;
	static const char reg[] = "{\"instance_group\":\"default\",\"instance_id\":\"bench\",\"block_size\":16,"
	                          "\"model_deployment\":{\"model_name\":\"bench\",\"dtype\":\"bf16\"},"
	                          "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":65536}]}";
	int rc = -1;

	if (hc_request(&c, "POST", "/api/registerInstance", reg, sizeof(reg) - 1, &out) != 200)
		goto out;
	free(out);
	if (hc_request(&c, "POST", "/api/startWriteCache", body, strlen(body), &out) != 200 ||
	    !(p = strstr(out, "\"write_session_id\":\"")))
		goto out;
	snprintf(sid, sizeof(sid), "%.32s", p + 20);
	free(out);
	snprintf(body, 2048 * 8,
	         "{\"instance_id\":\"bench\",\"write_session_id\":\"%s\",\"success_blocks\":{\"offset\":"
	         "2048}}",
	         sid);
	if (hc_request(&c, "POST", "/api/finishWriteCache", body, strlen(body), &out) == 200 && strstr(out, "\"OK\""))
		rc = 0;
out:
	free(out);
	free(body);
	hc_close(&c);
	return rc;
}

#define PREFIX "\"query_type\":\"QT_PREFIX_MATCH\","

#define HS_HOSTS 1
#define HS_KEY0  6000000LL

/*
 * HS_HOSTS L2 reporters (10.0.1.x) each hold blocks HS_KEY0.. HS_KEY0+19999, added 5000 per request. One, as in
 * tair-kvcache's get_host_cache_state_benchmark.cc: the figures of reference §9 are per block of one host.
 */
static bool host_state_seed(const struct opts *o)
{
	struct bench_case seed = {.batch = 5000, .net = 1, .key0 = HS_KEY0, .cycle = 4};
	struct hc c = {-1, o->port};
	uint64_t ns;
	bool ok = true;

	for (int h = 0; h < HS_HOSTS && ok; h++)
		for (uint64_t seq = 0; seq < 4 && ok; seq++)
			ok = one_request(&c, &seed, h, seq, &ns);
	hc_close(&c);
	return ok;
}

/* getHostCacheState over N consecutive blocks every seeded reporter holds: all hits. */
static void host_state_cases(const struct opts *o)
{
	static const int sizes[] = {100, 1000, 5000, 20000};
	static char names[4][64];
	bool seeded = false;

	for (int s = 0; s < 4; s++) {
		size_t cap = (size_t)sizes[s] * 10 + 128, n;
		char *b;
		struct bench_case bc = {.name = names[s], .api = "/api/getHostCacheState"};

		snprintf(names[s], sizeof(names[s]), "getHostCacheState %d blocks", sizes[s]);
		if (!selected(o, bc.name))
			continue;
		if (!seeded && !(seeded = host_state_seed(o))) {
			fprintf(stderr, "mmc-kvcm-bench: cannot report the getHostCacheState blocks\n");
			total_errors++;
			return;
		}
		b = malloc(cap);
		n = (size_t)snprintf(b, cap, "{\"instance_id\":\"bench\",\"block_cache_keys\":[%lld", HS_KEY0);
		for (int i = 1; i < sizes[s]; i++)
			n += (size_t)snprintf(b + n, cap - n, ",%lld", HS_KEY0 + i);
		snprintf(b + n, cap - n, "]}");
		bc.body = b;
		run_case(o, &bc);
		free(b);
	}
}

#define SNAP_REPORTERS 10
#define SNAP_BLOCKS    5000
#define SNAP_KEY0      7000000LL

/* One reporter's complete state: blocks SNAP_KEY0.., each with one spec. */
static char *snapshot_body(const char *host, size_t *len)
{
	size_t cap = SNAP_BLOCKS * 160 + 512, n;
	char *b = malloc(cap);

	n = (size_t)snprintf(
	    b, cap,
	    "{\"instance_id\":\"bench\",\"host_ip_port\":\"%s\",\"storage_type\":\"ST_EVENT_REPORT_L2\","
	    "\"events\":[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":[",
	    host);
	for (int i = 0; i < SNAP_BLOCKS; i++)
		n += (size_t)snprintf(b + n, cap - n,
		                      "%s{\"block_key\":\"%lld\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"tp0\","
		                      "\"uri\":\"event_report://%s/gpu/%lld\"}]}",
		                      i ? "," : "", SNAP_KEY0 + i, host, SNAP_KEY0 + i);
	n += (size_t)snprintf(b + n, cap - n, "]}}]}");
	*len = n;
	return b;
}

/* Whether getCacheLocation finds key with an event-report location of every snapshot reporter. */
static bool snapshot_found(struct hc *c, long long key)
{
	json_t *r =
	    hc_call(c, "getCacheLocation",
	            "{\"instance_id\":\"bench\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[%lld]}", key);
	json_t *locs = json_object_get(r, "locations");
	bool ok = json_array_size(locs) == 1 &&
	          json_array_size(json_object_get(json_array_get(locs, 0), "location_specs")) >= SNAP_REPORTERS;

	json_decref(r);
	return ok;
}

/*
 * PERF-02: each reporter's snapshot, one after another (timed each), then the first, middle and last block.
 * Hosts carry the bench's pid as their port so a rerun against the same server is not rate limited.
 */
static void snapshot_case(const struct opts *o)
{
	static const char name[] = "PERF-02 SNAPSHOT x5000, 10 reporters";
	static const long long probe[] = {SNAP_KEY0, SNAP_KEY0 + SNAP_BLOCKS / 2, SNAP_KEY0 + SNAP_BLOCKS - 1};
	struct hc c = {-1, o->port};
	uint64_t lat[SNAP_REPORTERS], errors = 0, t0 = now_ns();
	size_t n = 0;

	if (!selected(o, name))
		return;
	for (int r = 0; r < SNAP_REPORTERS; r++) {
		char host[40], *body, *out = NULL;
		size_t len;
		uint64_t t;

		snprintf(host, sizeof(host), "10.0.2.%d:%d", r + 1, 10000 + (int)(getpid() % 50000));
		body = snapshot_body(host, &len);
		t = now_ns();
		if (hc_request(&c, "POST", "/api/reportEvent", body, len, &out) == 200 &&
		    strstr(out, "\"code\":\"OK\""))
			lat[n++] = now_ns() - t;
		else
			errors++;
		free(body);
		free(out);
	}
	for (int i = 0; i < 3; i++)
		errors += !snapshot_found(&c, probe[i]);
	hc_close(&c);
	qsort(lat, n, sizeof(*lat), cmp_u64);
	print_row(name, lat, n, (double)(now_ns() - t0) / 1e9, errors, SNAP_BLOCKS);
}

/* PERF-01: fixed amounts of reportEvent traffic from many clients at once; the point is zero errors. */
static void load_cases(const struct opts *o)
{
	/* 100 clients x 100 one-block ADDs = 10k ADDs; 50 clients x 100 mixed batches = 5000 (a tenth with --quick) */
	int per = o->quick ? 10 : 100;
	struct bench_case add = {.name = "PERF-01 ADD 100 clients, 10k in total",
	                         .batch = 1,
	                         .net = 3,
	                         .key0 = 8000000,
	                         .key_stride = 100000,
	                         .cycle = 1 << 30,
	                         .threads = 100,
	                         .count = per};
	struct bench_case mixed = {.name = "PERF-01 mixed 50 clients, 5000 batches",
	                           .mixed = true,
	                           .batch = 8,
	                           .net = 4,
	                           .key0 = 9000000,
	                           .key_stride = 100000,
	                           .cycle = 1 << 30,
	                           .threads = 50,
	                           .count = per};

	run_case(o, &add);
	run_case(o, &mixed);
}

static int parse(int argc, char **argv, struct opts *o, const char **server)
{
	static const struct option lo[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"threads", required_argument, NULL, 't'},
	    {"seconds", required_argument, NULL, 's'},
	    {"port", required_argument, NULL, 'p'},
	    {"server", required_argument, NULL, 'S'},
	    {"no-sync", no_argument, NULL, 'n'},
	    {"only", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "qt:s:p:S:no:h", lo, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->seconds = 0.5;
			o->quick = true;
			break;
		case 't':
			o->threads = atoi(optarg);
			break;
		case 's':
			o->seconds = atof(optarg);
			break;
		case 'p':
			o->port = (uint16_t)atoi(optarg);
			break;
		case 'S':
			*server = optarg;
			break;
		case 'n':
			o->sync = false;
			break;
		case 'o':
			o->only = optarg;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
			        "usage: mmc-kvcm-bench [--quick] [--threads N] [--seconds S] "
			        "[--port HTTP_PORT] [--server PATH] [--no-sync] [--only TEXT]\n");
			exit(c == 'h' ? 0 : 2);
		}
	}
	return o->threads > 0 && o->threads <= 256 && o->seconds > 0 ? 0 : -1;
}

/* Without --server or $MMC_METASERVER: the mmc-metaserver of the same build tree, if there is one. */
static void default_server(void)
{
	char self[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (getenv("MMC_METASERVER") || n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../../metaserver/mmc-metaserver", self);
	if (access(path, X_OK) == 0)
		setenv("MMC_METASERVER", path, 1);
}

int main(int argc, char **argv)
{
	struct opts o = {8, 5.0, 0, true, NULL, false};
	const char *server = NULL;
	struct metaserver m = {0};
	const char *env[] = {"kvcm.service.http_port=0",
	                     "kvcm.service.admin_http_port=0",
	                     "kvcm.service.rpc_port=0",
	                     "kvcm.service.admin_rpc_port=0",
	                     "kvcm.service.bind=127.0.0.1",
	                     NULL,
	                     NULL};
	char *b1, *b128, *b2048;
	/* reportEvent ADD: each client its own reporter (10.0.0.x), keys cycling over 20 batches */
	struct bench_case cases[] = {
	    {.name = "getCacheLocation prefix 1 key", .api = "/api/getCacheLocation"},
	    {.name = "getCacheLocation prefix 128 keys", .api = "/api/getCacheLocation"},
	    {.name = "getCacheLocation prefix 2048 keys", .api = "/api/getCacheLocation"},
	    {.name = "startWriteCache+finishWriteCache", .write_pairs = true},
	    {.name = "reportEvent ADD x100", .batch = 100, .key0 = 5000000, .cycle = 20},
	    {.name = "reportEvent ADD x1000", .batch = 1000, .key0 = 5000000, .cycle = 20},
	    {.name = "reportEvent ADD x5000", .batch = 5000, .key0 = 5000000, .cycle = 20},
	    {.name = "reportEvent ADD x20000", .batch = 20000, .key0 = 5000000, .cycle = 20},
	};

	if (parse(argc, argv, &o, &server))
		return 2;
	if (!o.port) {
		if (server)
			setenv("MMC_METASERVER", server, 1);
		default_server();
		env[5] = o.sync ? NULL : "ock.mmc.meta.lmdb.sync=false";
		if (metaserver_start(&m, env)) {
			fprintf(stderr,
			        "mmc-kvcm-bench: cannot start mmc-metaserver (set --server or MMC_METASERVER)\n");
			return 1;
		}
		o.port = m.http_port;
	}
	if (populate(o.port)) {
		fprintf(stderr, "mmc-kvcm-bench: cannot register and write the benchmark instance\n");
		metaserver_cleanup(&m);
		return 1;
	}
	printf("mmc-kvcm-bench: port %u, %d keep-alive connections, %.1f s per case%s\n", o.port, o.threads, o.seconds,
	       m.pid ? (o.sync ? ", own server (LMDB fsync on)" : ", own server (LMDB fsync off)") : "");
	printf("%-40s %9s %9s %9s %8s %8s\n", "case", "req/s", "p50 ms", "p99 ms", "errors", "us/event");
	b1 = keys_body(PREFIX, 1);
	b128 = keys_body(PREFIX, 128);
	b2048 = keys_body(PREFIX, 2048);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cases[i].body = i == 0 ? b1 : i == 1 ? b128 : i == 2 ? b2048 : NULL;
		run_case(&o, &cases[i]);
	}
	host_state_cases(&o);
	snapshot_case(&o);
	load_cases(&o);
	free(b1);
	free(b128);
	free(b2048);
	metaserver_cleanup(&m);
	return total_errors ? 1 : 0;
}
