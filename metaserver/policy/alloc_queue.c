#include "alloc_queue.h"
#include "meta_policy.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "eviction.h"
#include "extents.h"
#include "key_result.h"
#include "lease.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "placement.h"
#include "policy_ops.h"

struct alloc_item {
	const char *key;
	uint64_t size;
	uint64_t hash; /* object_hash(key) */
};

struct alloc_req {
	struct list link; /* meta_policy.parked */
	struct session *s;
	uint64_t id;
	bool gva;
	bool durable; /* a duplicate's record is not on disk yet: the reply waits for its commit */
	struct place_req pr;
	int32_t preferred[MMC_WIRE_REPLICAS];
	uint64_t lease_ttl_ms;
	uint64_t deadline_ms;
	uint64_t now_ms; /* when this pass over the keys began: the write leases count from it */
	size_t n, next;
	struct alloc_item *items; /* n; keys point into `keys` */
	uint64_t *hash;           /* n: items[i].hash, contiguous for the prefetch; NULL once parked */
	char *keys;
	struct key_result *results; /* n */
};

/*
 * An object whose every replica is on a service not connected now (loaded by a restart or a takeover and not back
 * yet, or an SSD tier waiting for its successor) exists all the same: those services come back, or are dropped with
 * their objects at ock.mmc.meta.rejoin_timeout_ms, and a put meanwhile would delete a committed object.
 */
struct object *alloc_queue_existing(struct meta *m, const char *key, size_t len, uint64_t hash, bool *durable)
{
	struct object *o = object_find_hashed(m, key, len, hash);

	/* "exists" means the caller's put is done: not before that object is on disk (its commit may still be
	 * queued, or its batch failed and is queued again) */
	if (o && o->state == MMC_BLOB_READABLE && (object_persist_again(m, o) || !object_durable(m, o)))
		*durable = true;
	return o;
}

int alloc_queue_exists_code(const struct session *s, const struct object *o)
{
	if (o->state == MMC_BLOB_READABLE && !o->persisted)
		return MMC_META_BACKUP_ERROR; /* its record could not be queued again (out of memory): not on disk */
	/* a GVA allocation (batch_malloc) may be held for its whole write lease, copies and all, by design: a put
	 * meets it as it always did */
	if (o->state != MMC_BLOB_READABLE && !o->gva && s->minor >= MMC_WIRE_MINOR_BEING_WRITTEN)
		return MMC_UNMATCHED_STATE;
	return MMC_DUPLICATED_OBJECT;
}

/* Until when a request that found no room waits: evict_wait_ms from its arrival, or, after a restart or takeover,
 * until the rejoin grace of a service that came back meanwhile ends (a known, short wait for certain room). */
static uint64_t wait_end(const struct meta *m, const struct alloc_req *a)
{
	uint64_t grace = placement_grace_end(m, a->pr.media);

	return grace > a->deadline_ms ? grace : a->deadline_ms;
}

/* Places one key. Returns false when it must wait for room to come (leases ending, services rejoining). */
static bool place_one(struct meta *m, struct alloc_req *a, const struct alloc_item *it, struct key_result *res)
{
	struct object *o;
	size_t len;
	bool blocked = false;

	memset(res, 0, sizeof(*res));
	/* nothing is written straight to SSD (only moves put bytes there): an SSD range placed here would be outside
	 * the tier's own bookkeeping, and leak when its service's SSD is adopted */
	if (!object_key_ok(it->key, &len) || it->size == 0 || a->pr.media >= MEDIA_COUNT ||
	    a->pr.media == MMC_MEDIA_SSD) {
		res->result = MMC_INVALID_PARAM;
		return true;
	}
	o = alloc_queue_existing(m, it->key, len, it->hash, &a->durable);
	if (o) { /* first writer wins; batch_malloc hands back the existing object's address */
		res->result = a->gva ? 0 : alloc_queue_exists_code(a->s, o);
		if (a->gva)
			key_result_note(res, o, -1);
		return true;
	}
	if (m->tenants.n &&
	    (res->result = eviction_tenant_room(m, a->s->tenant, tenant_bytes(it->size, a->pr.replicas))))
		return true;
	if (!(o = object_new(it->key, len, (uint8_t)a->pr.replicas))) {
		res->result = MMC_MALLOC_FAILED;
		return true;
	}
	a->pr.size = it->size;
	res->result = placement_reserve(m, &a->pr, o, &blocked);
	if (res->result) {
		object_free(o);
		return !(res->result == MMC_NOT_ENOUGH_MEMORY && blocked && clock_ms() < wait_end(m, a));
	}
	o->size = it->size;
	o->state = MMC_BLOB_ALLOCATED;
	o->write_session = a->s->id;
	a->s->allocated = true;
	o->gva = a->gva;
	if (a->gva) {
		res->lease_ms = lease_ttl_of(m, a->lease_ttl_ms);
		o->write_expiry_ms = a->now_ms + res->lease_ms;
	} else {
		/* a put whose writer never commits while its session lives (it gave up on a reply that came late: a
		 * wait for room past its timeout, a stalled loop) would keep the key and the space for good */
		o->write_expiry_ms = a->now_ms + m->conf.put_write_timeout_ms;
	}
	object_index_add(m, o, it->hash);
	olist_add_tail(m, OLIST_PENDING, o);
	key_result_note(res, o, -1);
	return true;
}

/* Places keys from a->next on; returns true when every key has a result. */
static bool run(struct meta *m, struct alloc_req *a)
{
	a->now_ms = clock_ms(); /* once a pass, not once a key */
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
	m->policy->ops->reply_keys(m, a->s, a->id, a->results, a->n, a->durable);
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
	list_add_tail(&m->policy->parked, &p->link);
	log_debug("op=alloc_wait session=%llu keys_left=%zu", (unsigned long long)a->s->id, a->n - a->next);
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

void alloc_queue_submit(struct meta *m, const struct alloc_call *call)
{
	const struct key_call *kc = &call->keys;
	struct alloc_req a = {
	    .s = kc->session,
	    .id = kc->id,
	    .gva = call->gva,
	    .pr = {.replicas = call->replicas,
	           .npreferred = call->npreferred,
	           .spread = call->spread,
	           .media = call->media,
	           .writer = kc->session},
	    .lease_ttl_ms = kc->lease_ttl_ms,
	    .deadline_ms = clock_ms() + m->conf.evict_wait_ms,
	    .n = kc->n,
	};

	if (placement_check_preferred(call->preferred, call->npreferred, call->replicas)) {
		m->policy->ops->reply_code(m, kc->session, kc->id, MMC_INVALID_PARAM);
		return;
	}
	if (call->npreferred) /* protobuf-c leaves the array NULL when empty */
		memcpy(a.preferred, call->preferred, call->npreferred * sizeof(int32_t));
	a.pr.preferred = a.preferred;
	a.items = arena_alloc(&m->arena, a.n * sizeof(*a.items));
	a.results = arena_alloc(&m->arena, a.n * sizeof(*a.results));
	a.hash = arena_alloc(&m->arena, a.n * sizeof(*a.hash));
	if (!a.items || !a.results || !a.hash) {
		m->policy->ops->reply_code(m, kc->session, kc->id, MMC_MALLOC_FAILED);
		return;
	}
	/* most keys of a put are new: the lookup's cost is the bucket and the chain it walks to the end */
	objects_hash_keys(m, kc->keys, a.n, a.hash);
	for (size_t i = 0; i < a.n; i++)
		a.items[i] = (struct alloc_item){kc->keys[i], kc->sizes[i], a.hash[i]};
	/* a request behind a waiting one waits too: first come, first placed */
	if (list_empty(&m->policy->parked) && run(m, &a)) {
		reply(m, &a);
		return;
	}
	if (!park(m, &a))
		m->policy->ops->reply_code(m, kc->session, kc->id, MMC_MALLOC_FAILED);
}

void alloc_queue_kick(struct meta *m)
{
	extents_sweep(m, clock_ms()); /* idle extents first: their space may be what a waiting request needs */
	while (!list_empty(&m->policy->parked)) {
		struct alloc_req *p = list_entry(m->policy->parked.next, struct alloc_req, link);

		if (!run(m, p))
			break; /* still no room: later requests keep waiting behind it */
		reply(m, p);
		arena_reset(&m->arena);
		free_parked(p);
	}
}

void alloc_queue_session_closed(struct meta *m, struct session *s)
{
	struct list *it, *next;

	extents_session_closed(m, s);

	for (it = m->policy->parked.next; it != &m->policy->parked; it = next) {
		struct alloc_req *p = list_entry(it, struct alloc_req, link);

		next = it->next;
		if (p->s == s)
			free_parked(p);
	}
}

void alloc_queue_fini(struct meta *m)
{
	while (!list_empty(&m->policy->parked))
		free_parked(list_entry(m->policy->parked.next, struct alloc_req, link));
}
