/*
 * The object index keeps its own table, not common/hmap.h: its chains are 32-bit slab handles (hnext) and a 16-bit hash
 * tag inside the 56-byte record, where an hmap_node would add a pointer to every one of 10^7 objects.
 */
#include "objects.h"
#include "lease.h"
#include "space.h"

#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "array.h"
#include "clock.h"
#include "hash.h"
#include "log.h"
#include "lru.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "object_rec.h"
#include "persist.h"
#include "quarantine.h"
#include "services.h"
#include "tenants.h"

_Static_assert(BLOB_GRANULE == ALLOC_ALIGN, "a blob keeps its offset in allocator granules");
_Static_assert(sizeof(struct object) == 56 && sizeof(struct blob) == 8, "the record sizes docs/performance.md counts");

#define INITIAL_BUCKETS 16   /* per shard */
#define ZOMBIE_BUCKETS  1024 /* the zombie table's first size; it doubles as they come */
#define SHARD(hash)     ((uint32_t)((hash) >> 40) & (INDEX_SHARDS - 1)) /* apart from the bucket's and the tag's bits */
#define TAG(hash)       ((uint16_t)((hash) >> 48))

static struct index_shard *shard_of(struct meta *m, uint64_t hash)
{
	return &m->shards[SHARD(hash)];
}

static uint32_t *bucket_of(const struct meta *m, uint64_t hash)
{
	const struct index_shard *s = &m->shards[SHARD(hash)];

	return &s->buckets[hash & s->mask];
}

/* An object list's sentinel: a record of its own, never in the index. */
static int list_head_new(struct meta *m, enum olist l)
{
	struct object *h = object_new("", 0, 0);

	if (!h)
		return MMC_MALLOC_FAILED;
	h->state = OBJECT_HEAD;
	m->lists[l] = h->self;
	return 0;
}

int objects_init(struct meta *m)
{
	slab_start();
	for (int i = 0; i < INDEX_SHARDS; i++) {
		if (!(m->shards[i].buckets = slab_map(INITIAL_BUCKETS * sizeof(uint32_t))))
			return MMC_MALLOC_FAILED;
		m->shards[i].mask = INITIAL_BUCKETS - 1;
	}
	for (int i = 0; i < OLIST_COUNT; i++)
		if (list_head_new(m, (enum olist)i))
			return MMC_MALLOC_FAILED;
	if (!(m->zombies.buckets = calloc(ZOMBIE_BUCKETS, sizeof(uint32_t))))
		return MMC_MALLOC_FAILED;
	m->zombies.mask = ZOMBIE_BUCKETS - 1;
	m->zombies.n = 0;
	return 0;
}

struct object *object_new(const char *key, size_t len, uint8_t nblobs)
{
	struct object *o;
	uint32_t h = slab_alloc(sizeof(*o) + nblobs * sizeof(struct blob) + len + 1, (void **)&o);

	if (!h)
		return NULL;
	o->self = h;
	o->link.prev = o->link.next = h;
	o->nblobs = nblobs;
	o->keylen = (uint8_t)len;
	memcpy(object_key(o), key, len);
	return o;
}

void object_free(struct object *o)
{
	leases_free_all(o);
	o->state = OBJECT_FREE;
	slab_free(o->self);
}

void objects_fini(struct meta *m)
{
	for (int i = 0; i < INDEX_SHARDS; i++)
		slab_unmap(m->shards[i].buckets, ((size_t)m->shards[i].mask + 1) * sizeof(uint32_t));
	memset(m->shards, 0, sizeof(m->shards));
	m->nobjects = 0;
	for (uint32_t i = 0; i < m->tenants.n; i++)
		m->tenants.t[i].objects = m->tenants.t[i].bytes = 0;
	memset(m->lists, 0, sizeof(m->lists));
	free(m->zombies.buckets);
	memset(&m->zombies, 0, sizeof(m->zombies));
	leases_fini();
	slab_fini();
}

uint64_t object_hash(const char *key, size_t len)
{
	return hash_bytes(key, len);
}

bool object_key_ok(const char *key, size_t *len)
{
	*len = key ? strlen(key) : 0;
	return *len >= 1 && *len <= MMC_WIRE_KEY_MAX;
}

struct object *object_find_readable(struct meta *m, const char *key, uint64_t hash, int *rc)
{
	struct object *o;
	size_t len;

	if (!object_key_ok(key, &len)) {
		*rc = MMC_INVALID_PARAM;
		return NULL;
	}
	o = object_find_hashed(m, key, len, hash);
	*rc = o && object_readable(o) ? 0 : MMC_OBJECT_NOT_EXISTS;
	return *rc ? NULL : o;
}

void objects_hash_keys(const struct meta *m, const char *const *keys, size_t n, uint64_t *hash)
{
	enum { CHUNK = 64 };
	const void *key[CHUNK];
	size_t len[CHUNK];

	for (size_t i = 0; i < n; i += CHUNK) {
		size_t c = n - i < CHUNK ? n - i : CHUNK;

		for (size_t j = 0; j < c; j++) {
			key[j] = keys[i + j] ? keys[i + j] : "";
			len[j] = strlen(key[j]);
		}
		hash_bytes_many(c, key, len, hash + i);
	}
	objects_prefetch(m, hash, n);
}

struct object *object_find_hashed(struct meta *m, const char *key, size_t len, uint64_t hash)
{
	uint16_t tag = TAG(hash);

	for (uint32_t h = *bucket_of(m, hash); h;) {
		struct object *o = object_at(h);

		if (o->tag == tag && o->keylen == len && memcmp(object_key(o), key, len) == 0)
			return o;
		h = o->hnext;
	}
	return NULL;
}

struct object *object_find(struct meta *m, const char *key, size_t len)
{
	return object_find_hashed(m, key, len, hash_bytes(key, len));
}

/* Header, first blob and a key of up to 71 bytes: 136 bytes, at most 3 lines. */
static inline void prefetch_object(const struct object *o)
{
	__builtin_prefetch(o);
	__builtin_prefetch((const char *)o + 64);
	__builtin_prefetch((const char *)o + 128);
}

/*
 * Software pipelining over the batch: while key i is looked up, the object of key i + AHEAD and the bucket of key
 * i + 2 * AHEAD are on their way, and for key i + AHEAD / 2 (its object arrived meanwhile) the next chain entry or
 * the LRU neighbours. A 10^6-key index is far larger than the cache, so one lookup is 3-5 dependent DRAM misses;
 * this way they overlap each other and the work on the keys before.
 */
#define AHEAD 8

/* Records a resize relinks at a time. */
#define RELINK_RUN 64

static inline const struct object *bucket_head(const struct meta *m, uint64_t hash)
{
	uint32_t h = *bucket_of(m, hash);

	return h ? object_at(h) : NULL;
}

void objects_prefetch(const struct meta *m, const uint64_t *hash, size_t n)
{
	for (size_t i = 0; i < n && i < 2 * AHEAD; i++)
		__builtin_prefetch(bucket_of(m, hash[i]));
}

void objects_prefetch_head(const struct meta *m, uint64_t hash)
{
	const struct object *o = bucket_head(m, hash);

	if (o)
		prefetch_object(o);
}

void objects_prefetch_step(const struct meta *m, const uint64_t *hash, size_t n, size_t i, bool lru)
{
	const struct object *o;

	if (i + 2 * AHEAD < n)
		__builtin_prefetch(bucket_of(m, hash[i + 2 * AHEAD]));
	if (i + AHEAD < n && (o = bucket_head(m, hash[i + AHEAD])))
		prefetch_object(o);
	if (i + AHEAD / 2 >= n || !(o = bucket_head(m, hash[i + AHEAD / 2])))
		return;
	if (o->tag != TAG(hash[i + AHEAD / 2])) {
		if (o->hnext)
			prefetch_object(object_at(o->hnext));
	} else if (lru) {
		__builtin_prefetch(object_at(o->link.prev));
		__builtin_prefetch(object_at(o->link.next));
	}
}

/* Links the n records of handle[] into table b (mask + 1 buckets), their keys hashed together. */
static void relink(uint32_t *b, uint64_t mask, const uint32_t *handle, size_t n)
{
	const void *key[RELINK_RUN] = {0}; /* zeroed only for GCC, which cannot see that just n are read */
	size_t len[RELINK_RUN] = {0};
	uint64_t hash[RELINK_RUN];

	for (size_t j = 0; j < n; j++) {
		struct object *o = object_at(handle[j]);

		key[j] = object_key(o);
		len[j] = o->keylen;
	}
	hash_bytes_many(n, key, len, hash);
	for (size_t j = 0; j < n; j++) {
		uint32_t *head = &b[hash[j] & mask];

		object_at(handle[j])->hnext = *head;
		*head = handle[j];
	}
}

/* Rehashes shard s into n buckets: a cache miss and a hash of its key per object (records keep 16 bits of the hash,
 * not the bucket's), RELINK_RUN objects at a time so that their keys hash side by side. Logged when slow, because
 * the request that triggers it waits for it. */
static void resize_shard(struct meta *m, struct index_shard *s, uint64_t n)
{
	uint64_t t0 = clock_ns();
	uint32_t *b = n <= UINT32_MAX ? slab_map(n * sizeof(*b)) : NULL;
	uint32_t run[RELINK_RUN];
	size_t nrun = 0;

	if (!b)
		return; /* keep the longer chains; still correct */
	for (uint64_t i = 0; i <= s->mask; i++) {
		uint32_t h, next;

		/* the objects are in no cache: fetch each chain's head and key AHEAD buckets before its turn */
		if (i + AHEAD <= s->mask && (h = s->buckets[i + AHEAD]))
			prefetch_object(object_at(h));
		for (h = s->buckets[i]; h; h = next) {
			next = object_at(h)->hnext; /* before relink gives it a new one */
			run[nrun++] = h;
			if (nrun == RELINK_RUN) {
				relink(b, n - 1, run, nrun);
				nrun = 0;
			}
		}
	}
	relink(b, n - 1, run, nrun);
	slab_unmap(s->buckets, ((size_t)s->mask + 1) * sizeof(*b));
	s->buckets = b;
	s->mask = (uint32_t)(n - 1);
	if (clock_ns() - t0 > 10 * 1000000)
		log_info("op=index_grow shard=%td buckets=%llu objects=%u ms=%.1f", s - m->shards,
		         (unsigned long long)n, s->count, (double)(clock_ns() - t0) / 1e6);
}

void objects_reserve(struct meta *m, uint64_t n)
{
	uint64_t per = n / INDEX_SHARDS + n / INDEX_SHARDS / 8; /* a little over the mean: the shards fill unevenly */

	for (int i = 0; i < INDEX_SHARDS; i++) {
		uint64_t b = (uint64_t)m->shards[i].mask + 1;

		while (b < per)
			b *= 2;
		if (b > (uint64_t)m->shards[i].mask + 1)
			resize_shard(m, &m->shards[i], b);
	}
}

void object_index_add(struct meta *m, struct object *o, uint64_t hash)
{
	struct index_shard *s = shard_of(m, hash);
	uint32_t *head;

	if (s->count > s->mask)
		resize_shard(m, s, ((uint64_t)s->mask + 1) * 2);
	head = &s->buckets[hash & s->mask];
	s->count++;
	o->tag = TAG(hash);
	o->hnext = *head;
	*head = o->self;
	o->in_index = true;
	if (!o->id) /* a loaded object keeps the id its record is stored under */
		o->id = object_next_id(m);
	m->nobjects++;
	if (m->tenants.n)
		tenant_count(m, o, 1);
}

static void index_del_hashed(struct meta *m, struct object *o, uint64_t hash)
{
	uint32_t *p = bucket_of(m, hash);

	while (*p && *p != o->self)
		p = &object_at(*p)->hnext;
	MMC_ASSERT(*p || !o->in_index); /* an indexed object is in its key's chain, or hash is not its key's */
	if (*p) {
		*p = o->hnext;
		shard_of(m, hash)->count--;
		m->nobjects--;
	}
	o->in_index = false;
	o->hnext = 0;
}

/* o's space is given back: it leaves its tenant's counts (a removed object pinned meanwhile stayed in them). */
static void uncount(struct meta *m, struct object *o)
{
	if (o->counted)
		tenant_count(m, o, -1);
}

void object_index_del(struct meta *m, struct object *o)
{
	index_del_hashed(m, o, object_hash(object_key(o), o->keylen));
	uncount(m, o);
}

void objects_count_tenants(struct meta *m)
{
	uint32_t h = 0;
	struct object *o;

	while ((o = slab_next(&h)))
		if (o->state != OBJECT_FREE && o->state != OBJECT_HEAD &&
		    (o->in_index || o->state == MMC_BLOB_REMOVING))
			tenant_count(m, o, 1);
}

bool object_readable(const struct object *o)
{
	if (o->state != MMC_BLOB_READABLE)
		return false;
	for (int i = 0; i < o->nblobs; i++)
		if (o->blobs[i].svc && blob_svc(&o->blobs[i])->session)
			return true;
	return false;
}

uint32_t object_media(const struct object *o)
{
	for (int i = 0; i < o->nblobs; i++)
		if (o->blobs[i].svc)
			return o->blobs[i].media;
	return MMC_MEDIA_DRAM;
}

int object_pick_blob(const struct meta *m, const struct object *o, const struct session *reader)
{
	int same_host = -1, any = -1;

	for (int i = 0; i < o->nblobs; i++) {
		const struct service *svc = blob_svc(&o->blobs[i]);

		if (!svc || !svc->session)
			continue;
		if (reader && svc->session == reader)
			return i;
		if (same_host < 0 && reader && strcmp(svc->host, reader->host) == 0)
			same_host = i;
		if (any < 0)
			any = i;
	}
	return same_host >= 0 ? same_host : any;
}

void blob_place(struct blob *b, struct service *svc, uint32_t media, uint64_t offset)
{
	MMC_ASSERT(!b->svc && svc->slot && offset % BLOB_GRANULE == 0);
	b->svc = svc->slot;
	b->media = media;
	b->page = offset / BLOB_GRANULE;
	svc->nblobs++;
}

void blob_move(struct blob *b, uint32_t media, uint64_t offset)
{
	MMC_ASSERT(b->svc && offset % BLOB_GRANULE == 0);
	b->media = media;
	b->page = offset / BLOB_GRANULE;
}

void blob_forget(struct blob *b)
{
	struct service *svc = blob_svc(b);

	MMC_ASSERT(svc && svc->nblobs > 0);
	svc->nblobs--;
	b->svc = 0;
}

void objects_each_blob(struct meta *m, struct service *svc,
                       void (*fn)(struct meta *m, struct object *o, struct blob *b, void *arg), void *arg)
{
	uint32_t h = 0;
	struct object *o;

	if (!svc->nblobs)
		return; /* a service that leaves empty: no walk */
	while ((o = slab_next(&h))) {
		if (o->state == OBJECT_FREE || o->state == OBJECT_HEAD)
			continue;
		/* fn may free o: its record is then marked free */
		for (int i = 0; i < o->nblobs && o->state != OBJECT_FREE; i++)
			if (o->blobs[i].svc == svc->slot)
				fn(m, o, &o->blobs[i], arg);
	}
}

int object_record_del(struct meta *m, uint64_t id)
{
	unsigned char k[REC_KEY_LEN];

	rec_key_of(id, k);
	return persist_del(m->persist, m->db_objects, k, sizeof(k));
}

/* The batch that deletes o's record, or ALLOC_SEQ_NEVER when the delete could not be queued (out of memory): the
 * record stays on disk, so o's space must never be reused in this run, or a restart would load it over another
 * object's bytes. moved: the record is written again under a new id (persist_del_kept). */
static uint64_t unpersist(struct meta *m, struct object *o, bool moved)
{
	unsigned char k[REC_KEY_LEN];

	o->persisted = false;
	rec_key_of(o->id, k);
	if ((moved ? persist_del_kept : persist_del)(m->persist, m->db_objects, k, sizeof(k)))
		return ALLOC_SEQ_NEVER;
	return persist_wait_seq(m->persist);
}

uint64_t object_renumber(struct meta *m, struct object *o)
{
	uint64_t seq = o->persisted ? unpersist(m, o, true) : 0;

	o->id = object_next_id(m);
	return seq;
}

/*
 * An id is a token clients hold (a get's release and a put's commit name it) and the key its record is stored
 * under, so it must never name two objects, across restarts and failovers too: a release from before a restart
 * would unpin another reader's object of the same key, and a record delete queued for an old id would take a new
 * record with it. The highest id a load finds is not enough (the newest objects may have been removed), so the
 * store keeps a ceiling above every id given, a load starts at the ceiling it finds, and no id past the ceiling
 * on disk should reach a client (an allocation's reply is not held for its batch, and a failover would give its id
 * again). So the ceiling moves ahead early: once half of its reserve is used, a new one ID_RESERVE ahead is
 * written (one write per ID_RESERVE / 2 objects), durable long before the ids reach the old one; a batch that
 * failed is written again at the next id.
 */
#define ID_RESERVE (1u << 20)
static const char id_ceiling_key[] = "object_id_ceiling";

uint64_t object_next_id(struct meta *m)
{
	uint64_t id = ++m->next_object_id;
	enum persist_seq_state st =
	    m->object_id_seq ? persist_seq_state(m->persist, m->object_id_seq) : PERSIST_SEQ_PENDING;

	if (st == PERSIST_SEQ_LOST)
		m->object_id_ceiling = 0; /* written again below */
	if (st != PERSIST_SEQ_PENDING)
		m->object_id_seq = 0;
	if (!m->object_id_seq && id + ID_RESERVE / 2 >= m->object_id_ceiling) {
		m->object_id_ceiling = id + ID_RESERVE;
		persist_put(m->persist, m->db_info, id_ceiling_key, sizeof(id_ceiling_key) - 1, &m->object_id_ceiling,
		            sizeof(m->object_id_ceiling));
		m->object_id_seq = persist_wait_seq(m->persist);
	}
	return id;
}

/* Sets the next id above every id this store may have given: its loaded records' (max_id) and its ceiling's. */
int objects_ids_load(struct meta *m, uint64_t max_id)
{
	unsigned char v[16];
	uint64_t ceiling = 0;
	size_t len = 0;
	int rc = persist_get(m->persist, m->db_info, id_ceiling_key, sizeof(id_ceiling_key) - 1, v, sizeof(v), &len);

	if (rc == 0 && len == sizeof(ceiling))
		memcpy(&ceiling, v, sizeof(ceiling));
	else if (rc != 0 && rc != MMC_OBJECT_NOT_EXISTS)
		return MMC_ERROR;
	m->next_object_id = max_id > ceiling ? max_id : ceiling;
	m->object_id_seq = 0;
	/* the ceiling moves ahead now, on disk before any id of this run reaches a client: written with the first id
	 * given, it was not, and a crash then gave those ids again. A store that refuses the write (full) serves all
	 * the same: the first id given writes it, as before. */
	m->object_id_ceiling = m->next_object_id + ID_RESERVE;
	if (persist_put(m->persist, m->db_info, id_ceiling_key, sizeof(id_ceiling_key) - 1, &m->object_id_ceiling,
	                sizeof(m->object_id_ceiling)) ||
	    persist_flush(m->persist)) {
		log_warn("op=load_objects err=\"the id ceiling could not be written ahead\"");
		m->object_id_ceiling = m->next_object_id;
	}
	return 0;
}

int objects_tables_open(struct meta *m)
{
	if (persist_table(m->persist, OBJECTS_TABLE, &m->db_objects) ||
	    persist_table_packed(m->persist, m->db_objects) ||
	    persist_table(m->persist, OBJECTS_TABLE_KEYED, &m->db_objects_keyed))
		return MMC_ERROR;
	persist_table_retry_deletes(m->db_objects); /* ids are never used again */
	return 0;
}

/* kept: persist_put_kept, for a record moved to a new id (its old id's delete is retried if its batch fails) */
static bool persist_record(struct meta *m, struct object *o, bool kept)
{
	union { /* the record, then the key right after its last blob */
		struct rec rec;
		unsigned char bytes[sizeof(struct rec) + MMC_WIRE_KEY_MAX];
	} v;
	struct rec *rec = &v.rec;
	unsigned char k[REC_KEY_LEN];
	uint32_t n = 0;
	size_t len;

	MMC_ASSERT(o->id); /* given by object_index_add: an object never indexed has no record */

	for (int i = 0; i < o->nblobs; i++) {
		const struct blob *b = &o->blobs[i];
		const struct service *svc = blob_svc(b);

		if (!svc)
			continue;
		rec->b[n++] = (struct rec_blob){svc->rank, b->media, svc->incarnation, blob_offset(b)};
	}
	rec->h = (struct rec_object){REC_VERSION, n, o->size};
	rec->ck = (struct rec_checksum){o->checksum_type, o->checksum};
	rec->stamp = o->stamp;
	len = (size_t)((unsigned char *)(rec->b + n) - v.bytes);
	memcpy(v.bytes + len, object_key(o), o->keylen);
	rec_key_of(o->id, k);
	if ((kept ? persist_put_kept : persist_put)(m->persist, m->db_objects, k, sizeof(k), v.bytes,
	                                            len + o->keylen) == 0) {
		o->persisted = true;
		o->stamp_dirty = false;
		o->rec_seq = persist_wait_seq(m->persist);
		return true;
	}
	return false;
}

bool object_persist(struct meta *m, struct object *o)
{
	return persist_record(m, o, false);
}

void object_persist_moved(struct meta *m, struct object *o)
{
	persist_record(m, o, true);
}

bool object_persist_again(struct meta *m, struct object *o)
{
	/* batches fail rarely and commit in order: anything queued up to the newest failed batch may be lost; a record
	 * that could not even be queued (out of memory) is not on disk either */
	if (o->persisted && (!o->rec_seq || o->rec_seq > persist_failed_seq(m->persist)))
		return false;
	object_persist(m, o);
	return true;
}

bool object_durable(const struct meta *m, const struct object *o)
{
	return !o->rec_seq || o->rec_seq <= persist_durable_seq(m->persist);
}

void object_publish(struct meta *m, struct object *o)
{
	MMC_ASSERT(o->state == MMC_BLOB_ALLOCATED); /* ALLOCATED -> READABLE, once */
	olist_del(o);
	o->state = MMC_BLOB_READABLE;
	/* the writer's fields share their bits with the LRU stamp and the record's batch, set next */
	o->write_session = 0;
	o->write_expiry_ms = 0;
	lru_push(m, o);
	object_persist(m, o);
}

static bool object_on_dram(const struct object *o)
{
	for (int i = 0; i < o->nblobs; i++)
		if (o->blobs[i].svc && o->blobs[i].media == MMC_MEDIA_DRAM)
			return true;
	return false;
}

void object_touch(struct meta *m, struct object *o)
{
	/* a DRAM object a task reads is being demoted: it is off its LRU until the move ends (tier.c) */
	if (o->state != MMC_BLOB_READABLE || (o->busy && object_on_dram(o)))
		return;
	olist_del(o);
	lru_push(m, o);
}

/*
 * Gives the object's space back; requests waiting for room get another try. reachable: a put's writes may still
 * land there (its writer failed or left), so the space goes to quarantine first (quarantine.h).
 */
static void release_space(struct meta *m, struct object *o, bool reachable)
{
	uint64_t now = reachable ? clock_ms() : 0;

	MMC_ASSERT(o->state == MMC_BLOB_REMOVING); /* space comes back from a removed object only */

	for (int i = 0; i < o->nblobs; i++) {
		struct blob *b = &o->blobs[i];
		struct service *svc = blob_svc(b);

		if (!svc)
			continue;
		if (reachable)
			space_quarantine(m, svc, b->media, blob_offset(b), now);
		else
			space_release(m, svc, b->media, blob_offset(b), o->unlink_seq);
		blob_forget(b);
	}
	objects_space_freed(m);
}

void objects_space_freed(struct meta *m)
{
	if (m->space_freed)
		m->space_freed(m);
}

/* True while someone may still write or read the object's bytes: its space must not be reused yet. */
static bool pinned(struct object *o, uint64_t now)
{
	return o->write_session != 0 || o->busy || object_leased(o, now);
}

/* pinned now; the clock is read only for an object with leases (a remove without one read it for nothing). */
static bool pinned_now(struct object *o)
{
	return o->write_session != 0 || o->busy || (o->leases && object_leased(o, clock_ms()));
}

void object_drop(struct meta *m, struct object *o)
{
	object_drop_hashed(m, o, o->in_index ? object_hash(object_key(o), o->keylen) : 0);
}

/* ---- the zombies by key (meta.zombies) ---- */

static uint32_t *zombie_bucket(const struct meta *m, const char *key, size_t len)
{
	return &m->zombies.buckets[object_hash(key, len) & m->zombies.mask];
}

/* Doubles the table when it holds as many zombies as buckets; a table that cannot grow stays as it is (longer
 * chains, the same answers). */
static void zombies_grow(struct meta *m)
{
	uint32_t old = m->zombies.mask + 1, *b = old <= UINT32_MAX / 2 ? calloc((size_t)old * 2, sizeof(*b)) : NULL;
	uint32_t *from = m->zombies.buckets;

	if (!b)
		return;
	m->zombies.buckets = b;
	m->zombies.mask = old * 2 - 1;
	for (uint32_t i = 0; i < old; i++) {
		for (uint32_t h = from[i], next; h; h = next) {
			struct object *o = object_at(h);
			uint32_t *to = zombie_bucket(m, object_key(o), o->keylen);

			next = o->hnext;
			o->hnext = *to;
			*to = h;
		}
	}
	free(from);
}

/* o (REMOVING, in no index) goes on the zombie list until nothing pins it. */
static void zombie_add(struct meta *m, struct object *o)
{
	uint32_t *b;

	if (m->zombies.n > m->zombies.mask)
		zombies_grow(m);
	b = zombie_bucket(m, object_key(o), o->keylen);
	o->hnext = *b;
	*b = o->self;
	m->zombies.n++;
	olist_add_tail(m, OLIST_ZOMBIES, o);
}

/* o leaves the zombie list (it is freed next). */
static void zombie_del(struct meta *m, struct object *o)
{
	uint32_t *p = zombie_bucket(m, object_key(o), o->keylen);

	while (*p && *p != o->self)
		p = &object_at(*p)->hnext;
	MMC_ASSERT(*p); /* every REMOVING object is in its key's chain */
	if (*p) {
		*p = o->hnext;
		m->zombies.n--;
	}
	o->hnext = 0;
	olist_del(o);
}

void object_drop_hashed(struct meta *m, struct object *o, uint64_t hash)
{
	/* an unfinished put or GVA allocation, whose writes may still land: one that failed, whose writer left, or
	 * whose write lease ran out (a copy posted just before it may still be on its way) */
	bool reachable = o->state == MMC_BLOB_ALLOCATED && !o->persisted;
	uint64_t unlink_seq = 0;

	MMC_ASSERT(o->state != MMC_BLOB_REMOVING); /* -> REMOVING once: a removed object is in no index or list */
	if (o->in_index)
		index_del_hashed(m, o, hash);
	olist_del(o);
	if (o->persisted)
		unlink_seq = unpersist(m, o, false);
	/* a put's bytes may still be in flight: keep the space until its writer commits or goes away (a GVA allocation
	 * is dropped only once its write lease ran out, or by its writer's finish, and then goes to quarantine) */
	if (o->state != MMC_BLOB_ALLOCATED || o->gva)
		o->write_session = 0; /* a READABLE object's LRU stamp had these bits */
	/* its record's batch, or its write lease, had these bits; a put still written keeps its write deadline, by
	 * which its space is reclaimed should its writer never say its writes are done (objects_sweep) */
	if (!(reachable && o->write_session))
		o->unlink_seq = unlink_seq;
	o->state = MMC_BLOB_REMOVING;
	if (pinned_now(o)) {
		o->unfinished = reachable; /* until its writer says its writes are done (object_writes_done) */
		zombie_add(m, o);
		return;
	}
	uncount(m, o);
	release_space(m, o, reachable);
	object_free(o);
}

struct object *objects_dram_copy(struct meta *m, struct object *o, struct service *svc, uint64_t offset,
                                 uint64_t unlink_seq)
{
	struct object *z = object_new(object_key(o), o->keylen, 1);

	if (!z)
		return NULL;
	z->size = o->size;
	z->checksum_type = o->checksum_type; /* a reader checks the copy against the writer's CRC */
	z->checksum = o->checksum;
	z->state = MMC_BLOB_REMOVING;
	z->unlink_seq = unlink_seq;
	blob_place(&z->blobs[0], svc, MMC_MEDIA_DRAM, offset);
	zombie_add(m, z);
	return z;
}

void object_lose_blob(struct meta *m, struct object *o, struct blob *b)
{
	blob_forget(b);
	for (int i = 0; i < o->nblobs; i++) {
		if (o->blobs[i].svc) {
			if (o->persisted)
				object_persist(m, o);
			return;
		}
	}
	/* no replica left: nothing to protect under a lease either */
	if (o->in_index)
		object_index_del(m, o);
	uncount(m, o); /* a removed object pinned until now, out of the index */
	if (o->state == MMC_BLOB_REMOVING)
		zombie_del(m, o);
	else
		olist_del(o);
	if (o->persisted)
		unpersist(m, o, false);
	object_free(o);
}

struct object *objects_find_zombie(struct meta *m, const char *key, size_t len, uint64_t session, uint64_t id, bool pin,
                                   uint32_t gen)
{
	for (uint32_t h = *zombie_bucket(m, key, len); h; h = object_at(h)->hnext) {
		struct object *o = object_at(h);

		if (o->keylen == len && memcmp(object_key(o), key, len) == 0 && lease_holds(o, session, pin, gen) &&
		    (!id || o->id == id))
			return o;
	}
	return NULL;
}

struct object *objects_find_removed_write(struct meta *m, const char *key, size_t len, uint64_t session, uint64_t id)
{
	for (uint32_t h = *zombie_bucket(m, key, len); h; h = object_at(h)->hnext) {
		struct object *o = object_at(h);

		if (o->id == id && o->write_session == session && o->keylen == len &&
		    memcmp(object_key(o), key, len) == 0)
			return o;
	}
	return NULL;
}

void object_unpin(struct meta *m, struct object *o)
{
	if (o->state != MMC_BLOB_REMOVING || pinned_now(o))
		return;
	zombie_del(m, o);
	uncount(m, o);
	release_space(m, o, o->unfinished);
	object_free(o);
}

/* The writer of removed put o is done with it (writes_landed: all of them; else some may still land). Its write
 * deadline leaves the bits release_space reads as a record's batch: it never had a record. */
static void writer_gone(struct meta *m, struct object *o, bool writes_landed)
{
	o->write_session = 0;
	o->unlink_seq = 0;
	o->unfinished &= !writes_landed;
	object_unpin(m, o);
}

void object_writes_done(struct meta *m, struct object *o)
{
	writer_gone(m, o, true);
}

void object_writer_left(struct meta *m, struct object *o)
{
	writer_gone(m, o, false);
}

static uint64_t remove_matching_in(struct meta *m, uint32_t *bucket, bool (*match)(void *arg, const char *key),
                                   void *arg)
{
	uint64_t n = 0;
	uint32_t h, next;

	/* object_drop unlinks o from this chain; its successor was read first */
	for (h = *bucket; h; h = next) {
		struct object *o = object_at(h);

		next = o->hnext;
		if (o->state == MMC_BLOB_READABLE && match(arg, object_key(o))) {
			object_drop(m, o);
			n++;
		}
	}
	return n;
}

uint64_t objects_remove_matching(struct meta *m, bool (*match)(void *arg, const char *key), void *arg)
{
	uint64_t n = 0;

	for (int s = 0; s < INDEX_SHARDS; s++)
		for (uint64_t b = 0; b <= m->shards[s].mask; b++)
			n += remove_matching_in(m, &m->shards[s].buckets[b], match, arg);
	return n;
}

void objects_sweep(struct meta *m, uint64_t now_ms)
{
	struct object *o, *next;

	for (o = olist_first(m, OLIST_ZOMBIES); o; o = next) {
		next = olist_next(o);
		if (o->unfinished && o->write_session && o->write_expiry_ms && o->write_expiry_ms <= now_ms) {
			/* a put removed while written, whose writer neither committed nor left: as for a pending one */
			log_info("op=reclaim key=\"%.*s\" reason=write_lease_expired removed=true", (int)o->keylen,
			         object_key(o));
			o->write_session = 0;
			o->unlink_seq = 0;
		}
		if (!pinned(o, now_ms)) {
			zombie_del(m, o);
			uncount(m, o);
			release_space(m, o, o->unfinished);
			object_free(o);
		}
	}
	for (o = olist_first(m, OLIST_PENDING); o; o = next) {
		next = olist_next(o);
		if (o->write_expiry_ms && o->write_expiry_ms <= now_ms) {
			log_info("op=reclaim key=\"%.*s\" reason=write_lease_expired", (int)o->keylen, object_key(o));
			/* its writer gave up or stalls: the space goes through quarantine, not back to that writer's
			 * session, which may live on for good */
			o->write_session = 0;
			object_drop(m, o);
		}
	}
}

void objects_session_closed(struct meta *m, uint64_t session)
{
	struct object *o, *next;

	/* the writer is gone: its unfinished puts go (GVA allocations wait for their write lease) */
	for (o = olist_first(m, OLIST_PENDING); o; o = next) {
		next = olist_next(o);
		if (o->write_session == session && !o->gva) {
			o->write_session = 0;
			object_drop(m, o);
		}
	}
	for (o = olist_first(m, OLIST_ZOMBIES); o; o = next) {
		next = olist_next(o);
		if (o->write_session == session)
			object_writer_left(m, o);
	}
}
