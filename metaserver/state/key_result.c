#include "key_result.h"

#include "mmc/mmc.h"

void key_result_note(struct key_result *r, const struct object *o, int pick)
{
	int from = pick >= 0 ? pick : 0, to = pick >= 0 ? pick + 1 : o->nblobs;

	r->size = o->size;
	r->token = o->id;
	r->checksum_type = o->checksum_type;
	r->checksum = o->checksum;
	r->nblobs = 0;
	/* a loaded record may name more blobs than a reply holds (a damaged store): the first ones are answered */
	for (int i = from; i < to && r->nblobs < MMC_WIRE_REPLICAS; i++) {
		const struct blob *b = &o->blobs[i];
		const struct service *svc = blob_svc(b);

		if (!svc)
			continue;
		r->blobs[r->nblobs].rank = svc->rank;
		r->blobs[r->nblobs].incarnation = svc->incarnation;
		r->blobs[r->nblobs].media = b->media;
		r->blobs[r->nblobs].offset = blob_offset(b);
		r->blobs[r->nblobs].state = o->state;
		r->nblobs++;
	}
}
