/*
 * Space allocator for one (local service, media) pool. Offsets and sizes are multiples of 4 KiB; allocation is
 * best fit, O(log n) in the number of blocks; release coalesces with both free neighbours. Owned by the loop
 * thread (no locking).
 */
#ifndef MMC_ALLOCATOR_H
#define MMC_ALLOCATOR_H

#include <stdint.h>

#include "persist.h"

#define ALLOC_ALIGN 4096u

struct allocator;

/* A pool of capacity bytes (rounded down to 4 KiB). NULL when memory is exhausted. */
struct allocator *alloc_create(uint64_t capacity);
void alloc_destroy(struct allocator *a);

/* Reserves size bytes (rounded up to 4 KiB). Returns 0 and *offset, MMC_NOT_ENOUGH_MEMORY, or MMC_INVALID_PARAM
 * for size 0. */
int alloc_reserve(struct allocator *a, uint64_t size, uint64_t *offset);

/* Size of the reserved block that starts at offset; 0 when none does. */
uint64_t alloc_block_size(struct allocator *a, uint64_t offset);

/* Frees the block that starts at offset now: for space no record on disk has ever pointed at (a reservation that
 * was never committed, a transient copy). MMC_INVALID_PARAM when no reserved block starts there (double free). */
int alloc_release(struct allocator *a, uint64_t offset);

/*
 * The space-reuse invariant lives here: space is handed out again only after every durable record that points at
 * it is gone from disk. seq is the persistence batch that holds the change which stops pointing at the block (the
 * object's delete, or its record moved elsewhere); the block stays reserved ("held") until that batch is durable,
 * so a crash before the commit can never reload a record over someone else's bytes. seq 0 frees at once. A hold
 * whose batch failed is never freed (only a restart, which reloads the record it kept, can), nor is one released with
 * ALLOC_SEQ_NEVER (the change could not even be queued). MMC_INVALID_PARAM as for alloc_release.
 */
#define ALLOC_SEQ_NEVER ((1ull << 48) - 1) /* fits a removed object's unlink_seq (48 bits); no batch gets there */
int alloc_release_after(struct allocator *a, uint64_t offset, uint64_t seq);

/* Cuts [offset, offset + size) (size rounded up to 4 KiB) out of the reserved block that holds it, as a reserved
 * block of its own; what that block held before and after the range stay reserved blocks. For allocation extents:
 * an object written into a store's extent becomes a block its delete releases alone. MMC_INVALID_PARAM when no
 * reserved, unheld block holds the whole range; MMC_MALLOC_FAILED (nothing changed). */
int alloc_split(struct allocator *a, uint64_t offset, uint64_t size);

/* How the allocator learns where a batch stands (persist_seq_state, as a callback so tests can drive it). Without
 * one, every batch counts as durable. */
typedef enum persist_seq_state (*alloc_seq_fn)(const void *ctx, uint64_t seq);
void alloc_set_durability(struct allocator *a, alloc_seq_fn seq_state, const void *ctx);

/* Marks [offset, offset + size) reserved, for rebuilding from persisted objects. MMC_INVALID_PARAM when the
 * range is misaligned, out of the pool, or overlaps a reserved block. */
int alloc_mark(struct allocator *a, uint64_t offset, uint64_t size);

/* A range for alloc_mark_tail. */
struct alloc_range {
	uint64_t offset, size;
};

/*
 * alloc_mark of n ranges at once, for a load: one pass instead of a tree update per range. The ranges must be sorted
 * by offset, aligned (sizes rounded up to 4 KiB by the caller), apart, and all inside the pool's free tail: the free
 * block that ends the pool (in a new allocator, the whole pool; after a call, what follows its last range). Returns
 * 0, MMC_INVALID_PARAM (r[0] is not in the free tail: use alloc_mark) or MMC_MALLOC_FAILED; nothing changed on
 * failure.
 */
int alloc_mark_tail(struct allocator *a, const struct alloc_range *r, size_t n);

/* The queries below first free the holds whose batch has become durable. */
uint64_t alloc_capacity(const struct allocator *a);
/* Reserved bytes, not counting held ones (they are on their way back). */
uint64_t alloc_used(struct allocator *a);
/* Bytes held until their batch is durable, and bytes held for good after a failed commit. */
uint64_t alloc_held(struct allocator *a);
uint64_t alloc_lost(const struct allocator *a);
/* Largest single reservation that would succeed now. */
uint64_t alloc_largest_free(struct allocator *a);
/* Number of blocks (free and reserved): a fragmentation measure. */
uint64_t alloc_block_count(const struct allocator *a);

#endif
