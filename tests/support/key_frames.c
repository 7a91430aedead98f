#include "key_frames.h"

#include <stdbool.h>
#include <string.h>

/* Each KeyBatch body case keeps its body in the same place of the union. */
static const Mmc__KeyBatch *batch_of(const Mmc__Frame *f)
{
	return f->alloc;
}

static bool keys_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static const char *key_items_differ(const Mmc__KeyBatch *x, const Mmc__KeyBatch *y)
{
	for (size_t i = 0; i < x->n_items; i++) {
		const Mmc__KeyItem *a = x->items[i], *b = y->items[i];

		if (!keys_same(a->key, b->key))
			return "items.key";
		if (a->size != b->size || a->value != b->value || a->token != b->token)
			return "items.size, value or token";
		if (a->checksum_type != b->checksum_type || a->checksum != b->checksum)
			return "items.checksum";
	}
	return NULL;
}

static const char *key_batches_differ(const Mmc__KeyBatch *x, const Mmc__KeyBatch *y)
{
	if (x->n_items != y->n_items)
		return "n_items";
	if (x->replica_num != y->replica_num || x->flags != y->flags || x->media != y->media ||
	    x->lease_ttl_ms != y->lease_ttl_ms)
		return "replica_num, flags, media or lease_ttl_ms";
	if (x->n_preferred != y->n_preferred ||
	    (x->n_preferred && memcmp(x->preferred, y->preferred, x->n_preferred * sizeof(*x->preferred))))
		return "preferred";
	return key_items_differ(x, y);
}

static const char *places_differ(const Mmc__PutItem *a, const Mmc__PutItem *b)
{
	if (a->n_places != b->n_places || (a->places == NULL) != (b->places == NULL))
		return "items.n_places";
	for (size_t j = 0; j < a->n_places; j++) {
		const Mmc__PutPlace *p = a->places[j], *q = b->places[j];

		if (p->extent != q->extent || p->rank != q->rank || p->incarnation != q->incarnation ||
		    p->offset != q->offset)
			return "items.places";
	}
	return NULL;
}

static const char *puts_differ(const Mmc__PutBatch *x, const Mmc__PutBatch *y)
{
	if (x->n_items != y->n_items)
		return "n_items";
	for (size_t i = 0; i < x->n_items; i++) {
		const Mmc__PutItem *a = x->items[i], *b = y->items[i];
		const char *why = places_differ(a, b);

		if (!keys_same(a->key, b->key))
			return "items.key";
		if (a->size != b->size || a->checksum_type != b->checksum_type || a->checksum != b->checksum)
			return "items.size or checksum";
		if (why)
			return why;
	}
	return NULL;
}

const char *key_frames_differ(const Mmc__Frame *a, const Mmc__Frame *b)
{
	if (a->id != b->id)
		return "id";
	if (a->body_case != b->body_case)
		return "body_case";
	if (a->body_case == MMC__FRAME__BODY_PUT)
		return puts_differ(a->put, b->put);
	return key_batches_differ(batch_of(a), batch_of(b));
}
