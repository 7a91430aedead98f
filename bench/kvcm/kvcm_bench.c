/*
 * mmc-kvcm-bench: load generator for the KVCM HTTP API. Closed-loop clients on keep-alive connections measure
 * requests per second and p50/p99 latency of getCacheLocation prefix matches (1, 128 and 2048 keys, all hits)
 * and of startWriteCache+finishWriteCache pairs.
 *
 * It also measures reportEvent (ADD batches of 100, 1000 and 5000 blocks, each client its own reporter) and
 * getHostCacheState over 100 and 1000 reported blocks.
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

#include "http_client.h"
#include "proc.h"

struct opts {
	int threads;
	double seconds;
	uint16_t port;
	bool sync;
	const char *only; /* run only the cases whose name contains it */
};

struct worker {
	pthread_t t;
	int id;
	const struct opts *o;
	const char *api, *body; /* a read case: the same request again and again */
	bool write_pairs;
	int batch; /* reportEvent: blocks per request (the request body is built per call) */
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

/* A reportEvent ADD of w->batch blocks; keys cycle over 20 batches so the index stays bounded. */
static char *report_body(const struct worker *w, uint64_t seq, size_t *len)
{
	size_t cap = (size_t)w->batch * 200 + 256, n;
	char *b = malloc(cap);

	n = (size_t)snprintf(b, cap,
	                     "{\"instance_id\":\"bench\",\"host_ip_port\":\"10.0.0.%d:8000\",\"storage_type\":"
	                     "\"ST_EVENT_REPORT_L2\",\"events\":[",
	                     w->id + 1);
	for (int i = 0; i < w->batch; i++) {
		long long key = 5000000LL + (long long)(seq % 20) * w->batch + i;

		n += (size_t)snprintf(b + n, cap - n,
		                      "%s{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%lld\","
		                      "\"medium\":\"gpu\",\"specs\":[{\"name\":\"tp0\",\"uri\":"
		                      "\"event_report://10.0.0.%d:9600/gpu/%lld?size=65536\"}]}}",
		                      i ? "," : "", key, w->id + 1, key);
	}
	n += (size_t)snprintf(b + n, cap - n, "]}");
	*len = n;
	return b;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct hc c = {-1, w->o->port};
	uint64_t end = now_ns() + (uint64_t)(w->o->seconds * 1e9), seq = 0;
	size_t blen = w->body ? strlen(w->body) : 0;

	while (now_ns() < end) {
		size_t len = 0;
		/* built before the clock starts: the server's answer is timed, not the client's printf */
		char *body = w->batch ? report_body(w, seq, &len) : NULL, *out = NULL;
		uint64_t t0 = now_ns();
		bool ok;

		if (w->write_pairs) {
			ok = write_pair(&c, w->id, seq++);
		} else if (w->batch) {
			seq++;
			ok = hc_request(&c, "POST", "/api/reportEvent", body, len, &out) == 200 &&
			     strstr(out, "\"code\":\"OK\"") != NULL;
			free(body);
			free(out);
		} else {
			ok = hc_request(&c, "POST", w->api, w->body, blen, &out) == 200 &&
			     strstr(out, "\"code\":\"OK\"") != NULL;
			free(out);
		}
		if (ok)
			record(w, now_ns() - t0);
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

static void run_case(const struct opts *o, const char *name, const char *api, const char *body, bool pairs, int batch)
{
	struct worker *w = calloc((size_t)o->threads, sizeof(*w));
	uint64_t *all, errors = 0;
	size_t n = 0, k = 0;

	if (!selected(o, name)) {
		free(w);
		return;
	}
	for (int i = 0; i < o->threads; i++) {
		w[i] = (struct worker){.id = i, .o = o, .api = api, .body = body, .write_pairs = pairs, .batch = batch};
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < o->threads; i++) {
		pthread_join(w[i].t, NULL);
		n += w[i].n;
		errors += w[i].errors;
	}
	all = malloc((n + 1) * sizeof(*all));
	for (int i = 0; i < o->threads; i++) {
		memcpy(all + k, w[i].lat_ns, w[i].n * sizeof(*all));
		k += w[i].n;
		free(w[i].lat_ns);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	printf("%-34s %10.0f %9.3f %9.3f %8llu\n", name, (double)n / o->seconds, n ? (double)all[n / 2] / 1e6 : 0.0,
	       n ? (double)all[(size_t)((double)n * 0.99)] / 1e6 : 0.0, (unsigned long long)errors);
	fflush(stdout);
	total_errors += errors;
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

/* getHostCacheState over blocks 5000000.. that every reporter of the ADD cases holds (the first 100 and 1000). */
static void host_state_cases(const struct opts *o)
{
	int sizes[] = {100, 1000};
	char *b;

	for (int s = 0; s < 2; s++) {
		size_t cap = (size_t)sizes[s] * 10 + 128, n;
		char name[64];

		b = malloc(cap);
		n = (size_t)snprintf(b, cap, "{\"instance_id\":\"bench\",\"block_cache_keys\":[5000000");
		for (int i = 1; i < sizes[s]; i++)
			n += (size_t)snprintf(b + n, cap - n, ",%d", 5000000 + i);
		snprintf(b + n, cap - n, "]}");
		snprintf(name, sizeof(name), "getHostCacheState %d blocks", sizes[s]);
		run_case(o, name, "/api/getHostCacheState", b, false, 0);
		free(b);
	}
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
	struct opts o = {8, 5.0, 0, true, NULL};
	const char *server = NULL;
	struct metaserver m = {0};
	const char *env[] = {"kvcm.service.http_port=0", "kvcm.service.admin_http_port=0",
	                     "kvcm.service.bind=127.0.0.1", NULL, NULL};
	char *b1, *b128, *b2048;

	if (parse(argc, argv, &o, &server))
		return 2;
	if (!o.port) {
		if (server)
			setenv("MMC_METASERVER", server, 1);
		default_server();
		env[3] = o.sync ? NULL : "ock.mmc.meta.lmdb.sync=false";
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
	printf("%-34s %10s %9s %9s %8s\n", "case", "req/s", "p50 ms", "p99 ms", "errors");
	b1 = keys_body(PREFIX, 1);
	b128 = keys_body(PREFIX, 128);
	b2048 = keys_body(PREFIX, 2048);
	run_case(&o, "getCacheLocation prefix 1 key", "/api/getCacheLocation", b1, false, 0);
	run_case(&o, "getCacheLocation prefix 128 keys", "/api/getCacheLocation", b128, false, 0);
	run_case(&o, "getCacheLocation prefix 2048 keys", "/api/getCacheLocation", b2048, false, 0);
	run_case(&o, "startWriteCache+finishWriteCache", NULL, NULL, true, 0);
	run_case(&o, "reportEvent ADD x100", NULL, NULL, false, 100);
	run_case(&o, "reportEvent ADD x1000", NULL, NULL, false, 1000);
	run_case(&o, "reportEvent ADD x5000", NULL, NULL, false, 5000);
	host_state_cases(&o);
	free(b1);
	free(b128);
	free(b2048);
	metaserver_cleanup(&m);
	return total_errors ? 1 : 0;
}
