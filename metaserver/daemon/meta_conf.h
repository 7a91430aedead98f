/*
 * mmc-metaserver configuration: one table of every key the server takes, the object store's ock.mmc.* rows and the
 * KV Cache Manager's kvcm.* rows (kvcm_conf.h), each with its type, bounds, default and whether SIGHUP changes it;
 * filled from the rows' defaults, then --config FILE, then --env k=v.
 */
#ifndef MMC_META_CONF_H
#define MMC_META_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvcm_conf.h"
#include "server_conf.h"

struct conf_key;
struct meta_err;

/* What one reading of the configuration gives: the object store's settings and the KV Cache Manager's. */
struct meta_settings {
	struct meta_conf conf;
	struct kvcm_conf kvcm;
};

/* The server's one table: every ock.mmc.* and kvcm.* key, offsets into struct meta_settings, NULL-terminated (the
 * MemCache compatibility keys and the reference's keys of no effect are not rows: they set nothing).
 * tests/unit/documented_keys.py holds the docs and --help to it. */
const struct conf_key *meta_conf_keys(void);
/* The rows' defaults: of the whole table, or of the object store's rows only (for tests of the layers below). */
void meta_settings_defaults(struct meta_settings *s);
void meta_conf_defaults(struct meta_conf *c);
/* One line per row, for --help: name, what it takes, default, and "SIGHUP" where a reload changes it. */
void meta_conf_print_keys(FILE *f);
/*
 * Every call below returns 0, or MMC_INVALID_PARAM with *e filled (meta_err.h): exit code EXIT_CONFIG, the message,
 * and the key at fault, when there is one (a file that cannot be read or parsed has none).
 */
/* Sets one key, at start and at a reload alike (a reload then applies only the reloadable rows: reload.c). */
int meta_conf_set(struct meta_settings *s, const char *key, const char *value, struct meta_err *e);
/* Loads a `key = value` file through meta_conf_set. */
int meta_conf_load(struct meta_settings *s, const char *path, struct meta_err *e);
/* Cross-key checks (high > low, ...); e names the first key of the pair. */
int meta_conf_check(const struct meta_conf *c, struct meta_err *e);
/* Reads ock.mmc.meta.auth_token_file into auth_token and checks the token's length (the message never holds the
 * token). */
int meta_conf_resolve_secrets(struct meta_conf *c, struct meta_err *e);
/* Parses "tcp://host:port" (host a name, an IPv4 literal or a bracketed IPv6 literal) into host and port. */
int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port);

#endif
