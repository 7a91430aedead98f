/*
 * Fixed-size records in size classes (multiples of 8 bytes), each named by a 32-bit handle: the storage of the
 * object table (objects.c). A record costs its size and nothing more: no malloc header, and the links between
 * records are handles of 4 bytes where pointers took 8 (at 10^7 objects, 40 bytes an object). Records never move,
 * so a pointer to one stays valid until slab_free. Handle 0 names no record.
 *
 * Records live in chunks of SLAB_CHUNK bytes (one huge page), aligned to their size, mapped as the table grows and
 * kept for reuse: freed records go to their class's free list and memory goes back to the system only at slab_fini.
 * One table per process (the server has one object table); loop thread only.
 */
#ifndef MMC_SLAB_H
#define MMC_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLAB_CHUNK_SHIFT 21 /* 2 MiB chunks */
#define SLAB_CHUNK       ((size_t)1 << SLAB_CHUNK_SHIFT)
#define SLAB_HEADER      64 /* a chunk's first cache line: its header */
#define SLAB_SLOT_BITS   15 /* (SLAB_CHUNK - SLAB_HEADER) / SLAB_MIN_RECORD slots fit in these bits */
#define SLAB_MIN_RECORD  64
#define SLAB_MAX_RECORD  4096

/* Per chunk: its address, with its record size in the low bits (the address is SLAB_CHUNK-aligned). */
extern uintptr_t *slab_chunks;

/* The record named by h (not 0). */
static inline void *slab_ptr(uint32_t h)
{
	uintptr_t e = slab_chunks[h >> SLAB_SLOT_BITS];

	return (char *)(e & ~(uintptr_t)(SLAB_CHUNK - 1)) + SLAB_HEADER +
	       (size_t)(h & ((1u << SLAB_SLOT_BITS) - 1)) * (e & (SLAB_CHUNK - 1));
}

/* A zeroed record of at least size bytes (1..SLAB_MAX_RECORD): its handle, with *rec its address; 0 when out of
 * memory or handles. */
uint32_t slab_alloc(size_t size, void **rec);
/* Gives record h back. Its first 4 bytes then link its class's free list; the rest is left as it was, so that a
 * walk (slab_next) can tell a freed record by a mark the caller left in it. */
void slab_free(uint32_t h);
/* The size of record h's class. */
size_t slab_size(uint32_t h);
/* Walks every record ever handed out, freed ones included, in address order within a chunk: *h 0 starts; returns
 * the next record's address (its handle in *h), or NULL at the end. Records allocated during a walk may be missed. */
void *slab_next(uint32_t *h);

/* size bytes of zeroes for a large table (the key index): mapped apart from the heap, so that a resize gives the old
 * one back to the system at once, in small pages (the loop writes it first). NULL when out of memory;
 * slab_unmap(p, size) gives them back. */
void *slab_map(size_t size);
void slab_unmap(void *p, size_t size);
/*
 * From now on new chunks are made ahead on the prefault worker (prefault.h), a few at a time: mapped in a huge page
 * where the kernel has one (transparent huge pages in "madvise" or "always" mode) and faulted in there, so a
 * lookup's records cost fewer TLB misses and the loop never waits for a page to be zeroed. A chunk the worker has
 * not made in time the loop maps itself, in small pages faulted in as its records are handed out. Idempotent;
 * without a worker (no thread could start) every chunk is the loop's own. The slab owns the process's one prefault
 * worker from here to slab_fini.
 */
void slab_start(void);
/*
 * A load is about to carve about bytes of records: until slab_populate(0), the worker keeps more chunks ahead, in
 * small pages (faster to fault in) that the kernel's khugepaged may merge into huge ones later, and a chunk the loop
 * makes itself comes faulted in by one call instead of a page fault per 4 KiB (1.5 GB in 0.44 s against 0.61 s).
 * slab_populate(0) returns to slab_start's pace and returns the bytes the load's worker faulted in (0, and nothing
 * done, outside a load).
 */
size_t slab_populate(size_t bytes);
/* Stops the worker and unmaps every chunk: every handle and record pointer becomes invalid. */
void slab_fini(void);

#endif
