/* The key operations: one KeyBatch request, one KeyResult per item, in order. */
#include <stdlib.h>
#include <string.h>

#include "alloc_queue.h"
#include "arena.h"
#include "clock.h"
#include "conn.h"
#include "key_reply.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "placement.h"
#include "rpc.h"
#include "services.h"
#include "tier.h"

struct reply {
	Mmc__KeyBatchReply r;
	Mmc__KeyResult *res;  /* n results, r.items points at them */
	const uint64_t *hash; /* n: object_hash of each key */
	struct arena *arena;
};

/* Describes the object's live blobs (only the one at pick when pick >= 0) in res. */
static int describe(struct reply *rp, Mmc__KeyResult *res, const struct object *o, int pick)
{
	struct key_result kr;

	key_result_note(&kr, o, pick);
	return key_result_encode(rp->arena, &kr, res);
}

/*
 * commit (put) and write_finish (GVA): publish or drop what this session allocated. A put's commit names the object
 * it allocated (token): threads of one store share a session, and the key may have been removed and allocated
 * again by another thread meanwhile.
 */
static int commit_one(struct conn *c, const Mmc__KeyItem *it, uint64_t hash)
{
	struct object *o;
	size_t len;

	if (!object_key_ok(it->key, &len))
		return MMC_INVALID_PARAM;
	o = object_find_hashed(c->m, it->key, len, hash);
	if (o && it->token && o->id != it->token)
		o = NULL;
	if (o && o->state == MMC_BLOB_READABLE)
		return 0; /* idempotent */
	if (!o || o->write_session != c->session.id) {
		/* removed while this put was being written: the put happened, then the remove */
		o = it->token ? objects_find_removed_write(c->m, it->key, len, c->session.id, it->token) : NULL;
		if (!o)
			return MMC_UNMATCHED_KEY;
		o->write_session = 0;
		object_unpin(c->m, o);
		return 0;
	}
	if (it->value == 0 && it->checksum_type > MMC_WIRE_CHECKSUM_CRC32C) {
		o->write_session = 0; /* a checksum this server cannot keep: nothing is published without it */
		object_drop(c->m, o);
		return MMC_INVALID_PARAM;
	}
	if (it->value == 0) {
		o->checksum_type = (uint8_t)it->checksum_type;
		o->checksum = it->checksum;
		object_publish(c->m, o);
	} else {
		o->write_session = 0; /* the writer is done with it: freed at once */
		object_drop(c->m, o);
	}
	return 0;
}

static void op_commit(struct conn *c, const Mmc__KeyBatch *req, struct reply *rp)
{
	for (size_t i = 0; i < req->n_items; i++) {
		objects_prefetch_step(c->m, rp->hash, req->n_items, i, false);
		rp->res[i].result = commit_one(c, req->items[i], rp->hash[i]);
	}
}

/* get: pick the nearest replica and take a counted read lease. add_lease: an uncounted, extendable one. */
static void op_lease(struct conn *c, const Mmc__KeyBatch *req, struct reply *rp, bool get)
{
	for (size_t i = 0; i < req->n_items; i++) {
		Mmc__KeyResult *res = &rp->res[i];
		struct object *o;

		objects_prefetch_step(c->m, rp->hash, req->n_items, i, true);
		o = object_find_readable(c->m, req->items[i]->key, rp->hash[i], &res->result);

		if (!o)
			continue;
		res->lease_ms = lease_grant(c->m, o, c->session.id, req->lease_ttl_ms, get);
		res->token = o->id;
		if (!res->lease_ms) {
			res->result = MMC_MALLOC_FAILED;
			continue;
		}
		object_touch(c->m, o);
		res->result = describe(rp, res, o, get ? object_pick_blob(c->m, o, &c->session) : -1);
	}
}

/* release (after a get) and remove_lease (GVA): the lease may be on a removed object still pinned. */
static void op_release(struct conn *c, const Mmc__KeyBatch *req, struct reply *rp, bool all)
{
	for (size_t i = 0; i < req->n_items; i++) {
		size_t len;
		struct object *o;

		objects_prefetch_step(c->m, rp->hash, req->n_items, i, false);
		if (!object_key_ok(req->items[i]->key, &len)) {
			rp->res[i].result = MMC_INVALID_PARAM;
			continue;
		}
		/* a get's release names the object it read (the key may have been removed and put again since) */
		uint64_t id = all ? 0 : req->items[i]->token;

		o = object_find_hashed(c->m, req->items[i]->key, len, rp->hash[i]);
		if (!o || !lease_find(o, c->session.id) || (id && o->id != id))
			o = objects_find_zombie(c->m, req->items[i]->key, len, c->session.id, id);
		if (!o || !lease_release(c->m, o, c->session.id, all)) {
			rp->res[i].result = MMC_LEASE_EXPIRED;
			continue;
		}
		rp->res[i].result = 0;
		if (o->state == MMC_BLOB_REMOVING)
			object_unpin(c->m, o);
	}
}

static void op_simple(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	bool lru = f->body_case != MMC__FRAME__BODY_QUERY; /* exist touches, remove unlinks */

	for (size_t i = 0; i < req->n_items; i++) {
		Mmc__KeyResult *res = &rp->res[i];
		struct object *o;
		size_t len;

		objects_prefetch_step(c->m, rp->hash, req->n_items, i, lru);
		if (!object_key_ok(req->items[i]->key, &len)) {
			res->result = MMC_INVALID_PARAM;
			continue;
		}
		o = object_find_hashed(c->m, req->items[i]->key, len, rp->hash[i]);
		switch (f->body_case) {
		case MMC__FRAME__BODY_REMOVE:
			res->result = o ? 0 : MMC_OBJECT_NOT_EXISTS;
			if (o)
				object_drop(c->m, o);
			break;
		case MMC__FRAME__BODY_EXIST:
			res->result = o && object_readable(o);
			if (res->result)
				object_touch(c->m, o);
			break;
		default: /* query: every live blob, in any state; absent is size 0 */
			res->result =
			    o && (o->state != MMC_BLOB_READABLE || object_readable(o)) ? describe(rp, res, o, -1) : 0;
			break;
		}
	}
}

/* True when a get batch names an SSD-resident key (those take the tier path). */
static bool reads_ssd(struct meta *m, const Mmc__KeyBatch *req, const uint64_t *hash)
{
	for (size_t i = 0; i < req->n_items; i++) {
		size_t len;
		struct object *o;

		objects_prefetch_step(m, hash, req->n_items, i, true);
		if (!object_key_ok(req->items[i]->key, &len))
			continue;
		o = object_find_hashed(m, req->items[i]->key, len, hash[i]);
		if (o && object_readable(o) && tier_on_ssd(o))
			return true;
	}
	return false;
}

/* Hashes every key once, and starts fetching the first buckets. */
static int reply_init(struct reply *rp, struct arena *a, size_t n, const uint64_t *hash)
{
	Mmc__KeyResult **items = arena_alloc(a, n * sizeof(*items));

	mmc__key_batch_reply__init(&rp->r);
	rp->arena = a;
	rp->hash = hash;
	rp->res = arena_alloc(a, n * sizeof(*rp->res));
	if (!hash || !items || !rp->res)
		return MMC_MALLOC_FAILED;
	for (size_t i = 0; i < n; i++) {
		mmc__key_result__init(&rp->res[i]);
		items[i] = &rp->res[i];
	}
	rp->r.items = items;
	rp->r.n_items = n;
	return 0;
}

static void send_reply(struct conn *c, uint64_t id, struct reply *rp, bool durable)
{
	Mmc__Frame out = MMC__FRAME__INIT;

	if (!id)
		return;
	out.id = id;
	out.body_case = MMC__FRAME__BODY_KEY_REPLY;
	out.key_reply = &rp->r;
	conn_send(c, &out, durable);
}

static int run_op(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	switch (f->body_case) {
	case MMC__FRAME__BODY_COMMIT:
	case MMC__FRAME__BODY_WRITE_FINISH:
		op_commit(c, req, rp);
		return 0;
	case MMC__FRAME__BODY_GET:
	case MMC__FRAME__BODY_ADD_LEASE:
		op_lease(c, req, rp, f->body_case == MMC__FRAME__BODY_GET);
		return 0;
	case MMC__FRAME__BODY_RELEASE:
	case MMC__FRAME__BODY_REMOVE_LEASE:
		op_release(c, req, rp, f->body_case == MMC__FRAME__BODY_REMOVE_LEASE);
		return 0;
	case MMC__FRAME__BODY_REMOVE:
	case MMC__FRAME__BODY_EXIST:
	case MMC__FRAME__BODY_QUERY:
		op_simple(c, f, req, rp);
		return 0;
	default:
		return MMC_INVALID_PARAM;
	}
}

/* The batch as the policy layer takes it: key and size arrays in the request's arena. */
static int key_call_of(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct key_call *call)
{
	const char **keys = arena_alloc(&c->m->arena, req->n_items * sizeof(*keys));
	uint64_t *sizes = arena_alloc(&c->m->arena, req->n_items * sizeof(*sizes));

	if (!keys || !sizes)
		return MMC_MALLOC_FAILED;
	for (size_t i = 0; i < req->n_items; i++) {
		keys[i] = req->items[i]->key;
		sizes[i] = req->items[i]->size;
	}
	*call = (struct key_call){&c->session, f->id, req->lease_ttl_ms, keys, sizes, req->n_items};
	return 0;
}

static void alloc_start(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, const struct key_call *kc)
{
	bool gva = f->body_case == MMC__FRAME__BODY_MALLOC;
	struct alloc_call call = {
	    .keys = *kc,
	    .gva = gva,
	    .spread = (req->flags & MMC_WIRE_FLAG_SPREAD) != 0,
	    .media = gva ? req->media : MMC_MEDIA_DRAM,
	    .replicas = req->replica_num ? req->replica_num : 1,
	    .preferred = req->preferred,
	    .npreferred = (uint32_t)req->n_preferred,
	};

	alloc_queue_submit(c->m, &call);
}

/* Batches the policy layer answers itself, now or once moves or room allow; the others hash their keys (hash
 * NULL when out of memory: the lookups then hash one by one). */
static bool policy_batch(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, const struct key_call *call,
                         uint64_t **hash)
{
	bool alloc = f->body_case == MMC__FRAME__BODY_ALLOC || f->body_case == MMC__FRAME__BODY_MALLOC;
	bool move = f->body_case == MMC__FRAME__BODY_EVICT || f->body_case == MMC__FRAME__BODY_PREFETCH;

	if (alloc) {
		alloc_start(c, f, req, call);
		return true;
	}
	if (move) {
		tier_move(c->m, call, f->body_case == MMC__FRAME__BODY_EVICT);
		return true;
	}
	if ((*hash = arena_alloc(&c->m->arena, call->n * sizeof(**hash))))
		objects_hash_keys(c->m, call->keys, call->n, *hash);
	if (f->body_case == MMC__FRAME__BODY_GET && *hash && reads_ssd(c->m, req, *hash)) {
		tier_get(c->m, call); /* replies once the SSD reads are done */
		return true;
	}
	return false;
}

void rpc_keys(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req)
{
	struct key_call call;
	struct reply rp;
	uint64_t *hash = NULL;
	int rc;

	if (req->n_items == 0 || req->n_items > MMC_WIRE_KEYS_MAX) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	if (key_call_of(c, f, req, &call)) {
		rpc_reply_code(c, f->id, MMC_MALLOC_FAILED);
		return;
	}
	if (policy_batch(c, f, req, &call, &hash))
		return;
	rc = reply_init(&rp, &c->m->arena, req->n_items, hash);
	if (rc == 0)
		rc = run_op(c, f, req, &rp);
	if (rc) {
		rp.r.result = rc;
		rp.r.n_items = 0;
	}
	/* commits and removes are acknowledged once durable; lookups and leases are answered at once */
	send_reply(c, f->id, &rp,
	           f->body_case == MMC__FRAME__BODY_COMMIT || f->body_case == MMC__FRAME__BODY_WRITE_FINISH ||
	               f->body_case == MMC__FRAME__BODY_REMOVE);
}
