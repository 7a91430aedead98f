#include "hmap.h"

#include <stdlib.h>

#include "mmc/mmc.h"
#include "mmc_assert.h"

void hmap_init(struct hmap *t, hmap_hash_fn *hash, uint64_t min_buckets)
{
	uint64_t min = 2;

	while (min < min_buckets && min < UINT64_C(1) << 62)
		min *= 2;
	*t = (struct hmap){.min = min, .hash = hash};
}

static void link_into(struct hmap_node **slot, struct hmap_node *n)
{
	n->next = *slot;
	*slot = n;
}

/* Moves up to steps old buckets into the new array; frees the old one when it is empty. */
static void drain(struct hmap *t, uint64_t steps)
{
	for (; t->old && steps; steps--) {
		struct hmap_node *n = t->old[t->moved], *next;

		for (; n; n = next) {
			next = n->next;
			link_into(&t->b[t->hash(n) & (t->nb - 1)], n);
		}
		t->old[t->moved] = NULL;
		if (++t->moved == t->nold) {
			free(t->old);
			t->old = NULL;
			t->nold = t->moved = 0;
		}
	}
}

static int grow(struct hmap *t)
{
	uint64_t nb;
	struct hmap_node **b;

	drain(t, UINT64_MAX); /* only when removals slowed inserts: the previous growth must end first */
	nb = t->nb ? t->nb * 2 : t->min;
	if (nb > SIZE_MAX / sizeof(*b) || !(b = calloc(nb, sizeof(*b))))
		return MMC_MALLOC_FAILED;
	if (t->nb) {
		t->old = t->b;
		t->nold = t->nb;
		t->moved = 0;
	}
	t->b = b;
	t->nb = nb;
	return 0;
}

int hmap_insert(struct hmap *t, struct hmap_node *n, uint64_t h)
{
	MMC_ASSERT(t->hash); /* hmap_init() ran */
	if (t->n >= t->nb && grow(t))
		return MMC_MALLOC_FAILED;
	drain(t, HMAP_MOVE_STEP);
	link_into(hmap_bucket(t, h), n);
	t->n++;
	return 0;
}

bool hmap_remove(struct hmap *t, struct hmap_node *n, uint64_t h)
{
	struct hmap_node **pp = hmap_bucket(t, h);

	if (!pp)
		return false;
	for (; *pp && *pp != n; pp = &(*pp)->next)
		;
	if (!*pp)
		return false;
	*pp = n->next;
	t->n--;
	return true;
}

void hmap_free(struct hmap *t)
{
	free(t->b);
	free(t->old);
	hmap_init(t, t->hash, t->min);
}
