#include "metrics.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "deleter.h"
#include "http.h"
#include "kvcm_state.h"
#include "ha_metrics.h"
#include "meta_metrics.h"
#include "reclaim.h"
#include "wire_enums.h"
#include "write_session.h"

#define MAX_APIS 64
#define NCODES   17
#define NBUCKETS 14

static const double bucket_le[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                           0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

struct api_stats {
	const char *name;
	uint64_t by_code[NCODES];
	uint64_t bad_request, server_error;
	uint64_t buckets[NBUCKETS + 1];
	uint64_t sum_ns, count;
};

struct metrics {
	struct api_stats api[MAX_APIS];
	int napis;
	uint64_t rejected, query_keys, query_hits, written_locations, written_bytes, fast_reads;
	uint64_t auth_refused[2]; /* by reason: credentials, role */
};

int metrics_new(struct metrics **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -1;
}

void metrics_free(struct metrics *m)
{
	free(m);
}

int metrics_slot(struct metrics *m, const char *api)
{
	for (int i = 0; i < m->napis; i++)
		if (strcmp(m->api[i].name, api) == 0)
			return i;
	if (m->napis == MAX_APIS)
		return -1;
	m->api[m->napis].name = api;
	return m->napis++;
}

void metrics_request(struct metrics *m, int slot, int code, int http_status, uint64_t ns)
{
	struct api_stats *a;
	double s = (double)ns / 1e9;
	int b = 0;

	if (slot < 0)
		return;
	a = &m->api[slot];
	if (http_status == 400)
		a->bad_request++;
	else if (http_status != 200)
		a->server_error++;
	else
		for (int i = 0; i < enum_error_code.count && i < NCODES; i++)
			if (enum_error_code.values[i] == code)
				a->by_code[i]++;
	while (b < NBUCKETS && s > bucket_le[b])
		b++;
	a->buckets[b]++;
	a->sum_ns += ns;
	a->count++;
}

void metrics_rejected(struct metrics *m)
{
	m->rejected++;
}

void metrics_auth_refused(struct metrics *m, bool role)
{
	if (m)
		m->auth_refused[role]++;
}

/* Both reasons always, 0 included: a first refusal is then an increase, not a new series. */
static void auth_refusals(struct evbuffer *b, const struct metrics *m)
{
	evbuffer_add_printf(
	    b,
	    "# HELP mmc_kvcm_auth_refused_total KVCM requests (HTTP and gRPC) refused by authentication: "
	    "credentials (none, a wrong user or password), role (a ROLE_USER on the admin port).\n"
	    "# TYPE mmc_kvcm_auth_refused_total counter\n"
	    "mmc_kvcm_auth_refused_total{reason=\"credentials\"} %" PRIu64 "\n"
	    "mmc_kvcm_auth_refused_total{reason=\"role\"} %" PRIu64 "\n",
	    m->auth_refused[0], m->auth_refused[1]);
}

void metrics_fast_read(struct metrics *m)
{
	m->fast_reads++;
}

void metrics_queried(struct metrics *m, size_t keys, size_t hits)
{
	m->query_keys += keys;
	m->query_hits += hits;
}

void metrics_written(struct metrics *m, size_t locations, uint64_t bytes)
{
	m->written_locations += locations;
	m->written_bytes += bytes;
}

static void counter(struct evbuffer *b, const char *name, const char *help, uint64_t v, bool gauge)
{
	evbuffer_add_printf(b, "# HELP mmc_kvcm_%s %s\n# TYPE mmc_kvcm_%s %s\nmmc_kvcm_%s %" PRIu64 "\n", name, help,
	                    name, gauge ? "gauge" : "counter", name, v);
}

static void requests(struct evbuffer *b, const struct metrics *m)
{
	evbuffer_add_printf(b, "# HELP mmc_kvcm_requests_total KVCM HTTP requests by API and result code.\n"
	                       "# TYPE mmc_kvcm_requests_total counter\n");
	for (int i = 0; i < m->napis; i++) {
		const struct api_stats *a = &m->api[i];

		for (int c = 0; c < NCODES && c < enum_error_code.count; c++)
			if (a->by_code[c])
				evbuffer_add_printf(b, "mmc_kvcm_requests_total{api=\"%s\",code=\"%s\"} %" PRIu64 "\n",
				                    a->name, enum_error_code.names[c], a->by_code[c]);
		if (a->bad_request)
			evbuffer_add_printf(b, "mmc_kvcm_requests_total{api=\"%s\",code=\"HTTP_400\"} %" PRIu64 "\n",
			                    a->name, a->bad_request);
		if (a->server_error)
			evbuffer_add_printf(b, "mmc_kvcm_requests_total{api=\"%s\",code=\"HTTP_500\"} %" PRIu64 "\n",
			                    a->name, a->server_error);
	}
}

static void latency(struct evbuffer *b, const struct metrics *m)
{
	evbuffer_add_printf(b, "# HELP mmc_kvcm_request_duration_seconds Time from request to reply, by API.\n"
	                       "# TYPE mmc_kvcm_request_duration_seconds histogram\n");
	for (int i = 0; i < m->napis; i++) {
		const struct api_stats *a = &m->api[i];
		uint64_t cum = 0;

		if (!a->count)
			continue;
		for (int j = 0; j < NBUCKETS; j++) {
			cum += a->buckets[j];
			evbuffer_add_printf(
			    b, "mmc_kvcm_request_duration_seconds_bucket{api=\"%s\",le=\"%g\"} %" PRIu64 "\n", a->name,
			    bucket_le[j], cum);
		}
		evbuffer_add_printf(b,
		                    "mmc_kvcm_request_duration_seconds_bucket{api=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
		                    "mmc_kvcm_request_duration_seconds_sum{api=\"%s\"} %.9f\n"
		                    "mmc_kvcm_request_duration_seconds_count{api=\"%s\"} %" PRIu64 "\n",
		                    a->name, a->count, a->name, (double)a->sum_ns / 1e9, a->name, a->count);
	}
}

static void usage(struct evbuffer *b, struct kvcm *k)
{
	uint64_t keys = 0, bytes[ST_COUNT] = {0};

	for (struct list *it = k->groups.next; it != &k->groups; it = it->next) {
		struct group *g = list_entry(it, struct group, link);

		keys += g->use.keys;
		for (int t = 0; t < ST_COUNT; t++)
			bytes[t] += g->use.bytes_by_type[t];
	}
	counter(b, "instances", "Registered KVCM instances.", k->instances.n, true);
	counter(b, "block_keys", "Block keys indexed (all instances).", keys, true);
	evbuffer_add_printf(b, "# HELP mmc_kvcm_stored_bytes Bytes of cache locations, by storage type.\n"
	                       "# TYPE mmc_kvcm_stored_bytes gauge\n");
	for (int t = 0; t < ST_COUNT; t++)
		if (enum_name(&enum_storage_type, t))
			evbuffer_add_printf(b, "mmc_kvcm_stored_bytes{storage_type=\"%s\"} %" PRIu64 "\n",
			                    enum_name(&enum_storage_type, t), bytes[t]);
}

void metrics_text(struct kvcm *k, struct evbuffer *b)
{
	struct metrics *m = k->metrics;

	ha_metrics_write(k->ha, b);
	if (!k->persist) /* a standby: no state loaded, nothing else to count */
		return;
	requests(b, m);
	latency(b, m);
	usage(b, k);
	counter(b, "query_keys_total", "Block keys asked for by getCacheLocation(Len).", m->query_keys, false);
	counter(b, "query_hit_keys_total", "Block keys found by getCacheLocation(Len).", m->query_hits, false);
	counter(b, "written_locations_total", "Locations allocated by startWriteCache.", m->written_locations, false);
	counter(b, "written_bytes_total", "Bytes allocated by startWriteCache.", m->written_bytes, false);
	counter(b, "write_sessions", "Open write sessions.", sessions_count(k), true);
	counter(b, "write_sessions_expired_total", "Write sessions failed by expiry.", sessions_expired(k), false);
	counter(b, "pending_deletes", "Locations waiting for deletion.", deleter_pending(k), true);
	counter(b, "deleted_locations_total", "Locations deleted.", deleter_deleted(k), false);
	counter(b, "deleted_files_total", "Files unlinked by deletes.", deleter_files_unlinked(k), false);
	counter(b, "reclaimed_locations_total", "Locations evicted by reclaim.", reclaim_evicted(k), false);
	reclaim_metrics_write(k, b);
	counter(b, "http_connections", "Open HTTP connections (both ports).",
	        http_server_connections(k->http) + http_server_connections(k->admin), true);
	counter(b, "grpc_connections", "Open gRPC connections (both ports).", k->grpc_connections, true);
	auth_refusals(b, m);
	counter(b, "rejected_connections_total", "Requests refused over kvcm.service.max_connections.", m->rejected,
	        false);
	counter(b, "fast_read_requests_total",
	        "Request bodies read without a jansson tree (usual reportEvent and key query bodies).", m->fast_reads,
	        false);
	meta_metrics_write(k->meta, b); /* the object store's own */
}

static void serve_metrics(struct kvcm *k, struct evhttp_request *req)
{
	struct evbuffer *b = evbuffer_new();

	metrics_text(k, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

bool metrics_serve_get(struct kvcm *k, struct evhttp_request *req, const char *path)
{
	struct evbuffer *b;

	if (strcmp(path, "/metrics") == 0) {
		serve_metrics(k, req);
		return true;
	}
	if (strcmp(path, "/api/healthy") != 0)
		return false;
	b = evbuffer_new();
	evbuffer_add_printf(b, "{\"status\":\"OK\"}");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
	return true;
}
