#include "conf_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Splits one line (comment stripped, spaces trimmed) and hands it to fn. Returns 0 (also for a blank line), fn's
 * code, or MMC_INVALID_PARAM with a message naming the file and line. */
static int conf_line(char *line, const char *path, int lineno, conf_line_fn fn, void *arg, char *err, size_t errlen)
{
	char *hash = line, *eq, *key;

	/* a comment starts at a '#' that begins the line or follows a blank: one inside a value (a password, a URI)
	 * is the value's, not the start of a comment that would cut it short */
	while ((hash = strchr(hash, '#')) && hash != line && hash[-1] != ' ' && hash[-1] != '\t')
		hash++;
	if (hash)
		*hash = '\0';
	key = trim(line);
	if (!*key)
		return 0;
	eq = strchr(key, '=');
	if (!eq) {
		snprintf(err, errlen, "%s:%d: expected `key = value`", path, lineno);
		return MMC_INVALID_PARAM;
	}
	*eq = '\0';
	return fn(arg, trim(key), trim(eq + 1), lineno);
}

int conf_file_read(const char *path, conf_line_fn fn, void *arg, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, rc = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(err, errlen, "cannot read config file \"%s\": %s", path, strerror(errno));
		return MMC_INVALID_PARAM;
	}
	/* getline, not a fixed buffer: a long line read in pieces would parse its tail as a line of its own */
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)n)) {
			snprintf(err, errlen, "%s:%d: the line holds a NUL byte", path, lineno);
			rc = MMC_INVALID_PARAM;
			break;
		}
		rc = conf_line(line, path, lineno, fn, arg, err, errlen);
		if (rc < 0)
			break;
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "cannot read config file \"%s\": %s", path, strerror(errno));
		rc = MMC_INVALID_PARAM;
	}
	free(line);
	fclose(f);
	return rc;
}

int conf_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || !isdigit((unsigned char)*s))
		return MMC_ERROR;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return MMC_ERROR;
	*out = v;
	return 0;
}

int conf_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		int shift;
	} units[] = {{"", 0},    {"b", 0},  {"k", 10},  {"kb", 10}, {"m", 20},
	             {"mb", 20}, {"g", 30}, {"gb", 30}, {"t", 40},  {"tb", 40}};
	const char *num_end = s;
	char *end;
	double v;
	uint64_t whole;

	/* a decimal number, with a fraction or not: strtod alone also took hex (0x10) and exponents (1e3) */
	while (isdigit((unsigned char)*num_end))
		num_end++;
	if (num_end == s || (*num_end == '.' && !isdigit((unsigned char)num_end[1])))
		return MMC_ERROR;
	if (*num_end == '.')
		for (num_end++; isdigit((unsigned char)*num_end);)
			num_end++;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0 || end != num_end)
		return MMC_ERROR;
	whole = strchr(s, '.') && strchr(s, '.') < num_end ? 0 : strtoull(s, NULL, 10); /* exact past 2^53 */
	while (isspace((unsigned char)*end))
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) == 0) {
			double bytes = ldexp(v, units[i].shift);

			if (whole && errno == 0 && whole <= UINT64_MAX >> units[i].shift) {
				*out = whole << units[i].shift;
				return 0;
			}

			/* a fraction of a unit is rounded to the nearest byte (0.1GB, as 2.5GB already was whole); a
			 * fraction of a byte means nothing */
			if (units[i].shift)
				bytes = floor(bytes + 0.5);
			if (bytes >= 18446744073709551615.0 || bytes != floor(bytes))
				return MMC_ERROR;
			*out = (uint64_t)bytes;
			return 0;
		}
	}
	return MMC_ERROR;
}

int conf_parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0) {
		*out = true;
		return 0;
	}
	if (strcmp(s, "false") == 0) {
		*out = false;
		return 0;
	}
	return MMC_ERROR;
}

const struct conf_key *conf_find(const struct conf_key *table, const char *key)
{
	for (; table->name; table++)
		if (strcmp(table->name, key) == 0)
			return table;
	return NULL;
}

static int apply_str(const struct conf_key *k, char *field, const char *value)
{
	if (strlen(value) >= k->size)
		return MMC_ERROR;
	if (k->choices) {
		const char *const *c = k->choices;

		while (*c && strcmp(*c, value) != 0)
			c++;
		if (!*c)
			return MMC_ERROR;
	}
	strcpy(field, value);
	return 0;
}

static int apply_num(const struct conf_key *k, void *field, const char *value)
{
	uint64_t v;
	bool b;

	switch (k->type) {
	case CONF_BOOL:
		if (conf_parse_bool(value, &b))
			return MMC_ERROR;
		*(bool *)field = b;
		return 0;
	case CONF_SIZE:
		if (conf_parse_size(value, &v))
			return MMC_ERROR;
		break;
	default:
		if (conf_parse_u64(value, &v))
			return MMC_ERROR;
		break;
	}
	if (v < k->min || v > k->max)
		return MMC_ERROR;
	if (k->type == CONF_MS)
		*(uint32_t *)field = (uint32_t)(v * 1000);
	else if (k->type == CONF_U32)
		*(uint32_t *)field = (uint32_t)v;
	else
		*(uint64_t *)field = v;
	return 0;
}

/* What k accepts, in words: its choices, true or false, or the kind of number and its range. */
static const char *expected(const struct conf_key *k, char *out, size_t len)
{
	size_t n = 0;

	if (k->type == CONF_BOOL)
		return "true or false";
	if (k->choices) {
		n = (size_t)snprintf(out, len, "one of");
		for (const char *const *c = k->choices; *c && n < len; c++)
			n += (size_t)snprintf(out + n, len - n, "%s %s", c == k->choices ? "" : ",", *c);
		return out;
	}
	snprintf(out, len, "%s in [%llu, %llu]",
	         k->type == CONF_SIZE ? "a size such as 4096, 512MB or 2.5GB"
	         : k->type == CONF_MS ? "a number of seconds"
	                              : "a number",
	         (unsigned long long)k->min, (unsigned long long)k->max);
	return out;
}

int conf_apply(const struct conf_key *table, void *obj, const char *key, const char *value, char *err, size_t errlen)
{
	const struct conf_key *k = conf_find(table, key);
	char *field;
	int bad;

	if (!k) {
		snprintf(err, errlen, "unknown configuration key \"%s\"", key);
		return MMC_INVALID_PARAM;
	}
	field = (char *)obj + k->offset;
	bad = k->type == CONF_STR ? apply_str(k, field, value) : apply_num(k, field, value);
	if (bad) {
		char want[512];

		if (k->type == CONF_STR && !k->choices)
			snprintf(err, errlen, "bad value for \"%s\" (longer than %zu bytes)", key, k->size - 1);
		else
			snprintf(err, errlen, "bad value \"%s\" for \"%s\" (expected %s)", value, key,
			         expected(k, want, sizeof(want)));
		return MMC_INVALID_PARAM;
	}
	return 0;
}

int conf_defaults(const struct conf_key *table, void *obj, char *err, size_t errlen)
{
	for (const struct conf_key *k = table; k->name; k++)
		if (k->def && conf_apply(table, obj, k->name, k->def, err, errlen))
			return MMC_INVALID_PARAM;
	return 0;
}

/* ---- compatibility keys: checked, then ignored ---- */

struct compat_sink {
	char str[1024];
	uint64_t u64;
	uint32_t u32;
	bool b;
};

#define SINK_STR offsetof(struct compat_sink, str), sizeof(((struct compat_sink *)0)->str)
#define SINK_U64 offsetof(struct compat_sink, u64), sizeof(uint64_t)
#define SINK_U32 offsetof(struct compat_sink, u32), sizeof(uint32_t)
#define SINK_B   offsetof(struct compat_sink, b), sizeof(bool)

static const char *const pool_modes[] = {"standard", "expanded", NULL};

static const struct conf_key compat_both[] = {
    {"ock.mmc.ubs_io.enable", CONF_BOOL, SINK_B, 0, 0, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

static const struct conf_key compat_client[] = {
    {"ock.mmc.local_service.memory.pool.mode", CONF_STR, SINK_STR, 0, 0, pool_modes, NULL, 0},
    {"ock.mmc.client.read_thread_pool.size", CONF_U32, SINK_U32, 1, 64, NULL, NULL, 0},
    {"ock.mmc.client.write_thread_pool.size", CONF_U32, SINK_U32, 1, 64, NULL, NULL, 0},
    {"ock.mmc.client.aggregate.io", CONF_BOOL, SINK_B, 0, 0, NULL, NULL, 0},
    {"ock.mmc.client.aggregate.num", CONF_U32, SINK_U32, 1, 131072, NULL, NULL, 0},
    {"ock.mmc.client.batch_option.chunk.size", CONF_SIZE, SINK_U64, 1, UINT64_C(1) << 32, NULL, NULL, 0},
    {"ock.mmc.client.batch_option.chunk.count", CONF_U32, SINK_U32, 1, 64, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

static const struct conf_key compat_server[] = {
    {"ock.mmc.meta_service.config_store_url", CONF_STR, SINK_STR, 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta_service.metrics_url", CONF_STR, SINK_STR, 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta.ha.enable", CONF_BOOL, SINK_B, 0, 0, NULL, NULL, 0},
    {"ock.mmc.log_rotation_file_size", CONF_U32, SINK_U32, 1, 500, NULL, NULL, 0},
    {"ock.mmc.log_rotation_file_count", CONF_U32, SINK_U32, 1, 50, NULL, NULL, 0},
    {"ock.mmc.meta.backup.enable", CONF_BOOL, SINK_B, 0, 0, NULL, NULL, 0},
    {"ock.mmc.meta_service.metrics_report_interval_seconds", CONF_U32, SINK_U32, 0, 86400, NULL, NULL, 0},
    {"ock.mmc.storage.prefetch.enabled", CONF_BOOL, SINK_B, 0, 0, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

/* TLS families: "<prefix>.enable" (a bool) and "<prefix>.<file>" (paths under 256 bytes); the server knows the
 * first two prefixes, the client all three. The meta connection's own family (ock.mmc.tls.*) is real on both sides
 * (the RPC port's TLS) except for the two files of a vendor key-decryption plug-in, which stay compatibility keys. */
static const char *const tls_prefixes[] = {"ock.mmc.tls.", "ock.mmc.config_store.tls.",
                                           "ock.mmc.local_service.hcom.tls."};
static const char *const tls_files[] = {"ca.path",       "ca.crl.path",  "cert.path",     "key.path",
                                        "key.pass.path", "package.path", "decrypter.path"};
#define TLS_FILES (sizeof(tls_files) / sizeof(tls_files[0]))

static bool tls_real(size_t prefix, size_t file)
{
	return prefix == 0 && (file == TLS_FILES || (strcmp(tls_files[file], "package.path") != 0 &&
	                                             strcmp(tls_files[file], "decrypter.path") != 0));
}

static size_t tls_prefix_count(enum conf_scope scope)
{
	return scope == CONF_SCOPE_CLIENT ? 3 : 2;
}

static int compat_tls(enum conf_scope scope, const char *key, const char *value, char *err, size_t errlen)
{
	struct compat_sink sink;

	for (size_t p = 0; p < tls_prefix_count(scope); p++) {
		size_t len = strlen(tls_prefixes[p]);
		const char *rest = key + len;

		if (strncmp(key, tls_prefixes[p], len) != 0)
			continue;
		for (size_t f = 0; f <= TLS_FILES; f++) {
			bool enable = f == TLS_FILES;
			struct conf_key k[] = {
			    {key, enable ? CONF_BOOL : CONF_STR,
			     enable ? offsetof(struct compat_sink, b) : offsetof(struct compat_sink, str),
			     enable ? sizeof(bool) : 256, 0, 0, NULL, NULL, 0},
			    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}};

			if (tls_real(p, f))
				continue;
			if (strcmp(rest, enable ? "enable" : tls_files[f]) == 0)
				return conf_apply(k, &sink, key, value, err, errlen) ? MMC_INVALID_PARAM : 1;
		}
	}
	return 0;
}

int conf_apply_compat(enum conf_scope scope, const char *key, const char *value, char *err, size_t errlen)
{
	const struct conf_key *tables[] = {compat_both, scope == CONF_SCOPE_CLIENT ? compat_client : compat_server};
	struct compat_sink sink;

	for (size_t t = 0; t < 2; t++)
		if (conf_find(tables[t], key))
			return conf_apply(tables[t], &sink, key, value, err, errlen) ? MMC_INVALID_PARAM : 1;
	return compat_tls(scope, key, value, err, errlen);
}

void conf_compat_each(enum conf_scope scope, void (*fn)(void *arg, const char *key), void *arg)
{
	const struct conf_key *tables[] = {compat_both, scope == CONF_SCOPE_CLIENT ? compat_client : compat_server};
	char name[128];

	for (size_t t = 0; t < 2; t++)
		for (const struct conf_key *k = tables[t]; k->name; k++)
			fn(arg, k->name);
	for (size_t p = 0; p < tls_prefix_count(scope); p++) {
		for (size_t f = 0; f <= TLS_FILES; f++) {
			if (tls_real(p, f))
				continue;
			snprintf(name, sizeof(name), "%s%s", tls_prefixes[p], f == TLS_FILES ? "enable" : tls_files[f]);
			fn(arg, name);
		}
	}
}
