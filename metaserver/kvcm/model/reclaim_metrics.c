/*
 * The reclaimer's metrics: the reference's cache_reclaimer.* counters and gauges, as Prometheus text named
 * mmc_kvcm_cache_reclaimer_* (counters end in _total, ages in seconds), and the way back from those names to the
 * reference's, for getMetrics. The in-flight gauges are also given per instance_group (and storage_type, the
 * reference's type names such as "file"), once a group has had a request: a drained group then reads 0.
 */
#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "clock.h"
#include "kvcm_state.h"
#include "reclaim.h"
#include "reclaim_state.h"
#include "wire_enums.h"

#define PREFIX "mmc_kvcm_cache_reclaimer_"

#define C(ref, prom, help, field)                                                                                      \
	{                                                                                                              \
		"cache_reclaimer." ref, prom, help, offsetof(struct reclaim_counters, field)                           \
	}

static const struct counter_def {
	const char *ref, *prom, *help;
	size_t off;
} counters[] = {
    C("reclaim_cron_count", "rounds_total", "Reclaimer rounds.", rounds),
    C("reclaim_job_count", "jobs_total", "Delete requests a round submitted.", jobs),
    C("block_submit_count", "submitted_blocks_total", "Blocks in submitted delete requests.", blocks_submitted),
    C("location_submit_count", "submitted_locations_total", "Locations in submitted delete requests.",
      locations_submitted),
    C("block_del_count", "deleted_blocks_total", "Blocks of completed delete requests.", blocks_deleted),
    C("location_del_count", "deleted_locations_total", "Locations of completed delete requests.", locations_deleted),
    C("credit_timeout_count", "credit_timeouts_total", "Delete requests whose water-level credit expired.",
      credit_timeouts),
    C("pending_limit_reject_count", "pending_limit_rejects_total", "Locations or requests a pending limit refused.",
      limit_rejects),
    C("duplicate_pending_location_filtered_count", "pending_locations_skipped_total",
      "Locations already being deleted that a request left out.", pending_skipped),
    C("reclaim_no_progress_backoff_count", "no_progress_backoffs_total",
      "Rounds that found a group over its water level and could submit nothing.", backoffs),
    C("delete_submit_count", "delete_requests_submitted_total", "Delete requests submitted.", requests_submitted),
    C("delete_complete_count", "delete_requests_completed_total", "Delete requests completed.", requests_completed),
    C("delete_fail_count", "delete_requests_failed_total", "Delete requests that failed.", requests_failed),
    C("group_lru_plan_count", "group_lru_plans_total", "Group LRU plans made.", plans),
    C("group_lru_partial_plan_count", "group_lru_partial_plans_total", "Plans that sampled only some instances.",
      partial_plans),
    C("group_lru_sampled_key_count", "group_lru_sampled_keys_total", "Keys sampled.", sampled_keys),
    C("group_lru_candidate_count", "group_lru_candidates_total", "Sampled keys with a location to delete.", candidates),
    C("group_lru_selected_block_count", "group_lru_selected_blocks_total", "Oldest candidates chosen.",
      selected_blocks),
    C("group_lru_submitted_block_count", "group_lru_submitted_blocks_total", "Chosen blocks submitted.",
      submitted_blocks),
    C("group_lru_delete_request_count", "group_lru_delete_requests_total", "Delete requests tried.", delete_requests),
    C("group_lru_request_limit_count", "group_lru_request_limit_stops_total",
      "Plans stopped at group_lru_max_delete_requests_per_round.", request_limit_stops),
    C("group_lru_watermark_stop_count", "group_lru_watermark_stops_total",
      "Plans stopped because the group got under its water level.", watermark_stops),
    C("group_lru_scope_change_stop_count", "group_lru_scope_change_stops_total",
      "Plans stopped because the storage types over their level changed.", scope_stops),
    C("group_lru_backpressure_stop_count", "group_lru_backpressure_stops_total",
      "Plans stopped by a process-wide pending limit.", backpressure_stops),
};

#undef C

/* The gauges; by_type: also per instance_group and storage_type; by_group: per instance_group. */
enum gauge { PENDING_REQUESTS, PENDING_LOCS, PENDING_BYTES, CREDITED_BYTES, PREDICTED_KEYS, OLDEST_AGE, NGAUGES };

static const struct gauge_def {
	const char *ref, *prom, *help;
	bool by_type, by_group;
	double scale; /* Prometheus value x scale = the reference's */
} gauges[NGAUGES] = {
    {"cache_reclaimer.pending_delete_handler_count", "pending_delete_requests", "Delete requests in flight.", false,
     false, 1},
    {"cache_reclaimer.pending_location_count", "pending_locations", "Locations of the requests in flight.", true, false,
     1},
    {"cache_reclaimer.pending_delete_bytes", "pending_delete_bytes", "Bytes of the requests in flight.", true, false,
     1},
    {"cache_reclaimer.credited_delete_bytes", "credited_delete_bytes",
     "Bytes of requests in flight taken off water levels.", true, false, 1},
    {"cache_reclaimer.predicted_deleted_key_count", "predicted_deleted_keys",
     "Keys requests in flight will delete, taken off key water levels.", false, true, 1},
    {"cache_reclaimer.oldest_pending_request_age_ms", "oldest_pending_request_age_seconds",
     "Age of the oldest request in flight.", false, false, 1000},
};

const char *reclaim_metric_reference(const char *name, double *scale)
{
	if (strncmp(name, PREFIX, strlen(PREFIX)) != 0)
		return NULL;
	name += strlen(PREFIX);
	*scale = 1;
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		if (strcmp(name, counters[i].prom) == 0)
			return counters[i].ref;
	for (size_t i = 0; i < NGAUGES; i++) {
		if (strcmp(name, gauges[i].prom) == 0) {
			*scale = gauges[i].scale;
			return gauges[i].ref;
		}
	}
	return NULL;
}

static void head(struct evbuffer *b, const char *prom, const char *help, const char *type)
{
	evbuffer_add_printf(b, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", prom, help, prom, type);
}

/* A group name as a label value: \\, \" and \n escaped, as the text format wants. */
static const char *escaped(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && n + 3 < cap; s++) {
		if (*s == '\\' || *s == '"' || *s == '\n')
			out[n++] = '\\';
		out[n++] = *s == '\n' ? 'n' : *s;
	}
	out[n] = '\0';
	return out;
}

static uint64_t acct_value(const struct reclaim_acct *a, enum gauge g, int t)
{
	switch (g) {
	case PENDING_LOCS:
		return a->pending_locs[t];
	case PENDING_BYTES:
		return a->pending_bytes[t];
	case CREDITED_BYTES:
		return a->credit_bytes[t];
	default:
		return a->credit_keys;
	}
}

static uint64_t total(const struct reclaimer *r, enum gauge g)
{
	uint64_t n = 0;

	if (g == PENDING_REQUESTS || g == PENDING_LOCS || g == PENDING_BYTES)
		return g == PENDING_REQUESTS ? r->pending_requests
		       : g == PENDING_LOCS   ? r->pending_locs
		                             : r->pending_bytes;
	for (struct list *it = r->accts.next; it != &r->accts; it = it->next) {
		const struct reclaim_acct *a = list_entry(it, struct reclaim_acct, link);

		for (int t = 0; g == CREDITED_BYTES && t < ST_COUNT; t++)
			n += a->credit_bytes[t];
		n += g == PREDICTED_KEYS ? a->credit_keys : 0;
	}
	return n;
}

static void labelled(struct evbuffer *b, const struct reclaimer *r, enum gauge g)
{
	char group[2 * KVCM_NAME_MAX + 1];

	for (struct list *it = r->accts.next; it != &r->accts; it = it->next) {
		const struct reclaim_acct *a = list_entry(it, struct reclaim_acct, link);

		escaped(a->group, group, sizeof(group));
		if (gauges[g].by_group)
			evbuffer_add_printf(b, PREFIX "%s{instance_group=\"%s\"} %" PRIu64 "\n", gauges[g].prom, group,
			                    acct_value(a, g, 0));
		for (int t = 0; gauges[g].by_type && t < ST_COUNT; t++)
			if (a->seen[t])
				evbuffer_add_printf(
				    b, PREFIX "%s{instance_group=\"%s\",storage_type=\"%s\"} %" PRIu64 "\n",
				    gauges[g].prom, group, storage_type_kind(t), acct_value(a, g, t));
	}
}

static void write_gauges(struct evbuffer *b, const struct reclaimer *r)
{
	const struct reclaim_request *oldest =
	    list_empty(&r->requests) ? NULL : list_entry(r->requests.next, struct reclaim_request, link);
	uint64_t now = clock_ms();

	for (int g = 0; g < NGAUGES; g++) {
		head(b, gauges[g].prom, gauges[g].help, "gauge");
		if (g == OLDEST_AGE)
			evbuffer_add_printf(
			    b, PREFIX "%s %.3f\n", gauges[g].prom,
			    oldest && now > oldest->submitted_ms ? (double)(now - oldest->submitted_ms) / 1e3 : 0.0);
		else
			evbuffer_add_printf(b, PREFIX "%s %" PRIu64 "\n", gauges[g].prom, total(r, (enum gauge)g));
		labelled(b, r, (enum gauge)g);
	}
}

/* pending_limit_rejects_total per instance_group and storage_type ("process" for the process-wide limits). */
static void write_rejects(struct evbuffer *b, const struct reclaimer *r)
{
	char group[2 * KVCM_NAME_MAX + 1];

	for (struct list *it = r->accts.next; it != &r->accts; it = it->next) {
		const struct reclaim_acct *a = list_entry(it, struct reclaim_acct, link);

		escaped(a->group, group, sizeof(group));
		for (int t = 0; t <= REJECT_PROCESS; t++)
			if (a->limit_rejects[t])
				evbuffer_add_printf(b,
				                    PREFIX "pending_limit_rejects_total{instance_group=\"%s\","
				                           "storage_type=\"%s\"} %" PRIu64 "\n",
				                    group, t == REJECT_PROCESS ? "process" : storage_type_kind(t),
				                    a->limit_rejects[t]);
	}
}

void reclaim_metrics_write(struct kvcm *k, struct evbuffer *b)
{
	struct reclaimer *r = k->reclaimer;

	if (!r)
		return;
	reclaim_collect(r); /* requests completed since the last round read as completed */
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		head(b, counters[i].prom, counters[i].help, "counter");
		evbuffer_add_printf(b, PREFIX "%s %" PRIu64 "\n", counters[i].prom,
		                    *(const uint64_t *)((const char *)&r->n + counters[i].off));
		if (counters[i].off == offsetof(struct reclaim_counters, limit_rejects))
			write_rejects(b, r);
	}
	write_gauges(b, r);
}
