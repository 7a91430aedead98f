#include "key_reply.h"

#include "conn.h"
#include "mmc/mmc.h"
#include "rpc.h"

void key_results_send(struct conn *c, uint64_t id, const struct key_result *r, size_t n, bool durable)
{
	struct arena *a = &c->m->arena;
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__KeyBatchReply rep = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__KeyResult *res = arena_alloc(a, n * sizeof(*res));
	Mmc__KeyResult **items = arena_alloc(a, n * sizeof(*items));
	Mmc__Blob *blobs = arena_alloc(a, n * MMC_WIRE_REPLICAS * sizeof(*blobs));
	Mmc__Blob **pb = arena_alloc(a, n * MMC_WIRE_REPLICAS * sizeof(*pb));

	if (!id)
		return;
	if (!res || !items || !blobs || !pb) {
		rpc_reply_code(c, id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		mmc__key_result__init(&res[i]);
		res[i].result = r[i].result;
		res[i].size = r[i].size;
		res[i].lease_ms = r[i].lease_ms;
		res[i].token = r[i].token;
		res[i].checksum_type = r[i].checksum_type;
		res[i].checksum = r[i].checksum;
		res[i].n_blobs = r[i].nblobs;
		res[i].blobs = &pb[i * MMC_WIRE_REPLICAS];
		for (uint32_t b = 0; b < r[i].nblobs; b++) {
			Mmc__Blob *x = &blobs[i * MMC_WIRE_REPLICAS + b];

			mmc__blob__init(x);
			x->rank = r[i].blobs[b].rank;
			x->incarnation = r[i].blobs[b].incarnation;
			x->media = r[i].blobs[b].media;
			x->offset = r[i].blobs[b].offset;
			x->state = r[i].blobs[b].state;
			pb[i * MMC_WIRE_REPLICAS + b] = x;
		}
		items[i] = &res[i];
	}
	rep.n_items = n;
	rep.items = items;
	out.id = id;
	out.body_case = MMC__FRAME__BODY_KEY_REPLY;
	out.key_reply = &rep;
	conn_send(c, &out, durable);
}
