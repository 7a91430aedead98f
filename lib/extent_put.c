/* The PutBatch of a put written into extents: keys, sizes, checksums and places in one request (extent.h), written
 * by hand (wire.h): it goes out between the RMA and the put's return, so its cost is on every put's path. */
#include "extent.h"

#include <string.h>

#include "key_rpc.h"
#include "pb_fields.h"
#include "per_key.h"

/* PutPlace{extent 1, rank 2, incarnation 3, offset 4} */
static size_t place_len(const mmc_Extent *e, uint64_t offset)
{
	return pb_field_len(e->id) + pb_field_len(e->rank) + pb_field_len(e->incarnation) + pb_field_len(offset);
}

/* PutItem{key 1, size 2, checksum_type 3, checksum 4 (fixed32), places 5} of item i; SIZE_MAX: it cannot be sent. */
static size_t item_len(const struct extent_put *p, size_t i)
{
	size_t k = p->index[i], klen = strlen(p->keys[k]), n;
	const struct xfer_key *x = &PER_KEY(p->xk, k, p->stride);
	const mmc_Extent *ext = &p->g->ext[PER_KEY(p->lane, k, p->stride) * p->g->cls.replicas];
	const struct wire_checksum *sum = &PER_KEY(p->sums, k, p->stride);

	if (klen > MMC_WIRE_KEY_MAX || x->ntargets != p->g->cls.replicas)
		return SIZE_MAX;
	n = (klen ? pb_sub_len(klen) : 0) + pb_field_len(PER_KEY(p->sizes, k, p->stride)) + pb_field_len(sum->type) +
	    pb_fixed32_len(sum->value);
	for (uint32_t r = 0; r < p->g->cls.replicas; r++)
		n += pb_sub_len(place_len(&ext[r], x->targets[r].offset));
	return n;
}

static size_t put_batch_len(const void *arg)
{
	const struct extent_put *p = arg;
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		size_t len = item_len(p, i);

		if (len == SIZE_MAX)
			return SIZE_MAX;
		n += pb_sub_len(len);
	}
	return n;
}

static uint8_t *put_batch_put(uint8_t *o, const void *arg)
{
	const struct extent_put *p = arg;

	for (size_t i = 0; i < p->n; i++) {
		size_t k = p->index[i], klen = strlen(p->keys[k]);
		const struct xfer_key *x = &PER_KEY(p->xk, k, p->stride);
		const mmc_Extent *ext = &p->g->ext[PER_KEY(p->lane, k, p->stride) * p->g->cls.replicas];
		const struct wire_checksum *sum = &PER_KEY(p->sums, k, p->stride);

		o = pb_put_sub(o, 0x0a, item_len(p, i)); /* PutBatch.items */
		if (klen) {
			o = pb_put_sub(o, 0x0a, klen);
			memcpy(o, p->keys[k], klen);
			o += klen;
		}
		o = pb_put_field(o, 0x10, PER_KEY(p->sizes, k, p->stride));
		o = pb_put_field(o, 0x18, sum->type);
		o = pb_put_fixed32(o, 0x25, sum->value);
		for (uint32_t r = 0; r < p->g->cls.replicas; r++) {
			uint64_t offset = x->targets[r].offset;

			o = pb_put_sub(o, 0x2a, place_len(&ext[r], offset));
			o = pb_put_field(o, 0x08, ext[r].id);
			o = pb_put_field(o, 0x10, ext[r].rank);
			o = pb_put_field(o, 0x18, ext[r].incarnation);
			o = pb_put_field(o, 0x20, offset);
		}
	}
	return o;
}

void extent_put_hand(struct wire_hand *h, const struct extent_put *p)
{
	*h = (struct wire_hand){put_batch_len, put_batch_put, p};
}

int extents_put_call(struct mmc_store *s, const struct extent_put *p,
                     bool (*fn)(void *arg, size_t i, const mmc_KeyResult *r), void *arg, uint64_t deadline_ms)
{
	struct key_rpc k = {.body = WB_PUT, .on_result = fn, .arg = arg, .deadline_ms = deadline_ms};
	struct wire_hand h;

	extent_put_hand(&h, p);
	k.items.n = p->n;
	return key_rpc_send(s, &k, NULL, &h);
}
