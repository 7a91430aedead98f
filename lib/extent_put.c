/* The PutBatch of a put written into extents: keys, sizes, checksums and places in one request (extent.h), written
 * by hand (wire.h): it goes out between the RMA and the put's return, so its cost is on every put's path. */
#include "extent.h"

#include <string.h>

#include "key_rpc.h"
#include "pb_fields.h"
#include "per_key.h"

/* PutItem{key 1, size 2, checksum_type 3, checksum 4 (fixed32), places 5}: one item's fields, each replica's
 * PutPlace{extent 1, rank 2, incarnation 3, offset 4} from its extent and the offset written there. */
struct put_item {
	const char *key;
	size_t klen, len; /* the key's bytes; the item's, SIZE_MAX when it cannot be sent */
	uint64_t size;
	const struct wire_checksum *sum;
	const struct xfer_key *x;
	const mmc_Extent *ext; /* replicas of them */
	uint32_t replicas;
};

static size_t place_len(const struct put_item *f, uint32_t r)
{
	return pb_field_len(f->ext[r].id) + pb_field_len(f->ext[r].rank) + pb_field_len(f->ext[r].incarnation) +
	       pb_field_len(f->x->targets[r].offset);
}

static void put_item_of(const struct extent_put *p, size_t i, struct put_item *f)
{
	size_t k = p->index[i];

	f->key = p->keys[k];
	f->klen = strlen(f->key);
	f->size = PER_KEY(p->sizes, k, p->stride);
	f->sum = &PER_KEY(p->sums, k, p->stride);
	f->x = &PER_KEY(p->xk, k, p->stride);
	f->replicas = p->g->cls.replicas;
	f->ext = &p->g->ext[PER_KEY(p->lane, k, p->stride) * f->replicas];
	if (f->klen > MMC_WIRE_KEY_MAX || f->x->ntargets != f->replicas) {
		f->len = SIZE_MAX;
		return;
	}
	f->len =
	    pb_str_len(f->klen) + pb_field_len(f->size) + pb_field_len(f->sum->type) + pb_fixed32_len(f->sum->value);
	for (uint32_t r = 0; r < f->replicas; r++)
		f->len += pb_sub_len(place_len(f, r));
}

static size_t put_batch_len(const void *arg)
{
	const struct extent_put *p = arg;
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct put_item f;

		put_item_of(p, i, &f);
		if (f.len == SIZE_MAX)
			return SIZE_MAX;
		n += pb_sub_len(f.len);
	}
	return n;
}

static uint8_t *put_batch_put(uint8_t *o, const void *arg)
{
	const struct extent_put *p = arg;

	for (size_t i = 0; i < p->n; i++) {
		struct put_item f;

		put_item_of(p, i, &f);
		o = pb_put_sub(o, 0x0a, f.len); /* PutBatch.items */
		o = pb_put_str(o, 0x0a, f.key, f.klen);
		o = pb_put_field(o, 0x10, f.size);
		o = pb_put_field(o, 0x18, f.sum->type);
		o = pb_put_fixed32(o, 0x25, f.sum->value);
		for (uint32_t r = 0; r < f.replicas; r++) {
			o = pb_put_sub(o, 0x2a, place_len(&f, r));
			o = pb_put_field(o, 0x08, f.ext[r].id);
			o = pb_put_field(o, 0x10, f.ext[r].rank);
			o = pb_put_field(o, 0x18, f.ext[r].incarnation);
			o = pb_put_field(o, 0x20, f.x->targets[r].offset);
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
	/* on the extents' own connection: the next server numbers its extents from elsewhere, but only that is sure */
	struct key_rpc k = {.body = WB_PUT,
	                    .on_result = fn,
	                    .arg = arg,
	                    .deadline_ms = deadline_ms,
	                    .pinned = true,
	                    .on_conn = p->g->losses};
	struct wire_hand h;

	extent_put_hand(&h, p);
	k.items.n = p->n;
	return key_rpc_send(s, &k, NULL, &h);
}
