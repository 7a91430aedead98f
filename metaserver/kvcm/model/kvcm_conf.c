#include "kvcm_conf.h"

#include <stddef.h>
#include <stdio.h>

#include "conf_parse.h"
#include "mmc/mmc.h"

#define F(field) offsetof(struct kvcm_conf, field), sizeof(((struct kvcm_conf *)0)->field)

static struct kvcm_conf conf = {
    .bind = "127.0.0.1",
    .http_port = 6382,
    .admin_http_port = 6492,
    .max_body_bytes = 64u << 20,
    .max_keys = 65536,
    .max_connections = 1024,
    .idle_timeout_s = 120,
    .default_root = "/tmp/nfs/",
    .auto_create_group = true,
    .max_write_timeout_s = 1800,
    .empty_session_timeout_ms = 10000,
    .sweep_interval_ms = 1000,
    .max_sessions = 100000,
    .reclaim_interval_ms = 200,
    .reclaim_batch = 4096,
    .io_threads = 2,
    .er_heartbeat_timeout_ms = 30000,
    .er_cleanup_grace_ms = 300000,
    .er_liveness_interval_ms = 5000,
    .er_snapshot_min_interval_ms = 30000,
    .er_drain_timeout_ms = 10000,
    .rpc_port = 6381,
    .admin_rpc_port = 6491,
    .rpc_bind = "127.0.0.1",
    .grpc_max_message_bytes = 4u << 20,
    .grpc_enabled = true,
    .request_timeout_ms = 10000,
    .max_buffered_bytes = 256u << 20,
    .max_json_body_bytes = 8u << 20,
    .lease_ms = 10000,
    .loop_interval_ms = 100,
};

static const struct conf_key keys[] = {
    {"kvcm.service.bind", CONF_STR, F(bind), 0, 0, NULL},
    {"kvcm.service.http_port", CONF_U32, F(http_port), 0, 65535, NULL},
    {"kvcm.service.admin_http_port", CONF_U32, F(admin_http_port), 0, 65535, NULL},
    {"kvcm.service.max_body_size", CONF_SIZE, F(max_body_bytes), 1024, UINT64_C(1) << 31, NULL},
    {"kvcm.service.max_keys_per_request", CONF_U32, F(max_keys), 1, 16777216, NULL},
    {"kvcm.service.max_connections", CONF_U32, F(max_connections), 1, 1000000, NULL},
    {"kvcm.service.idle_timeout_seconds", CONF_U32, F(idle_timeout_s), 1, 86400, NULL},
    {"kvcm.service.advertised_host", CONF_STR, F(advertised_host), 0, 0, NULL},
    {"kvcm.service.enable_debug_service", CONF_BOOL, F(debug_service), 0, 0, NULL},
    {"kvcm.startup_config", CONF_STR, F(startup_config), 0, 0, NULL},
    {"kvcm.default_storage.root_path", CONF_STR, F(default_root), 0, 0, NULL},
    {"kvcm.instance_group.auto_create", CONF_BOOL, F(auto_create_group), 0, 0, NULL},
    {"kvcm.write_session.max_timeout_seconds", CONF_U32, F(max_write_timeout_s), 1, 86400, NULL},
    {"kvcm.write_session.empty_timeout_ms", CONF_U32, F(empty_session_timeout_ms), 0, 86400000, NULL},
    {"kvcm.write_session.sweep_interval_ms", CONF_U32, F(sweep_interval_ms), 10, 60000, NULL},
    {"kvcm.write_session.max_sessions", CONF_U32, F(max_sessions), 1, 100000000, NULL},
    {"kvcm.reclaim.interval_ms", CONF_U32, F(reclaim_interval_ms), 10, 60000, NULL},
    {"kvcm.reclaim.batch", CONF_U32, F(reclaim_batch), 1, 10000000, NULL},
    {"kvcm.io_threads", CONF_U32, F(io_threads), 1, 64, NULL},
    {"kvcm.event_report.heartbeat_timeout_ms", CONF_U32, F(er_heartbeat_timeout_ms), 1, 86400000, NULL},
    {"kvcm.event_report.cleanup_grace_ms", CONF_U32, F(er_cleanup_grace_ms), 1, 86400000, NULL},
    {"kvcm.event_report.liveness_check_interval_ms", CONF_U32, F(er_liveness_interval_ms), 1, 86400000, NULL},
    {"kvcm.event_report.snapshot_min_interval_ms", CONF_U32, F(er_snapshot_min_interval_ms), 1, 86400000, NULL},
    {"kvcm.event_report.snapshot_delta_drain_timeout_ms", CONF_U32, F(er_drain_timeout_ms), 1, 86400000, NULL},
    {"kvcm.distributed_lock.uri", CONF_STR, F(lock_uri), 0, 0, NULL},
    {"kvcm.coordination.uri", CONF_STR, F(lock_uri), 0, 0, NULL},
    {"kvcm.leader_elector.lease_ms", CONF_U32, F(lease_ms), 300, 3600000, NULL},
    {"kvcm.leader_elector.loop_interval_ms", CONF_U32, F(loop_interval_ms), 10, 600000, NULL},
    {"kvcm.leader_elector.node_id", CONF_STR, F(node_id), 0, 0, NULL},
    {"kvcm.leader_elector.campaign_delay_time_ms", CONF_U32, F(campaign_delay_ms), 0, 86400000, NULL},
    {"kvcm.service.rpc_port", CONF_U32, F(rpc_port), 0, 65535, NULL},
    {"kvcm.service.admin_rpc_port", CONF_U32, F(admin_rpc_port), 0, 65535, NULL},
    {"kvcm.service.rpc_bind", CONF_STR, F(rpc_bind), 0, 0, NULL},
    {"kvcm.service.grpc_max_message_size", CONF_SIZE, F(grpc_max_message_bytes), 1024, UINT64_C(1) << 30, NULL},
    {"kvcm.service.enable_grpc", CONF_BOOL, F(grpc_enabled), 0, 0, NULL},
    {"kvcm.service.io_thread_num", CONF_U32, F(compat_u32[0]), 0, 1024, NULL},
    {"kvcm.logger.log_level", CONF_U32, F(compat_u32[1]), 0, 5, NULL},
    {"kvcm.service.allow_insecure_bind", CONF_BOOL, F(allow_insecure_bind), 0, 0, NULL},
    {"kvcm.service.admin_user", CONF_STR, F(admin_user), 0, 0, NULL},
    {"kvcm.service.admin_password_file", CONF_STR, F(admin_password_file), 0, 0, NULL},
    {"kvcm.service.tls.cert_file", CONF_STR, F(tls_cert), 0, 0, NULL},
    {"kvcm.service.tls.key_file", CONF_STR, F(tls_key), 0, 0, NULL},
    {"kvcm.service.tls.ca_file", CONF_STR, F(tls_ca), 0, 0, NULL},
    {"kvcm.service.request_timeout_ms", CONF_U32, F(request_timeout_ms), 100, 3600000, NULL},
    {"kvcm.service.max_buffered_size", CONF_SIZE, F(max_buffered_bytes), 1u << 20, UINT64_C(1) << 40, NULL},
    {"kvcm.service.max_json_body_size", CONF_SIZE, F(max_json_body_bytes), 1024, UINT64_C(1) << 31, NULL},
    {"kvcm.storage.allowed_roots", CONF_STR, F(allowed_roots), 0, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL},
};

int kvcm_conf_set(const char *key, const char *value, char *err, size_t errlen)
{
	return conf_apply(keys, &conf, key, value, err, errlen);
}

const struct kvcm_conf *kvcm_conf(void)
{
	return &conf;
}
