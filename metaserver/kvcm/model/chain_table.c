#include "chain_table.h"

#include <stdlib.h>

#include "mmc/mmc.h"

static int grow(struct chain_table *t, uint64_t min, chain_hash_fn *hash)
{
	uint64_t nb = t->nb ? t->nb * 2 : min;
	struct chain_link **b = calloc(nb, sizeof(*b));

	if (!b)
		return MMC_MALLOC_FAILED;
	chain_foreach(t, l)
	{
		struct chain_link **slot = &b[hash(l) & (nb - 1)];

		l->next = *slot;
		*slot = l;
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

int chain_insert(struct chain_table *t, struct chain_link *l, uint64_t h, uint64_t min, chain_hash_fn *hash)
{
	struct chain_link **slot;

	if (t->n >= t->nb && grow(t, min, hash))
		return MMC_MALLOC_FAILED;
	slot = &t->b[h & (t->nb - 1)];
	l->next = *slot;
	*slot = l;
	t->n++;
	return 0;
}

bool chain_remove(struct chain_table *t, struct chain_link *l, uint64_t h)
{
	struct chain_link **pp;

	if (!t->nb)
		return false;
	for (pp = &t->b[h & (t->nb - 1)]; *pp && *pp != l; pp = &(*pp)->next)
		;
	if (!*pp)
		return false;
	*pp = l->next;
	t->n--;
	return true;
}

void chain_free(struct chain_table *t)
{
	free(t->b);
	t->b = NULL;
	t->nb = t->n = 0;
}
