/*
 * An intrusive chained hash table: an element embeds a struct chain_link, a lookup walks one bucket and the caller
 * compares keys (so any key fits: instance ids, block keys, session ids, paths), the buckets double when there are
 * as many elements as buckets. It serves the instance registry, each instance's block index, the write sessions
 * and the files shared by several blocks. Loop thread only.
 */
#ifndef MMC_KVCM_CHAIN_TABLE_H
#define MMC_KVCM_CHAIN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chain_link {
	struct chain_link *next;
};

struct chain_table {
	struct chain_link **b;
	uint64_t nb; /* buckets: 0 or a power of two */
	uint64_t n;  /* elements */
};

/* The hash an element was inserted with, recomputed when the buckets double. */
typedef uint64_t chain_hash_fn(const struct chain_link *l);

/* The element of type holding link l as member. */
#define chain_entry(l, type, member) ((type *)(void *)((char *)(l)-offsetof(type, member)))

/* The first link of the bucket of hash h (NULL when the table is empty): follow ->next, compare keys. */
static inline struct chain_link *chain_first(const struct chain_table *t, uint64_t h)
{
	return t->nb ? t->b[h & (t->nb - 1)] : NULL;
}

/* The bucket of hash h, for a prefetch ahead of a lookup; the table must not be empty. */
static inline struct chain_link *const *chain_slot(const struct chain_table *t, uint64_t h)
{
	return &t->b[h & (t->nb - 1)];
}

/*
 * Inserts l with hash h. A full table first doubles its buckets (to min when it has none), rehashing every link
 * with hash. Returns 0, or MMC_MALLOC_FAILED with l not inserted and the table unchanged.
 */
int chain_insert(struct chain_table *t, struct chain_link *l, uint64_t h, uint64_t min, chain_hash_fn *hash);
/* Unlinks l, inserted with hash h; false when it is not in the table. */
bool chain_remove(struct chain_table *t, struct chain_link *l, uint64_t h);
/* Frees the buckets (not the elements) and empties t. */
void chain_free(struct chain_table *t);

/*
 * Every link l of t, bucket by bucket. The body may unlink or free l (the next link is read before it runs) but
 * must not insert.
 */
#define chain_foreach(t, l)                                                                                            \
	for (uint64_t l##_i = 0; l##_i < (t)->nb; l##_i++)                                                             \
		for (struct chain_link *l = (t)->b[l##_i], *l##_next; l && (l##_next = l->next, true); l = l##_next)

#endif
