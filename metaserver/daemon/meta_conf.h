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
struct meta_err;

/* The ock.mmc.* server keys (offsets into struct meta_conf), NULL-terminated; kvcm.* keys are the KV Cache
 * Manager's, the MemCache compatibility keys conf_apply_compat()'s. tests/unit/documented_keys.py holds docs to it. */
const struct conf_key *meta_conf_keys(void);

void meta_conf_defaults(struct meta_conf *c);
/*
 * Every call below returns 0, or MMC_INVALID_PARAM with *e filled (meta_err.h): exit code EXIT_CONFIG, the message,
 * and the key at fault, when there is one (a file that cannot be read or parsed has none).
 */
/* Sets one key. ock.mmc.* keys go to c; kvcm.* keys to the KV Cache Manager. */
int meta_conf_set(struct meta_conf *c, const char *key, const char *value, struct meta_err *e);
/* Loads a `key = value` file through meta_conf_set. */
int meta_conf_load(struct meta_conf *c, const char *path, struct meta_err *e);
/* For a SIGHUP reload: as meta_conf_set and meta_conf_load, but kvcm.* keys are skipped (they take effect only at
 * start, and the KV Cache Manager's running settings must not change under it). */
int meta_conf_set_reload(struct meta_conf *c, const char *key, const char *value, struct meta_err *e);
int meta_conf_load_reload(struct meta_conf *c, const char *path, struct meta_err *e);
/* Cross-key checks (high > low, ...); e names the first key of the pair. */
int meta_conf_check(const struct meta_conf *c, struct meta_err *e);
/* Reads ock.mmc.meta.auth_token_file into auth_token and checks the token's length (the message never holds the
 * token). */
int meta_conf_resolve_secrets(struct meta_conf *c, struct meta_err *e);
/* Parses "tcp://host:port" (host a name, an IPv4 literal or a bracketed IPv6 literal) into host and port. */
int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port);

#endif
