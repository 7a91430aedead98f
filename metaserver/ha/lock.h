/*
 * A distributed lock with a lease, as the leader elector sees it: one call that takes the lock or renews it, one
 * that gives it back. Backends: file://DIR (lock_file.c, one host) and redis://host:port[/db] (lock_redis.c).
 * Each backend is driven by the elector's thread only; nothing here is shared.
 */
#ifndef MMC_HA_LOCK_H
#define MMC_HA_LOCK_H

#include <stddef.h>
#include <stdint.h>

#define HA_ID_MAX   128
#define HA_ADDR_MAX 320

/* Who holds the lock, as written in it: the holder's node id, its addresses and the wall-clock end of its lease. */
struct ha_holder {
	char node_id[HA_ID_MAX];
	char rpc[HA_ADDR_MAX];  /* tcp://host:port of its libmmc listener */
	char host[256];         /* where its HTTP listeners are reached */
	uint32_t http_port;     /* KVCM MetaService */
	uint32_t admin_port;    /* KVCM admin */
	int64_t expiry_wall_ms; /* CLOCK_REALTIME, ms; 0: unknown or nobody */
	/* random, one per process (ha_open): a lock value of an earlier process of the same node (restarted after a
	 * demotion, winning again) differs, so that a commit of the earlier one arriving late fails the fence; "" in a
	 * value written by a release before it */
	char token[17];
};

struct ha_lock;

struct ha_lock_ops {
	/*
	 * Takes the lock for self, or renews it when self holds it already, for lease_ms from now. Returns 1 (self
	 * holds it now), 0 (another holds it: *cur says who, until when) or a negative MMC_* code (the lock store
	 * could not be asked; *cur is untouched).
	 */
	int (*acquire)(struct ha_lock *l, const struct ha_holder *self, uint32_t lease_ms, struct ha_holder *cur);
	/* Reads who holds the lock without campaigning: 0 (*cur filled; node_id "" when nobody) or MMC_* . */
	int (*peek)(struct ha_lock *l, struct ha_holder *cur);
	/* Gives the lock back if self holds it (compare-and-delete). */
	void (*release)(struct ha_lock *l, const struct ha_holder *self);
	void (*close)(struct ha_lock *l);
};

struct ha_lock {
	const struct ha_lock_ops *ops;
	const char *redis_key; /* redis://: the key holding the lock (a Redis store can check it at each commit) */
};

/* Opens the backend the URI names (file://DIR, redis://[user:password@]host:port[/db]); password_file (NULL or ""
 * for none: kvcm.distributed_lock.password_file) holds a redis:// lock's password, and then a lone name before the
 * URI's '@' is the user. timeout_ms bounds each round trip to the lock store. Returns 0, or MMC_INVALID_PARAM with a
 * message in err (which never holds the password). */
int ha_lock_open(struct ha_lock **out, const char *uri, const char *password_file, uint32_t timeout_ms, char *err,
                 size_t errlen);
/* Whether ha_lock_open would take uri and password_file, judged by the URI's text and the file's content, with
 * nothing reached over the network: the check ha_lock_open makes first, and what --check-config runs. Returns 0,
 * or MMC_INVALID_PARAM with a message in err. */
int ha_lock_check(const char *uri, const char *password_file, char *err, size_t errlen);
int ha_lock_redis_check(const char *uri, const char *password_file, char *err, size_t errlen);
/* The refusal of a lock URI that does not parse, its password masked, into err; returns MMC_INVALID_PARAM. */
int ha_lock_bad_uri(const char *uri, const char *expected, char *err, size_t errlen);
int ha_lock_file_open(struct ha_lock **out, const char *dir, char *err, size_t errlen);
int ha_lock_redis_open(struct ha_lock **out, const char *uri, const char *password_file, uint32_t timeout_ms, char *err,
                       size_t errlen);

/* The value self writes into the redis:// lock while it holds it. Returns 0 or MMC_INVALID_PARAM (too long). */
int ha_lock_redis_value(const struct ha_holder *self, char *out, size_t len);

/* The lock's value: one line of space-separated fields (node id, rpc address, host, ports), and back. */
int ha_holder_format(const struct ha_holder *h, char *out, size_t len);
int ha_holder_parse(struct ha_holder *h, const char *text);

/* CLOCK_REALTIME in ms: lease ends written for other nodes, which compare them with their own wall clock. */
int64_t ha_wall_ms(void);

#endif
