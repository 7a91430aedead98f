/*
 * The object index (key -> object) and each object's life: ALLOCATED (in the index, invisible to readers)
 * -> READABLE (durable in LMDB, on its media's LRU) -> REMOVING (out of the index; space kept while leased)
 * -> freed. Loop thread only.
 */
#ifndef MMC_OBJECTS_H
#define MMC_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "slab.h"

int objects_init(struct meta *m);
/* Frees every object (server shutdown; nothing is persisted). */
void objects_fini(struct meta *m);

struct object *object_find(struct meta *m, const char *key, size_t len);
/* The index hash of a key, for callers that look a batch up with objects_prefetch + object_find_hashed. */
uint64_t object_hash(const char *key, size_t len);
/* object_find with the key's object_hash already computed. */
struct object *object_find_hashed(struct meta *m, const char *key, size_t len, uint64_t hash);
/*
 * Hints for looking up a batch of n keys (their object_hash) in order, so that its cache misses overlap instead of
 * being paid one after another; they change nothing. objects_prefetch once before the loop, then
 * objects_prefetch_step before the lookup of key i: it fetches what the lookups of the next keys will touch (bucket,
 * object, the chain's next object; with lru, the LRU neighbours an object_touch or object_drop relinks).
 */
void objects_prefetch(const struct meta *m, const uint64_t *hash, size_t n);
void objects_prefetch_step(const struct meta *m, const uint64_t *hash, size_t n, size_t i, bool lru);
/* The first object of hash's chain, for a caller whose objects_prefetch of hash has had time to arrive. */
void objects_prefetch_head(const struct meta *m, uint64_t hash);
/* A new object with room for nblobs blobs; state NONE, not indexed. NULL when out of memory. */
struct object *object_new(const char *key, size_t len, uint8_t nblobs);
/* Frees an object that was never indexed nor listed (a put whose placement failed). */
void object_free(struct object *o);
/* Indexes o under hash (object_hash of its key) and gives it its id, unless it has one (loaded from its record). */
void object_index_add(struct meta *m, struct object *o, uint64_t hash);
/* Takes o out of the index (object_drop and object_lose_blob do, and a load for an object that lost its blobs). */
void object_index_del(struct meta *m, struct object *o);
/* Counts in their tenants' the objects holding space whose tenant was not configured when they were indexed. */
void objects_count_tenants(struct meta *m);
/* Sizes the index for n objects at once (a load), instead of doubling on the way. */
void objects_reserve(struct meta *m, uint64_t n);

/* The record named by handle h (not 0). */
static inline struct object *object_at(uint32_t h)
{
	return (struct object *)slab_ptr(h);
}

/* ---- object lists (enum olist): circular, through struct object.link, around a sentinel record ---- */

static inline void olist_del(struct object *o)
{
	struct object *prev = object_at(o->link.prev), *next = object_at(o->link.next);

	prev->link.next = o->link.next;
	next->link.prev = o->link.prev;
	o->link.prev = o->link.next = o->self;
}

/* Inserts o (on no list) after record `at`. */
static inline void olist_add_after(struct object *at, struct object *o)
{
	struct object *next = object_at(at->link.next);

	o->link.prev = at->self;
	o->link.next = at->link.next;
	next->link.prev = o->self;
	at->link.next = o->self;
}

static inline void olist_add_head(const struct meta *m, enum olist l, struct object *o)
{
	olist_add_after(object_at(m->lists[l]), o);
}

static inline void olist_add_tail(const struct meta *m, enum olist l, struct object *o)
{
	olist_add_after(object_at(object_at(m->lists[l])->link.prev), o);
}

/* The object after (before) o on its list, or NULL at the list's end. */
static inline struct object *olist_next(const struct object *o)
{
	struct object *n = object_at(o->link.next);

	return n->state == OBJECT_HEAD ? NULL : n;
}

static inline struct object *olist_prev(const struct object *o)
{
	struct object *p = object_at(o->link.prev);

	return p->state == OBJECT_HEAD ? NULL : p;
}

/* The first (last) object of list l, or NULL when it is empty. */
static inline struct object *olist_first(const struct meta *m, enum olist l)
{
	return olist_next(object_at(m->lists[l]));
}

static inline struct object *olist_last(const struct meta *m, enum olist l)
{
	return olist_prev(object_at(m->lists[l]));
}

static inline bool olist_empty(const struct meta *m, enum olist l)
{
	return olist_first(m, l) == NULL;
}

/* ---- blobs ---- */

/* Puts blob b (unplaced) on svc at (media, offset). */
void blob_place(struct blob *b, struct service *svc, uint32_t media, uint64_t offset);
/* Moves blob b to another place on its service. */
void blob_move(struct blob *b, uint32_t media, uint64_t offset);
/* Forgets b's place (its space is released, handed over or lost by the caller). */
void blob_forget(struct blob *b);
/*
 * Calls fn for every blob on svc of every object (indexed or not), in no particular order. It walks the whole object
 * table (a record per object, ~0.1 s for 10^7 on one core) unless svc holds none: for a service that leaves or is
 * adopted, not for a hot path. fn may drop the object or forget the blob.
 */
void objects_each_blob(struct meta *m, struct service *svc,
                       void (*fn)(struct meta *m, struct object *o, struct blob *b, void *arg), void *arg);

/* ALLOCATED -> READABLE: onto the LRU, and durable in this loop turn's commit. */
void object_publish(struct meta *m, struct object *o);
/* Promotes o on its LRU (a get or an exist); one being demoted stays off it until its move ends. */
void object_touch(struct meta *m, struct object *o);
/* The readable object of key (hash: object_hash of it), or NULL with *rc MMC_INVALID_PARAM (a key the wire does not
 * allow) or MMC_OBJECT_NOT_EXISTS (absent, being written, or on services that have not come back). */
struct object *object_find_readable(struct meta *m, const char *key, uint64_t hash, int *rc);
/* A key the wire allows: 1..MMC_WIRE_KEY_MAX bytes. *len gets its length (0 for NULL). */
bool object_key_ok(const char *key, size_t *len);
/* Hashes n keys into hash[] and starts fetching their buckets: a batch's lookups then overlap their misses. */
void objects_hash_keys(const struct meta *m, const char *const *keys, size_t n, uint64_t *hash);
/*
 * A removed single-blob copy of o at (svc, DRAM, offset), on the zombie list: what readers of a range that o no
 * longer owns hold their leases on (a demoted object's old DRAM copy, a staged SSD read). Freed with its leases,
 * after unlink_seq is durable. NULL when out of memory.
 */
struct object *objects_dram_copy(struct meta *m, struct object *o, struct service *svc, uint64_t offset,
                                 uint64_t unlink_seq);

/* First blob whose service is attached, preferring the session's own service, then its host; -1 if none. */
int object_pick_blob(const struct meta *m, const struct object *o, const struct session *reader);
/* True when at least one blob's service is attached. */
bool object_readable(const struct object *o);
/* Media of the object (of its first live blob). */
uint32_t object_media(const struct object *o);

/*
 * Removes o: out of the index at once (new readers miss) and out of LMDB; its space is freed now, or when the
 * last lease is released or expires and, for a put still being written, when its writer commits or disconnects.
 */
void object_drop(struct meta *m, struct object *o);
/* object_drop of an object found under hash (its key's object_hash): a batch's removes do not hash each key twice. */
void object_drop_hashed(struct meta *m, struct object *o, uint64_t hash);
/* Forgets one blob (its service left): the space is not released to a dead allocator. Drops o if none remain. */
void object_lose_blob(struct meta *m, struct object *o, struct blob *b);

/* A removed object on which session holds what a release takes (pin: an add_lease pin, else a get's count, in
 * lease record gen unless 0), with that id unless id is 0; or NULL. */
struct object *objects_find_zombie(struct meta *m, const char *key, size_t len, uint64_t session, uint64_t id, bool pin,
                                   uint32_t gen);
/* The removed object `id` whose put by session was still in flight, or NULL. */
struct object *objects_find_removed_write(struct meta *m, const char *key, size_t len, uint64_t session, uint64_t id);
/* Frees a removed object's space once no lease and no in-flight write pins it any more. */
/* Gives o a new id, its record (if any) deleted under the old one: object_persist writes it again. The token a
 * get returns, and its release names, is the id: a copy a demote left for earlier readers keeps the old one.
 * Returns the batch of the old record's delete: 0 when o had none, ALLOC_SEQ_NEVER when it could not be queued. */
uint64_t object_renumber(struct meta *m, struct object *o);
/* A new object id, never given before by this store: not in this process, nor by any earlier leader of it. */
uint64_t object_next_id(struct meta *m);
void object_unpin(struct meta *m, struct object *o);
/* The writer of removed object o (a put removed while it was written) committed it with its writes all landed:
 * its space needs no quarantine; o is unpinned as by object_unpin. */
void object_writes_done(struct meta *m, struct object *o);
/* The writer of removed object o left, or its writes failed: some may still land, so its space goes to quarantine. */
void object_writer_left(struct meta *m, struct object *o);

/* Space was given back outside object_drop: waiting allocations get another try. */
void objects_space_freed(struct meta *m);

/* Drops every readable object whose key match(arg, key) accepts, as a remove does; returns how many. Walks the
 * whole index on the loop: an administrative call, not a hot path. */
uint64_t objects_remove_matching(struct meta *m, bool (*match)(void *arg, const char *key), void *arg);

/* Reclaims expired write leases and zombies whose leases ended. */
void objects_sweep(struct meta *m, uint64_t now_ms);
/* Drops the ALLOCATED objects a closing session was writing (not the GVA ones: those wait for their lease). */
void objects_session_closed(struct meta *m, uint64_t session);

/* Loads READABLE objects from the store after services_load() (object_load.c); drops records whose services are
 * unknown. Returns 0, MMC_ERROR (the store failed) or MMC_MALLOC_FAILED. */
int objects_load(struct meta *m);
/* objects_load's last step: the ids a new object may take (object_next_id). 0 or MMC_ERROR. */
int objects_ids_load(struct meta *m, uint64_t max_id);
/* Queues the delete of the record stored under object id `id` (object_rec.h). 0, or MMC_ERROR when it could not
 * be queued (out of memory): the record stays. */
int object_record_del(struct meta *m, uint64_t id);
/* Opens the tables of the object records (object_rec.h) in m->persist. Returns 0 or MMC_ERROR. */
int objects_tables_open(struct meta *m);
/* Writes o's record (READABLE objects) into this turn's transaction. False when it could not be queued (out of
 * memory): the store keeps the record it had. */
bool object_persist(struct meta *m, struct object *o);
/* object_persist of an object object_renumber moved: a failed batch queues the record again with its old id's
 * delete (persist_put_kept), so that the delete never lands without it. */
void object_persist_moved(struct meta *m, struct object *o);
/* Queues o's record again when the batch that held it may have failed to commit (a put of the same key after an
 * MMC_META_BACKUP_ERROR must not answer OK for an object that is not on disk). Returns true if it did: the reply
 * to the caller must then wait for the commit. */
bool object_persist_again(struct meta *m, struct object *o);
/* Whether o's latest record is on disk (or o was loaded from the store). */
bool object_durable(const struct meta *m, const struct object *o);

#endif
