#include "tenant_keys.h"

#include <stddef.h>
#include <string.h>

#include "arena.h"
#include "conn.h"
#include "tenants.h"

static char refused[1] = ""; /* a key no handler accepts */

/* The key as stored for tenant t: its tag, then key; "" when that is not a key the store may name. */
static char *map_one(struct arena *a, const struct tenant *t, char *key)
{
	size_t len = key ? strlen(key) : 0;
	char *out;

	if (!key)
		return key;
	if (t->taglen == 0)
		return len && (uint8_t)key[0] == TENANT_TAG ? refused : key;
	if (len == 0 || len + t->taglen > MMC_WIRE_KEY_MAX || !(out = arena_alloc(a, len + t->taglen + 1)))
		return refused;
	memcpy(out, t->tag, t->taglen);
	memcpy(out + t->taglen, key, len + 1);
	return out;
}

void tenant_keys_map(struct conn *c, Mmc__KeyBatch *kb, Mmc__PutBatch *put)
{
	struct meta *m = c->m;
	const struct tenant *t;

	if (!m->tenants.n)
		return;
	t = &m->tenants.t[c->session.tenant];
	for (size_t i = 0; kb && i < kb->n_items; i++)
		kb->items[i]->key = map_one(&m->arena, t, kb->items[i]->key);
	for (size_t i = 0; put && i < put->n_items; i++)
		put->items[i]->key = map_one(&m->arena, t, put->items[i]->key);
}

const char *tenant_key_own(const struct conn *c, const char *key, size_t len)
{
	const struct meta *m = c->m;
	const struct tenant *t;

	if (!m->tenants.n)
		return key;
	t = &m->tenants.t[c->session.tenant];
	if (t->taglen == 0)
		return len && (uint8_t)key[0] == TENANT_TAG ? NULL : key;
	return len > t->taglen && memcmp(key, t->tag, t->taglen) == 0 ? key + t->taglen : NULL;
}
