/*
 * KVCM configuration: every kvcm.* key as a row of a conf_key table (type, bounds, default, whether SIGHUP changes
 * it), which the meta server's configuration (metaserver/daemon/meta_conf.c) joins to its own: one table for the
 * whole server, read from `--env kvcm.x=y` or the config file. Installed before kvcm_start(); a reload changes only
 * the reloadable rows. docs/kvcm.md lists every key with its default.
 */
#ifndef MMC_KVCM_CONF_H
#define MMC_KVCM_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cache reclaimer (model/reclaim.c): the reference's kvcm.cache_reclaimer.* keys. */
struct kvcm_reclaim_conf {
	uint32_t idle_interval_ms;   /* after a round that submitted nothing (alias kvcm.reclaim.interval_ms) */
	uint32_t del_batch_size;     /* blocks per delete request, B (alias kvcm.reclaim.batch); 0: no reclaim */
	uint32_t sampling_size;      /* key_sampling_size_total: keys sampled per instance, S; 0: no reclaim */
	uint32_t sampling_per_task;  /* key_sampling_size_per_task: no effect (sampling walks LRU lists in memory) */
	uint32_t worker_size;        /* no effect (the reclaimer runs on the event loop) */
	uint32_t min_sampling_ratio; /* group_lru_min_sampling_ratio, R: S is at least B x R */
	uint32_t max_sampling_size;  /* group_lru_max_sampling_size: keys sampled per group and round */
	uint32_t max_requests;       /* group_lru_max_delete_requests_per_round */
	uint64_t credit_timeout_ms;  /* inflight_delete_timeout_ms: credit lasts the delay plus this */
	uint64_t pending_locations;  /* pending_location_limit_per_group_type */
	uint64_t pending_type_bytes; /* pending_bytes_limit_per_group_type */
	uint64_t pending_requests;   /* pending_delete_handler_limit */
	uint64_t pending_bytes;      /* pending_bytes_limit */
};

struct kvcm_conf {
	char bind[256];
	uint32_t http_port;
	uint32_t admin_http_port;
	uint64_t max_body_bytes;
	uint32_t max_keys;
	uint32_t max_connections;
	uint32_t idle_timeout_s;
	char advertised_host[256];
	bool debug_service; /* the fault-injection APIs on the admin port */
	char startup_config[1024];
	char default_root[1024];
	bool auto_create_group;
	uint32_t max_write_timeout_s;
	uint32_t empty_session_timeout_ms;
	uint32_t sweep_interval_ms;
	uint32_t max_sessions;
	uint32_t max_sessions_per_instance;
	struct kvcm_reclaim_conf reclaim;
	uint32_t io_threads;
	/* reportEvent defaults for event-report storages that do not set their own */
	uint32_t er_heartbeat_timeout_ms;
	uint32_t er_cleanup_grace_ms;
	uint32_t er_liveness_interval_ms;
	uint32_t er_snapshot_min_interval_ms;
	uint32_t er_drain_timeout_ms;
	/* gRPC (grpc/): listeners on these ports (0: any free port), bound to rpc_bind */
	uint32_t rpc_port;
	uint32_t admin_rpc_port;
	char rpc_bind[256];
	uint64_t grpc_max_message_bytes;
	bool grpc_enabled;
	/* leader election (metaserver/ha): no lock URI, no election (one server, always the leader) */
	char lock_uri[1024];           /* kvcm.distributed_lock.uri, alias kvcm.coordination.uri */
	char lock_password_file[1024]; /* kvcm.distributed_lock.password_file: a redis:// lock's password */
	uint32_t lease_ms;             /* kvcm.leader_elector.lease_ms */
	uint32_t loop_interval_ms;     /* kvcm.leader_elector.loop_interval_ms */
	char node_id[128];             /* kvcm.leader_elector.node_id; "" : host:admin_port_random */
	uint32_t campaign_delay_ms; /* kvcm.leader_elector.campaign_delay_time_ms: a demoted leader waits this long */
	char custom_info[1024]; /* this node's custom_info in cluster info while it leads ("": rpc=<libmmc address>) */
	/* security and resource limits (docs/operations.md, "Security") */
	bool allow_insecure_bind;       /* a non-loopback bind without credentials */
	char admin_user[256];           /* bootstrap ROLE_ADMIN account, with admin_password_file */
	bool first_account_admin;       /* addAccount refuses a ROLE_USER while no ROLE_ADMIN exists (mmc's old rule) */
	char admin_password_file[1024]; /* its password: the file's first line */
	char tls_cert[1024];            /* PEM certificate chain: both ports speak TLS only */
	char tls_key[1024];             /* PEM private key */
	char tls_ca[1024];              /* PEM CA bundle: clients must present a certificate it signed */
	uint32_t request_timeout_ms;    /* a request must arrive whole this long after its first byte */
	uint64_t max_buffered_bytes;    /* request bytes held across all connections of both ports */
	uint64_t max_json_body_bytes;   /* larger bodies only through a route's streaming reader, else 413 */
	char allowed_roots[4096];       /* addStorage root paths lie under one of these (comma-separated) */
};

struct conf_key;
struct kvcm;

/* The kvcm.* keys, NULL-terminated: offsets into struct kvcm_conf, each with its default and flags. */
const struct conf_key *kvcm_conf_keys(void);
/* The reference server's keys that configure nothing here: 1 when key is one and its value is good (one warning
 * says why it has no effect), 0 when it is not one, MMC_INVALID_PARAM (message in err) for a bad value. */
int kvcm_conf_compat(const char *key, const char *value, char *err, size_t errlen);
/* kvcm.registry_storage.uri as the meta server's store URI: the reference's local:// registry (in memory, or files
 * at its path) is LMDB in the data directory here, said once in the log; any other value as it is. */
const char *kvcm_registry_uri(const char *value);
/* Installs c as the configuration in force (at start, before kvcm_start, kvcm_listen or kvcm_check). */
void kvcm_conf_use(const struct kvcm_conf *c);
/* The configuration in force (the rows' defaults until kvcm_conf_use). */
const struct kvcm_conf *kvcm_conf(void);
/* A SIGHUP reload: the reloadable rows of fresh become the configuration in force and k's (k may be NULL); the
 * others stay as they are. Loop thread. */
void kvcm_conf_reload(struct kvcm *k, const struct kvcm_conf *fresh);

#endif
