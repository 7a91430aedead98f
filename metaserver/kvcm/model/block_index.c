#include "block_index.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "kvcm_state.h"
#include "storage_uri.h"

static uint64_t key_hash(int64_t key)
{
	return hash_bytes(&key, sizeof(key));
}

static uint64_t link_hash(const struct hmap_node *l)
{
	return key_hash(hmap_entry(l, struct block, hlink)->key);
}

void block_index_init(struct instance *inst)
{
	hmap_init(&inst->blocks, link_hash, 256);
}

struct block *block_find(const struct instance *inst, int64_t key)
{
	hmap_foreach_hash(&inst->blocks, key_hash(key), l)
	{
		struct block *b = hmap_entry(l, struct block, hlink);

		if (b->key == key)
			return b;
	}
	return NULL;
}

void block_prefetch(const struct instance *inst, int64_t key, bool chain)
{
	struct hmap_node *const *slot = hmap_bucket(&inst->blocks, key_hash(key));

	if (!slot)
		return;
	if (!chain)
		__builtin_prefetch(slot);
	else if (*slot)
		__builtin_prefetch(*slot);
}

struct block *block_get(struct instance *inst, int64_t key)
{
	struct block *b = block_find(inst, key);

	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->key = key;
	if (hmap_insert(&inst->blocks, &b->hlink, key_hash(key))) {
		free(b);
		return NULL;
	}
	list_add_tail(&inst->lru, &b->lru_link);
	return b;
}

void block_remove(struct instance *inst, struct block *b)
{
	hmap_remove(&inst->blocks, &b->hlink, key_hash(b->key));
	list_del(&b->lru_link);
	free(b);
}

void block_touch(struct instance *inst, struct block *b, uint64_t now_us)
{
	b->lru_time_us = now_us;
	list_del(&b->lru_link);
	list_add_tail(&inst->lru, &b->lru_link);
}

void block_index_free(struct instance *inst)
{
	hmap_foreach(&inst->blocks, l)
	{
		struct block *b = hmap_entry(l, struct block, hlink);

		for (struct location *loc = b->locs, *next; loc; loc = next) {
			next = loc->next;
			location_free(loc);
		}
		free(b);
	}
	hmap_free(&inst->blocks);
	list_init(&inst->lru);
}

struct location *location_new_er(struct storage *s, const char *er_key, uint16_t nspecs, const char *const *names,
                                 const char *const *uris)
{
	size_t strs = er_key ? strlen(er_key) + 1 : 0, off;
	struct location *l;
	char *p;

	for (uint16_t j = 0; j < nspecs; j++)
		strs += strlen(names[j]) + strlen(uris[j]) + 2;
	off = sizeof(*l) + nspecs * sizeof(struct loc_spec);
	l = calloc(1, off + strs);
	if (!l)
		return NULL;
	l->storage = s;
	l->type = (uint8_t)(s ? s->type : ST_UNSPECIFIED);
	l->nspecs = nspecs;
	p = (char *)l + off;
	for (uint16_t j = 0; j < nspecs; j++) {
		size_t nl = strlen(names[j]) + 1, ul = strlen(uris[j]) + 1;

		l->specs[j].name = memcpy(p, names[j], nl);
		p += nl;
		l->specs[j].uri = memcpy(p, uris[j], ul);
		p += ul;
		l->bytes += er_key ? 0 : uri_size_param(uris[j]);
	}
	if (er_key)
		l->er_key = memcpy(p, er_key, strlen(er_key) + 1);
	return l;
}

struct location *location_new(struct storage *s, uint16_t nspecs, const char *const *names, const char *const *uris)
{
	return location_new_er(s, NULL, nspecs, names, uris);
}

void location_free(struct location *l)
{
	if (l)
		free(l->json);
	free(l);
}

struct location *location_find(const struct block *b, const char *id)
{
	for (struct location *l = b->locs; l; l = l->next)
		if (strcmp(location_name(l), id) == 0)
			return l;
	return NULL;
}

struct location *location_find_as(const struct block *b, const char *id, bool pending)
{
	for (struct location *l = b->locs; l; l = l->next)
		if (l->pending == pending && strcmp(location_name(l), id) == 0)
			return l;
	return NULL;
}

void location_unlink(struct block *b, struct location *l)
{
	struct location **pp = &b->locs;

	while (*pp && *pp != l)
		pp = &(*pp)->next;
	if (*pp)
		*pp = l->next;
	l->next = NULL;
}

static bool readable(struct kvcm *k, const struct location *l)
{
	return l->status == CLS_SERVING && !l->er_key && l->storage && l->storage->available &&
	       storage_data_visible(k, l);
}

struct location *location_pick(struct kvcm *k, const struct block *b)
{
	for (struct location *l = b->locs; l; l = l->next)
		if (readable(k, l))
			return l;
	return NULL;
}

size_t location_merge_set(struct kvcm *k, const struct block *b, struct location *winner, struct location **out,
                          size_t cap)
{
	size_t n = 0;

	out[n++] = winner;
	for (struct location *l = b->locs; l && n < cap; l = l->next)
		if (l != winner && l->storage == winner->storage && readable(k, l))
			out[n++] = l;
	return n;
}
