/*
 * Durable metadata with group commit, behind one interface whatever the store: LMDB in the data dir (the default,
 * persist_lmdb.c) or Redis (persist_redis.c). Callers know tables, keys and bytes; no type of either backend shows.
 *
 * Metadata changes are queued in a batch; the batch goes to a writer thread, which applies it in one transaction
 * (an LMDB write transaction with fsync, or one pipelined Redis MULTI/EXEC) when the loop has no more ready I/O,
 * when the batch is 2 ms old, or as soon as the previous batch is durable. The loop thread never waits for the store:
 * while one batch is being committed the next one fills. The exception is a store whose commit takes microseconds
 * (LMDB without fsync): a small batch then commits on the loop, when the writer is idle, since the two thread
 * wake-ups of the hand-over cost more than the commit. Replies that promise durability are held until the batch
 * holding their writes has committed (persist_after_commit). A failed commit (LMDB map full, I/O error, Redis down,
 * fenced) runs its waiters too, which learn it from persist_failed_seq / persist_seq_state and answer
 * MMC_META_BACKUP_ERROR. The Redis backend reconnects by itself, with backoff, when Redis returns.
 *
 * Reads (persist_get, persist_scan, persist_count) are for loading at start-up or on persist_reload: they first wait
 * for every queued write, and block the loop while they read. Memory is the truth while serving.
 *
 * All functions: loop thread only, except the fence callback (writer thread, see persist_set_fence).
 */
#ifndef MMC_PERSIST_H
#define MMC_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct persist;
struct persist_table; /* a named table of key -> bytes, valid until persist_close */

/* The store's format, written on first open and checked at every open: a newer one is refused, an older one is
 * raised to this one (2: object records carry an LRU stamp, which releases that read format 1 would drop; 3: they
 * are stored under object ids in another table, which a release of format 2 would not see; 4: the Redis store keeps
 * them many to a string, where a release of format 3 would find none). An LMDB store is format 3: its layout did not
 * change with 4, so a release of format 3 still opens it. */
#define PERSIST_FORMAT_VERSION 4
#define PERSIST_FORMAT_LMDB    3
/* The longest key any backend accepts (LMDB's limit, kept for Redis so the backends are interchangeable). */
#define PERSIST_KEY_MAX 511

struct persist_opts {
	const char *dir;               /* LMDB: created if missing; locked against a second server */
	uint64_t map_size;             /* LMDB map size, bytes */
	bool sync;                     /* LMDB: fsync each commit; false survives kill -9 but not an OS crash */
	unsigned test_commit_delay_ms; /* tests only: the writer sleeps this long before each commit */
	/* grown for the Redis store; zero values give LMDB */
	const char *uri;          /* NULL, "" or "lmdb": LMDB in dir; "redis://[user:password@]host:port[/db]" */
	const char *password;     /* Redis AUTH password when the URI has none (read from a file); NULL: none */
	const char *key_prefix;   /* Redis: every key starts with it (several clusters share one Redis); NULL: "mmc:" */
	unsigned timeout_ms;      /* Redis: connect and command timeout; 0: 2000 */
	unsigned wait_replicas;   /* Redis: after each EXEC, WAIT for this many replicas (0: no WAIT) */
	unsigned wait_timeout_ms; /* Redis: the WAIT's timeout; fewer replicas by then fail the commit */
};

/*
 * Opens the store, checks its format version (writing the current one on first open) and starts the writer. Fails
 * with a message in err (URIs redacted: no password) for a bad URI, an unreachable store, a data dir in use, or a
 * newer format. Returns 0, MMC_INVALID_PARAM (bad URI), MMC_MALLOC_FAILED or MMC_ERROR.
 */
int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen);
/* Commits what is pending and closes. NULL is ignored. */
void persist_close(struct persist *p);
/* "lmdb" or "redis", for logs. */
const char *persist_backend_name(const struct persist *p);
/* The format version the store is at (PERSIST_FORMAT_LMDB or PERSIST_FORMAT_VERSION). */
int persist_format_version(const struct persist *p);

/*
 * Reopens the store's connection and checks its format again, as a restart would, after landing every queued batch
 * (their waiters run). Tables stay valid; batch numbers keep growing. For a standby that takes over: reload, then
 * clear the in-memory state and run the same loaders as at start-up (persist_scan sees what the old leader
 * committed). Returns 0 or MMC_ERROR (message in err).
 */
int persist_reload(struct persist *p, char *err, size_t errlen);

/* Opens (creating) a named table (1..47 bytes of [a-z0-9_]), at start-up: waits for queued writes first. */
int persist_table(struct persist *p, const char *name, struct persist_table **out);
/*
 * For a table whose keys are never used again once deleted (object ids): a delete whose batch fails is queued again,
 * into the batch then open, and commits with the next write (or for the next persist_after_commit), never alone:
 * so a record outlives its object only until the store takes a commit again. Where a key can be written again this
 * would be wrong (the retried delete could land after the new write), hence opt-in.
 */
void persist_table_retry_deletes(struct persist_table *t);
/*
 * For a table whose records are what memory holds, whatever the reply said (KVCM's: a retried call finds its change
 * made and writes nothing, and later calls build on it): every write of a failed batch, put or delete, is queued
 * again ahead of those queued since (so a key written again ends as its newer write), and commits with the next
 * write or waiter. A change whose commit failed was answered as failed; it becomes durable later all the same. A
 * write goes again with at most three batches (each write counts its own); past that it is parked and goes again
 * once the store takes a commit, a newer write of its key replacing it meanwhile. persist_dirty() counts parked
 * writes, and a waiter is answered only once the parked writes pending at its batch's commit are durable too (a
 * retried call that found its change made is not acknowledged before the write that made it). Parked writes are
 * bounded in bytes, and a plain put refused six times in all is given up (never a delete, nor a moved record's pair:
 * the store would keep the record of an object removed); past either it is dropped (logged), and the store keeps
 * what it had.
 */
void persist_table_retry(struct persist_table *t);
/*
 * For a table whose keys are 8-byte big-endian numbers that mostly grow (object ids): the store may keep its records
 * many to a value, so that a load reads them at memory speed (Redis: 64 ids to a string, see docs/architecture.md,
 * "Metadata in Redis"; LMDB: no change). Call it right after persist_table, before the table's first write or scan.
 * On Redis a write of another key length to it fails its batch. Returns 0 or MMC_MALLOC_FAILED.
 */
int persist_table_packed(struct persist *p, struct persist_table *t);

/* Queue a write for the next commit (key and value are copied). Return 0 or MMC_ERROR (a key no backend can store:
 * empty or longer than PERSIST_KEY_MAX; out of memory; logged). A failed commit is logged; its writes are not
 * durable. Deleting a missing key is not an error. */
int persist_put(struct persist *p, struct persist_table *t, const void *key, size_t klen, const void *val, size_t vlen);
int persist_del(struct persist *p, struct persist_table *t, const void *key, size_t klen);
/*
 * persist_put and persist_del whose writes a failed batch queues again, ahead of what was queued since, together
 * with the later plain puts of the same keys in that batch: for a record moved to a new key, the old key's delete and
 * the new key's write, which must land together or not at all. They go again within the bounds of retried writes
 * (persist_table_retry: a few attempts, a size); past them both are parked, the store keeping the old record, and go
 * again once the store takes a commit (a later write of one of their keys drops that half and takes the rest along).
 * They commit with the next write or waiter, never alone.
 */
int persist_put_kept(struct persist *p, struct persist_table *t, const void *key, size_t klen, const void *val,
                     size_t vlen);
int persist_del_kept(struct persist *p, struct persist_table *t, const void *key, size_t klen);

/* Reads one value into buf (cap bytes) and its length into *len, after every queued write. Returns 0,
 * MMC_OBJECT_NOT_EXISTS, or MMC_ERROR (the store failed, or the value is longer than cap). */
int persist_get(struct persist *p, struct persist_table *t, const void *key, size_t klen, void *buf, size_t cap,
                size_t *len);
/* Calls fn for every record of t in key order (bytewise, shorter first on a tie), after every queued write; the key
 * and value are borrowed for the call, and fn may queue writes (they commit later). fn returning nonzero stops the
 * scan with that value. Returns 0, fn's value, or MMC_ERROR. */
typedef int (*persist_scan_fn)(void *arg, const void *key, size_t klen, const void *val, size_t vlen);
int persist_scan(struct persist *p, struct persist_table *t, persist_scan_fn fn, void *arg);
/*
 * persist_scan for a load that needs no order, with the store read ahead on a thread of its own: every record at
 * least once, in the store's fastest order (Redis: each HSCAN page as it comes, unsorted, and a page may repeat a
 * record). prep(key, value) runs on that thread (it must be thread-safe, a hash say); fn on the calling thread, with
 * prep's value, while the next records are being read; key and value are copies, valid for the call. fn returning
 * nonzero stops the scan with that value. Returns 0, fn's value, MMC_MALLOC_FAILED or MMC_ERROR.
 */
typedef uint64_t (*persist_prep_fn)(const void *key, size_t klen, const void *val, size_t vlen);
typedef int (*persist_ahead_fn)(void *arg, const void *key, size_t klen, const void *val, size_t vlen, uint64_t prep);
int persist_scan_ahead(struct persist *p, struct persist_table *t, persist_prep_fn prep, persist_ahead_fn fn,
                       void *arg);
/* True when persist_scan_ahead of t gives what persist_scan does: key order, each record once (LMDB; a packed table
 * on Redis). */
bool persist_scan_ordered(const struct persist *p, const struct persist_table *t);
/* The number of records in t, into *n (a packed table on Redis: after a failed commit it may count a put that never
 * landed, until the next load of the table). Returns 0 or MMC_ERROR. */
int persist_count(struct persist *p, struct persist_table *t, uint64_t *n);

/*
 * Fencing, for a leader that may lose its lease: fn(arg) runs on the writer thread just before every commit (so it
 * must be thread-safe: read an atomic lease deadline, say); false fails that batch like any failed commit (its
 * waiters see it failed, replies say MMC_META_BACKUP_ERROR, nothing reaches the store). NULL removes it.
 */
void persist_set_fence(struct persist *p, bool (*fn)(void *arg), void *arg);
/*
 * Redis only: every commit also checks at Redis that the string key `key` (used as given, no prefix; in the store's
 * Redis and db) holds `expected` (WATCH key, GET key, then MULTI ... EXEC): a commit sent after another node took
 * the lock fails at Redis, even from a leader paused past its lease. Costs one more round trip per batch. Both strings
 * are copied; key NULL removes the check. Returns 0, or MMC_INVALID_PARAM on the LMDB store or for an empty key.
 */
int persist_set_redis_fence_key(struct persist *p, const char *key, const char *expected);

/* True while some queued write has not committed yet. */
bool persist_dirty(const struct persist *p);

/* Writes queued between persist_group_begin and persist_group_end land in one batch: a busy loop hands a batch to
 * the writer between two writes only outside a group. For writes that must not land apart (a record moved to a new
 * key: the old key's delete and the new key's write; a crash between the two would leave neither). Nests. */
void persist_group_begin(struct persist *p);
void persist_group_end(struct persist *p);

/* The number of the newest batch with writes not yet committed (0: none), and of the newest batch committed (or
 * failed: its waiters ran). Batches commit in order, so a change queued in batch n is durable once
 * persist_durable_seq() >= n. */
uint64_t persist_wait_seq(const struct persist *p);
uint64_t persist_durable_seq(const struct persist *p);
/* The newest batch whose commit failed (0: none). Waiters run after a failed commit too: a waiter whose changes were
 * queued after persist_durable_seq() was d must not acknowledge them when persist_failed_seq() > d. */
uint64_t persist_failed_seq(const struct persist *p);

/* Where the batch numbered seq stands: not landed yet, committed (the store acknowledged it), or failed (its writes
 * are not in the store and never will be). Seq 0 (no batch) is durable. Space that a stored record may point at is
 * reused only once the batch that unlinked it is PERSIST_SEQ_DURABLE (see docs/architecture.md, "Space reuse"). */
enum persist_seq_state { PERSIST_SEQ_PENDING, PERSIST_SEQ_DURABLE, PERSIST_SEQ_LOST };
enum persist_seq_state persist_seq_state(const struct persist *p, uint64_t seq);
/* Runs fn(arg) on the loop once every write queued so far has committed (on the next idle turn if none is
 * pending). */
int persist_after_commit(struct persist *p, void (*fn)(void *arg), void *arg);

/* Commits everything queued and runs the waiters, blocking the loop until done. Returns 0 or MMC_ERROR. */
int persist_flush(struct persist *p);

/* Commits so far, and commits that failed (their changes are not in the store), for /metrics and tests; the
 * duration of the newest landed commit (the writer's time in the store), ns. */
uint64_t persist_commits(const struct persist *p);
uint64_t persist_failures(const struct persist *p);
uint64_t persist_last_commit_ns(const struct persist *p);

#endif
