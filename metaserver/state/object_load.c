/*
 * objects_load: the object table rebuilt from the store at start-up or takeover. One object at a time (a treap
 * insert into its pool's allocator, an index insert, a list append, then a sort of the LRU) took 10 s and more for
 * 10^7 objects; here it is three passes:
 *  1. the scan makes each record's object and indexes it, and notes per blob its pool and page, per object its LRU
 *     stamp (flat arrays, no tree); of a key stored under two ids, the larger stays and the other record goes;
 *  2. the blobs' ranges, radix-sorted by pool and offset, are reserved in one pass per pool; where records overlap
 *     (a damaged store) the older object (the smaller id) keeps the range;
 *  3. the objects, radix-sorted by stamp, are appended to their LRU in that order (newest first, equal stamps in id
 *     order); objects left without a blob are dropped and their records deleted, those that lost one written again.
 * A store of format 2 keeps its records under the objects' keys (object_rec.h): pass 1 reads those too, and once the
 * table is built they are written again under ids and deleted.
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "array.h"
#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"
#include "object_rec.h"
#include "objects.h"
#include "persist.h"
#include "prefault.h"
#include "radix.h"
#include "services.h"

#define PAGES_MAX         ((UINT64_C(1) << 24) - 1) /* a mark's size in pages; larger ones are read from the object */
#define RING              16                        /* objects whose index insert waits for their bucket's cache line */
#define MOVE_FLUSH        65536                     /* records a move of a format-2 store writes per commit */
#define LOAD_RECORD_BYTES 160 /* slab bytes of an object, a little over one with a blob and a 76-byte key (144) */

/* What a load has seen, and the ids of records it dropped (deleted once the table is built). */
struct load {
	struct meta *m;
	uint64_t loaded, dropped, moved, cleared;
	size_t prefaulted;       /* bytes the prefault worker faulted in */
	uint64_t max_id;         /* the largest id a record is stored under */
	bool keyed;              /* reading the format-2 table: records under the objects' keys, no id */
	struct radix_item *objs; /* key: LRU stamp; val: handle */
	size_t nobjs, capobjs;
	struct radix_item *marks; /* key: pool (rank * MEDIA_COUNT + media) << 46 | page; val: pages << 40 | handle << 8
	                             | blob */
	size_t nmarks, capmarks;
	uint64_t *gone;
	size_t ngone, capgone;
	bool unordered;         /* the store's scan is not in key order and may repeat a record (Redis) */
	struct object **losers; /* objects of a key loaded twice that do not stay: freed once the scans are done */
	size_t nlosers, caplosers;
	/* objects made but not indexed yet, each with its hash: their buckets are on their way from DRAM */
	struct {
		struct object *o;
		uint64_t hash;
	} ring[RING];
	size_t ringn;
};

#define POOL_SHIFT 46

/*
 * Where a stored value's fixed part ends: the header, checksum and stamp its version has, then its blobs; the key
 * follows (version 4). keyed: the format-2 table, whose versions are 1..3 and whose values end there. Returns 0, or
 * -1 when the value is malformed. Thread-safe: the scan's reader thread finds keys with it.
 */
static int rec_layout(const void *val, size_t vlen, bool keyed, struct rec_object *h, size_t *blobs_at, size_t *end)
{
	size_t head;

	if (vlen < sizeof(*h))
		return -1;
	memcpy(h, val, sizeof(*h));
	if (keyed ? h->version < REC_VERSION_PLAIN || h->version > REC_VERSION_STAMP : h->version != REC_VERSION)
		return -1;
	head = sizeof(*h) + (h->version >= REC_VERSION_SUM ? sizeof(struct rec_checksum) : 0) +
	       (h->version >= REC_VERSION_STAMP ? sizeof(uint64_t) : 0);
	if (h->nblobs > 2 * MMC_WIRE_REPLICAS || vlen < head + h->nblobs * sizeof(struct rec_blob))
		return -1;
	*blobs_at = head;
	*end = head + h->nblobs * sizeof(struct rec_blob);
	return keyed && *end != vlen ? -1 : 0;
}

/* Copies a stored record, whose bytes carry no alignment guarantee, and finds its key (the value's tail; in the
 * format-2 table, the store's key). Returns 0 or -1 (malformed). */
static int rec_parse(const struct load *l, const void *key, size_t klen, const void *val, size_t vlen, struct rec *r,
                     const char **okey, size_t *olen)
{
	const unsigned char *p = val;
	size_t blobs_at, end;

	memset(r, 0, sizeof(*r));
	if (rec_layout(val, vlen, l->keyed, &r->h, &blobs_at, &end))
		return -1;
	if (r->h.version >= REC_VERSION_SUM)
		memcpy(&r->ck, p + sizeof(r->h), sizeof(r->ck));
	if (r->h.version >= REC_VERSION_STAMP)
		memcpy(&r->stamp, p + sizeof(r->h) + sizeof(r->ck), sizeof(r->stamp));
	memcpy(r->b, p + blobs_at, r->h.nblobs * sizeof(r->b[0]));
	*okey = l->keyed ? key : (const char *)p + end;
	*olen = l->keyed ? klen : vlen - end;
	if (!l->keyed && klen != REC_KEY_LEN)
		return -1;
	if (*olen == 0 || *olen > MMC_WIRE_KEY_MAX)
		return -1;
	return r->ck.type > MMC_WIRE_CHECKSUM_CRC32C ? MMC_ERROR : 0;
}

/* A record of the id table to delete once the table is built (a record of the format-2 table goes with its table). */
static void gone(struct load *l, uint64_t id)
{
	void *g;

	l->dropped++;
	if (l->keyed || !id)
		return;
	if (!(g = array_grow(l->gone, &l->capgone, l->ngone + 1, sizeof(*l->gone), 256)))
		return; /* the record stays; the next load drops it again */
	l->gone = g;
	l->gone[l->ngone++] = id;
}

static int push(struct radix_item **v, size_t *n, size_t *cap, uint64_t key, uint64_t val)
{
	struct radix_item *g = array_grow(*v, cap, *n + 1, sizeof(**v), 4096);

	if (!g)
		return MMC_MALLOC_FAILED;
	*v = g;
	(*v)[(*n)++] = (struct radix_item){key, val};
	return 0;
}

/* Places blob i of o where the record says, if its service is the one that wrote it, and notes its range. */
static int note_blob(struct load *l, struct object *o, int i, const struct rec_blob *rb, uint64_t size)
{
	struct service *svc = service_get(l->m, rb->rank);
	uint64_t pages = (size + ALLOC_ALIGN - 1) / ALLOC_ALIGN;

	if (!svc || svc->incarnation != rb->incarnation || rb->media >= MEDIA_COUNT ||
	    !service_segment(svc, rb->media) || rb->offset % ALLOC_ALIGN || !pages)
		return 0; /* stays unplaced: alloc_mark would have refused it */
	blob_place(&o->blobs[i], svc, rb->media, rb->offset);
	return push(&l->marks, &l->nmarks, &l->capmarks,
	            (uint64_t)(rb->rank * MEDIA_COUNT + rb->media) << POOL_SHIFT | rb->offset / ALLOC_ALIGN,
	            (pages < PAGES_MAX ? pages : PAGES_MAX) << 40 | (uint64_t)o->self << 8 | (uint64_t)i);
}

/*
 * Two records of one key under two ids: a record moved to a new id (a promote) whose old id's delete went with it
 * when the store refused their batch again and again, the new id written again later. The larger id is the
 * object's; the other record goes, and the load's final flush puts its delete on disk before its range can hold
 * another object (loaded again, with the newer record removed meanwhile, it would serve that object's bytes).
 * Equal ids: a record Redis's scan gave twice. The object that does not stay is freed after the scans (its handle
 * is in the load's arrays). Returns 0, or MMC_MALLOC_FAILED.
 */
static int index_one(struct load *l, struct object *o, uint64_t hash)
{
	struct object *was = object_find_hashed(l->m, object_key(o), o->keylen, hash), *loser, **grown;

	if (!was) {
		object_index_add(l->m, o, hash);
		return 0;
	}
	loser = was->id < o->id ? was : o;
	if (!(grown = array_grow(l->losers, &l->caplosers, l->nlosers + 1, sizeof(*grown), 16)))
		return MMC_MALLOC_FAILED;
	l->losers = grown;
	if (was->id != o->id) {
		size_t ngone = l->ngone;

		gone(l, loser->id);
		if (l->ngone == ngone)
			return MMC_MALLOC_FAILED; /* its record would stay on disk with its range free */
	}
	l->losers[l->nlosers++] = loser; /* once nothing can fail: a loser still indexed is never freed */
	if (loser == was) {
		object_index_del(l->m, was);
		object_index_add(l->m, o, hash);
	}
	return 0;
}

/* Indexes o 16 objects later, when the bucket it goes to has arrived from DRAM (o NULL: the rest now). */
static int index_add(struct load *l, struct object *o, uint64_t hash)
{
	size_t slot = l->ringn % RING;
	int rc = 0;

	if (!o) {
		for (size_t i = l->ringn > RING ? l->ringn - RING : 0; i < l->ringn && !rc; i++)
			rc = index_one(l, l->ring[i % RING].o, l->ring[i % RING].hash);
		l->ringn = 0;
		return rc;
	}
	objects_prefetch(l->m, &hash, 1);
	if (l->ringn >= RING / 2) /* its bucket has had 8 records' time to arrive: then the object index_one reads */
		objects_prefetch_head(l->m, l->ring[(l->ringn - RING / 2) % RING].hash);
	if (l->ringn >= RING) /* the oldest's bucket has had 16 records' time to arrive */
		rc = index_one(l, l->ring[slot].o, l->ring[slot].hash);
	l->ring[slot].o = o;
	l->ring[slot].hash = hash;
	l->ringn++;
	return rc;
}

/* The reader thread's share of pass 1: the hash of the key at the value's tail (0 for a malformed value). */
static uint64_t key_hash(const void *key, size_t klen, const void *val, size_t vlen)
{
	struct rec_object h;
	size_t blobs_at, end;

	(void)key;
	(void)klen;
	if (rec_layout(val, vlen, false, &h, &blobs_at, &end) || end == vlen)
		return 0;
	return object_hash((const char *)val + end, vlen - end);
}

/* Pass 1, for each record of the scan (hash: object_hash of the object's key). */
static int scan_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen, uint64_t hash)
{
	struct load *l = arg;
	uint64_t id = !l->keyed && klen == REC_KEY_LEN ? rec_id_of(key) : 0;
	const char *okey;
	size_t olen;
	struct rec rec;
	struct object *o;
	int rc = 0;

	if (rec_parse(l, key, klen, val, vlen, &rec, &okey, &olen)) {
		gone(l, id);
		return 0;
	}
	/* in the format-2 table: a record moved already by a move that stopped half-way, or one Redis gave twice */
	if (l->keyed && object_find_hashed(l->m, okey, olen, hash))
		return 0;
	if (!(o = object_new(okey, olen, (uint8_t)rec.h.nblobs)))
		return MMC_MALLOC_FAILED; /* the load fails whole: a good record is never deleted for want of memory */
	o->id = id;                       /* 0 in the format-2 table: the index gives it one */
	if (id > l->max_id)
		l->max_id = id;
	o->size = rec.h.size;
	o->checksum_type = rec.ck.type;
	o->checksum = rec.ck.value;
	o->stamp = rec.stamp;
	o->state = MMC_BLOB_READABLE;
	o->persisted = true;
	if (rec.stamp > l->m->lru_clock)
		l->m->lru_clock = rec.stamp;
	for (uint32_t i = 0; i < rec.h.nblobs && !rc; i++)
		rc = note_blob(l, o, (int)i, &rec.b[i], rec.h.size);
	if (rc == 0 && (rc = push(&l->objs, &l->nobjs, &l->capobjs, o->stamp, o->self)) == 0 && l->keyed)
		object_index_add(l->m, o, hash); /* at once: the next record's lookup must see it */
	else if (rc == 0)
		rc = index_add(l, o, hash);
	return rc;
}

/* Pass 1 for a record of the format-2 table, read in key order (the ids it gets follow it), its key the object's. */
static int scan_keyed(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	return scan_one(arg, key, klen, val, vlen, object_hash(key, klen));
}

/* The order of records in the store: by id (a format-2 record, given its id by the load, after every stored one). */
static int id_cmp(const struct object *a, const struct object *b)
{
	return (a->id > b->id) - (a->id < b->id);
}

static struct object *obj_of(const struct radix_item *it)
{
	return object_at((uint32_t)it->val);
}

static int obj_id_cmp(const void *x, const void *y)
{
	return id_cmp(obj_of(x), obj_of(y));
}

/* The objects index_one set aside go (their ranges' marks and their LRU entries see a free record). */
static void drop_losers(struct load *l)
{
	for (size_t i = 0; i < l->nlosers; i++) {
		struct object *o = l->losers[i];

		for (int b = 0; b < o->nblobs; b++)
			if (o->blobs[b].svc)
				blob_forget(&o->blobs[b]);
		object_free(o);
	}
}

/* An unordered scan (Redis): equal stamps in id order, as a scan in id order leaves them. */
static void order_ties(struct load *l)
{
	for (size_t i = 0, j; i < l->nobjs; i = j) {
		for (j = i + 1; j < l->nobjs && l->objs[j].key == l->objs[i].key; j++)
			;
		if (j - i > 1)
			qsort(&l->objs[i], j - i, sizeof(l->objs[0]), obj_id_cmp);
	}
}

/* ---- pass 2: the pools ---- */

struct mark {
	uint64_t offset, size;
	struct object *o;
	int blob;
};

static struct mark mark_of(const struct radix_item *it)
{
	struct object *o = object_at((uint32_t)(it->val >> 8));
	uint64_t pages = it->val >> 40;

	if (pages == PAGES_MAX)
		pages = (o->size + ALLOC_ALIGN - 1) / ALLOC_ALIGN;
	return (struct mark){(it->key & ((UINT64_C(1) << POOL_SHIFT) - 1)) * ALLOC_ALIGN, pages * ALLOC_ALIGN, o,
	                     (int)(it->val & 0xff)};
}

static int by_id(const void *x, const void *y)
{
	return id_cmp(((const struct mark *)x)->o, ((const struct mark *)y)->o);
}

static int by_offset(const void *x, const void *y)
{
	const struct mark *a = x, *b = y;

	return (a->offset > b->offset) - (a->offset < b->offset);
}

#define CLUSTER_MAX 64 /* ranges overlapping one another that one pass resolves; more are refused outright */
#define CHUNK       4096

/* One pool's ranges on their way into its allocator, CHUNK at a time. */
struct pool {
	struct allocator *a;
	struct mark kept[CHUNK];
	struct alloc_range r[CHUNK];
	size_t n;
	struct mark cluster[CLUSTER_MAX]; /* ranges that overlap one another, in offset order */
	size_t nc;
	uint64_t cluster_end;
};

/* Reserves the kept ranges: in one pass while they follow everything reserved so far, else one by one. */
static int pool_flush(struct pool *p)
{
	int rc = alloc_mark_tail(p->a, p->r, p->n);

	if (rc == MMC_INVALID_PARAM) { /* the pool had space reserved before the load: mark the hard way */
		rc = 0;
		for (size_t i = 0; i < p->n; i++)
			if (alloc_mark(p->a, p->r[i].offset, p->r[i].size))
				blob_forget(&p->kept[i].o->blobs[p->kept[i].blob]);
	}
	p->n = 0;
	return rc;
}

static int pool_keep(struct pool *p, const struct mark *k)
{
	int rc = p->n == CHUNK ? pool_flush(p) : 0;

	p->kept[p->n] = *k;
	p->r[p->n++] = (struct alloc_range){k->offset, k->size};
	return rc;
}

/*
 * Ranges that overlap one another (a damaged store): in id order, each one that overlaps none kept before it is
 * kept, so the object made first keeps its bytes.
 */
static int pool_resolve(struct pool *p)
{
	struct mark *c = p->cluster;
	size_t n = p->nc, kept = 0;
	int rc = 0;

	p->nc = 0;
	if (n > 1)
		qsort(c, n, sizeof(*c), by_id);
	for (size_t i = 0; i < n; i++) {
		bool clash = false;

		for (size_t j = 0; j < kept && !clash; j++)
			clash = c[i].offset < c[j].offset + c[j].size && c[j].offset < c[i].offset + c[i].size;
		if (clash)
			blob_forget(&c[i].o->blobs[c[i].blob]);
		else
			c[kept++] = c[i];
	}
	if (kept > 1)
		qsort(c, kept, sizeof(*c), by_offset);
	for (size_t i = 0; i < kept && !rc; i++)
		rc = pool_keep(p, &c[i]);
	return rc;
}

/* The marks of one pool, sorted by offset. */
static int mark_pool(struct pool *p, const struct radix_item *it, size_t n)
{
	uint64_t cap = alloc_capacity(p->a);
	int rc = 0;

	p->n = p->nc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct mark k = mark_of(&it[i]);

		if (k.o->state == OBJECT_FREE)
			continue; /* a key's other record (index_one) */
		if (k.offset >= cap || k.size > cap - k.offset || (p->nc == CLUSTER_MAX && k.offset < p->cluster_end)) {
			blob_forget(&k.o->blobs[k.blob]);
			continue;
		}
		if (p->nc && k.offset >= p->cluster_end)
			rc = pool_resolve(p);
		if (!p->nc || k.offset + k.size > p->cluster_end)
			p->cluster_end = k.offset + k.size;
		p->cluster[p->nc++] = k;
	}
	if (!rc && p->nc)
		rc = pool_resolve(p);
	return rc ? rc : pool_flush(p);
}

static int mark_pools(struct load *l)
{
	struct pool *p;
	int rc = radix_sort(l->marks, l->nmarks);

	if (rc || !(p = malloc(sizeof(*p))))
		return MMC_MALLOC_FAILED;
	for (size_t i = 0, j; i < l->nmarks && !rc; i = j) {
		uint64_t pool = l->marks[i].key >> POOL_SHIFT;
		struct service *svc = service_get(l->m, (uint32_t)(pool / MEDIA_COUNT));

		for (j = i + 1; j < l->nmarks && l->marks[j].key >> POOL_SHIFT == pool; j++)
			;
		p->a = service_segment(svc, (uint32_t)(pool % MEDIA_COUNT))->alloc;
		rc = mark_pool(p, &l->marks[i], j - i);
	}
	free(p);
	return rc;
}

/* ---- pass 3: the LRUs ---- */

#define AHEAD 16

/* Lists o, or drops it without a blob. */
static void settle_one(struct load *l, struct object *o)
{
	int live = 0;

	for (int i = 0; i < o->nblobs; i++)
		live += o->blobs[i].svc != 0;
	if (!live) {
		gone(l, o->id <= l->max_id ? o->id : 0); /* a format-2 record goes with its table */
		object_index_del(l->m, o);
		object_free(o);
		return;
	}
	olist_add_tail(l->m, OLIST_LRU + object_media(o), o);
	if (live != o->nblobs)
		object_persist(l->m, o); /* without the blobs it lost */
	l->loaded++;
}

/* The objects by ascending stamp, equal ones in id order. */
static int sort_objects(struct load *l)
{
	int rc = radix_sort(l->objs, l->nobjs);

	if (rc == 0 && l->unordered)
		order_ties(l);
	return rc;
}

static void build_lists(struct load *l)
{
	/* newest first (the sort is by ascending stamp), equal stamps in id order: runs from the end, each forwards */
	for (size_t end = l->nobjs, start; end; end = start) {
		for (start = end - 1; start && l->objs[start - 1].key == l->objs[end - 1].key; start--)
			;
		for (size_t k = start; k < end; k++) {
			if (k + AHEAD < end)
				__builtin_prefetch(obj_of(&l->objs[k + AHEAD]), 1);
			else if (start >= AHEAD - (end - k))
				__builtin_prefetch(obj_of(&l->objs[start - (AHEAD - (end - k))]), 1);
			if (obj_of(&l->objs[k])->state != OBJECT_FREE) /* not a key's other record */
				settle_one(l, obj_of(&l->objs[k]));
		}
	}
}

/*
 * What pass 1 over n records writes for the first time, faulted in beside it (prefault.h): the slab's chunks, the
 * index's buckets (written at random from the first record on, so first) and the arrays' next n entries.
 */
static void prefault_load(struct load *l, uint64_t n)
{
	struct meta *m = l->m;

	slab_populate(n * LOAD_RECORD_BYTES);
	for (int i = 0; i < INDEX_SHARDS; i++)
		prefault_range(m->shards[i].buckets, ((size_t)m->shards[i].mask + 1) * sizeof(*m->shards[i].buckets));
	prefault_range(l->objs + l->nobjs, n * sizeof(*l->objs));
	prefault_range(l->marks + l->nmarks, n * sizeof(*l->marks));
}

/* Pass 1 over one table (the id table, or the format-2 one), into arrays sized for n more records. */
static int scan_table(struct load *l, struct persist_table *t, uint64_t n)
{
	struct meta *m = l->m;
	int rc;

	if (n && (!(l->objs = array_grow(l->objs, &l->capobjs, l->nobjs + n, sizeof(*l->objs), 4096)) ||
	          !(l->marks = array_grow(l->marks, &l->capmarks, l->nmarks + n, sizeof(*l->marks), 4096))))
		return MMC_MALLOC_FAILED;
	objects_reserve(m, m->nobjects + n);
	if (n)
		prefault_load(l, n);
	if (l->keyed) /* once per store, and in key order whatever the store: slower, and every load the same */
		rc = persist_scan(m->persist, t, scan_keyed, l);
	else
		rc = persist_scan_ahead(m->persist, t, key_hash, scan_one, l);
	l->prefaulted += slab_populate(0);
	if (rc == 0)
		rc = index_add(l, NULL, 0);
	return rc;
}

/* Deletes a record left in the format-2 table; stops the scan every MOVE_FLUSH to commit (1). */
static int drop_keyed(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct load *l = arg;

	(void)val;
	(void)vlen;
	persist_del(l->m->persist, l->m->db_objects_keyed, key, klen);
	return ++l->cleared % MOVE_FLUSH == 0;
}

/* Writes the objects of the format-2 table (ids above every stored one) under their ids, deleting what they were
 * stored under, a commit every MOVE_FLUSH; then whatever that table still holds (records the load dropped). */
static int move_keyed(struct load *l)
{
	struct meta *m = l->m;
	uint32_t h = 0;
	struct object *o;
	int rc;

	while ((o = slab_next(&h))) {
		if (o->state != MMC_BLOB_READABLE || o->id <= l->max_id)
			continue;
		object_persist(m, o);
		persist_del(m->persist, m->db_objects_keyed, object_key(o), o->keylen);
		if (++l->moved % MOVE_FLUSH == 0 && persist_flush(m->persist))
			return MMC_ERROR;
	}
	do {
		if (persist_flush(m->persist))
			return MMC_ERROR;
		rc = persist_scan(m->persist, m->db_objects_keyed, drop_keyed, l);
	} while (rc == 1);
	return rc || persist_flush(m->persist) ? MMC_ERROR : 0;
}

int objects_load(struct meta *m)
{
	struct load l = {.m = m, .unordered = !persist_scan_ordered(m->persist, m->db_objects)};
	uint64_t n = 0, nkeyed = 0, t[4];
	int rc;

	if (persist_count(m->persist, m->db_objects, &n) || persist_count(m->persist, m->db_objects_keyed, &nkeyed))
		return MMC_ERROR;
	t[0] = clock_ns();
	rc = scan_table(&l, m->db_objects, n);
	if (rc == 0)
		rc = objects_ids_load(m, l.max_id > m->next_object_id ? l.max_id : m->next_object_id);
	if (rc == 0 && nkeyed) {
		l.keyed = true;
		rc = scan_table(&l, m->db_objects_keyed, nkeyed);
		l.keyed = false;
	}
	drop_losers(&l);
	if (rc == 0)
		rc = sort_objects(&l);
	t[1] = clock_ns();
	if (rc == 0)
		rc = mark_pools(&l);
	t[2] = clock_ns();
	if (rc == 0)
		build_lists(&l);
	t[3] = clock_ns();
	m->lru_saved = m->lru_clock;
	for (size_t i = 0; i < l.ngone && rc == 0; i++) /* a load that failed changes nothing on disk */
		object_record_del(m, l.gone[i]);
	if (rc == 0 && l.nlosers && persist_flush(m->persist))
		rc = MMC_ERROR; /* a key's other record must be gone from disk before its range serves another object */
	if (rc == 0 && nkeyed && (rc = move_keyed(&l)) == 0)
		log_info("op=store_move objects=%llu from=\"%s\" to=\"%s\"", (unsigned long long)l.moved,
		         OBJECTS_TABLE_KEYED, OBJECTS_TABLE);
	free(l.gone);
	free(l.losers);
	free(l.objs);
	free(l.marks);
	if (rc)
		return rc == MMC_MALLOC_FAILED ? rc : MMC_ERROR;
	log_info("op=load objects=%llu dropped=%llu ms=%.0f scan_ms=%.0f pools_ms=%.0f lru_ms=%.0f prefaulted_mib=%zu",
	         (unsigned long long)l.loaded, (unsigned long long)l.dropped, (double)(t[3] - t[0]) / 1e6,
	         (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6, (double)(t[3] - t[2]) / 1e6,
	         l.prefaulted >> 20);
	return 0;
}
