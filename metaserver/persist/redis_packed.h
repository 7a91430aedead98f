/*
 * The Redis store's packed tables: records under 8-byte big-endian ids (the object records, whose ids only grow),
 * PACKED_SLOTS ids to one Redis string. A table of one hash field per record cost Redis 1-2 us of its one thread per
 * record to hand back at load (HSCAN's reply building): 10-20 s at 10^7 objects before the meta server saw one. A
 * block's string is instead a log of entries that each commit APPENDs to, read back at load with one GET per block.
 * 64 ids to a block keep a block (about 9 KiB with 64-byte keys, 22 KiB with 255-byte ones) under the 32 KiB past
 * which Redis keeps a SET's value in the buffer it was read into, twice its size.
 * The writer keeps, per block, which slots hold a record and how many entries the string has, and rewrites a block
 * from its live entries (or deletes it) once most of them are dead.
 *
 * Keys, for table T under the store's prefix P: "P" "p:T" is the set of block numbers (decimal), "P" "p:T:" N block
 * N, "P" "p:T#" the number of records (a size hint for the load). An entry: the slot (1 byte), 'P' (a put) or 'D' (a
 * delete), two zero bytes, the value's length (4 bytes, little-endian), the value. The newest entry of a slot wins.
 *
 * Threads: the writer thread, or the loop while the writer holds no batch (persist_backend.h). Not thread-safe.
 */
#ifndef MMC_REDIS_PACKED_H
#define MMC_REDIS_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "persist_backend.h"

#define PACKED_SLOTS 64u /* ids to a block */
#define PACKED_KEY   8   /* a packed table's keys: ids, big-endian */

/* One Redis write of a commit: cmd on key with nargs (0..2) arguments; pointers valid until rplan_reset. */
struct rwrite {
	const char *cmd;
	const char *key;
	size_t klen;
	const void *arg[2];
	size_t alen[2];
	int nargs;
};

/* A commit's writes, in order, with the bytes they point at. */
struct rplan {
	struct arena arena;
	struct rwrite *w;
	size_t n, cap;
};

void rplan_init(struct rplan *r);
void rplan_reset(struct rplan *r);
void rplan_fini(struct rplan *r);
/* Appends a write (cmd and key are borrowed; the caller keeps them until the reset). 0 or MMC_MALLOC_FAILED. */
int rplan_add(struct rplan *r, const char *cmd, const char *key, size_t klen, const void *a0, size_t l0, const void *a1,
              size_t l1, int nargs);

/* A value read from Redis for the planner: nil when the key is missing. */
struct rbytes {
	const void *p;
	size_t n;
	bool nil;
};

struct packed;

/* The state of table name's blocks under prefix; NULL when out of memory. Knows nothing until packed_load_begin. */
struct packed *packed_new(const char *prefix, const char *name);
void packed_free(struct packed *p);
/* Redis may have come back without the newest set entries (a restart without its append-only file, a failover to a
 * replica behind): every known block counts as unlisted, so that the next append to it adds it to the set again
 * (SADD twice is harmless); all else the writer knows stays. */
void packed_relist(struct packed *p);
/* The store may have changed behind the writer (a reconnect, a takeover): nothing is known until the next load. */
void packed_forget(struct packed *p);

/* Whether the writer knows what the store holds (a load read it all, and only this writer wrote since); the number
 * of records then. */
bool packed_known(const struct packed *p);
uint64_t packed_live(const struct packed *p);

/* The set of block numbers and the record count's key. */
const char *packed_set_key(const struct packed *p);
const char *packed_count_key(const struct packed *p);
/* Block no's key into buf (cap bytes; 80 suffice for any prefix and name). Returns its length. */
size_t packed_block_key(const struct packed *p, uint64_t no, char *buf, size_t cap);

/* The blocks the next plan rewrites: their current strings must be read (in this order) and given to packed_plan. */
const uint64_t *packed_to_read(struct packed *p, size_t *n);
/*
 * Appends to r the writes of the batch's ops of table (in batch order: puts and deletes of PACKED_KEY-byte keys; ops
 * of other tables are skipped) and of the blocks due to be rewritten or deleted (reads: their strings, as
 * packed_to_read listed them). Nothing in p changes until packed_done. Returns 0, MMC_INVALID_PARAM (a key of another
 * length) or MMC_MALLOC_FAILED.
 */
int packed_plan(struct packed *p, struct rplan *r, uint32_t table, const struct persist_op *ops, size_t nops,
                const struct rbytes *reads);
/* The last plan committed (ok) or not: what it wrote becomes what the writer knows, or only what is safe to assume
 * (a put that may have landed counts as a record, a delete that may not have does not). */
void packed_done(struct packed *p, bool ok);

/* A load: packed_load_begin, then each block's string (nil: listed, missing) through packed_load_block, whose
 * records go to fn in slot order; packed_load_end once every block was read. fn's nonzero return stops it. */
void packed_load_begin(struct packed *p);
int packed_load_block(struct packed *p, uint64_t no, struct rbytes v, persist_scan_fn fn, void *arg);
void packed_load_end(struct packed *p);

/* The record of key in a block's string (the newest entry of its slot): 0 with *val and *len, or
 * MMC_OBJECT_NOT_EXISTS. */
int packed_find(struct rbytes v, const void *key, const void **val, size_t *len);
/* The block of a PACKED_KEY-byte key. */
uint64_t packed_block_of(const void *key);

#endif
