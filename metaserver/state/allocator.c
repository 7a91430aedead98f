#include "allocator.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "treap.h"

/*
 * Blocks tile the pool in address order (a doubly linked list gives O(1) neighbours for coalescing). Every block
 * is in by_offset; free blocks are also in by_size, ordered by (size, offset) so the lower bound of the request
 * is the best fit.
 */
struct block {
	struct treap_node off_node;
	struct treap_node size_node;
	struct block *prev, *next;
	struct block *hold_next; /* held: the next hold in release order */
	uint64_t offset;
	uint64_t size;
	uint64_t hold_seq; /* held: the batch whose commit makes the block free */
	bool free;
	bool held;
};

struct allocator {
	struct treap by_offset;
	struct treap by_size;
	struct block *spare; /* recycled block structs, linked through next */
	struct block *hold_head, *hold_tail;
	alloc_seq_fn seq_state;
	const void *seq_ctx;
	uint64_t capacity;
	uint64_t used; /* reserved bytes, held ones included */
	uint64_t held, lost;
	uint64_t blocks;
};

static void settle(struct allocator *a);

#define OFF_BLOCK(n)  ((struct block *)((char *)(n)-offsetof(struct block, off_node)))
#define SIZE_BLOCK(n) ((struct block *)((char *)(n)-offsetof(struct block, size_node)))

static int cmp_offset(const struct treap_node *a, const struct treap_node *b)
{
	uint64_t x = OFF_BLOCK(a)->offset, y = OFF_BLOCK(b)->offset;

	return x < y ? -1 : x > y;
}

static int cmp_size(const struct treap_node *a, const struct treap_node *b)
{
	const struct block *x = SIZE_BLOCK(a), *y = SIZE_BLOCK(b);

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static struct block *block_new(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct block *b = a->spare;

	if (b)
		a->spare = b->next;
	else if (!(b = malloc(sizeof(*b))))
		return NULL;
	b->offset = offset;
	b->size = size;
	b->free = true;
	b->held = false;
	b->prev = b->next = b->hold_next = NULL;
	a->blocks++;
	return b;
}

static void block_recycle(struct allocator *a, struct block *b)
{
	b->next = a->spare;
	a->spare = b;
	a->blocks--;
}

struct allocator *alloc_create(uint64_t capacity)
{
	struct allocator *a = calloc(1, sizeof(*a));
	struct block *b;

	if (!a)
		return NULL;
	treap_init(&a->by_offset, cmp_offset);
	treap_init(&a->by_size, cmp_size);
	a->capacity = capacity & ~(uint64_t)(ALLOC_ALIGN - 1);
	if (a->capacity == 0)
		return a;
	b = block_new(a, 0, a->capacity);
	if (!b) {
		free(a);
		return NULL;
	}
	treap_insert(&a->by_offset, &b->off_node);
	treap_insert(&a->by_size, &b->size_node);
	return a;
}

void alloc_destroy(struct allocator *a)
{
	struct block *b, *next;
	struct treap_node *first;

	if (!a)
		return;
	/* walk the address list from the lowest block */
	{
		struct block key = {.offset = 0};

		first = treap_lower_bound(&a->by_offset, &key.off_node);
	}
	for (b = first ? OFF_BLOCK(first) : NULL; b; b = next) {
		next = b->next;
		free(b);
	}
	for (b = a->spare; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

/* Cuts size bytes off the front of free block b (already out of by_size); the rest stays free. */
static int split_front(struct allocator *a, struct block *b, uint64_t size)
{
	struct block *rest;

	if (b->size == size)
		return 0;
	rest = block_new(a, b->offset + size, b->size - size);
	if (!rest)
		return MMC_MALLOC_FAILED;
	b->size = size;
	rest->prev = b;
	rest->next = b->next;
	if (b->next)
		b->next->prev = rest;
	b->next = rest;
	treap_insert(&a->by_offset, &rest->off_node);
	treap_insert(&a->by_size, &rest->size_node);
	return 0;
}

/* Takes size bytes off the front of free block b (already out of by_size) for a reservation. */
static int take_front(struct allocator *a, struct block *b, uint64_t size)
{
	int rc = split_front(a, b, size);

	if (rc) {
		treap_insert(&a->by_size, &b->size_node);
		return rc;
	}
	b->free = false;
	a->used += size;
	return 0;
}

int alloc_reserve(struct allocator *a, uint64_t size, uint64_t *offset)
{
	struct block key, *b;
	struct treap_node *n;
	int rc;

	settle(a);
	if (size == 0 || size > UINT64_MAX - ALLOC_ALIGN)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	key.size = size;
	key.offset = 0;
	n = treap_lower_bound(&a->by_size, &key.size_node);
	if (!n)
		return MMC_NOT_ENOUGH_MEMORY;
	b = SIZE_BLOCK(n);
	treap_remove(&a->by_size, &b->size_node);
	if ((rc = take_front(a, b, size)))
		return rc;
	*offset = b->offset;
	return 0;
}

/* Merges free block b into its free predecessor p (both out of by_size); b is recycled. */
static void merge_into(struct allocator *a, struct block *p, struct block *b)
{
	p->size += b->size;
	p->next = b->next;
	if (b->next)
		b->next->prev = p;
	treap_remove(&a->by_offset, &b->off_node);
	block_recycle(a, b);
}

/* The reserved block that starts at offset and is not already on its way out, or NULL. */
static struct block *reserved_at(struct allocator *a, uint64_t offset)
{
	struct block key = {.offset = offset}, *b;
	struct treap_node *n = treap_lower_bound(&a->by_offset, &key.off_node);

	if (!n)
		return NULL;
	b = OFF_BLOCK(n);
	return b->offset == offset && !b->free && !b->held ? b : NULL;
}

static void free_block(struct allocator *a, struct block *b)
{
	MMC_ASSERT(!b->free && a->used >= b->size);
	b->free = true;
	a->used -= b->size;
	if (b->next && b->next->free) {
		treap_remove(&a->by_size, &b->next->size_node);
		merge_into(a, b, b->next);
	}
	if (b->prev && b->prev->free) {
		struct block *p = b->prev;

		treap_remove(&a->by_size, &p->size_node);
		merge_into(a, p, b);
		b = p;
	}
	treap_insert(&a->by_size, &b->size_node);
}

static enum persist_seq_state batch_state(const struct allocator *a, uint64_t seq)
{
	return seq && a->seq_state ? a->seq_state(a->seq_ctx, seq) : PERSIST_SEQ_DURABLE;
}

/* Frees the holds whose batch is on disk, oldest first (seqs only grow, so the first pending one ends the scan). A
 * hold whose batch failed stays reserved for good: the record it was to remove is still on disk, and only a restart
 * (which reloads that record) can tell who owns the space. */
static void settle(struct allocator *a)
{
	struct block *b;

	while ((b = a->hold_head)) {
		enum persist_seq_state st = batch_state(a, b->hold_seq);

		if (st == PERSIST_SEQ_PENDING)
			return;
		MMC_ASSERT(b->held && a->held >= b->size); /* every hold on the list is counted in held */
		a->hold_head = b->hold_next;
		if (!a->hold_head)
			a->hold_tail = NULL;
		b->held = false;
		b->hold_next = NULL;
		a->held -= b->size;
		if (st == PERSIST_SEQ_LOST) {
			a->lost += b->size;
			b->held = true; /* neither free nor releasable again */
			continue;
		}
		free_block(a, b);
	}
}

uint64_t alloc_block_size(struct allocator *a, uint64_t offset)
{
	struct block *b = reserved_at(a, offset);

	return b ? b->size : 0;
}

int alloc_release(struct allocator *a, uint64_t offset)
{
	return alloc_release_after(a, offset, 0);
}

int alloc_release_after(struct allocator *a, uint64_t offset, uint64_t seq)
{
	struct block *b = reserved_at(a, offset);
	enum persist_seq_state st;

	if (!b)
		return MMC_INVALID_PARAM;
	st = batch_state(a, seq);
	if (st == PERSIST_SEQ_DURABLE) {
		free_block(a, b);
		return 0;
	}
	b->held = true;
	if (st == PERSIST_SEQ_LOST) {
		a->lost += b->size;
		return 0;
	}
	b->hold_seq = seq;
	a->held += b->size;
	if (a->hold_tail)
		a->hold_tail->hold_next = b;
	else
		a->hold_head = b;
	a->hold_tail = b;
	return 0;
}

/* Links reserved block r, which starts inside reserved block b, after b and shortens b to end where r starts. */
static void link_after(struct allocator *a, struct block *b, struct block *r)
{
	r->size = b->offset + b->size - r->offset;
	r->free = false;
	b->size = r->offset - b->offset;
	r->prev = b;
	r->next = b->next;
	if (b->next)
		b->next->prev = r;
	b->next = r;
	treap_insert(&a->by_offset, &r->off_node);
}

int alloc_split(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct block key = {.offset = offset}, *b, *mid = NULL, *tail = NULL;
	struct treap_node *n = treap_floor(&a->by_offset, &key.off_node);
	uint64_t end;

	if (size == 0 || size > UINT64_MAX - ALLOC_ALIGN || offset % ALLOC_ALIGN || !n)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	end = offset + size;
	b = OFF_BLOCK(n);
	if (b->free || b->held || end < offset || end > b->offset + b->size)
		return MMC_INVALID_PARAM;
	/* both new blocks first, so that a failure changes nothing */
	if ((b->offset < offset && !(mid = block_new(a, offset, 0))) ||
	    (end < b->offset + b->size && !(tail = block_new(a, end, 0)))) {
		if (mid)
			block_recycle(a, mid);
		return MMC_MALLOC_FAILED;
	}
	if (mid) {
		link_after(a, b, mid);
		b = mid;
	}
	if (tail)
		link_after(a, b, tail);
	return 0;
}

void alloc_set_durability(struct allocator *a, alloc_seq_fn seq_state, const void *ctx)
{
	a->seq_state = seq_state;
	a->seq_ctx = ctx;
}

int alloc_mark(struct allocator *a, uint64_t offset, uint64_t size)
{
	struct block key = {.offset = offset}, *b;
	struct treap_node *n;
	uint64_t end;
	int rc;

	if (size == 0 || offset % ALLOC_ALIGN || offset >= a->capacity)
		return MMC_INVALID_PARAM;
	size = (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
	end = offset + size;
	if (end > a->capacity || end < offset)
		return MMC_INVALID_PARAM;
	n = treap_floor(&a->by_offset, &key.off_node);
	if (!n)
		return MMC_INVALID_PARAM;
	b = OFF_BLOCK(n);
	if (!b->free || b->offset + b->size < end)
		return MMC_INVALID_PARAM;
	treap_remove(&a->by_size, &b->size_node);
	if (b->offset < offset) {
		/* keep the head free, continue with the tail */
		rc = split_front(a, b, offset - b->offset);
		treap_insert(&a->by_size, &b->size_node);
		if (rc)
			return rc;
		b = b->next;
		treap_remove(&a->by_size, &b->size_node);
	}
	return take_front(a, b, size);
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
	return a->blocks;
}
