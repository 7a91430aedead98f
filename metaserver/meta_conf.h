/*
 * mmc-metaserver configuration: the ock.mmc.* server keys, from defaults, then --config FILE, then --env k=v.
 * Keys under kvcm.* belong to the KV Cache Manager and are handed to it.
 */
#ifndef MMC_META_CONF_H
#define MMC_META_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct meta_conf {
	char meta_service_url[1024];   /* ock.mmc.meta_service_url */
	char log_level[16];            /* ock.mmc.log_level */
	uint32_t evict_high;           /* ock.mmc.evict_threshold_high, % */
	uint32_t evict_low;            /* ock.mmc.evict_threshold_low, % */
	uint64_t lease_ttl_ms;         /* ock.mmc.meta.lease_ttl_ms */
	uint32_t heartbeat_timeout_ms; /* ock.mmc.meta.heartbeat_timeout_ms */
	uint32_t rejoin_timeout_ms;    /* ock.mmc.meta.rejoin_timeout_ms */
	uint32_t evict_wait_ms;        /* ock.mmc.meta.evict_wait_ms */
	uint32_t world_size;           /* ock.mmc.meta.world_size */
	uint32_t max_connections;      /* ock.mmc.meta.max_connections */
	char data_dir[1024];           /* ock.mmc.meta.data_dir (--data-dir) */
	uint64_t lmdb_map_size;        /* ock.mmc.meta.lmdb.map_size */
	bool lmdb_sync;                /* ock.mmc.meta.lmdb.sync */
	uint32_t rewarm_watermark;     /* ock.mmc.rewarm.dram_watermark, % */
};

void meta_conf_defaults(struct meta_conf *c);
/* Sets one key. ock.mmc.* keys go to c; kvcm.* keys to the KV Cache Manager. 0 or MMC_INVALID_PARAM + err. */
int meta_conf_set(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen);
/* Loads a `key = value` file through meta_conf_set. */
int meta_conf_load(struct meta_conf *c, const char *path, char *err, size_t errlen);
/* Cross-key checks (high > low, ...). */
int meta_conf_check(const struct meta_conf *c, char *err, size_t errlen);
/* Parses "tcp://host:port" into host and port. */
int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port);

#endif
