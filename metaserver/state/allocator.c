#include "allocator.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "treap.h"

/*
 * Blocks tile the pool. A free block is a struct in two treaps: by_offset (its neighbours, for coalescing, and where
 * the reserved block before it ends) and by_size, ordered by (size, offset) so the lower bound of a request is the
 * best fit. A reserved block has no struct: one bit per 4 KiB granule says a reserved block starts there (starts),
 * another that it is held (released, its batch not durable yet, or lost); it ends where the next block starts,
 * reserved or free. At 10^7 objects that is 2 bits per 4 KiB of pool, where a struct per reserved block cost 112
 * bytes and its malloc header. The bitmaps are sparse: a leaf covers LEAF_GRANULES granules (128 MiB of pool) and
 * exists once a block has started in it.
 */
#define LEAF_SHIFT    15
#define LEAF_GRANULES (UINT64_C(1) << LEAF_SHIFT)
#define LEAF_WORDS    (LEAF_GRANULES / 64)

struct leaf {
	uint64_t nstarts; /* bits set in starts: a walk skips leaves without any */
	uint64_t starts[LEAF_WORDS];
	uint64_t held[LEAF_WORDS];
};

struct fblock {
	struct treap_node off_node;
	struct treap_node size_node;
	uint64_t offset;
	uint64_t size;
};

/* A held block: freed once batch seq is durable. */
struct hold {
	uint64_t offset, size, seq;
};

struct allocator {
	struct treap by_offset; /* free blocks */
	struct treap by_size;
	struct fblock *spare; /* recycled free-block structs, linked through off_node.left */
	struct leaf **leaves;
	uint64_t nleaves;
	struct hold *holds; /* in release order (seqs only grow): holds[hold_head .. nholds) */
	size_t hold_head, nholds, capholds;
	alloc_seq_fn seq_state;
	const void *seq_ctx;
	uint64_t capacity;
	uint64_t used; /* reserved bytes, held ones included */
	uint64_t held, lost;
	uint64_t nfree, nreserved; /* blocks */
};

static void settle(struct allocator *a);

#define OFF_BLOCK(n)  ((struct fblock *)((char *)(n)-offsetof(struct fblock, off_node)))
#define SIZE_BLOCK(n) ((struct fblock *)((char *)(n)-offsetof(struct fblock, size_node)))

static int cmp_offset(const struct treap_node *a, const struct treap_node *b)
{
	uint64_t x = OFF_BLOCK(a)->offset, y = OFF_BLOCK(b)->offset;

	return x < y ? -1 : x > y;
}

static int cmp_size(const struct treap_node *a, const struct treap_node *b)
{
	const struct fblock *x = SIZE_BLOCK(a), *y = SIZE_BLOCK(b);

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* ---- the bitmaps ---- */

enum bitmap { STARTS, HELD };

static uint64_t *words(struct leaf *l, enum bitmap which)
{
	return which == STARTS ? l->starts : l->held;
}

static bool bit_get(const struct allocator *a, enum bitmap which, uint64_t g)
{
	struct leaf *l = a->leaves[g >> LEAF_SHIFT];
	uint64_t i = g & (LEAF_GRANULES - 1);

	return l && (words(l, which)[i / 64] >> (i % 64)) & 1;
}

/* Makes sure the leaf of granule g exists: the only step of a change that can fail, so it comes first. */
static int leaf_need(struct allocator *a, uint64_t g)
{
	struct leaf **l = &a->leaves[g >> LEAF_SHIFT];

	if (!*l && !(*l = calloc(1, sizeof(**l))))
		return MMC_MALLOC_FAILED;
	return 0;
}

/* Sets or clears a bit whose leaf exists (leaf_need). */
static void bit_put(struct allocator *a, enum bitmap which, uint64_t g, bool on)
{
	struct leaf *l = a->leaves[g >> LEAF_SHIFT];
	uint64_t i = g & (LEAF_GRANULES - 1), bit = UINT64_C(1) << (i % 64), *w = &words(l, which)[i / 64];

	MMC_ASSERT(!(*w & bit) == on);
	*w ^= bit;
	if (which == STARTS)
		l->nstarts += on ? 1 : (uint64_t)-1;
}

/* The first granule in [g, limit) where a reserved block starts, or limit. */
static uint64_t next_start(const struct allocator *a, uint64_t g, uint64_t limit)
{
	while (g < limit) {
		const struct leaf *l = a->leaves[g >> LEAF_SHIFT];
		uint64_t i = g & (LEAF_GRANULES - 1), w;

		if (!l || !l->nstarts) {
			g = (g | (LEAF_GRANULES - 1)) + 1;
			continue;
		}
		w = l->starts[i / 64] & (~UINT64_C(0) << (i % 64));
		if (w) {
			g = (g & ~(uint64_t)63) + (uint64_t)__builtin_ctzll(w);
			return g < limit ? g : limit;
		}
		g = (g | 63) + 1;
	}
	return limit;
}

/* The last granule in [floor, g] where a reserved block starts, or UINT64_MAX. */
static uint64_t prev_start(const struct allocator *a, uint64_t g, uint64_t floor)
{
	while (g >= floor && g != UINT64_MAX) {
		const struct leaf *l = a->leaves[g >> LEAF_SHIFT];
		uint64_t i = g & (LEAF_GRANULES - 1), w;

		if (!l || !l->nstarts) {
			g = (g & ~(LEAF_GRANULES - 1)) - 1;
			continue;
		}
		w = l->starts[i / 64] & (~UINT64_C(0) >> (63 - i % 64));
		if (w) {
			g = (g & ~(uint64_t)63) + 63 - (uint64_t)__builtin_clzll(w);
			return g >= floor ? g : UINT64_MAX;
		}
		g = (g & ~(uint64_t)63) - 1;
	}
	return UINT64_MAX;
}

/* ---- free blocks ---- */

/* Makes sure a free-block struct is at hand, so that the change that needs one cannot fail halfway. */
static int spare_need(struct allocator *a)
{
	struct fblock *b;

	if (a->spare)
		return 0;
	if (!(b = malloc(sizeof(*b))))
		return MMC_MALLOC_FAILED;
	b->off_node.left = NULL;
	a->spare = b;
	return 0;
}

static void free_insert(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct fblock *b = a->spare;

	a->spare = (struct fblock *)b->off_node.left;
	b->offset = offset;
	b->size = size;
	treap_insert(&a->by_offset, &b->off_node);
	treap_insert(&a->by_size, &b->size_node);
	a->nfree++;
}

static void free_remove(struct allocator *a, struct fblock *b)
{
	treap_remove(&a->by_offset, &b->off_node);
	treap_remove(&a->by_size, &b->size_node);
	b->off_node.left = (struct treap_node *)a->spare;
	a->spare = b;
	a->nfree--;
}

/* Resizes free block b in place: its offset may move within the gap it owns, so by_offset keeps its order. */
static void free_reshape(struct allocator *a, struct fblock *b, uint64_t offset, uint64_t size)
{
	treap_remove(&a->by_size, &b->size_node);
	b->offset = offset;
	b->size = size;
	treap_insert(&a->by_size, &b->size_node);
}

/* The free block at offset or the last one before it, or NULL. */
static struct fblock *free_floor(const struct allocator *a, uint64_t offset)
{
	struct fblock key = {.offset = offset};
	struct treap_node *n = treap_floor(&a->by_offset, &key.off_node);

	return n ? OFF_BLOCK(n) : NULL;
}

/* The first free block at or after offset, or NULL. */
static struct fblock *free_ceil(const struct allocator *a, uint64_t offset)
{
	struct fblock key = {.offset = offset};
	struct treap_node *n = treap_lower_bound(&a->by_offset, &key.off_node);

	return n ? OFF_BLOCK(n) : NULL;
}

/* ---- reserved blocks ---- */

/* Where the reserved block that starts at offset ends: at the next block, reserved or free. */
static uint64_t block_end(const struct allocator *a, uint64_t offset)
{
	struct fblock *f = free_ceil(a, offset + ALLOC_ALIGN);
	uint64_t limit = f ? f->offset : a->capacity;

	return next_start(a, offset / ALLOC_ALIGN + 1, limit / ALLOC_ALIGN) * ALLOC_ALIGN;
}

/* True when a reserved block that is not on its way out starts at offset. */
static bool reserved_at(const struct allocator *a, uint64_t offset)
{
	uint64_t g = offset / ALLOC_ALIGN;

	return offset % ALLOC_ALIGN == 0 && offset < a->capacity && bit_get(a, STARTS, g) && !bit_get(a, HELD, g);
}

/* The reserved block [offset, offset + size) stops being one; free_merge then makes it free space. */
static void unreserve(struct allocator *a, uint64_t offset, uint64_t size)
{
	MMC_ASSERT(a->used >= size && a->nreserved > 0);
	bit_put(a, STARTS, offset / ALLOC_ALIGN, false);
	a->used -= size;
	a->nreserved--;
}

/* Makes [offset, offset + size), unreserved blocks, one free block with its free neighbours (spare_need first). */
static void free_merge(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct fblock *prev = offset ? free_floor(a, offset - 1) : NULL, *next = free_ceil(a, offset + size);

	if (prev && prev->offset + prev->size != offset)
		prev = NULL;
	if (next && next->offset != offset + size)
		next = NULL;
	if (prev && next) {
		uint64_t end = next->offset + next->size;

		free_remove(a, next);
		free_reshape(a, prev, prev->offset, end - prev->offset);
	} else if (prev) {
		free_reshape(a, prev, prev->offset, prev->size + size);
	} else if (next) {
		free_reshape(a, next, offset, next->size + size);
	} else {
		free_insert(a, offset, size);
	}
}

/* Frees the reserved block [offset, offset + size) (spare_need first). */
static void free_range(struct allocator *a, uint64_t offset, uint64_t size)
{
	unreserve(a, offset, size);
	free_merge(a, offset, size);
}

/* ---- the allocator ---- */

struct allocator *alloc_create(uint64_t capacity)
{
	struct allocator *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	treap_init(&a->by_offset, cmp_offset);
	treap_init(&a->by_size, cmp_size);
	a->capacity = capacity & ~(uint64_t)(ALLOC_ALIGN - 1);
	if (a->capacity == 0)
		return a;
	a->nleaves = (a->capacity / ALLOC_ALIGN + LEAF_GRANULES - 1) >> LEAF_SHIFT;
	if (!(a->leaves = calloc(a->nleaves, sizeof(*a->leaves))) || spare_need(a)) {
		alloc_destroy(a);
		return NULL;
	}
	free_insert(a, 0, a->capacity);
	return a;
}

static void free_tree(struct treap_node *n)
{
	while (n) {
		struct treap_node *right = n->right;

		free_tree(n->left);
		free(OFF_BLOCK(n));
		n = right;
	}
}

void alloc_destroy(struct allocator *a)
{
	if (!a)
		return;
	free_tree(a->by_offset.root);
	while (a->spare) {
		struct fblock *b = a->spare;

		a->spare = (struct fblock *)b->off_node.left;
		free(b);
	}
	for (uint64_t i = 0; a->leaves && i < a->nleaves; i++)
		free(a->leaves[i]);
	free(a->leaves);
	free(a->holds);
	free(a);
}

int alloc_reserve(struct allocator *a, uint64_t size, uint64_t *offset)
{
	struct fblock key, *b;
	struct treap_node *n;
	int rc;

	settle(a);
	if (size == 0 || size > UINT64_MAX - ALLOC_ALIGN)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	key.size = size;
	key.offset = 0;
	if (!(n = treap_lower_bound(&a->by_size, &key.size_node)))
		return MMC_NOT_ENOUGH_MEMORY;
	b = SIZE_BLOCK(n);
	*offset = b->offset;
	if ((rc = leaf_need(a, *offset / ALLOC_ALIGN)))
		return rc;
	bit_put(a, STARTS, *offset / ALLOC_ALIGN, true);
	if (b->size == size)
		free_remove(a, b);
	else
		free_reshape(a, b, b->offset + size, b->size - size);
	a->used += size;
	a->nreserved++;
	return 0;
}

static enum persist_seq_state batch_state(const struct allocator *a, uint64_t seq)
{
	if (seq == ALLOC_SEQ_NEVER)
		return PERSIST_SEQ_LOST;
	return seq && a->seq_state ? a->seq_state(a->seq_ctx, seq) : PERSIST_SEQ_DURABLE;
}

/* Frees the holds whose batch is on disk, oldest first (seqs only grow, so the first pending one ends the scan). A
 * hold whose batch failed stays reserved for good: the record it was to remove is still on disk, and only a restart
 * (which reloads that record) can tell who owns the space. */
static void settle(struct allocator *a)
{
	uint64_t run = 0, size = 0; /* [run, run + size): adjacent holds freed, one merge for them all */

	while (a->hold_head < a->nholds) {
		struct hold *h = &a->holds[a->hold_head];
		enum persist_seq_state st = batch_state(a, h->seq);

		if (st == PERSIST_SEQ_PENDING)
			break;
		if (size && h->offset != run + size && h->offset + h->size != run) {
			free_merge(a, run, size); /* its spare was made when the run last grew */
			size = 0;
		}
		if (spare_need(a))
			break; /* out of memory: the hold waits for the next try */
		MMC_ASSERT(bit_get(a, HELD, h->offset / ALLOC_ALIGN) && a->held >= h->size); /* counted in held */
		a->hold_head++;
		a->held -= h->size;
		if (st == PERSIST_SEQ_LOST) {
			a->lost += h->size; /* neither free nor releasable again */
			continue;
		}
		bit_put(a, HELD, h->offset / ALLOC_ALIGN, false);
		unreserve(a, h->offset, h->size);
		run = size && h->offset > run ? run : h->offset; /* the run grows up or down */
		size += h->size;
	}
	if (size)
		free_merge(a, run, size);
	if (a->hold_head == a->nholds)
		a->hold_head = a->nholds = 0;
}

uint64_t alloc_block_size(struct allocator *a, uint64_t offset)
{
	return reserved_at(a, offset) ? block_end(a, offset) - offset : 0;
}

int alloc_release(struct allocator *a, uint64_t offset)
{
	return alloc_release_after(a, offset, 0);
}

/* Queues [offset, offset + size) to be freed once batch seq is durable. */
static int hold(struct allocator *a, uint64_t offset, uint64_t size, uint64_t seq)
{
	struct hold *h;

	if (a->hold_head && a->hold_head >= a->nholds / 2) { /* the landed half goes */
		memmove(a->holds, a->holds + a->hold_head, (a->nholds - a->hold_head) * sizeof(*a->holds));
		a->nholds -= a->hold_head;
		a->hold_head = 0;
	}
	if (!(h = array_grow(a->holds, &a->capholds, a->nholds + 1, sizeof(*h), 64)))
		return MMC_MALLOC_FAILED;
	a->holds = h;
	a->holds[a->nholds++] = (struct hold){offset, size, seq};
	a->held += size;
	return 0;
}

int alloc_release_after(struct allocator *a, uint64_t offset, uint64_t seq)
{
	enum persist_seq_state st;
	uint64_t size;
	int rc;

	if (!reserved_at(a, offset))
		return MMC_INVALID_PARAM;
	size = block_end(a, offset) - offset;
	st = batch_state(a, seq);
	if (st == PERSIST_SEQ_DURABLE) {
		if ((rc = spare_need(a)))
			return rc;
		free_range(a, offset, size);
		return 0;
	}
	if (st == PERSIST_SEQ_LOST)
		a->lost += size;
	else if ((rc = hold(a, offset, size, seq)))
		return rc;
	bit_put(a, HELD, offset / ALLOC_ALIGN, true);
	return 0;
}

int alloc_split(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct fblock *f;
	uint64_t end, start, block_to;

	if (size == 0 || size > UINT64_MAX - ALLOC_ALIGN || offset % ALLOC_ALIGN || offset >= a->capacity)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	end = offset + size;
	/* the reserved block holding offset starts at the last start bit after the free block before it */
	f = free_floor(a, offset);
	if (f && f->offset + f->size > offset)
		return MMC_INVALID_PARAM; /* free space */
	start = prev_start(a, offset / ALLOC_ALIGN, f ? (f->offset + f->size) / ALLOC_ALIGN : 0);
	if (start == UINT64_MAX || bit_get(a, HELD, start))
		return MMC_INVALID_PARAM;
	start *= ALLOC_ALIGN;
	/* Not block_end(start): an extent carved from its front is one block of up to gigabytes, and a scan to its end
	 * for every object put into it was a fifth of the loop. No block starts in (start, offset] (prev_start), so
	 * the range fits when none starts in (offset, end) and no free block before end; the scan stops at end. */
	f = free_ceil(a, offset + ALLOC_ALIGN);
	block_to = f ? f->offset : a->capacity;
	if (end < offset || end > block_to ||
	    next_start(a, offset / ALLOC_ALIGN + 1, end / ALLOC_ALIGN) < end / ALLOC_ALIGN)
		return MMC_INVALID_PARAM;
	if (end < block_to && bit_get(a, STARTS, end / ALLOC_ALIGN))
		block_to = end; /* the next block starts where the range ends */
	/* both leaves first, so that a failure changes nothing */
	if (leaf_need(a, offset / ALLOC_ALIGN) || (end < block_to && leaf_need(a, end / ALLOC_ALIGN)))
		return MMC_MALLOC_FAILED;
	if (start < offset) {
		bit_put(a, STARTS, offset / ALLOC_ALIGN, true);
		a->nreserved++;
	}
	if (end < block_to) {
		bit_put(a, STARTS, end / ALLOC_ALIGN, true);
		a->nreserved++;
	}
	return 0;
}

void alloc_set_durability(struct allocator *a, alloc_seq_fn seq_state, const void *ctx)
{
	a->seq_state = seq_state;
	a->seq_ctx = ctx;
}

int alloc_mark(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct fblock *f;
	uint64_t end, head, tail;
	int rc;

	if (size == 0 || offset % ALLOC_ALIGN || offset >= a->capacity)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	end = offset + size;
	if (end > a->capacity || end < offset)
		return MMC_INVALID_PARAM;
	f = free_floor(a, offset);
	if (!f || f->offset + f->size < end)
		return MMC_INVALID_PARAM;
	if ((rc = leaf_need(a, offset / ALLOC_ALIGN)) || (rc = spare_need(a)))
		return rc;
	head = offset - f->offset;
	tail = f->offset + f->size - end;
	bit_put(a, STARTS, offset / ALLOC_ALIGN, true);
	if (!head && !tail)
		free_remove(a, f);
	else if (!head)
		free_reshape(a, f, end, tail);
	else
		free_reshape(a, f, f->offset, head);
	if (head && tail)
		free_insert(a, end, tail);
	a->used += size;
	a->nreserved++;
	return 0;
}

/* The leaves the ranges start in, and a free-block struct per gap between them (and after the last), so that
 * marking them cannot fail halfway. */
static int mark_prepare(struct allocator *a, const struct alloc_range *r, size_t n)
{
	size_t gaps = 1, have = 0;
	uint64_t at = r[0].offset;

	for (size_t i = 0; i < n; i++) {
		gaps += r[i].offset > at;
		at = r[i].offset + r[i].size;
		if (leaf_need(a, r[i].offset / ALLOC_ALIGN))
			return MMC_MALLOC_FAILED;
	}
	for (struct fblock *b = a->spare; b; b = (struct fblock *)b->off_node.left)
		have++;
	for (; have < gaps; have++) {
		struct fblock *b = malloc(sizeof(*b));

		if (!b)
			return MMC_MALLOC_FAILED;
		b->off_node.left = (struct treap_node *)a->spare;
		a->spare = b;
	}
	return 0;
}

int alloc_mark_tail(struct allocator *a, const struct alloc_range *r, size_t n)
{
	struct fblock *tail;
	uint64_t at;
	int rc;

	if (!n)
		return 0;
	tail = free_floor(a, r[0].offset);
	if (!tail || tail->offset + tail->size != a->capacity || r[n - 1].offset + r[n - 1].size > a->capacity)
		return MMC_INVALID_PARAM;
	if ((rc = mark_prepare(a, r, n)))
		return rc; /* the structs made stay spare */
	at = tail->offset;
	if (r[0].offset > at)
		free_reshape(a, tail, at, r[0].offset - at);
	else
		free_remove(a, tail);
	for (size_t i = 0; i < n; i++) {
		MMC_ASSERT(r[i].offset >= at && r[i].offset % ALLOC_ALIGN == 0 && r[i].size % ALLOC_ALIGN == 0 &&
		           r[i].size && r[i].offset + r[i].size <= a->capacity);
		if (i && r[i].offset > at)
			free_insert(a, at, r[i].offset - at);
		bit_put(a, STARTS, r[i].offset / ALLOC_ALIGN, true);
		a->used += r[i].size;
		at = r[i].offset + r[i].size;
	}
	if (at < a->capacity)
		free_insert(a, at, a->capacity - at);
	a->nreserved += n;
	return 0;
}

uint64_t alloc_capacity(const struct allocator *a)
{
	return a->capacity;
}

uint64_t alloc_used(struct allocator *a)
{
	settle(a);
	return a->used - a->held;
}

uint64_t alloc_held(struct allocator *a)
{
	settle(a);
	return a->held;
}

uint64_t alloc_lost(const struct allocator *a)
{
	return a->lost;
}

uint64_t alloc_largest_free(struct allocator *a)
{
	struct treap_node *n;

	settle(a);
	n = a->by_size.root;
	while (n && n->right)
		n = n->right;
	return n ? SIZE_BLOCK(n)->size : 0;
}

uint64_t alloc_block_count(const struct allocator *a)
{
	return a->nfree + a->nreserved;
}
