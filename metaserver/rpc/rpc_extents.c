#include "rpc_extents.h"

#include <string.h>

#include "arena.h"
#include "clock.h"
#include "conn.h"
#include "extents.h"
#include "key_reply.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "rpc.h"

static void send_grant(struct conn *c, uint64_t id, int result, struct extent *const *e, uint32_t n)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__ExtentGrant g = MMC__EXTENT_GRANT__INIT;
	Mmc__Extent ext[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES], *pe[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES];

	if (!id)
		return;
	for (uint32_t i = 0; i < n; i++) {
		mmc__extent__init(&ext[i]);
		ext[i].id = e[i]->id;
		ext[i].rank = e[i]->rank;
		ext[i].incarnation = e[i]->incarnation;
		ext[i].media = e[i]->media;
		ext[i].offset = e[i]->start;
		ext[i].size = e[i]->size;
		pe[i] = &ext[i];
	}
	g.result = result;
	g.n_extents = n;
	g.extents = pe;
	g.idle_ms = EXTENT_IDLE_MS;
	out.id = id;
	out.body_case = MMC__FRAME__BODY_EXTENT_GRANT;
	out.extent_grant = &g;
	conn_send(c, &out, false);
}

void rpc_extent_request(struct conn *c, const Mmc__Frame *f)
{
	const Mmc__ExtentRequest *req = f->extent_request;
	struct extent *e[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES];
	struct extent_call call = {
	    .session = &c->session,
	    .bytes = req->bytes,
	    .min_bytes = req->min_bytes,
	    .replicas = req->replica_num ? req->replica_num : 1,
	    .preferred = req->preferred,
	    .npreferred = (uint32_t)req->n_preferred,
	    .spread = (req->flags & MMC_WIRE_FLAG_SPREAD) != 0,
	    .lanes = req->lanes ? req->lanes : 1,
	};
	uint32_t lanes = 0;
	int rc = req->n_preferred > MMC_WIRE_REPLICAS ? MMC_INVALID_PARAM : extents_grant(c->m, &call, e, &lanes);

	send_grant(c, f->id, rc, e, rc ? 0 : call.replicas * lanes);
}

/* One item's places out of the request, into the arena. */
static int item_of(struct conn *c, const Mmc__PutItem *pi, uint64_t hash, struct put_item *it)
{
	struct put_place *pl;

	if (pi->n_places > MMC_WIRE_REPLICAS)
		return MMC_INVALID_PARAM;
	if (!(pl = arena_alloc(&c->m->arena, (pi->n_places ? pi->n_places : 1) * sizeof(*pl))))
		return MMC_MALLOC_FAILED;
	for (size_t j = 0; j < pi->n_places; j++)
		pl[j] = (struct put_place){pi->places[j]->extent, pi->places[j]->rank, pi->places[j]->incarnation,
		                           pi->places[j]->offset};
	*it = (struct put_item){pi->key, pi->size, pi->checksum_type, pi->checksum, pl, pi->n_places, hash};
	return 0;
}

/* The batch's keys hashed and their buckets on the way before the first lookup, as a KeyBatch's are: most keys
 * of a put are new, and finding that out is a walk to the end of a chain that is in no cache. */
static uint64_t *hash_items(struct conn *c, const Mmc__PutBatch *req)
{
	uint64_t *hash = arena_alloc(&c->m->arena, req->n_items * sizeof(*hash));
	const char **keys = arena_alloc(&c->m->arena, req->n_items * sizeof(*keys));

	if (!hash || !keys)
		return NULL;
	for (size_t i = 0; i < req->n_items; i++)
		keys[i] = req->items[i]->key;
	objects_hash_keys(c->m, keys, req->n_items, hash);
	return hash;
}

/* Answered once the batch holding the new records is durable, like a commit. */
void rpc_put(struct conn *c, const Mmc__Frame *f)
{
	const Mmc__PutBatch *req = f->put;
	struct key_reply out;
	uint64_t *hash, now = clock_ms();
	bool durable = true;
	size_t bad = 0;

	if (req->n_items == 0 || req->n_items > MMC_WIRE_KEYS_MAX) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	if (key_reply_begin(&out, &c->m->arena, req->n_items) || !(hash = hash_items(c, req))) {
		rpc_reply_code(c, f->id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < req->n_items; i++) {
		struct put_item it;
		int rc;

		objects_prefetch_step(c->m, hash, req->n_items, i, false);
		rc = item_of(c, req->items[i], hash[i], &it);
		if (!rc)
			rc = extents_put(c->m, &c->session, &it, now, &durable);
		key_reply_add_code(&out, rc);
		bad += rc && rc != MMC_DUPLICATED_OBJECT && rc != MMC_UNMATCHED_STATE;
	}
	if (bad)
		log_debug("op=put session=%llu keys=%zu refused=%zu", (unsigned long long)c->session.id, req->n_items,
		          bad);
	key_reply_send(c, f->id, &out, 0, durable);
}

void rpc_extent_return(struct conn *c, const Mmc__Frame *f)
{
	const Mmc__ExtentReturn *r = f->extent_return;

	for (size_t i = 0; i < r->n_ids; i++)
		extents_return(c->m, &c->session, r->ids[i], false);
	for (size_t i = 0; i < r->n_failed; i++)
		extents_return(c->m, &c->session, r->failed[i], true);
	rpc_reply_code(c, f->id, 0);
}
