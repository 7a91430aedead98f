#include "kvcm_conf.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf_parse.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"

#define F(field) offsetof(struct kvcm_conf, field), sizeof(((struct kvcm_conf *)0)->field)

static const struct conf_key keys[] = {
    {"kvcm.service.bind", CONF_STR, F(bind), 0, 0, NULL, "127.0.0.1", 0},
    {"kvcm.service.http_port", CONF_U32, F(http_port), 0, 65535, NULL, "6382", 0},
    {"kvcm.service.admin_http_port", CONF_U32, F(admin_http_port), 0, 65535, NULL, "6492", 0},
    {"kvcm.service.max_body_size", CONF_SIZE, F(max_body_bytes), 1024, UINT64_C(1) << 31, NULL, "64MB", 0},
    {"kvcm.service.max_keys_per_request", CONF_U32, F(max_keys), 1, 16777216, NULL, "65536", 0},
    {"kvcm.service.max_connections", CONF_U32, F(max_connections), 1, 1000000, NULL, "1024", 0},
    {"kvcm.service.idle_timeout_seconds", CONF_U32, F(idle_timeout_s), 1, 86400, NULL, "120", 0},
    {"kvcm.service.advertised_host", CONF_STR, F(advertised_host), 0, 0, NULL, NULL, 0},
    {"kvcm.service.enable_debug_service", CONF_BOOL, F(debug_service), 0, 0, NULL, NULL, 0},
    {"kvcm.startup_config", CONF_STR, F(startup_config), 0, 0, NULL, NULL, 0},
    {"kvcm.default_storage.root_path", CONF_STR, F(default_root), 0, 0, NULL, "/tmp/nfs/", 0},
    {"kvcm.instance_group.auto_create", CONF_BOOL, F(auto_create_group), 0, 0, NULL, "false", CONF_RELOADABLE},
    {"kvcm.write_session.max_timeout_seconds", CONF_U32, F(max_write_timeout_s), 1, 86400, NULL, "1800",
     CONF_RELOADABLE},
    {"kvcm.write_session.empty_timeout_ms", CONF_U32, F(empty_session_timeout_ms), 0, 86400000, NULL, "10000",
     CONF_RELOADABLE},
    {"kvcm.write_session.sweep_interval_ms", CONF_U32, F(sweep_interval_ms), 10, 60000, NULL, "1000", 0},
    {"kvcm.write_session.max_sessions", CONF_U32, F(max_sessions), 1, 100000000, NULL, "100000", CONF_RELOADABLE},
    {"kvcm.write_session.max_sessions_per_instance", CONF_U32, F(max_sessions_per_instance), 1, 100000000, NULL,
     "10000", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.idle_interval_ms", CONF_U32, F(reclaim.idle_interval_ms), 1, 3600000, NULL, "100",
     CONF_RELOADABLE},
    {"kvcm.reclaim.interval_ms", CONF_U32, F(reclaim.idle_interval_ms), 1, 3600000, NULL, "100", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.del_batch_size", CONF_U32, F(reclaim.del_batch_size), 0, 65535, NULL, "100",
     CONF_RELOADABLE},
    {"kvcm.reclaim.batch", CONF_U32, F(reclaim.del_batch_size), 0, 65535, NULL, "100", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.key_sampling_size_total", CONF_U32, F(reclaim.sampling_size), 0, 65535, NULL, "100",
     CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.key_sampling_size_per_task", CONF_U32, F(reclaim.sampling_per_task), 0, UINT32_MAX, NULL,
     "100", 0},
    {"kvcm.cache_reclaimer.worker_size", CONF_U32, F(reclaim.worker_size), 0, 65535, NULL, "16", 0},
    {"kvcm.cache_reclaimer.group_lru_min_sampling_ratio", CONF_U32, F(reclaim.min_sampling_ratio), 1, 65535, NULL, "10",
     CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.group_lru_max_sampling_size", CONF_U32, F(reclaim.max_sampling_size), 1, 16777216, NULL,
     "65536", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.group_lru_max_delete_requests_per_round", CONF_U32, F(reclaim.max_requests), 1, UINT32_MAX,
     NULL, "128", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.inflight_delete_timeout_ms", CONF_U64, F(reclaim.credit_timeout_ms), 1, UINT64_MAX, NULL,
     "60000", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.pending_location_limit_per_group_type", CONF_U64, F(reclaim.pending_locations), 1,
     UINT64_MAX, NULL, "20000", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.pending_bytes_limit_per_group_type", CONF_SIZE, F(reclaim.pending_type_bytes), 1, UINT64_MAX,
     NULL, "1TB", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.pending_delete_handler_limit", CONF_U64, F(reclaim.pending_requests), 1, UINT64_MAX, NULL,
     "1024", CONF_RELOADABLE},
    {"kvcm.cache_reclaimer.pending_bytes_limit", CONF_SIZE, F(reclaim.pending_bytes), 1, UINT64_MAX, NULL, "4TB",
     CONF_RELOADABLE},
    {"kvcm.io_threads", CONF_U32, F(io_threads), 1, 64, NULL, "2", 0},
    {"kvcm.event_report.heartbeat_timeout_ms", CONF_U32, F(er_heartbeat_timeout_ms), 1, 86400000, NULL, "30000",
     CONF_RELOADABLE},
    {"kvcm.event_report.cleanup_grace_ms", CONF_U32, F(er_cleanup_grace_ms), 1, 86400000, NULL, "300000",
     CONF_RELOADABLE},
    {"kvcm.event_report.liveness_check_interval_ms", CONF_U32, F(er_liveness_interval_ms), 1, 86400000, NULL, "5000",
     0},
    {"kvcm.event_report.snapshot_min_interval_ms", CONF_U32, F(er_snapshot_min_interval_ms), 1, 86400000, NULL, "30000",
     CONF_RELOADABLE},
    {"kvcm.event_report.snapshot_delta_drain_timeout_ms", CONF_U32, F(er_drain_timeout_ms), 1, 86400000, NULL, "10000",
     0},
    {"kvcm.distributed_lock.uri", CONF_STR, F(lock_uri), 0, 0, NULL, NULL, 0},
    {"kvcm.coordination.uri", CONF_STR, F(lock_uri), 0, 0, NULL, NULL, 0},
    {"kvcm.distributed_lock.password_file", CONF_STR, F(lock_password_file), 0, 0, NULL, NULL, 0},
    {"kvcm.leader_elector.lease_ms", CONF_U32, F(lease_ms), 300, 3600000, NULL, "10000", 0},
    {"kvcm.leader_elector.loop_interval_ms", CONF_U32, F(loop_interval_ms), 10, 600000, NULL, "100", 0},
    {"kvcm.leader_elector.node_id", CONF_STR, F(node_id), 0, 0, NULL, NULL, 0},
    {"kvcm.leader_elector.campaign_delay_time_ms", CONF_U32, F(campaign_delay_ms), 0, 86400000, NULL, NULL, 0},
    {"kvcm.service.rpc_port", CONF_U32, F(rpc_port), 0, 65535, NULL, "6381", 0},
    {"kvcm.service.admin_rpc_port", CONF_U32, F(admin_rpc_port), 0, 65535, NULL, "6491", 0},
    {"kvcm.service.rpc_bind", CONF_STR, F(rpc_bind), 0, 0, NULL, "127.0.0.1", 0},
    {"kvcm.service.grpc_max_message_size", CONF_SIZE, F(grpc_max_message_bytes), 1024, UINT64_C(1) << 30, NULL, "4MB",
     0},
    {"kvcm.service.enable_grpc", CONF_BOOL, F(grpc_enabled), 0, 0, NULL, "true", 0},
    {"kvcm.service.custom_info", CONF_STR, F(custom_info), 0, 0, NULL, NULL, 0},
    {"kvcm.service.allow_insecure_bind", CONF_BOOL, F(allow_insecure_bind), 0, 0, NULL, NULL, 0},
    {"kvcm.service.admin_user", CONF_STR, F(admin_user), 0, 0, NULL, NULL, 0},
    {"kvcm.service.first_account_admin", CONF_BOOL, F(first_account_admin), 0, 0, NULL, NULL, CONF_RELOADABLE},
    {"kvcm.service.admin_password_file", CONF_STR, F(admin_password_file), 0, 0, NULL, NULL, 0},
    {"kvcm.service.tls.cert_file", CONF_STR, F(tls_cert), 0, 0, NULL, NULL, 0},
    {"kvcm.service.tls.key_file", CONF_STR, F(tls_key), 0, 0, NULL, NULL, 0},
    {"kvcm.service.tls.ca_file", CONF_STR, F(tls_ca), 0, 0, NULL, NULL, 0},
    {"kvcm.service.request_timeout_ms", CONF_U32, F(request_timeout_ms), 100, 3600000, NULL, "10000", 0},
    {"kvcm.service.max_buffered_size", CONF_SIZE, F(max_buffered_bytes), 1u << 20, UINT64_C(1) << 40, NULL, "256MB", 0},
    {"kvcm.service.max_json_body_size", CONF_SIZE, F(max_json_body_bytes), 1024, UINT64_C(1) << 31, NULL, "8MB", 0},
    {"kvcm.storage.allowed_roots", CONF_STR, F(allowed_roots), 0, 0, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

/* clang-format off */
#define NO_EFFECT(name, type, max) {name, type, 0, 1024, 0, max, NULL, NULL, 0}
/* clang-format on */
#define NO_GC       "mmc has no metadata GC scan"
#define NO_RAFT     "no Raft here: leader election uses kvcm.distributed_lock.uri"
#define NO_REPORTER "metrics are Prometheus text on GET /metrics"
#define ON_LOOP     "queries run on the event loop"

/*
 * Keys the reference server takes (tair-kvcache's server_config.cc) that configure nothing here: the value is
 * checked, then one warning says why it has no effect, so the reference's command lines and config files start mmc.
 * The kvcm.cache_reclaimer.* keys are model/reclaim.c's.
 */
static const struct {
	struct conf_key k;
	const char *why;
} no_effect[] = {
    {NO_EFFECT("kvcm.service.io_thread_num", CONF_U32, 1024), "the KVCM is served from the meta server's event loop"},
    {NO_EFFECT("kvcm.logger.log_level", CONF_U32, 5), "logging follows ock.mmc.log_level and updateLogger"},
    {NO_EFFECT("kvcm.service.admin_auth_token", CONF_STR, 0),
     "no Bearer tokens here: the admin port is guarded by accounts (kvcm.service.admin_user)"},
    {NO_EFFECT("kvcm.kv_meta.rpc_port", CONF_U32, 65535), "mmc has no KVMeta object service"},
    {NO_EFFECT("kvcm.schedule_plan_executor_thread_count", CONF_U32, 1024), "deletes run on kvcm.io_threads"},
    {NO_EFFECT("kvcm.schedule_plan_migration_worker_budget", CONF_U32, 1024), "mmc has no tiered-storage migration"},
    {NO_EFFECT("kvcm.meta_query.worker_count", CONF_U32, 1024), ON_LOOP},
    {NO_EFFECT("kvcm.meta_query.parallel_threshold", CONF_U32, UINT32_MAX), ON_LOOP},
    {NO_EFFECT("kvcm.meta_query.chunk_size", CONF_U32, UINT32_MAX), ON_LOOP},
    {NO_EFFECT("kvcm.cache_gc.enabled", CONF_BOOL, 0), "orphaned WRITING locations are swept when the state loads"},
    {NO_EFFECT("kvcm.cache_gc.scan_interval_ms", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.cache_gc.round_pause_ms", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.cache_gc.scan_batch_size", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.cache_gc.orphan_writing_grace_period_ms", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.cache_gc.max_inflight_delete_requests", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.cache_gc.event_report_cleanup_enabled", CONF_BOOL, 0),
     "event-report metadata is cleaned up by its reporter's snapshot and liveness"},
    {NO_EFFECT("kvcm.cache_gc.event_report_action_batch_size", CONF_STR, 0), NO_GC},
    {NO_EFFECT("kvcm.metrics.reporter_type", CONF_STR, 0), NO_REPORTER},
    {NO_EFFECT("kvcm.metrics.reporter_config", CONF_STR, 0), NO_REPORTER},
    {NO_EFFECT("kvcm.metrics.report_interval_ms", CONF_STR, 0), NO_REPORTER},
    {NO_EFFECT("kvcm.metrics.enable_prometheus", CONF_STR, 0), "GET /metrics is always served"},
    {NO_EFFECT("kvcm.metrics.prometheus_prefix", CONF_STR, 0), "metric names start with mmc_"},
    {NO_EFFECT("kvcm.metrics.revisit_interval_buckets", CONF_STR, 0), "mmc keeps no revisit histogram"},
    {NO_EFFECT("kvcm.event.event_publishers_configs", CONF_STR, 0), "mmc publishes no cache events"},
    {NO_EFFECT("kvcm.affinity.enabled", CONF_STR, 0), "mmc has no cache affinity layer"},
    {NO_EFFECT("kvcm.affinity.strategy_file", CONF_STR, 0), "mmc has no cache affinity layer"},
    {NO_EFFECT("kvcm.raft.server_id", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.host", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.port", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.peers", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.data_dir", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.snapshot_distance", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.election_timeout_lower", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.election_timeout_upper", CONF_STR, 0), NO_RAFT},
    {NO_EFFECT("kvcm.raft.heart_beat_interval", CONF_STR, 0), NO_RAFT},
};

/* 1: a key of no_effect, accepted with its warning; 0: not one; MMC_INVALID_PARAM: a bad value. */
static int no_effect_key(const char *key, const char *value, char *err, size_t errlen)
{
	union {
		char s[1024];
		uint32_t u;
		bool b;
	} sink;

	for (size_t i = 0; i < sizeof(no_effect) / sizeof(no_effect[0]); i++) {
		struct conf_key one[2] = {no_effect[i].k, {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}};

		if (strcmp(key, one[0].name) != 0)
			continue;
		if (conf_apply(one, &sink, key, value, err, errlen))
			return MMC_INVALID_PARAM;
		/* a text value is not shown: the reference's kvcm.service.admin_auth_token is a secret */
		log_warn("op=config key=%s value=\"%s\" note=\"no effect in mmc: %s\"", key,
		         one[0].type == CONF_STR ? "(not shown)" : value, no_effect[i].why);
		return 1;
	}
	return 0;
}

const char *kvcm_registry_uri(const char *value)
{
	if (strncmp(value, "local://", 8) != 0)
		return value;
	log_info("op=config key=kvcm.registry_storage.uri value=\"%s\" note=\"the registry is kept in LMDB in the data "
	         "directory; the local:// path is not used\"",
	         value);
	return "lmdb";
}

const struct conf_key *kvcm_conf_keys(void)
{
	return keys;
}

int kvcm_conf_compat(const char *key, const char *value, char *err, size_t errlen)
{
	return no_effect_key(key, value, err, errlen);
}

/* The configuration in force: the rows' defaults until kvcm_conf_use() installs the server's. */
static struct kvcm_conf conf;
static bool conf_set;

void kvcm_conf_use(const struct kvcm_conf *c)
{
	conf = *c;
	conf_set = true;
}

const struct kvcm_conf *kvcm_conf(void)
{
	char err[256];

	if (!conf_set && conf_defaults(keys, &conf, err, sizeof(err)) == 0)
		conf_set = true;
	return &conf;
}

void kvcm_conf_reload(struct kvcm *k, const struct kvcm_conf *fresh)
{
	for (const struct conf_key *row = keys; row->name; row++) {
		if (!(row->flags & CONF_RELOADABLE))
			continue;
		memcpy((char *)&conf + row->offset, (const char *)fresh + row->offset, row->size);
		/* the running copy's other fields may have been changed by the admin API (campaign_delay_ms) */
		if (k)
			memcpy((char *)&k->conf + row->offset, (const char *)fresh + row->offset, row->size);
	}
}
