/*
 * What the group-commit front (persist.c) asks of a store: open tables, apply one batch atomically, read back at
 * load. One implementation per store: persist_lmdb.c, persist_redis.c. Private to metaserver/persist/persist*.c.
 *
 * Threads: commit() runs on the writer thread, or on the loop thread for a quick backend's small batch while the
 * writer holds none; every other call runs on the loop thread while the writer holds no batch (persist.c lands the
 * flying batch first, and the hand-over through its mutex orders the two threads).
 */
#ifndef MMC_PERSIST_BACKEND_H
#define MMC_PERSIST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "persist.h"

#define PERSIST_MAX_TABLES 32
#define PERSIST_TABLE_NAME 48

struct persist_table {
	uint32_t id; /* index into the backend's handles */
	char name[PERSIST_TABLE_NAME];
	bool retry_deletes; /* persist_table_retry_deletes */
	bool retry_writes;  /* persist_table_retry */
	bool packed;        /* persist_table_packed on a backend that packs: its scan_any is in key order, once each */
};

/* One write of a batch, as the backend sees it (pointers into the batch's byte log). */
struct persist_op {
	uint32_t table;
	bool del;
	bool kept;      /* persist_put_kept: a failed batch carries it into the next one */
	unsigned tries; /* failed commits it went through (a retried write) */
	const void *key, *val;
	size_t klen, vlen;
};

/* A batch's byte log: walk it with persist_op_next. */
struct persist_ops {
	const unsigned char *buf;
	size_t len, nops;
	/* persist_set_fence's, asked once more by a backend whose commit goes over a network, just before it sends:
	 * the round trips before the send (connect, reads) can outlast the lease (NULL: none) */
	bool (*fence)(void *arg);
	void *fence_arg;
};

/*
 * A commit failure that tends to repeat on every batch (LMDB's map full, Redis refusing, a lost fence): one line a
 * second at most, with how many were left out since, instead of a line per batch (thousands a second under load).
 * Used where commits run, one at a time (see Threads above).
 */
struct persist_fail_log {
	uint64_t logged_ns, skipped;
};

/* Whether to log this failure now; if so, *skipped is how many were not logged since the last line. */
bool persist_fail_log_due(struct persist_fail_log *l, unsigned long long *skipped);

/* The op at *off into *op, advancing *off; false past the end. */
bool persist_op_next(const struct persist_ops *ops, size_t *off, struct persist_op *op);

struct persist_backend;

struct persist_backend_ops {
	const char *name;
	/* the table's handle for id (ids are dense, from 0) */
	int (*table)(struct persist_backend *be, uint32_t id, const char *name);
	/* persist_table_packed: table id (named name) may keep its records many to a value; NULL: every table as any.
	 * A packed table's scan_any gives what scan does (key order, each record once). */
	int (*pack)(struct persist_backend *be, uint32_t id, const char *name);
	/* applies every op or none; 0, or an MMC_* code with the reason logged */
	int (*commit)(struct persist_backend *be, const struct persist_ops *ops);
	int (*get)(struct persist_backend *be, uint32_t id, const void *key, size_t klen, void *buf, size_t cap,
	           size_t *len);
	int (*scan)(struct persist_backend *be, uint32_t id, persist_scan_fn fn, void *arg);
	/* persist_scan_any where it is faster than scan (records unsorted, maybe twice); NULL: scan */
	int (*scan_any)(struct persist_backend *be, uint32_t id, persist_scan_fn fn, void *arg);
	int (*count)(struct persist_backend *be, uint32_t id, uint64_t *n);
	/* drops and re-establishes what connects it to the store (a no-op for LMDB) */
	int (*reopen)(struct persist_backend *be, char *err, size_t errlen);
	/* Redis: the lock key every commit checks (key NULL: none); NULL for a backend without one */
	int (*fence_key)(struct persist_backend *be, const char *key, const char *expected);
	void (*close)(struct persist_backend *be);
};

struct persist_backend {
	const struct persist_backend_ops *ops;
	bool quick; /* commit() takes microseconds (no fsync, no network): small batches may commit on the loop */
	int format; /* the format version this backend writes (persist.h) */
};

/* persist_scan_ahead on a backend (persist_ahead.c). */
int persist_scan_ahead_be(struct persist_backend *be, uint32_t table, persist_prep_fn prep, persist_ahead_fn fn,
                          void *arg);

/* The format version check of persist_open and persist_reload (persist_format.c): 0, or MMC_ERROR with err set. */
int persist_format_check(struct persist *p, char *err, size_t errlen);

int persist_lmdb_open(struct persist_backend **out, const struct persist_opts *opts, char *err, size_t errlen);
int persist_redis_open(struct persist_backend **out, const struct persist_opts *opts, char *err, size_t errlen);

#endif
