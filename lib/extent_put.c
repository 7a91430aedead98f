/* The PutBatch of a put written into extents: keys, sizes, checksums and places in one request (extent.h). */
#include "extent.h"

#include <string.h>

#include "key_rpc.h"
#include "per_key.h"

static bool encode_items(pb_ostream_t *s, const pb_field_t *field, void *const *arg)
{
	const struct extent_put *p = *arg;
	mmc_PutItem item = mmc_PutItem_init_zero;

	for (size_t i = 0; i < p->n; i++) {
		size_t k = p->index[i], len = strlen(p->keys[k]);
		const struct xfer_key *x = &PER_KEY(p->xk, k, p->stride);
		const mmc_Extent *ext = &p->g->ext[PER_KEY(p->lane, k, p->stride) * p->g->cls.replicas];

		if (len >= sizeof(item.key) || x->ntargets != p->g->cls.replicas)
			return false;
		memcpy(item.key, p->keys[k], len + 1);
		item.size = PER_KEY(p->sizes, k, p->stride);
		item.checksum_type = PER_KEY(p->sums, k, p->stride).type;
		item.checksum = PER_KEY(p->sums, k, p->stride).value;
		item.places_count = (pb_size_t)p->g->cls.replicas;
		for (uint32_t r = 0; r < p->g->cls.replicas; r++)
			item.places[r] =
			    (mmc_PutPlace){ext[r].id, ext[r].rank, ext[r].incarnation, x->targets[r].offset};
		if (!pb_encode_tag_for_field(s, field) || !pb_encode_submessage(s, mmc_PutItem_fields, &item))
			return false;
	}
	return true;
}

void extent_put_bind(mmc_PutBatch *req, const struct extent_put *p)
{
	req->items.funcs.encode = encode_items;
	req->items.arg = (void *)p;
}

int extents_put_call(struct mmc_store *s, const struct extent_put *p,
                     bool (*fn)(void *arg, size_t i, const mmc_KeyResult *r), void *arg, uint64_t deadline_ms)
{
	mmc_PutBatch req = mmc_PutBatch_init_zero;
	struct key_rpc k = {.body = WB_PUT, .on_result = fn, .arg = arg, .deadline_ms = deadline_ms};

	extent_put_bind(&req, p);
	k.items.n = p->n;
	return key_rpc_send(s, &k, mmc_PutBatch_fields, &req);
}
