#include "meta_conf.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_parse.h"
#include "kvcm_conf.h"
#include "log.h"
#include "log_level.h"
#include "meta_err.h"
#include "mmc/mmc.h"
#include "secret_file.h"
#include "store_uri.h"
#include "tcp_url.h"
#include "wire_limits.h"

#define F(field) offsetof(struct meta_conf, field), sizeof(((struct meta_conf *)0)->field)

static const struct conf_key keys[] = {
    {"ock.mmc.meta_service_url", CONF_STR, F(meta_service_url), 0, 0, NULL, "tcp://127.0.0.1:5000", 0},
    {"ock.mmc.log_level", CONF_STR, F(log_level), 0, 0, log_level_names, "info", CONF_RELOADABLE},
    {"ock.mmc.evict_threshold_high", CONF_U32, F(evict_high), 1, 99, NULL, "90", CONF_RELOADABLE},
    {"ock.mmc.evict_threshold_low", CONF_U32, F(evict_low), 1, 98, NULL, "80", CONF_RELOADABLE},
    {"ock.mmc.meta.lease_ttl_ms", CONF_U64, F(lease_ttl_ms), 1, 2147483647, NULL, "10000", CONF_RELOADABLE},
    {"ock.mmc.meta.lease_ttl_max_ms", CONF_U64, F(lease_ttl_max_ms), 1, 2147483647, NULL, "600000", CONF_RELOADABLE},
    {"ock.mmc.meta.heartbeat_timeout_ms", CONF_U32, F(heartbeat_timeout_ms), 100, 3600000, NULL, "10000", 0},
    {"ock.mmc.meta.rejoin_timeout_ms", CONF_U32, F(rejoin_timeout_ms), 0, 86400000, NULL, "60000", 0},
    {"ock.mmc.meta.rejoin_write_grace_ms", CONF_U32, F(rejoin_write_grace_ms), 0, 60000, NULL, "1000", 0},
    {"ock.mmc.meta.evict_wait_ms", CONF_U32, F(evict_wait_ms), 0, 600000, NULL, "2000", 0},
    {"ock.mmc.meta.put_write_timeout_ms", CONF_U64, F(put_write_timeout_ms), 1000, 86400000, NULL, "120000",
     CONF_RELOADABLE},
    {"ock.mmc.meta.world_size", CONF_U32, F(world_size), 1, 1024, NULL, "1024", 0},
    {"ock.mmc.meta.max_connections", CONF_U32, F(max_connections), 1, 1000000, NULL, "4096", 0},
    {"ock.mmc.meta.loop_spin_us", CONF_U32, F(loop_spin_us), 0, 1000, NULL, "50", CONF_RELOADABLE},
    {"ock.mmc.meta.data_dir", CONF_STR, F(data_dir), 0, 0, NULL, "./mmc-data", 0},
    {"ock.mmc.meta.lmdb.map_size", CONF_SIZE, F(lmdb_map_size), 1u << 20, UINT64_C(1) << 44, NULL, "64GB", 0},
    {"ock.mmc.meta.lmdb.sync", CONF_BOOL, F(lmdb_sync), 0, 0, NULL, "true", 0},
    {"ock.mmc.rewarm.dram_watermark", CONF_U32, F(rewarm_watermark), 0, 100, NULL, "95", 0},
    {"ock.mmc.meta.auth_token", CONF_STR, F(auth_token), 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.auth_token_file", CONF_STR, F(auth_token_file), 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.tenants_file", CONF_STR, F(tenants_file), 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.allow_insecure_bind", CONF_BOOL, F(allow_insecure_bind), 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.hello_timeout_ms", CONF_U32, F(hello_timeout_ms), 100, 600000, NULL, "10000", 0},
    {"ock.mmc.meta.max_buffered_input", CONF_SIZE, F(max_buffered_input), MMC_FRAME_MAX + 4, UINT64_C(1) << 40, NULL,
     "256MB", 0},
    TLS_FILES_KEYS(F),
    {"ock.mmc.log_path", CONF_STR, F(log_path), 0, 0, NULL, NULL, CONF_RELOADABLE},
    {"ock.mmc.meta.store_uri", CONF_STR, F(store_uri), 0, 0, NULL, "lmdb", 0},
    {"ock.mmc.meta.store_password_file", CONF_STR, F(store_password_file), 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.store_key_prefix", CONF_STR, F(store_key_prefix), 0, 0, NULL, "mmc:", 0},
    {"ock.mmc.meta.redis.timeout_ms", CONF_U32, F(redis_timeout_ms), 10, 600000, NULL, "2000", 0},
    {"ock.mmc.meta.redis.wait_replicas", CONF_U32, F(redis_wait_replicas), 0, 64, NULL, NULL, 0},
    {"ock.mmc.meta.redis.wait_timeout_ms", CONF_U32, F(redis_wait_timeout_ms), 1, 600000, NULL, "1000", 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

/* The server's one table: the rows above, then the KV Cache Manager's, each moved to where its struct lies in
 * struct meta_settings. Built once, at the first call (the configuration is read before any thread starts). */
#define ALL_KEYS 192

static struct conf_key all[ALL_KEYS];

static size_t join(size_t at, const struct conf_key *part, size_t offset)
{
	for (; part->name; part++, at++) {
		if (at + 1 >= ALL_KEYS)
			abort(); /* ALL_KEYS too small: every test of the configuration fails here first */
		all[at] = *part;
		all[at].offset += offset;
	}
	return at;
}

const struct conf_key *meta_conf_keys(void)
{
	if (!all[0].name)
		join(join(0, keys, offsetof(struct meta_settings, conf)), kvcm_conf_keys(),
		     offsetof(struct meta_settings, kvcm));
	return all;
}

static void defaults(const struct conf_key *table, void *obj, size_t size)
{
	char err[256];

	memset(obj, 0, size);
	if (conf_defaults(table, obj, err, sizeof(err)))
		abort(); /* a default the table cannot parse: tests/unit/test_conf.c fails first */
}

void meta_conf_defaults(struct meta_conf *c)
{
	defaults(keys, c, sizeof(*c));
}

void meta_settings_defaults(struct meta_settings *s)
{
	defaults(meta_conf_keys(), s, sizeof(*s));
}

/* A size bound as a file would write it: whole units where it is one (1MB, 16TB), else bytes. */
static void size_text(uint64_t v, char *out, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(out, len, "%llu", (unsigned long long)v);
	else
		snprintf(out, len, "%llu%cB", (unsigned long long)v, units[u]);
}

/* What k takes, in a few words: its choices, or its kind and range (an upper bound that is the type's own is left
 * open). */
static void type_text(const struct conf_key *k, char *out, size_t len)
{
	char lo[32], hi[32] = "";
	size_t n;

	if (k->type == CONF_BOOL || (k->type == CONF_STR && !k->choices)) {
		snprintf(out, len, "%s", k->type == CONF_BOOL ? "true|false" : "string");
		return;
	}
	if (k->choices) {
		n = 0;
		for (const char *const *c = k->choices; *c && n < len; c++)
			n += (size_t)snprintf(out + n, len - n, "%s%s", c == k->choices ? "" : "|", *c);
		return;
	}
	if (k->type == CONF_SIZE) {
		size_text(k->min, lo, sizeof(lo));
		if (k->max != UINT64_MAX)
			size_text(k->max, hi, sizeof(hi));
	} else {
		snprintf(lo, sizeof(lo), "%llu", (unsigned long long)k->min);
		if (k->max != UINT64_MAX && !(k->type != CONF_U64 && k->max == UINT32_MAX))
			snprintf(hi, sizeof(hi), "%llu", (unsigned long long)k->max);
	}
	snprintf(out, len, "%s %s..%s",
	         k->type == CONF_SIZE ? "size"
	         : k->type == CONF_MS ? "seconds"
	                              : "number",
	         lo, hi);
}

void meta_conf_print_keys(FILE *f)
{
	for (const struct conf_key *k = meta_conf_keys(); k->name; k++) {
		char type[256];

		type_text(k, type, sizeof(type));
		fprintf(f, "  %s  %s  default %s%s\n", k->name, type,
		        k->def && k->def[0]    ? k->def
		        : k->type == CONF_STR  ? "empty"
		        : k->type == CONF_BOOL ? "false"
		                               : "0",
		        k->flags & CONF_RELOADABLE ? "  SIGHUP" : "");
	}
}

/* Keys of MemCache's mmc-meta.conf with no equivalent here: the value is checked, then one warning says what
 * MemCache would have done with it. */
static const char *const log_targets[] = {"screen", "file", "both", NULL};

static const struct {
	struct conf_key k;
	const char *memcache;
} memcache_keys[] = {
    {{"ock.mmc.tls.top.path", CONF_STR, 0, 256, 0, 0, NULL, NULL, 0},
     "MemCache reads the relative ock.mmc.tls.* paths under this directory; mmc reads them as written"},
    {{"ock.mmc.log_output_target", CONF_STR, 0, 16, 0, 0, log_targets, NULL, 0},
     "MemCache's choice of screen, file or both; mmc logs to ock.mmc.log_path when it is set, else to stderr"},
};

/* 1: a MemCache key, accepted with its warning; 0: not one; MMC_INVALID_PARAM: a bad value. */
static int memcache_key(const char *key, const char *value, char *err, size_t errlen)
{
	char sink[256];

	for (size_t i = 0; i < sizeof(memcache_keys) / sizeof(memcache_keys[0]); i++) {
		struct conf_key one[2] = {memcache_keys[i].k, {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}};

		if (strcmp(key, one[0].name) != 0)
			continue;
		if (conf_apply(one, sink, key, value, err, errlen))
			return MMC_INVALID_PARAM;
		log_warn("op=config key=%s value=\"%s\" note=\"ignored: %s\"", key, value, memcache_keys[i].memcache);
		return 1;
	}
	return 0;
}

/* A bad key, value or pair of values: the message is in e already; the key it is about is named. */
static int conf_fail(struct meta_err *e, const char *key)
{
	meta_err_fail(e, EXIT_CONFIG, key);
	return MMC_INVALID_PARAM;
}

static int set_key(struct meta_settings *s, const char *key, const char *value, char *err, size_t errlen)
{
	char cred[1024];
	int rc;

	/* every key of both halves comes through here: the one place where a bare file name becomes a credential */
	if (!(value = secret_file_path(key, value, cred, sizeof(cred)))) {
		snprintf(err, errlen, "%s: the credential's path under $CREDENTIALS_DIRECTORY is too long", key);
		return MMC_INVALID_PARAM;
	}
	/* the reference's key for where the registry lives: here the one store of both halves of the server */
	if (strcmp(key, "kvcm.registry_storage.uri") == 0) {
		key = "ock.mmc.meta.store_uri";
		value = kvcm_registry_uri(value);
	}
	if (conf_find(meta_conf_keys(), key))
		return conf_apply(meta_conf_keys(), s, key, value, err, errlen);
	if (strncmp(key, "kvcm.", 5) == 0)
		rc = kvcm_conf_compat(key, value, err, errlen);
	else if (!(rc = memcache_key(key, value, err, errlen)))
		rc = conf_apply_compat(CONF_SCOPE_SERVER, key, value, err, errlen);
	if (rc == 1 && strncmp(key, "ock.mmc.log_rotation_file_", 26) == 0)
		s->conf.log_rotation_set = true;
	if (rc == 0) {
		snprintf(err, errlen, "unknown configuration key \"%s\"", key);
		return MMC_INVALID_PARAM;
	}
	return rc == 1 ? 0 : rc;
}

int meta_conf_set(struct meta_settings *s, const char *key, const char *value, struct meta_err *e)
{
	return set_key(s, key, value, e->message, sizeof(e->message)) ? conf_fail(e, key) : 0;
}

struct load_arg {
	struct meta_settings *s;
	struct meta_err *e;
	const char *path;
};

/* A refused line names its file and line, as a file that does not parse does: the key alone may come from the
 * file, $MMC_META_CONFIG_PATH's or --env. */
static int load_line(void *arg, const char *key, const char *value, int line)
{
	struct load_arg *a = arg;
	char why[512];

	if (!set_key(a->s, key, value, why, sizeof(why)))
		return 0;
	snprintf(a->e->message, sizeof(a->e->message), "%.400s:%d: %s", a->path, line, why);
	return conf_fail(a->e, key);
}

/* A line's own key was named by the setter; a file that cannot be read or parsed names none. */
int meta_conf_load(struct meta_settings *s, const char *path, struct meta_err *e)
{
	struct load_arg a = {s, e, path};

	return conf_file_read(path, load_line, &a, e->message, sizeof(e->message)) ? conf_fail(e, NULL) : 0;
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

/* Redis's protected mode, for an address literal (a name is checked when it is resolved and bound, rpc/listener.c). */
static int check_exposure(const struct meta_conf *c, const char *host, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai;
	bool exposed;

	if (c->auth_token[0] || c->auth_token_file[0] || (c->tls.enable && c->tls.ca[0]) || c->allow_insecure_bind ||
	    getaddrinfo(host, NULL, &hints, &ai))
		return 0;
	exposed = !tcp_addr_is_loopback(ai->ai_addr);
	freeaddrinfo(ai);
	if (!exposed)
		return 0;
	snprintf(err, errlen,
	         "ock.mmc.meta_service_url \"%s\" is not a loopback address and there are no credentials: set "
	         "ock.mmc.meta.auth_token (or ock.mmc.meta.auth_token_file), or ock.mmc.tls.enable with "
	         "ock.mmc.tls.ca.path, or ock.mmc.meta.allow_insecure_bind=true",
	         c->meta_service_url);
	return MMC_INVALID_PARAM;
}

int meta_conf_check(const struct meta_conf *c, struct meta_err *e)
{
	char host[256], *err = e->message;
	size_t errlen = sizeof(e->message);
	uint16_t port;

	if (c->evict_high <= c->evict_low) {
		snprintf(err, errlen,
		         "ock.mmc.evict_threshold_high (%u) must be above ock.mmc.evict_threshold_low (%u)",
		         c->evict_high, c->evict_low);
		return conf_fail(e, "ock.mmc.evict_threshold_high");
	}
	if (meta_conf_parse_url(c->meta_service_url, host, sizeof(host), &port)) {
		snprintf(err, errlen, "bad value \"%s\" for \"ock.mmc.meta_service_url\" (expected tcp://host:port)",
		         c->meta_service_url);
		return conf_fail(e, "ock.mmc.meta_service_url");
	}
	if (c->tls.enable && (!c->tls.cert[0] || !c->tls.key[0])) {
		snprintf(err, errlen, "ock.mmc.tls.enable needs ock.mmc.tls.cert.path and ock.mmc.tls.key.path");
		return conf_fail(e, "ock.mmc.tls.enable");
	}
	if (check_exposure(c, host, err, errlen))
		return conf_fail(e, "ock.mmc.meta_service_url");
	if (!c->data_dir[0]) {
		snprintf(err, errlen, "ock.mmc.meta.data_dir must not be empty");
		return conf_fail(e, "ock.mmc.meta.data_dir");
	}
	/* a WAIT that outlives the socket's timeout breaks the connection under a batch Redis applied: it is sent
	 * again, and counted lost */
	if (c->redis_wait_replicas && c->redis_wait_timeout_ms >= c->redis_timeout_ms) {
		snprintf(err, errlen,
		         "ock.mmc.meta.redis.wait_timeout_ms (%u) must be below ock.mmc.meta.redis.timeout_ms (%u)",
		         c->redis_wait_timeout_ms, c->redis_timeout_ms);
		return conf_fail(e, "ock.mmc.meta.redis.wait_timeout_ms");
	}
	return check_store_uri(c->store_uri, err, errlen) ? conf_fail(e, "ock.mmc.meta.store_uri") : 0;
}

int meta_conf_resolve_secrets(struct meta_conf *c, struct meta_err *e)
{
	/* with a file configured, the token is (or should have been) its content: the file's key is at fault */
	const char *key = c->auth_token_file[0] ? "ock.mmc.meta.auth_token_file" : "ock.mmc.meta.auth_token";

	return secret_resolve("ock.mmc.meta.auth_token", "ock.mmc.meta.auth_token_file", c->auth_token_file,
	                      c->auth_token, sizeof(c->auth_token), e->message, sizeof(e->message))
	           ? conf_fail(e, key)
	           : 0;
}

int meta_conf_parse_url(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	return tcp_url_parse(url, host, hostlen, port);
}
