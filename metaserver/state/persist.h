/*
 * Durable metadata in LMDB with group commit. Metadata changes are queued in a batch; the batch goes to a writer
 * thread, which applies it in one write transaction and commits (with fsync), when the loop has no more ready I/O,
 * when the batch is 2 ms old, or as soon as the previous batch is durable. The loop thread never waits for the disk:
 * while one batch is being synced the next one fills. Replies that promise durability are held until the batch
 * holding their writes has committed (persist_after_commit). All functions: loop thread only.
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
	const char *dir;               /* created if missing; locked against a second server */
	uint64_t map_size;             /* LMDB map size, bytes */
	bool sync;                     /* fsync each commit; false survives kill -9 but not an OS crash */
	unsigned test_commit_delay_ms; /* tests only: the writer sleeps this long before each commit */
};

int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen);
/* Commits what is pending and closes. NULL is ignored. */
void persist_close(struct persist *p);

/* Opens (creating) a named database, at start-up: waits for queued writes first. */
int persist_dbi(struct persist *p, const char *name, MDB_dbi *dbi);
/* Begins a read-only transaction (for loading at start-up) that sees every write queued so far: waits for them to
 * commit first. The caller aborts it. */
int persist_read_begin(struct persist *p, MDB_txn **txn);

/* Queue a write for the next commit (key and value are copied). Return 0 or MMC_ERROR (a key LMDB cannot store:
 * empty or longer than mdb_env_get_maxkeysize; out of memory; logged). A failed commit is logged; its writes are not
 * durable. */
int persist_put(struct persist *p, MDB_dbi dbi, const void *key, size_t klen, const void *val, size_t vlen);
int persist_del(struct persist *p, MDB_dbi dbi, const void *key, size_t klen);

/* True while some queued write has not committed yet. */
bool persist_dirty(const struct persist *p);

/* The number of the newest batch with writes not yet committed (0: none), and of the newest batch committed (or
 * failed: its waiters ran). Batches commit in order, so a change queued in batch n is durable once
 * persist_durable_seq() >= n. */
uint64_t persist_wait_seq(const struct persist *p);
uint64_t persist_durable_seq(const struct persist *p);
/* The newest batch whose commit failed (0: none). Waiters run after a failed commit too: a waiter whose changes were
 * queued after persist_durable_seq() was d must not acknowledge them when persist_failed_seq() > d. */
uint64_t persist_failed_seq(const struct persist *p);

/* Where the batch numbered seq stands: not landed yet, committed, or failed (its writes are not on disk and never
 * will be). Seq 0 (no batch) is durable. Space that a record on disk may point at is reused only once the batch that
 * unlinked it is PERSIST_SEQ_DURABLE (see docs/architecture.md, "Space reuse"). */
enum persist_seq_state { PERSIST_SEQ_PENDING, PERSIST_SEQ_DURABLE, PERSIST_SEQ_LOST };
enum persist_seq_state persist_seq_state(const struct persist *p, uint64_t seq);
/* Runs fn(arg) on the loop once every write queued so far has committed (on the next idle turn if none is
 * pending). */
int persist_after_commit(struct persist *p, void (*fn)(void *arg), void *arg);

/* Commits everything queued and runs the waiters, blocking the loop until done. Returns 0 or MMC_ERROR. */
int persist_flush(struct persist *p);

/* The write fence: fn(arg) is asked on the writer thread right before each commit (and before it begins); false
 * fails the commit like an I/O error (its held replies answer MMC_META_BACKUP_ERROR). fn must be cheap and
 * thread-safe; NULL removes it. Used by leader election: a server that lost its lease commits nothing more. */
void persist_set_fence(struct persist *p, bool (*fn)(void *arg), void *arg);

/* Redis store only: every commit also checks at Redis that `key` holds `expected`, so a commit sent after another
 * node took the redis:// lock fails at Redis. Returns 0, or MMC_INVALID_PARAM on the LMDB store (this one). */
int persist_set_redis_fence_key(struct persist *p, const char *key, const char *expected);

/* Commits so far, and commits that failed (their changes are not on disk), for /metrics and tests. */
uint64_t persist_commits(const struct persist *p);
uint64_t persist_failures(const struct persist *p);
/* Time the writer spent in commits (applying and syncing), in total and for the latest one: the store latency. */
void persist_commit_time(struct persist *p, uint64_t *sum_ns, uint64_t *last_ns);

#endif
