/*
 * mmc-metaserver configuration: the ock.mmc.* server keys, from defaults, then --config FILE, then --env k=v.
 * Keys under kvcm.* belong to the KV Cache Manager and are handed to it.
 */
#ifndef MMC_META_CONF_H
#define MMC_META_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_conf.h"

struct conf_key;

/* The ock.mmc.* server keys (offsets into struct meta_conf), NULL-terminated; kvcm.* keys are the KV Cache
 * Manager's, the MemCache compatibility keys conf_apply_compat()'s. tests/unit/documented_keys.py holds docs to it. */
const struct conf_key *meta_conf_keys(void);

void meta_conf_defaults(struct meta_conf *c);
/* Sets one key. ock.mmc.* keys go to c; kvcm.* keys to the KV Cache Manager. 0 or MMC_INVALID_PARAM + err. */
int meta_conf_set(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen);
/* Loads a `key = value` file through meta_conf_set. */
int meta_conf_load(struct meta_conf *c, const char *path, char *err, size_t errlen);
/* For a SIGHUP reload: as meta_conf_set and meta_conf_load, but kvcm.* keys are skipped (they take effect only at
 * start, and the KV Cache Manager's running settings must not change under it). */
int meta_conf_set_reload(struct meta_conf *c, const char *key, const char *value, char *err, size_t errlen);
int meta_conf_load_reload(struct meta_conf *c, const char *path, char *err, size_t errlen);
/* Cross-key checks (high > low, ...). */
int meta_conf_check(const struct meta_conf *c, char *err, size_t errlen);
/* Parses "tcp://host:port" into host and port. */
int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port);

#endif
