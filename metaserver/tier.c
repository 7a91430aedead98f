/*
 * Explicit moves between media (mmc_evict_keys / mmc_prefetch_keys). Without an SSD tier an evicted key is
 * removed from DRAM (the seed's rule) and a prefetch of a key already in DRAM is a success.
 */
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "rpc.h"

int rpc_tier_op(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req, Mmc__KeyResult *res)
{
	bool evict = f->body_case == MMC__FRAME__BODY_EVICT;

	if (f->body_case != MMC__FRAME__BODY_EVICT && f->body_case != MMC__FRAME__BODY_PREFETCH)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < req->n_items; i++) {
		const char *key = req->items[i]->key;
		size_t len = key ? strlen(key) : 0;
		struct object *o;

		if (len == 0 || len > MMC_WIRE_KEY_MAX) {
			res[i].result = MMC_INVALID_PARAM;
			continue;
		}
		o = object_find(c->m, key, len);
		if (!o || !object_readable(o)) {
			res[i].result = MMC_OBJECT_NOT_EXISTS;
			continue;
		}
		res[i].result = 0;
		if (evict && object_media(o) == MMC_MEDIA_DRAM)
			object_drop(c->m, o); /* leased bytes stay pinned until their readers finish */
	}
	return 0;
}
