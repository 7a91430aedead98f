/*
 * `key = value` configuration files and typed value parsing, shared by libmmc and mmc-metaserver.
 * A table of conf_key entries describes one configuration struct; conf_apply() sets one field from text.
 */
#ifndef MMC_CONF_PARSE_H
#define MMC_CONF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum conf_type {
	CONF_STR,  /* char[size] */
	CONF_U32,  /* uint32_t in [min, max] */
	CONF_U64,  /* uint64_t in [min, max] */
	CONF_SIZE, /* uint64_t bytes: "4096", "2048KB", "512m", "2.5GB", "1TB"; in [min, max] */
	CONF_BOOL, /* bool: true / false */
	CONF_MS,   /* uint32_t milliseconds given in seconds (keys named *.seconds) */
};

/* A conf_key flag: a running server takes a new value on SIGHUP (the others wait for the next start). */
#define CONF_RELOADABLE 1u

/*
 * One key: its field, its bounds, and (tables that hold their defaults) its default as a file would write it and
 * its flags. A table is the one place a key is described: the loader, the defaults, a reload and the tests that
 * hold the documentation to the code all read it.
 */
struct conf_key {
	const char *name;
	enum conf_type type;
	size_t offset;              /* of the field in the struct */
	size_t size;                /* CONF_STR: buffer size */
	uint64_t min, max;          /* numeric range, inclusive */
	const char *const *choices; /* CONF_STR: NULL-terminated list of accepted values, or NULL */
	const char *def;            /* the default, as a file line's value; NULL: zero, false or empty */
	unsigned flags;             /* CONF_RELOADABLE */
};

/* Called for each `key = value` line; returns 0 to go on, a negative code to stop. */
typedef int (*conf_line_fn)(void *arg, const char *key, const char *value, int line);

/*
 * Reads path line by line: `#` starts a comment, blank lines are skipped, every other line must be
 * `key = value` (spaces around both are trimmed). On error writes a message naming the file and line to err.
 * Returns 0, MMC_INVALID_PARAM (bad line, or fn's code) or MMC_ERROR (unreadable file).
 */
int conf_file_read(const char *path, conf_line_fn fn, void *arg, char *err, size_t errlen);

/* Sets the field of obj named by key from text. Returns 0 or MMC_INVALID_PARAM with a message in err. */
int conf_apply(const struct conf_key *table, void *obj, const char *key, const char *value, char *err, size_t errlen);

/* Sets every field of obj that table names to its default (obj zeroed first by the caller). Returns 0, or
 * MMC_INVALID_PARAM naming the key whose default the table cannot parse (a bug, which the unit tests catch). */
int conf_defaults(const struct conf_key *table, void *obj, char *err, size_t errlen);

/* Finds key in table, or NULL. */
const struct conf_key *conf_find(const struct conf_key *table, const char *key);

/* Where a compatibility key is accepted. */
enum conf_scope { CONF_SCOPE_CLIENT, CONF_SCOPE_SERVER };

/*
 * MemCache configuration files carry keys mmc has no use for (TLS, thread pools, aggregation, HA, log files, ...).
 * They are accepted and their values checked, then ignored. Returns 1 when key is one of them and its value is
 * good, MMC_INVALID_PARAM (message in err) when the value is bad, 0 when key is not a compatibility key.
 */
int conf_apply_compat(enum conf_scope scope, const char *key, const char *value, char *err, size_t errlen);

/* Calls fn with the name of every compatibility key conf_apply_compat() accepts in scope (the TLS families
 * expanded), so tests can hold the documentation to the list. */
void conf_compat_each(enum conf_scope scope, void (*fn)(void *arg, const char *key), void *arg);

/* The value parsers every table row goes through, client and server alike. Each returns 0 with *out set, or
 * MMC_ERROR (and leaves *out) for a string that is not a value of its kind. */
/* A size: a decimal number, fractions allowed, with an optional unit b, k/kb, m/mb, g/gb, t/tb (any case, powers
 * of 1024; a fraction of a unit rounds to the nearest byte). */
int conf_parse_size(const char *s, uint64_t *out);
/* A whole decimal number, no sign. */
int conf_parse_u64(const char *s, uint64_t *out);
/* "true" or "false", exactly. */
int conf_parse_bool(const char *s, bool *out);

#endif
