/*
 * Space allocator for one (local service, media) pool. Offsets and sizes are multiples of 4 KiB; allocation is
 * best fit, O(log n) in the number of blocks; release coalesces with both free neighbours. Owned by the loop
 * thread (no locking).
 */
#ifndef MMC_ALLOCATOR_H
#define MMC_ALLOCATOR_H

#include <stdint.h>

#define ALLOC_ALIGN 4096u

struct allocator;

/* A pool of capacity bytes (rounded down to 4 KiB). NULL when memory is exhausted. */
struct allocator *alloc_create(uint64_t capacity);
void alloc_destroy(struct allocator *a);

/* Reserves size bytes (rounded up to 4 KiB). Returns 0 and *offset, MMC_NOT_ENOUGH_MEMORY, or MMC_INVALID_PARAM
 * for size 0. */
int alloc_reserve(struct allocator *a, uint64_t size, uint64_t *offset);

/* Frees the block that starts at offset. MMC_INVALID_PARAM when no reserved block starts there (double free). */
int alloc_release(struct allocator *a, uint64_t offset);

/* Marks [offset, offset + size) reserved, for rebuilding from persisted objects. MMC_INVALID_PARAM when the
 * range is misaligned, out of the pool, or overlaps a reserved block. */
int alloc_mark(struct allocator *a, uint64_t offset, uint64_t size);

uint64_t alloc_capacity(const struct allocator *a);
uint64_t alloc_used(const struct allocator *a);
/* Largest single reservation that would succeed now. */
uint64_t alloc_largest_free(const struct allocator *a);
/* Number of blocks (free and reserved): a fragmentation measure. */
uint64_t alloc_block_count(const struct allocator *a);

#endif
