/*
 * Durable metadata in LMDB with group commit. All metadata changes made during one turn of the event loop go into
 * one write transaction, committed when the loop has no more ready I/O (or when the transaction is 2 ms old, so a
 * busy server still commits). Replies that promise durability are held until that commit (persist_after_commit).
 * Loop thread only.
 */
#ifndef MMC_PERSIST_H
#define MMC_PERSIST_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct persist;

struct persist_opts {
	const char *dir;   /* created if missing; locked against a second server */
	uint64_t map_size; /* LMDB map size, bytes */
	bool sync;         /* fsync each commit; false survives kill -9 but not an OS crash */
};

int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen);
/* Commits what is pending and closes. NULL is ignored. */
void persist_close(struct persist *p);

/* Opens (creating) a named database. Call before the first write txn of a turn, e.g. at start-up. */
int persist_dbi(struct persist *p, const char *name, MDB_dbi *dbi);
/* Begins a read-only transaction (for loading at start-up); the caller aborts it. */
int persist_read_begin(struct persist *p, MDB_txn **txn);

/* Writes into this turn's transaction. Return 0 or MMC_ERROR (logged). */
int persist_put(struct persist *p, MDB_dbi dbi, const void *key, size_t klen, const void *val, size_t vlen);
int persist_del(struct persist *p, MDB_dbi dbi, const void *key, size_t klen);

/* True while this turn has uncommitted writes. */
bool persist_dirty(const struct persist *p);

/* Runs fn(arg) after this turn's transaction commits (at once-ish if nothing is pending). */
int persist_after_commit(struct persist *p, void (*fn)(void *arg), void *arg);

/* Commits now. Returns 0 or MMC_ERROR. */
int persist_flush(struct persist *p);

/* Commits so far, for /metrics and tests. */
uint64_t persist_commits(const struct persist *p);

#endif
