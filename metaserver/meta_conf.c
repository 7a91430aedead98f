#include "meta_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_parse.h"
#include "kvcm/kvcm.h"
#include "log_level.h"
#include "mmc/mmc.h"
#include "store_uri.h"

#define F(field) offsetof(struct meta_conf, field), sizeof(((struct meta_conf *)0)->field)

static const struct conf_key keys[] = {
    {"ock.mmc.meta_service_url", CONF_STR, F(meta_service_url), 0, 0, NULL},
    {"ock.mmc.log_level", CONF_STR, F(log_level), 0, 0, log_level_names},
    {"ock.mmc.evict_threshold_high", CONF_U32, F(evict_high), 1, 99, NULL},
    {"ock.mmc.evict_threshold_low", CONF_U32, F(evict_low), 1, 98, NULL},
    {"ock.mmc.meta.lease_ttl_ms", CONF_U64, F(lease_ttl_ms), 1, 2147483647, NULL},
    {"ock.mmc.meta.heartbeat_timeout_ms", CONF_U32, F(heartbeat_timeout_ms), 100, 3600000, NULL},
    {"ock.mmc.meta.rejoin_timeout_ms", CONF_U32, F(rejoin_timeout_ms), 0, 86400000, NULL},
    {"ock.mmc.meta.rejoin_write_grace_ms", CONF_U32, F(rejoin_write_grace_ms), 0, 60000, NULL},
    {"ock.mmc.meta.evict_wait_ms", CONF_U32, F(evict_wait_ms), 0, 600000, NULL},
    {"ock.mmc.meta.world_size", CONF_U32, F(world_size), 1, 1024, NULL},
    {"ock.mmc.meta.max_connections", CONF_U32, F(max_connections), 1, 1000000, NULL},
    {"ock.mmc.meta.data_dir", CONF_STR, F(data_dir), 0, 0, NULL},
    {"ock.mmc.meta.lmdb.map_size", CONF_SIZE, F(lmdb_map_size), 1u << 20, UINT64_C(1) << 44, NULL},
    {"ock.mmc.meta.lmdb.sync", CONF_BOOL, F(lmdb_sync), 0, 0, NULL},
    {"ock.mmc.rewarm.dram_watermark", CONF_U32, F(rewarm_watermark), 0, 100, NULL},
    {"ock.mmc.log_path", CONF_STR, F(log_path), 0, 0, NULL},
    {"ock.mmc.meta.store_uri", CONF_STR, F(store_uri), 0, 0, NULL},
    {"ock.mmc.meta.store_password_file", CONF_STR, F(store_password_file), 0, 0, NULL},
    {"ock.mmc.meta.store_key_prefix", CONF_STR, F(store_key_prefix), 0, 0, NULL},
    {"ock.mmc.meta.redis.timeout_ms", CONF_U32, F(redis_timeout_ms), 10, 600000, NULL},
    {"ock.mmc.meta.redis.wait_replicas", CONF_U32, F(redis_wait_replicas), 0, 64, NULL},
    {"ock.mmc.meta.redis.wait_timeout_ms", CONF_U32, F(redis_wait_timeout_ms), 1, 600000, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL},
};

const struct conf_key *meta_conf_keys(void)
{
	return keys;
}

void meta_conf_defaults(struct meta_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->meta_service_url, "tcp://127.0.0.1:5000");
	strcpy(c->log_level, "info");
	c->evict_high = 90;
	c->evict_low = 80;
	c->lease_ttl_ms = 10000;
	c->heartbeat_timeout_ms = 10000;
	c->rejoin_timeout_ms = 60000;
	c->rejoin_write_grace_ms = 1000;
	c->evict_wait_ms = 2000;
	c->world_size = 1024;
	c->max_connections = 4096;
	strcpy(c->data_dir, "./mmc-data");
	c->lmdb_map_size = UINT64_C(64) << 30;
	c->lmdb_sync = true;
	c->rewarm_watermark = 95;
	strcpy(c->store_uri, "lmdb");
	strcpy(c->store_key_prefix, "mmc:");
	c->redis_timeout_ms = 2000;
	c->redis_wait_timeout_ms = 1000;
}

int meta_conf_set(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen)
{
	int rc;

	/* the reference's key for where the registry lives: here the one store of both halves of the server */
	if (strcmp(key, "kvcm.registry_storage.uri") == 0)
		key = "ock.mmc.meta.store_uri";
	if (strncmp(key, "kvcm.", 5) == 0)
		return kvcm_conf_set(key, value, err, errlen);
	if (conf_find(keys, key))
		return conf_apply(keys, c, key, value, err, errlen);
	rc = conf_apply_compat(CONF_SCOPE_SERVER, key, value, err, errlen);
	if (rc == 1 && strncmp(key, "ock.mmc.log_rotation_file_", 26) == 0)
		c->log_rotation_set = true;
	if (rc == 0) {
		snprintf(err, errlen, "unknown configuration key \"%s\"", key);
		return MMC_INVALID_PARAM;
	}
	return rc == 1 ? 0 : rc;
}

int meta_conf_set_reload(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen)
{
	/* the KV Cache Manager's settings live in one global that its running parts read: a reload must not write
	 * half a file into it, and none of them changes without a restart */
	if (strncmp(key, "kvcm.", 5) == 0)
		return 0;
	return meta_conf_set(c, key, value, err, errlen);
}

struct load_arg {
	struct meta_conf *c;
	int (*set)(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen);
	char *err;
	size_t errlen;
};

static int load_line(void *arg, const char *key, const char *value, int line)
{
	struct load_arg *a = arg;

	return a->set(a->c, key, value, a->err, a->errlen);
}

int meta_conf_load(struct meta_conf *c, const char *path, char *err, size_t errlen)
{
	struct load_arg a = {c, meta_conf_set, err, errlen};

	return conf_file_read(path, load_line, &a, err, errlen);
}

int meta_conf_load_reload(struct meta_conf *c, const char *path, char *err, size_t errlen)
{
	struct load_arg a = {c, meta_conf_set_reload, err, errlen};

	return conf_file_read(path, load_line, &a, err, errlen);
}

/* "lmdb" (or empty, the reference's local default) or a redis:// URI that parses. */
static int check_store_uri(const char *uri, char *err, size_t errlen)
{
	struct redis_uri u;

	if (!uri[0] || strcmp(uri, "lmdb") == 0)
		return 0;
	if (strncmp(uri, "redis://", 8) == 0)
		return redis_uri_parse(uri, &u, err, errlen);
	snprintf(err, errlen, "bad value for \"ock.mmc.meta.store_uri\" (expected lmdb or redis://host:port[/db])");
	return MMC_INVALID_PARAM;
}

int meta_conf_check(const struct meta_conf *c, char *err, size_t errlen)
{
	char host[256];
	uint16_t port;

	if (c->evict_high <= c->evict_low) {
		snprintf(err, errlen,
		         "ock.mmc.evict_threshold_high (%u) must be above ock.mmc.evict_threshold_low (%u)",
		         c->evict_high, c->evict_low);
		return MMC_INVALID_PARAM;
	}
	if (meta_conf_parse_url(c->meta_service_url, host, sizeof(host), &port)) {
		snprintf(err, errlen, "bad value \"%s\" for \"ock.mmc.meta_service_url\" (expected tcp://host:port)",
		         c->meta_service_url);
		return MMC_INVALID_PARAM;
	}
	if (!c->data_dir[0]) {
		snprintf(err, errlen, "ock.mmc.meta.data_dir must not be empty");
		return MMC_INVALID_PARAM;
	}
	return check_store_uri(c->store_uri, err, errlen);
}

int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	const char *h, *colon;
	char *end;
	unsigned long p;
	size_t n;

	if (strncmp(url, "tcp://", 6) != 0)
		return -1;
	h = url + 6;
	colon = strrchr(h, ':');
	if (!colon || colon == h)
		return -1;
	n = (size_t)(colon - h);
	if (n >= hostlen)
		return -1;
	p = strtoul(colon + 1, &end, 10);
	if (*end || colon[1] == '\0' || p > 65535)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (uint16_t)p;
	return 0;
}
