/*
 * The meta server's settings as every layer reads them. Filled by meta_conf.c (defaults, --config, --env) before the
 * loop starts; SIGHUP changes a few fields on the loop thread.
 */
#ifndef MMC_SERVER_CONF_H
#define MMC_SERVER_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "tls_files.h"

struct meta_conf {
	char meta_service_url[1024];    /* ock.mmc.meta_service_url */
	char log_level[16];             /* ock.mmc.log_level */
	uint32_t evict_high;            /* ock.mmc.evict_threshold_high, % */
	uint32_t evict_low;             /* ock.mmc.evict_threshold_low, % */
	uint64_t lease_ttl_ms;          /* ock.mmc.meta.lease_ttl_ms */
	uint64_t lease_ttl_max_ms;      /* ock.mmc.meta.lease_ttl_max_ms */
	uint32_t heartbeat_timeout_ms;  /* ock.mmc.meta.heartbeat_timeout_ms */
	uint32_t rejoin_timeout_ms;     /* ock.mmc.meta.rejoin_timeout_ms */
	uint32_t rejoin_write_grace_ms; /* ock.mmc.meta.rejoin_write_grace_ms */
	uint32_t evict_wait_ms;         /* ock.mmc.meta.evict_wait_ms */
	uint64_t put_write_timeout_ms;  /* ock.mmc.meta.put_write_timeout_ms */
	uint32_t world_size;            /* ock.mmc.meta.world_size */
	uint32_t max_connections;       /* ock.mmc.meta.max_connections */
	uint32_t loop_spin_us;          /* ock.mmc.meta.loop_spin_us: 0, the loop never spins (daemon/loop.h) */
	char data_dir[1024];            /* ock.mmc.meta.data_dir (--data-dir) */
	uint64_t lmdb_map_size;         /* ock.mmc.meta.lmdb.map_size */
	bool lmdb_sync;                 /* ock.mmc.meta.lmdb.sync */
	uint32_t rewarm_watermark;      /* ock.mmc.rewarm.dram_watermark, % */
	/* the RPC port's guards (docs/operations.md, Security) */
	char auth_token[256];           /* ock.mmc.meta.auth_token, or read from ock.mmc.meta.auth_token_file */
	char auth_token_file[1024];     /* ock.mmc.meta.auth_token_file */
	char tenants_file[1024];        /* ock.mmc.meta.tenants_file: the tenants and their secrets (state/tenants.h) */
	bool allow_insecure_bind;       /* ock.mmc.meta.allow_insecure_bind */
	uint32_t hello_timeout_ms;      /* ock.mmc.meta.hello_timeout_ms */
	uint64_t max_buffered_input;    /* ock.mmc.meta.max_buffered_input, bytes */
	struct tls_files tls;           /* ock.mmc.tls.* */
	char log_path[1024];            /* ock.mmc.log_path: empty for stderr */
	bool log_rotation_set;          /* ock.mmc.log_rotation_file_size/_count given: ignored, warned about */
	char store_uri[1024];           /* ock.mmc.meta.store_uri (alias kvcm.registry_storage.uri): lmdb, redis:// */
	char store_password_file[1024]; /* ock.mmc.meta.store_password_file */
	char store_key_prefix[128];     /* ock.mmc.meta.store_key_prefix */
	uint32_t redis_timeout_ms;      /* ock.mmc.meta.redis.timeout_ms */
	uint32_t redis_wait_replicas;   /* ock.mmc.meta.redis.wait_replicas */
	uint32_t redis_wait_timeout_ms; /* ock.mmc.meta.redis.wait_timeout_ms */
};

#endif
