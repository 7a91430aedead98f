/*
 * hmap: an intrusive chained hash table keyed by a hash the caller computes.
 *
 * An element embeds a struct hmap_node (one pointer) and is linked into the bucket its 64-bit hash selects; a lookup
 * walks that one bucket and the caller compares its own keys, so any key fits (integers, strings, ids, pointers) and
 * the table never copies or owns one.
 *
 * Why chained rather than open addressing: the table costs one pointer per element and one per bucket (at most two
 * buckets per element), elements never move (a pointer to one stays valid while the table grows), removal is an
 * unlink (no tombstones, no backward shift), and the load factor can reach 1 without probe sequences getting long.
 *
 * Why the caller hashes: keys a client chooses must be hashed with hash_bytes() (hash.h, keyed once per process) so
 * that nobody can aim many keys at one bucket; hash_stable() must never index a table. The same element must always
 * be given the same hash.
 *
 * Growth is incremental. When an insert finds as many elements as buckets, it allocates a bucket array twice as big;
 * from then on every insert moves HMAP_MOVE_STEP buckets of the old array into the new one, so no single insert
 * rehashes the whole table (a block index of 10^7 entries would otherwise stall its thread for about a second on
 * cache misses). Until the old array is drained, an element is in exactly one of the two arrays and a hash names
 * exactly one bucket (hmap_bucket()), so a lookup still walks one chain. A moved element's hash is recomputed with the
 * table's hmap_hash_fn. The table never shrinks; hmap_free() returns its memory.
 *
 * Ownership: the table owns its bucket arrays only. The caller owns the elements, which must outlive their time in
 * the table; hmap_free() does not touch them (free them first, in an hmap_foreach(), if the table held the last
 * reference).
 *
 * Thread-safety: none. A table belongs to one thread (or is guarded by its owner's lock); lookups read the same state
 * inserts write.
 *
 * Errors: hmap_insert() returns 0 or MMC_MALLOC_FAILED (the element is not inserted and the table is as before).
 * Nothing else allocates, so nothing else fails.
 *
 *   hmap_init(t, hash, min)      an empty table; allocates nothing
 *   hmap_insert(t, n, h)         links n under hash h (the caller checked it is not there yet)
 *   hmap_remove(t, n, h)         unlinks n; false when n is not in the table
 *   hmap_first(t, h)             the first node of h's bucket; hmap_foreach_hash(t, h, n) walks it
 *   hmap_bucket(t, h)            h's bucket, for a prefetch ahead of a lookup
 *   hmap_foreach(t, n)           every node; the body may remove (or free) n, but must not insert
 *   hmap_free(t)                 frees the buckets; t is empty and ready for inserts again
 *   hmap_entry(n, type, member)  the element holding node n
 */
#ifndef MMC_HMAP_H
#define MMC_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Old buckets moved by each insert while the table grows: at least 2 drains them before the next doubling is due. */
#define HMAP_MOVE_STEP 4

struct hmap_node {
	struct hmap_node *next;
};

/* The hash n was inserted with: called only for a node whose bucket moves. */
typedef uint64_t hmap_hash_fn(const struct hmap_node *n);

struct hmap {
	struct hmap_node **b;   /* buckets: nb of them, 0 or a power of two */
	struct hmap_node **old; /* while growing: the previous array, drained from index moved upward; else NULL */
	uint64_t nb, nold, moved;
	uint64_t n;   /* elements */
	uint64_t min; /* buckets of the first array: a power of two */
	hmap_hash_fn *hash;
};

/* The element of type holding node n as member. */
#define hmap_entry(n, type, member) ((type *)(void *)((char *)(n)-offsetof(type, member)))

/*
 * Makes t an empty table whose first bucket array has min_buckets buckets (rounded up to a power of two, at least 2):
 * a caller that knows how many elements are coming sizes it so the table never grows. hash recomputes an element's
 * hash when the table grows. Allocates nothing, so it cannot fail.
 */
void hmap_init(struct hmap *t, hmap_hash_fn *hash, uint64_t min_buckets);

/*
 * Links n, whose hash is h; n must not be in the table (look it up first when keys must be unique: duplicates are
 * kept, and hmap_first() returns the newest first). Returns 0, or MMC_MALLOC_FAILED when the table was due to grow
 * and could not: n is not linked and the table is unchanged.
 */
int hmap_insert(struct hmap *t, struct hmap_node *n, uint64_t h);

/* Unlinks n, inserted with hash h. Returns false when n is not in the table. Never moves buckets, never allocates. */
bool hmap_remove(struct hmap *t, struct hmap_node *n, uint64_t h);

/* Frees the bucket arrays (not the elements) and empties t; the hash function and first size stay. */
void hmap_free(struct hmap *t);

/* The head of the bucket of hash h, in whichever array holds it now; NULL when t has no buckets yet. */
static inline struct hmap_node **hmap_bucket(const struct hmap *t, uint64_t h)
{
	if (t->old && (h & (t->nold - 1)) >= t->moved)
		return &t->old[h & (t->nold - 1)];
	return t->nb ? &t->b[h & (t->nb - 1)] : NULL;
}

/* The first node of the bucket of hash h (NULL when there is none): follow ->next and compare keys. */
static inline struct hmap_node *hmap_first(const struct hmap *t, uint64_t h)
{
	struct hmap_node **b = hmap_bucket(t, h);

	return b ? *b : NULL;
}

/* Every node n in the bucket of hash h (other hashes share it: compare keys). The body must not remove n. */
#define hmap_foreach_hash(t, h, n) for (struct hmap_node *n = hmap_first((t), (h)); n; n = n->next)

/* Buckets hmap_foreach() visits: the old array's undrained ones, then the new array's. */
static inline uint64_t hmap_nbuckets_(const struct hmap *t)
{
	return t->nb + (t->old ? t->nold - t->moved : 0);
}

static inline struct hmap_node *hmap_bucket_at_(const struct hmap *t, uint64_t i)
{
	uint64_t nold = t->old ? t->nold - t->moved : 0;

	return i < nold ? t->old[t->moved + i] : t->b[i - nold];
}

/*
 * Every node n of t, bucket by bucket, in no useful order. The body may unlink n (hmap_remove) or free it: the next
 * node is read before it runs, and removal moves no bucket. It must not insert (an insert may move buckets, so a
 * node could be visited twice or missed).
 */
#define hmap_foreach(t, n)                                                                                             \
	for (uint64_t n##_i = 0; n##_i < hmap_nbuckets_(t); n##_i++)                                                   \
		for (struct hmap_node *n = hmap_bucket_at_((t), n##_i), *n##_next; n && (n##_next = n->next, true);    \
		     n = n##_next)

#endif
