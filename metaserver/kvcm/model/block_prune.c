#include "block_prune.h"

#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "block_record.h"
#include "log.h"
#include "storage_uri.h"

static bool prunable(const struct location *l)
{
	return l->status == CLS_SERVING && !l->pending && !l->er_key && storage_data_lost(l);
}

static bool push(struct prune_set *ps, int64_t key, const struct location *l)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;
		struct prune_item *v = realloc(ps->v, cap * sizeof(*v));

		if (!v)
			return false;
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n].key = key;
	memcpy(ps->v[ps->n].id, l->id, sizeof(ps->v[ps->n].id));
	ps->n++;
	return true;
}

size_t prune_note(struct prune_set *ps, const struct block *b)
{
	size_t n = 0;

	for (const struct location *l = b->locs; l; l = l->next)
		if (prunable(l) && push(ps, b->key, l))
			n++;
	return n;
}

void prune_apply(struct kvcm *k, struct instance *inst, struct prune_set *ps)
{
	size_t dropped = 0;

	for (size_t i = 0; i < ps->n; i++) {
		struct block *b = block_find(inst, ps->v[i].key);
		struct location *l = b ? location_find_as(b, ps->v[i].id, false) : NULL;

		/* a key repeated in one request is noted twice: the second finds nothing */
		if (l && l->status == CLS_SERVING) {
			block_drop_location(k, inst, b, l); /* nothing else points at a SERVING one */
			dropped++;
		}
	}
	if (dropped)
		log_info("op=kvcm_prune instance=\"%s\" locations=%zu reason=\"data lost\"", inst->id, dropped);
	free(ps->v);
	*ps = (struct prune_set){0};
}

void prune_keys(struct kvcm *k, struct instance *inst, const int64_t *keys, size_t n)
{
	struct prune_set ps = {0};

	for (size_t i = 0; i < n; i++) {
		struct block *b = block_find(inst, keys[i]);

		if (b)
			prune_note(&ps, b);
	}
	prune_apply(k, inst, &ps);
}
