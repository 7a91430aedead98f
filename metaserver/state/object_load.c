/*
 * objects_load: the object table rebuilt from the store at start-up or takeover. One object at a time (a treap
 * insert into its pool's allocator, an index insert, a list append, then a sort of the LRU) took 10 s and more for
 * 10^7 objects; here it is three passes:
 *  1. the scan makes each record's object and indexes it, and notes per blob its pool and page, per object its LRU
 *     stamp (flat arrays, no tree);
 *  2. the blobs' ranges, radix-sorted by pool and offset, are reserved in one pass per pool; where records overlap
 *     (a damaged store) the record first in key order keeps the range, as a load one record at a time did;
 *  3. the objects, radix-sorted by stamp, are appended to their LRU in that order (newest first, equal stamps in key
 *     order); objects left without a blob are dropped and their records deleted, those that lost one written again.
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
#include "radix.h"
#include "services.h"

#define PAGES_MAX ((UINT64_C(1) << 24) - 1) /* a mark's size in pages; larger ones are read from the object */
#define RING      16                        /* objects whose index insert waits for their bucket's cache line */

/* What a load has seen, and the keys of records it dropped (deleted once the table is built). */
struct load {
	struct meta *m;
	uint64_t loaded, dropped;
	struct radix_item *objs; /* key: LRU stamp; val: handle */
	size_t nobjs, capobjs;
	struct radix_item *marks; /* key: pool (rank * MEDIA_COUNT + media) << 46 | page; val: pages << 40 | handle << 8
	                             | blob */
	size_t nmarks, capmarks;
	char (*gone)[MMC_WIRE_KEY_MAX + 1];
	size_t ngone, capgone;
	bool unordered; /* the store's scan is not in key order and may repeat a record (Redis) */
	/* objects made but not indexed yet, each with its hash: their buckets are on their way from DRAM */
	struct {
		struct object *o;
		uint64_t hash;
	} ring[RING];
	size_t ringn;
};

#define POOL_SHIFT 46

/* Copies a stored record, whose bytes carry no alignment guarantee. Returns 0 or -1 (malformed). */
static int rec_parse(const void *val, size_t vlen, struct rec *r)
{
	const unsigned char *p = val;
	size_t head;

	memset(r, 0, sizeof(*r));
	if (vlen < sizeof(r->h))
		return -1;
	memcpy(&r->h, p, sizeof(r->h));
	if (r->h.version < REC_VERSION_PLAIN || r->h.version > REC_VERSION)
		return -1;
	head = sizeof(r->h) + (r->h.version >= REC_VERSION_SUM ? sizeof(r->ck) : 0) +
	       (r->h.version >= REC_VERSION ? sizeof(r->stamp) : 0);
	if (r->h.nblobs > 2 * MMC_WIRE_REPLICAS || vlen != head + r->h.nblobs * sizeof(r->b[0]))
		return -1;
	if (r->h.version >= REC_VERSION_SUM)
		memcpy(&r->ck, p + sizeof(r->h), sizeof(r->ck));
	if (r->h.version >= REC_VERSION)
		memcpy(&r->stamp, p + sizeof(r->h) + sizeof(r->ck), sizeof(r->stamp));
	memcpy(r->b, p + head, r->h.nblobs * sizeof(r->b[0]));
	return r->ck.type > MMC_WIRE_CHECKSUM_CRC32C ? MMC_ERROR : 0;
}

static void gone(struct load *l, const void *key, size_t klen)
{
	void *g;

	l->dropped++;
	if (!(g = array_grow(l->gone, &l->capgone, l->ngone + 1, sizeof(*l->gone), 256)))
		return; /* the record stays; the next load drops it again */
	l->gone = g;
	memset(l->gone[l->ngone], 0, sizeof(l->gone[l->ngone]));
	memcpy(l->gone[l->ngone++], key, klen > MMC_WIRE_KEY_MAX ? MMC_WIRE_KEY_MAX : klen);
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

/* Indexes o 16 objects later, when the bucket it goes to has arrived from DRAM (o NULL: the rest now). */
static void index_add(struct load *l, struct object *o, uint64_t hash)
{
	size_t slot = l->ringn % RING;

	if (!o) {
		for (size_t i = l->ringn > RING ? l->ringn - RING : 0; i < l->ringn; i++)
			object_index_add(l->m, l->ring[i % RING].o, l->ring[i % RING].hash);
		l->ringn = 0;
		return;
	}
	objects_prefetch(l->m, &hash, 1);
	if (l->ringn >= RING) /* the oldest's bucket has had 16 records' time to arrive */
		object_index_add(l->m, l->ring[slot].o, l->ring[slot].hash);
	l->ring[slot].o = o;
	l->ring[slot].hash = hash;
	l->ringn++;
}

/* The reader thread's share of pass 1: the key's hash. */
static uint64_t key_hash(const void *key, size_t klen)
{
	return object_hash(key, klen);
}

/* Pass 1, for each record of the scan (hash: object_hash of the key). */
static int scan_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen, uint64_t hash)
{
	struct load *l = arg;
	struct rec rec;
	struct object *o;
	int rc = 0;

	if (klen == 0 || klen > MMC_WIRE_KEY_MAX || rec_parse(val, vlen, &rec)) {
		gone(l, key, klen);
		return 0;
	}
	if (!(o = object_new(key, klen, (uint8_t)rec.h.nblobs))) {
		gone(l, key, klen);
		return 0;
	}
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
	index_add(l, o, hash);
	return rc ? rc : push(&l->objs, &l->nobjs, &l->capobjs, o->stamp, o->self);
}

/* Bytewise, shorter first on a tie: LMDB's key order. */
static int key_cmp(struct object *a, struct object *b)
{
	int c = memcmp(object_key(a), object_key(b), a->keylen < b->keylen ? a->keylen : b->keylen);

	return c ? c : (int)a->keylen - (int)b->keylen;
}

static struct object *obj_of(const struct radix_item *it)
{
	return object_at((uint32_t)it->val);
}

static int obj_key_cmp(const void *x, const void *y)
{
	return key_cmp(obj_of(x), obj_of(y));
}

/* A record an HSCAN gave twice made two objects: the second goes (its ranges' marks see a free record). */
static void drop_twin(struct load *l, struct object *o)
{
	for (int b = 0; b < o->nblobs; b++)
		if (o->blobs[b].svc)
			blob_forget(&o->blobs[b]);
	object_index_del(l->m, o);
	object_free(o);
}

/*
 * An unordered scan (Redis): equal stamps in key order, as a scan in key order leaves them, and each record once
 * (twins have the same stamp and key, so they end up side by side). Looking each record up before making it cost
 * a random miss per record, more than twice the time of this.
 */
static void order_ties(struct load *l)
{
	for (size_t i = 0, j; i < l->nobjs; i = j) {
		for (j = i + 1; j < l->nobjs && l->objs[j].key == l->objs[i].key; j++)
			;
		if (j - i < 2)
			continue;
		qsort(&l->objs[i], j - i, sizeof(l->objs[0]), obj_key_cmp);
		for (size_t k = i + 1; k < j; k++) {
			struct object *o = obj_of(&l->objs[k]);

			if (o->state != OBJECT_FREE && !key_cmp(obj_of(&l->objs[k - 1]), o))
				drop_twin(l, o);
		}
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

static int by_key(const void *x, const void *y)
{
	return key_cmp(((const struct mark *)x)->o, ((const struct mark *)y)->o);
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
 * Ranges that overlap one another (a damaged store): in key order, each one that overlaps none kept before it is
 * kept, as marking the records one by one in key order did.
 */
static int pool_resolve(struct pool *p)
{
	struct mark *c = p->cluster;
	size_t n = p->nc, kept = 0;
	int rc = 0;

	p->nc = 0;
	if (n > 1)
		qsort(c, n, sizeof(*c), by_key);
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
			continue; /* a twin that order_ties dropped */
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
		gone(l, object_key(o), o->keylen);
		object_index_del(l->m, o);
		object_free(o);
		return;
	}
	olist_add_tail(l->m, OLIST_LRU + object_media(o), o);
	if (live != o->nblobs)
		object_persist(l->m, o); /* without the blobs it lost */
	l->loaded++;
}

/* The objects by ascending stamp, equal ones in key order. */
static int sort_objects(struct load *l)
{
	int rc = radix_sort(l->objs, l->nobjs);

	if (rc == 0 && l->unordered)
		order_ties(l);
	return rc;
}

static void build_lists(struct load *l)
{
	/* newest first (the sort is by ascending stamp), equal stamps in key order: runs from the end, each forwards */
	for (size_t end = l->nobjs, start; end; end = start) {
		for (start = end - 1; start && l->objs[start - 1].key == l->objs[end - 1].key; start--)
			;
		for (size_t k = start; k < end; k++) {
			if (k + AHEAD < end)
				__builtin_prefetch(obj_of(&l->objs[k + AHEAD]), 1);
			else if (start >= AHEAD - (end - k))
				__builtin_prefetch(obj_of(&l->objs[start - (AHEAD - (end - k))]), 1);
			if (obj_of(&l->objs[k])->state != OBJECT_FREE) /* not a dropped twin */
				settle_one(l, obj_of(&l->objs[k]));
		}
	}
}

int objects_load(struct meta *m)
{
	struct load l = {.m = m, .unordered = !persist_scan_ordered(m->persist)};
	uint64_t n = 0, t[4];
	int rc;

	/* size the arrays for every record at once instead of doubling 13 times on the way to 10^7 */
	if (persist_count(m->persist, m->db_objects, &n))
		return MMC_ERROR;
	if (n && (!(l.objs = array_grow(NULL, &l.capobjs, n, sizeof(*l.objs), 4096)) ||
	          !(l.marks = array_grow(NULL, &l.capmarks, n, sizeof(*l.marks), 4096)))) {
		free(l.objs);
		return MMC_MALLOC_FAILED;
	}
	t[0] = clock_ns();
	objects_reserve(m, m->nobjects + n);
	slab_populate(true);
	rc = persist_scan_ahead(m->persist, m->db_objects, key_hash, scan_one, &l);
	slab_populate(false);
	index_add(&l, NULL, 0);
	if (rc == 0)
		rc = sort_objects(&l); /* first: it drops the twins of an unordered scan */
	t[1] = clock_ns();
	if (rc == 0)
		rc = mark_pools(&l);
	t[2] = clock_ns();
	if (rc == 0)
		build_lists(&l);
	t[3] = clock_ns();
	m->lru_saved = m->lru_clock;
	for (size_t i = 0; i < l.ngone; i++)
		persist_del(m->persist, m->db_objects, l.gone[i], strlen(l.gone[i]));
	free(l.gone);
	free(l.objs);
	free(l.marks);
	if (rc)
		return rc == MMC_MALLOC_FAILED ? rc : MMC_ERROR;
	log_info("op=load objects=%llu dropped=%llu ms=%.0f scan_ms=%.0f pools_ms=%.0f lru_ms=%.0f",
	         (unsigned long long)l.loaded, (unsigned long long)l.dropped, (double)(t[3] - t[0]) / 1e6,
	         (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6, (double)(t[3] - t[2]) / 1e6);
	return 0;
}
