#include "key_reply.h"

#include "conn.h"
#include "mmc/mmc.h"
#include "rpc.h"

int key_result_encode(struct arena *a, const struct key_result *r, Mmc__KeyResult *out)
{
	Mmc__Blob *blobs = arena_alloc(a, (r->nblobs ? r->nblobs : 1) * sizeof(*blobs));
	Mmc__Blob **pb = arena_alloc(a, (r->nblobs ? r->nblobs : 1) * sizeof(*pb));

	if (!blobs || !pb)
		return MMC_MALLOC_FAILED;
	for (uint32_t b = 0; b < r->nblobs; b++) {
		mmc__blob__init(&blobs[b]);
		blobs[b].rank = r->blobs[b].rank;
		blobs[b].incarnation = r->blobs[b].incarnation;
		blobs[b].media = r->blobs[b].media;
		blobs[b].offset = r->blobs[b].offset;
		blobs[b].state = r->blobs[b].state;
		pb[b] = &blobs[b];
	}
	out->size = r->size;
	out->checksum_type = r->checksum_type;
	out->checksum = r->checksum;
	out->n_blobs = r->nblobs;
	out->blobs = pb;
	return 0;
}

void key_results_send(struct conn *c, uint64_t id, const struct key_result *r, size_t n, bool durable)
{
	struct arena *a = &c->m->arena;
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__KeyBatchReply rep = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__KeyResult *res = arena_alloc(a, n * sizeof(*res));
	Mmc__KeyResult **items = arena_alloc(a, n * sizeof(*items));

	if (!id)
		return;
	if (!res || !items) {
		rpc_reply_code(c, id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		mmc__key_result__init(&res[i]);
		if (key_result_encode(a, &r[i], &res[i])) {
			rpc_reply_code(c, id, MMC_MALLOC_FAILED);
			return;
		}
		res[i].result = r[i].result;
		res[i].lease_ms = r[i].lease_ms;
		res[i].token = r[i].token;
		items[i] = &res[i];
	}
	rep.n_items = n;
	rep.items = items;
	out.id = id;
	out.body_case = MMC__FRAME__BODY_KEY_REPLY;
	out.key_reply = &rep;
	conn_send(c, &out, durable);
}
