#include "meta_metrics.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>

#include "meta.h"
#include "mmc.pb-c.h"
#include "persist.h"
#include "quarantine.h"
#include "services.h"
#include "space.h"

static void metric(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name, v);
}

/* Connections the RPC port closed before they got in, or cut off (enum rpc_refusal). */
static void rpc_refusals_write(const struct meta *m, struct evbuffer *b)
{
	static const char *const reason[RPC_REFUSED_COUNT] = {
	    "credentials", "wire_version", "hello_timeout", "displaced", "limit", "input_budget", "early_frame", "tls"};

	evbuffer_add_printf(b, "# HELP mmc_rpc_refused_total RPC connections refused or cut off, by reason.\n"
	                       "# TYPE mmc_rpc_refused_total counter\n");
	for (int i = 0; i < RPC_REFUSED_COUNT; i++)
		evbuffer_add_printf(b, "mmc_rpc_refused_total{reason=\"%s\"} %" PRIu64 "\n", reason[i],
		                    m->stats.rpc_refused[i]);
}

/* Every reason always, 0 included: increase() over a series that appears only at its first loss would miss it. */
static void unmounts_write(const struct meta *m, struct evbuffer *b)
{
	evbuffer_add_printf(b, "# HELP mmc_unmounts_total Local services unmounted, by reason (unregister: a clean "
	                       "exit; any other: lost).\n# TYPE mmc_unmounts_total counter\n");
	for (int i = 0; i < UNMOUNT_COUNT; i++)
		evbuffer_add_printf(b, "mmc_unmounts_total{reason=\"%s\"} %" PRIu64 "\n", unmount_reason_names[i],
		                    m->stats.unmounts[i]);
}

/* Metadata commits by store backend. The mmc_lmdb_* names came first and stay (dashboards use them); they count
 * the same commits whatever the backend. */
static void store_commits_write(const struct meta *m, struct evbuffer *b)
{
	const char *store = persist_backend_name(m->persist);
	uint64_t commits = persist_commits(m->persist), failures = persist_failures(m->persist);

	evbuffer_add_printf(b,
	                    "# HELP mmc_store_commits_total Metadata group commits, by store (an fsync each with LMDB "
	                    "and lmdb.sync on).\n# TYPE mmc_store_commits_total counter\n"
	                    "mmc_store_commits_total{store=\"%s\"} %" PRIu64 "\n"
	                    "# HELP mmc_store_commit_failures_total Metadata commits that failed (map full, I/O error, "
	                    "the store unreachable): their changes are in memory only.\n"
	                    "# TYPE mmc_store_commit_failures_total counter\n"
	                    "mmc_store_commit_failures_total{store=\"%s\"} %" PRIu64 "\n",
	                    store, commits, store, failures);
	metric(b, "mmc_lmdb_commits_total", "counter",
	       "Metadata group commits; mmc_store_commits_total by another name.", commits);
	metric(b, "mmc_lmdb_commit_failures_total", "counter",
	       "Failed metadata commits; mmc_store_commit_failures_total by another name.", failures);
}

/* Per tenant, with ock.mmc.meta.tenants_file set: what each holds and what its quota refused. */
static void tenants_write(const struct meta *m, struct evbuffer *b)
{
	static const struct {
		const char *name, *type, *help;
		size_t at;
	} rows[] = {
	    {"mmc_tenant_objects", "gauge", "Keys of the tenant in the object index.",
	     offsetof(struct tenant, objects)},
	    {"mmc_tenant_bytes", "gauge", "Pool bytes the tenant's objects take (size rounded to 4 KiB, x replicas).",
	     offsetof(struct tenant, bytes)},
	    {"mmc_tenant_refused_total", "counter", "Placements refused: the tenant's quota had no room left.",
	     offsetof(struct tenant, refused)},
	    {"mmc_tenant_quota_evictions_total", "counter",
	     "The tenant's own objects evicted to make room inside its quota.", offsetof(struct tenant, quota_evicted)},
	};

	for (size_t r = 0; m->tenants.n && r < sizeof(rows) / sizeof(rows[0]); r++) {
		evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", rows[r].name, rows[r].help, rows[r].name,
		                    rows[r].type);
		for (uint32_t i = 0; i < m->tenants.n; i++)
			evbuffer_add_printf(b, "%s{tenant=\"%s\"} %" PRIu64 "\n", rows[r].name, m->tenants.t[i].name,
			                    *(const uint64_t *)((const char *)&m->tenants.t[i] + rows[r].at));
	}
}

void meta_metrics_write(struct meta *m, struct evbuffer *b)
{
	static const char *const media[MEDIA_COUNT] = {"hbm", "dram", "ssd"};

	metric(b, "mmc_objects", "gauge", "Keys in the object index (readable or being written).", m->nobjects);
	metric(b, "mmc_local_services", "gauge", "Local services known (attached or waiting to rejoin).", m->nservices);
	metric(b, "mmc_connections", "gauge", "libmmc connections.", m->nconns);
	metric(b, "mmc_evictions_total", "counter", "Objects evicted (moved down a tier or removed).",
	       m->stats.evictions);
	unmounts_write(m, b);
	store_commits_write(m, b);
	evbuffer_add_printf(
	    b,
	    "# HELP mmc_store_last_commit_seconds Duration of the latest metadata commit (LMDB or Redis).\n"
	    "# TYPE mmc_store_last_commit_seconds gauge\nmmc_store_last_commit_seconds %.9f\n",
	    (double)persist_last_commit_ns(m->persist) / 1e9);
	evbuffer_add_printf(b,
	                    "# HELP mmc_pool_bytes Pool capacity by media, attached services.\n"
	                    "# TYPE mmc_pool_bytes gauge\n"
	                    "# HELP mmc_pool_used_bytes Pool bytes reserved by media, attached services.\n"
	                    "# TYPE mmc_pool_used_bytes gauge\n"
	                    "# HELP mmc_pool_held_bytes Freed pool bytes waiting for the commit of their delete.\n"
	                    "# TYPE mmc_pool_held_bytes gauge\n"
	                    "# HELP mmc_pool_lost_bytes Freed pool bytes whose delete failed to commit: reused after a "
	                    "restart.\n"
	                    "# TYPE mmc_pool_lost_bytes gauge\n"
	                    "# HELP mmc_pool_quarantined_bytes Pool bytes a given-up write may still reach, set aside "
	                    "until their owner is seen running.\n"
	                    "# TYPE mmc_pool_quarantined_bytes gauge\n");
	for (uint32_t i = 0; i < MEDIA_COUNT; i++) {
		uint64_t used, total, held, lost;

		space_usage(m, i, &used, &total);
		space_held(m, i, &held, &lost);
		evbuffer_add_printf(
		    b, "mmc_pool_bytes{media=\"%s\"} %" PRIu64 "\nmmc_pool_used_bytes{media=\"%s\"} %" PRIu64 "\n",
		    media[i], total, media[i], used);
		evbuffer_add_printf(
		    b, "mmc_pool_held_bytes{media=\"%s\"} %" PRIu64 "\nmmc_pool_lost_bytes{media=\"%s\"} %" PRIu64 "\n",
		    media[i], held, media[i], lost);
		evbuffer_add_printf(b, "mmc_pool_quarantined_bytes{media=\"%s\"} %" PRIu64 "\n", media[i],
		                    quarantine_bytes(m, i));
	}
	metric(b, "mmc_quarantined_total", "counter",
	       "Pool ranges set aside because a given-up write may still reach them.", m->stats.quarantined_total);
	metric(b, "mmc_loop_spin_requests_total", "counter",
	       "Reads of libmmc requests the loop met polling between close requests, not woken for.",
	       m->stats.spin_caught);
	evbuffer_add_printf(b,
	                    "# HELP mmc_loop_spin_seconds_total CPU time of the loop's polls for a next request that "
	                    "found nothing to do (ock.mmc.meta.loop_spin_us).\n"
	                    "# TYPE mmc_loop_spin_seconds_total counter\n"
	                    "mmc_loop_spin_seconds_total %.6f\n",
	                    (double)m->stats.spin_ns / 1e9);
	rpc_refusals_write(m, b);
	tenants_write(m, b);
	evbuffer_add_printf(b, "# HELP mmc_rpc_requests_total libmmc requests by operation.\n"
	                       "# TYPE mmc_rpc_requests_total counter\n");
	for (unsigned i = 0; i < mmc__frame__descriptor.n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &mmc__frame__descriptor.fields[i];
		uint64_t n = m->stats.requests[fd->id % 64]; /* rpc.c counts by body case, mod 64 */

		if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && n)
			evbuffer_add_printf(b, "mmc_rpc_requests_total{op=\"%s\"} %" PRIu64 "\n", fd->name, n);
	}
}
