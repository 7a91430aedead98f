#include "alloc_req.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "key_result.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "placement.h"
#include "rpc.h"

struct alloc_item {
	const char *key;
	uint64_t size;
	uint64_t hash; /* object_hash(key) */
};

struct alloc_req {
	struct list link; /* meta.parked */
	struct conn *c;
	uint64_t id;
	bool gva;
	bool durable; /* a duplicate's record was queued again: the reply waits for its commit */
	struct place_req pr;
	int32_t preferred[MMC_WIRE_REPLICAS];
	uint64_t lease_ttl_ms;
	uint64_t deadline_ms;
	size_t n, next;
	struct alloc_item *items; /* n; keys point into `keys` */
	uint64_t *hash;           /* n: items[i].hash, contiguous for the prefetch; NULL once parked */
	char *keys;
	struct key_result *results; /* n */
};

static bool key_ok(const char *key, size_t *len)
{
	*len = key ? strlen(key) : 0;
	return *len >= 1 && *len <= MMC_WIRE_KEY_MAX;
}

/* An object left over from before a restart whose services never came back must not block a new put. */
static bool stale(const struct object *o)
{
	if (o->state != MMC_BLOB_READABLE)
		return false;
	for (int i = 0; i < o->nblobs; i++)
		if (o->blobs[i].svc && o->blobs[i].svc->session)
			return false;
	return true;
}

/* Places one key. Returns false when it must wait for leased memory. */
static bool place_one(struct meta *m, struct alloc_req *a, const struct alloc_item *it, struct key_result *res)
{
	struct object *o;
	size_t len;
	bool blocked = false;

	memset(res, 0, sizeof(*res));
	if (!key_ok(it->key, &len) || it->size == 0 || a->pr.media >= MEDIA_COUNT) {
		res->result = MMC_INVALID_PARAM;
		return true;
	}
	o = object_find_hashed(m, it->key, len, it->hash);
	if (o && stale(o)) {
		object_drop(m, o);
		o = NULL;
	}
	if (o) { /* first writer wins; batch_malloc hands back the existing object's address */
		res->result = a->gva ? 0 : MMC_DUPLICATED_OBJECT;
		if (o->state == MMC_BLOB_READABLE && object_persist_again(m, o))
			a->durable = true;
		if (a->gva)
			key_result_note(res, o, -1);
		return true;
	}
	if (!(o = object_new(it->key, len, (uint8_t)a->pr.replicas))) {
		res->result = MMC_MALLOC_FAILED;
		return true;
	}
	a->pr.size = it->size;
	res->result = placement_reserve(m, &a->pr, o, &blocked);
	if (res->result) {
		free(o);
		return !(res->result == MMC_NOT_ENOUGH_MEMORY && blocked && clock_ms() < a->deadline_ms);
	}
	o->size = it->size;
	o->state = MMC_BLOB_ALLOCATED;
	o->write_session = a->c->session.id;
	o->gva = a->gva;
	if (a->gva) {
		res->lease_ms = a->lease_ttl_ms ? a->lease_ttl_ms : m->conf.lease_ttl_ms;
		o->write_expiry_ms = clock_ms() + res->lease_ms;
	}
	object_index_add(m, o);
	list_add_tail(&m->pending, &o->link);
	key_result_note(res, o, -1);
	return true;
}

/* Places keys from a->next on; returns true when every key has a result. */
static bool run(struct meta *m, struct alloc_req *a)
{
	for (; a->next < a->n; a->next++) {
		if (a->hash)
			objects_prefetch_step(m, a->hash, a->n, a->next, false);
		if (!place_one(m, a, &a->items[a->next], &a->results[a->next]))
			return false;
	}
	return true;
}

static void reply(struct meta *m, struct alloc_req *a)
{
	key_results_send(a->c, a->id, a->results, a->n, a->durable);
}

static int check_args(const Mmc__KeyBatch *req)
{
	uint32_t replicas = req->replica_num ? req->replica_num : 1;

	if (replicas > MMC_WIRE_REPLICAS || req->n_preferred > replicas)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < req->n_preferred; i++)
		for (size_t j = 0; j < i; j++)
			if (req->preferred[i] == req->preferred[j])
				return MMC_INVALID_PARAM;
	return 0;
}

/* Copies what a waiting request still needs out of the per-request arena. */
static struct alloc_req *park(struct meta *m, const struct alloc_req *a)
{
	struct alloc_req *p = malloc(sizeof(*p));
	size_t keybytes = 0, at = 0;

	if (!p)
		return NULL;
	*p = *a;
	p->hash = NULL; /* in the arena; a request that waited has no hurry */
	for (size_t i = a->next; i < a->n; i++)
		keybytes += strlen(a->items[i].key) + 1;
	p->items = malloc(a->n * sizeof(*p->items));
	p->results = malloc(a->n * sizeof(*p->results));
	p->keys = malloc(keybytes ? keybytes : 1);
	if (!p->items || !p->results || !p->keys) {
		free(p->items);
		free(p->results);
		free(p->keys);
		free(p);
		return NULL;
	}
	memcpy(p->results, a->results, a->next * sizeof(*p->results));
	memcpy(p->preferred, a->preferred, sizeof(p->preferred));
	p->pr.preferred = p->preferred;
	for (size_t i = a->next; i < a->n; i++) {
		size_t len = strlen(a->items[i].key) + 1;

		memcpy(p->keys + at, a->items[i].key, len);
		p->items[i] = (struct alloc_item){p->keys + at, a->items[i].size, a->items[i].hash};
		at += len;
	}
	list_add_tail(&m->parked, &p->link);
	log_debug("op=alloc_wait session=%llu keys_left=%zu", (unsigned long long)a->c->session.id, a->n - a->next);
	return p;
}

static void free_parked(struct alloc_req *p)
{
	list_del(&p->link);
	free(p->items);
	free(p->results);
	free(p->keys);
	free(p);
}

void alloc_req_start(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req)
{
	struct meta *m = c->m;
	bool gva = f->body_case == MMC__FRAME__BODY_MALLOC;
	struct alloc_req a = {
	    .c = c,
	    .id = f->id,
	    .gva = gva,
	    .pr = {.replicas = req->replica_num ? req->replica_num : 1,
	           .npreferred = (uint32_t)req->n_preferred,
	           .spread = (req->flags & MMC_WIRE_FLAG_SPREAD) != 0,
	           .media = gva ? req->media : MMC_MEDIA_DRAM,
	           .writer = &c->session},
	    .lease_ttl_ms = req->lease_ttl_ms,
	    .deadline_ms = clock_ms() + m->conf.evict_wait_ms,
	    .n = req->n_items,
	};

	if (check_args(req)) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	if (req->n_preferred) /* protobuf-c leaves the array NULL when empty */
		memcpy(a.preferred, req->preferred, req->n_preferred * sizeof(int32_t));
	a.pr.preferred = a.preferred;
	a.items = arena_alloc(&m->arena, a.n * sizeof(*a.items));
	a.results = arena_alloc(&m->arena, a.n * sizeof(*a.results));
	a.hash = arena_alloc(&m->arena, a.n * sizeof(*a.hash));
	if (!a.items || !a.results || !a.hash) {
		rpc_reply_code(c, f->id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < a.n; i++) {
		const char *key = req->items[i]->key ? req->items[i]->key : "";

		a.hash[i] = object_hash(key, strlen(key));
		a.items[i] = (struct alloc_item){req->items[i]->key, req->items[i]->size, a.hash[i]};
	}
	/* most keys of a put are new: the lookup's cost is the bucket and the chain it walks to the end */
	objects_prefetch(m, a.hash, a.n);
	/* a request behind a waiting one waits too: first come, first placed */
	if (list_empty(&m->parked) && run(m, &a)) {
		reply(m, &a);
		return;
	}
	if (!park(m, &a))
		rpc_reply_code(c, f->id, MMC_MALLOC_FAILED);
}

void alloc_req_kick(struct meta *m)
{
	while (!list_empty(&m->parked)) {
		struct alloc_req *p = list_entry(m->parked.next, struct alloc_req, link);

		if (!run(m, p))
			break; /* still no room: later requests keep waiting behind it */
		reply(m, p);
		arena_reset(&m->arena);
		free_parked(p);
	}
}

void alloc_req_conn_closed(struct meta *m, struct conn *c)
{
	struct list *it, *next;

	for (it = m->parked.next; it != &m->parked; it = next) {
		struct alloc_req *p = list_entry(it, struct alloc_req, link);

		next = it->next;
		if (p->c == c)
			free_parked(p);
	}
}

void alloc_req_fini(struct meta *m)
{
	while (!list_empty(&m->parked))
		free_parked(list_entry(m->parked.next, struct alloc_req, link));
}
