/* The key operations: one KeyBatch request, one KeyResult per item, in order. */
#include <stdlib.h>
#include <string.h>

#include "alloc_queue.h"
#include "arena.h"
#include "clock.h"
#include "conn.h"
#include "key_reply.h"
#include "lease.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "placement.h"
#include "rpc.h"
#include "services.h"
#include "tier.h"

struct reply {
	struct key_reply out;  /* one result per key, encoded in order */
	const uint64_t *hash;  /* n: object_hash of each key */
	struct object **found; /* a get's: each key's readable object or NULL, looked up once (find_gets) */
};

/* The next key's result: a code alone. */
static void answer_code(struct reply *rp, int result)
{
	key_reply_add_code(&rp->out, result);
}

/*
 * The next key's result with o's size, checksum and live blobs (o NULL: size 0; pick >= 0: that blob only), and the
 * lease granted on it if any: its length, the object it is on (token) and the record its release names (lease).
 */
static void answer(struct reply *rp, int result, const struct object *o, int pick, uint64_t lease_ms, uint64_t token,
                   uint32_t lease)
{
	struct key_result kr;

	if (!o && !lease_ms && !token) {
		answer_code(rp, result);
		return;
	}
	if (o) {
		key_result_note(&kr, o, pick);
	} else {
		kr.size = 0;
		kr.checksum_type = kr.checksum = kr.nblobs = 0;
	}
	kr.result = result;
	kr.lease_ms = lease_ms;
	kr.token = token;
	kr.lease = lease;
	key_reply_add(&rp->out, &kr);
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
	if (o && o->state == MMC_BLOB_READABLE) {
		/* a retry after MMC_META_BACKUP_ERROR: OK only once the record is on disk (the reply waits for it) */
		object_persist_again(c->m, o);
		return o->persisted ? 0 : MMC_META_BACKUP_ERROR; /* it could not even be queued (out of memory) */
	}
	if (!o || o->write_session != c->session.id) {
		/* removed while this put was being written: the put happened, then the remove */
		o = it->token ? objects_find_removed_write(c->m, it->key, len, c->session.id, it->token) : NULL;
		if (!o)
			return MMC_UNMATCHED_KEY;
		if (it->value == 0)
			object_writes_done(c->m, o);
		else /* its writes failed: some may still land, so its space is quarantined */
			object_writer_left(c->m, o);
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
		if (!o->persisted)
			return MMC_META_BACKUP_ERROR; /* its record could not be queued (out of memory): not on disk */
	} else {
		o->write_session = 0; /* the writer is done with it: freed at once */
		object_drop(c->m, o);
	}
	return 0;
}

static void op_commit(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	for (size_t i = 0; i < req->n_items; i++) {
		objects_prefetch_step(c->m, rp->hash, req->n_items, i, false);
		answer_code(rp, commit_one(c, req->items[i], rp->hash[i]));
	}
}

/* Key i's readable object: the one find_gets found, or looked up now (add_lease). NULL with *rc when none. */
static struct object *lease_object(struct conn *c, const Mmc__KeyBatch *req, const struct reply *rp, size_t i, int *rc)
{
	size_t len;

	/* found: the bucket and object are cached; this still fetches the LRU neighbours object_touch relinks */
	objects_prefetch_step(c->m, rp->hash, req->n_items, i, true);
	if (!rp->found)
		return object_find_readable(c->m, req->items[i]->key, rp->hash[i], rc);
	*rc = rp->found[i] ? 0 : object_key_ok(req->items[i]->key, &len) ? MMC_OBJECT_NOT_EXISTS : MMC_INVALID_PARAM;
	return rp->found[i];
}

/* get: pick the nearest replica and take a counted read lease. add_lease: an uncounted, extendable one. */
static void op_lease(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	bool get = f->body_case == MMC__FRAME__BODY_GET;

	for (size_t i = 0; i < req->n_items; i++) {
		uint64_t lease_ms;
		int rc;
		struct object *o = lease_object(c, req, rp, i, &rc);

		if (!o) {
			answer_code(rp, rc);
			continue;
		}
		lease_ms = lease_grant(c->m, o, c->session.id, req->lease_ttl_ms, get);
		if (!lease_ms) {
			answer(rp, MMC_MALLOC_FAILED, NULL, -1, 0, o->id, 0);
			continue;
		}
		object_touch(c->m, o);
		answer(rp, 0, o, get ? object_pick_blob(c->m, o, &c->session) : -1, lease_ms, o->id,
		       get ? lease_gen(o, c->session.id) : 0);
	}
}

/* release (after a get) and remove_lease (GVA): the lease may be on a removed object still pinned. */
static void op_release(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	bool all = f->body_case == MMC__FRAME__BODY_REMOVE_LEASE;

	for (size_t i = 0; i < req->n_items; i++) {
		size_t len;
		struct object *o;

		objects_prefetch_step(c->m, rp->hash, req->n_items, i, false);
		if (!object_key_ok(req->items[i]->key, &len)) {
			answer_code(rp, MMC_INVALID_PARAM);
			continue;
		}
		/* a get's release names the object it read (the key may have been removed and put again since) */
		uint64_t id = all ? 0 : req->items[i]->token;
		/* and the lease record it was counted in: a late release of a get whose record was pruned must not end
		 * the count another thread of the session took since */
		uint32_t gen = all ? 0 : req->items[i]->lease;

		o = object_find_hashed(c->m, req->items[i]->key, len, rp->hash[i]);
		if (!o || !lease_holds(o, c->session.id, all, gen) || (id && o->id != id))
			o = objects_find_zombie(c->m, req->items[i]->key, len, c->session.id, id, all, gen);
		if (!o || !lease_release(c->m, o, c->session.id, all, gen)) {
			answer_code(rp, MMC_LEASE_EXPIRED);
			continue;
		}
		answer_code(rp, 0);
		if (o->state == MMC_BLOB_REMOVING)
			object_unpin(c->m, o);
	}
}

static void op_simple(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp)
{
	bool lru = f->body_case != MMC__FRAME__BODY_QUERY; /* exist touches, remove unlinks */

	for (size_t i = 0; i < req->n_items; i++) {
		struct object *o;
		size_t len;
		bool exists;

		objects_prefetch_step(c->m, rp->hash, req->n_items, i, lru);
		if (!object_key_ok(req->items[i]->key, &len)) {
			answer_code(rp, MMC_INVALID_PARAM);
			continue;
		}
		o = object_find_hashed(c->m, req->items[i]->key, len, rp->hash[i]);
		switch (f->body_case) {
		case MMC__FRAME__BODY_REMOVE:
			/* a GVA allocation within its write lease stays: copies into it may be on their way, and
			 * nothing would keep its space from the next put (the remove comes before the malloc, as it
			 * were) */
			if (o && o->state == MMC_BLOB_ALLOCATED && o->gva && o->write_expiry_ms > clock_ms())
				o = NULL;
			answer_code(rp, o ? 0 : MMC_OBJECT_NOT_EXISTS);
			if (o)
				object_drop_hashed(c->m, o, rp->hash[i]);
			break;
		case MMC__FRAME__BODY_EXIST:
			exists = o && object_readable(o);
			answer_code(rp, exists);
			if (exists)
				object_touch(c->m, o);
			break;
		default: /* query: every live blob, in any state; absent is size 0 */
			answer(rp, 0, o && (o->state != MMC_BLOB_READABLE || object_readable(o)) ? o : NULL, -1, 0, 0,
			       0);
			break;
		}
	}
}

/*
 * A get batch's lookups, done once: found[i] is key i's readable object or NULL. True when one of them lives on SSD
 * (the batch then takes the tier path). Nothing runs between this and op_lease, so the pointers stay valid.
 */
static bool find_gets(struct meta *m, const Mmc__KeyBatch *req, const uint64_t *hash, struct object **found)
{
	bool ssd = false;

	for (size_t i = 0; i < req->n_items; i++) {
		int rc;

		objects_prefetch_step(m, hash, req->n_items, i, true);
		found[i] = object_find_readable(m, req->items[i]->key, hash[i], &rc);
		ssd |= found[i] && tier_on_ssd(found[i]);
	}
	return ssd;
}

/* Room for the results; the keys' hashes were computed by policy_batch (NULL: out of memory). */
static int reply_init(struct reply *rp, struct arena *a, size_t n)
{
	return rp->hash ? key_reply_begin(&rp->out, a, n) : MMC_MALLOC_FAILED;
}

/*
 * What each key batch that is answered at once does, by Frame body (the other bodies of a batch go to the policy
 * layer first: policy_batch). durable: acknowledged once its change is durable, not at once.
 */
static const struct key_op {
	void (*run)(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, struct reply *rp);
	bool durable;
} key_ops[] = {
    [MMC__FRAME__BODY_COMMIT] = {op_commit, true},    [MMC__FRAME__BODY_WRITE_FINISH] = {op_commit, true},
    [MMC__FRAME__BODY_GET] = {op_lease, false},       [MMC__FRAME__BODY_ADD_LEASE] = {op_lease, false},
    [MMC__FRAME__BODY_RELEASE] = {op_release, false}, [MMC__FRAME__BODY_REMOVE_LEASE] = {op_release, false},
    [MMC__FRAME__BODY_REMOVE] = {op_simple, true},    [MMC__FRAME__BODY_EXIST] = {op_simple, false},
    [MMC__FRAME__BODY_QUERY] = {op_simple, false},
};

static const struct key_op *key_op_of(const Mmc__Frame *f)
{
	size_t b = (size_t)f->body_case;

	return b < sizeof(key_ops) / sizeof(key_ops[0]) && key_ops[b].run ? &key_ops[b] : NULL;
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

/* Batches the policy layer answers itself, now or once moves or room allow; the others hash their keys into
 * rp->hash (NULL when out of memory: the batch then fails), and a get looks them up (rp->found). */
static bool policy_batch(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, const struct key_call *call,
                         struct reply *rp)
{
	uint64_t *hash;

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
	if (!(hash = arena_alloc(&c->m->arena, call->n * sizeof(*hash))))
		return false;
	objects_hash_keys(c->m, call->keys, call->n, hash);
	rp->hash = hash;
	if (f->body_case != MMC__FRAME__BODY_GET)
		return false;
	if (!(rp->found = arena_alloc(&c->m->arena, call->n * sizeof(*rp->found)))) {
		rp->hash = NULL;
		return false;
	}
	if (find_gets(c->m, req, hash, rp->found)) {
		tier_get(c->m, call); /* replies once the SSD reads are done */
		return true;
	}
	return false;
}

void rpc_keys(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req)
{
	struct key_call call;
	const struct key_op *op;
	struct reply rp = {0};
	int rc;

	if (req->n_items == 0 || req->n_items > MMC_WIRE_KEYS_MAX) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	if (key_call_of(c, f, req, &call)) {
		rpc_reply_code(c, f->id, MMC_MALLOC_FAILED);
		return;
	}
	if (policy_batch(c, f, req, &call, &rp))
		return;
	op = key_op_of(f);
	rc = op ? reply_init(&rp, &c->m->arena, req->n_items) : MMC_INVALID_PARAM;
	if (rc == 0)
		op->run(c, f, req, &rp);
	key_reply_send(c, f->id, &rp.out, rc, op && op->durable);
}
