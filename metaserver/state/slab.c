#include "slab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "array.h"
#include "mmc_assert.h"
#include "prefault.h"

#define SLOT_MASK  ((1u << SLAB_SLOT_BITS) - 1)
#define CHUNKS_MAX (UINT32_MAX >> SLAB_SLOT_BITS) /* handles of 32 bits */
#define CLASSES    (SLAB_MAX_RECORD / 8 + 1)

/* At the start of every chunk. */
struct chunk_head {
	uint32_t index;  /* in slab_chunks */
	uint32_t size;   /* record size */
	uint32_t carved; /* records handed out at least once, from slot 0 on */
	uint32_t nslots;
};

struct size_class {
	uint32_t free_head; /* freed records, linked through their first 4 bytes */
	uint32_t carving;   /* the chunk whose untouched slots come next, 0: none */
};

uintptr_t *slab_chunks;
static size_t nchunks, capchunks; /* index 0 is never a chunk: handle 0 names nothing */
static struct size_class classes[CLASSES];
static bool loading; /* slab_populate: a chunk the loop makes itself comes faulted in */

static struct chunk_head *head_of(uint32_t chunk)
{
	return (struct chunk_head *)(slab_chunks[chunk] & ~(uintptr_t)(SLAB_CHUNK - 1));
}

/*
 * The pages of a mapping. A lookup at 10^7 objects is a TLB miss or two in 4 KiB pages: with the records in huge
 * ones, exist and key info took 0.40-0.56 us of the loop per key against 0.52-0.75 (docs/performance.md). But a huge
 * page is zeroed whole at its first touch, up to 10 ms on a VM, more where the kernel compacts memory for it, so:
 *  - PAGES_SMALL: what the loop writes first (a chunk it must make itself, a table it resizes), whatever the kernel's
 *    mode (MADV_NOHUGEPAGE: with "always" an aligned 2 MiB would be one huge page anyway);
 *  - PAGES_HUGE: a chunk the prefault worker makes ahead while the server serves (MADV_HUGEPAGE, then faulted in);
 *  - PAGES_LATER: a chunk the worker makes during a load, faulted in as small pages, then MADV_HUGEPAGE so that the
 *    kernel's khugepaged merges them later. Faulting a load's 1.7 GB in as huge pages cost the worker 2-4 s more CPU
 *    on the 2-vCPU VM, and a restart from Redis, whose cores are all busy, 1.5-4 s more.
 */
enum pages { PAGES_SMALL, PAGES_HUGE, PAGES_LATER };

/* size bytes (a multiple of SLAB_CHUNK), SLAB_CHUNK-aligned (the kernel gives page alignment: map more, cut the
 * rest); faulted: their pages faulted in, in one call instead of a fault per 4 KiB, and only once cut (populating the
 * whole mapping zeroed twice the memory kept). */
static void *map_aligned(size_t size, bool faulted, enum pages pages)
{
	char *p = mmap(NULL, size + SLAB_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;
	size_t lead;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + SLAB_CHUNK - 1) & ~(uintptr_t)(SLAB_CHUNK - 1));
	lead = (size_t)(a - p);
	if (lead)
		munmap(p, lead);
	munmap(a + size, SLAB_CHUNK - lead);
	/* a kernel without transparent huge pages: small pages whatever is asked */
	madvise(a, size, pages == PAGES_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	if (faulted && madvise(a, size, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) /* before Linux 5.14 */
		for (size_t i = 0; i < size; i += 4096)
			((volatile char *)a)[i] = 0; /* nobody else has the chunk yet */
	if (pages == PAGES_LATER)
		madvise(a, size, MADV_HUGEPAGE);
	return a;
}

void *slab_map(size_t size)
{
	if (size < SLAB_CHUNK) /* a small table: a huge page would be mostly empty */
		return calloc(1, size);
	return map_aligned((size + SLAB_CHUNK - 1) & ~(SLAB_CHUNK - 1), false, PAGES_SMALL); /* a resize writes first */
}

void slab_unmap(void *p, size_t size)
{
	if (size < SLAB_CHUNK)
		free(p);
	else if (p)
		munmap(p, (size + SLAB_CHUNK - 1) & ~(SLAB_CHUNK - 1));
}

static uint32_t chunk_new(uint32_t size)
{
	struct chunk_head *h;
	uintptr_t *t;

	if (!nchunks)
		nchunks = 1;
	if (nchunks > CHUNKS_MAX || !(t = array_grow(slab_chunks, &capchunks, nchunks + 1, sizeof(*t), 64)))
		return 0;
	slab_chunks = t;
	if (!(h = prefault_take()) && !(h = map_aligned(SLAB_CHUNK, loading, PAGES_SMALL)))
		return 0;
	h->index = (uint32_t)nchunks;
	h->size = size;
	h->carved = 0;
	h->nslots = (uint32_t)((SLAB_CHUNK - SLAB_HEADER) / size);
	slab_chunks[nchunks] = (uintptr_t)h | size;
	return (uint32_t)nchunks++;
}

uint32_t slab_alloc(size_t size, void **rec)
{
	size_t rsize = size < SLAB_MIN_RECORD ? SLAB_MIN_RECORD : (size + 7) & ~(size_t)7;
	struct size_class *c;
	struct chunk_head *h;
	uint32_t handle;

	if (size == 0 || size > SLAB_MAX_RECORD)
		return 0;
	c = &classes[rsize / 8];
	if (c->free_head) {
		handle = c->free_head;
		*rec = slab_ptr(handle);
		memcpy(&c->free_head, *rec, sizeof(c->free_head));
	} else {
		if (!c->carving || head_of(c->carving)->carved == head_of(c->carving)->nslots)
			c->carving = chunk_new((uint32_t)rsize);
		if (!c->carving)
			return 0;
		h = head_of(c->carving);
		handle = c->carving << SLAB_SLOT_BITS | h->carved++;
		*rec = slab_ptr(handle);
	}
	memset(*rec, 0, rsize);
	return handle;
}

void slab_free(uint32_t h)
{
	struct size_class *c = &classes[slab_size(h) / 8];

	MMC_ASSERT(h && (h >> SLAB_SLOT_BITS) < nchunks && (h & SLOT_MASK) < head_of(h >> SLAB_SLOT_BITS)->carved);
	memcpy(slab_ptr(h), &c->free_head, sizeof(c->free_head));
	c->free_head = h;
}

size_t slab_size(uint32_t h)
{
	return slab_chunks[h >> SLAB_SLOT_BITS] & (SLAB_CHUNK - 1);
}

void *slab_next(uint32_t *h)
{
	uint32_t chunk = *h ? *h >> SLAB_SLOT_BITS : 1, slot = *h ? (*h & SLOT_MASK) + 1 : 0;

	for (; chunk < nchunks; chunk++, slot = 0) {
		if (slot < head_of(chunk)->carved) {
			*h = chunk << SLAB_SLOT_BITS | slot;
			return slab_ptr(*h);
		}
	}
	return NULL;
}

/* The prefault worker's blocks: chunks faulted in, in a huge page where the kernel has one, or during a load in small
 * pages to be merged later. Thread-safe (no state of the slab). */
static void *chunk_make(void)
{
	return map_aligned(SLAB_CHUNK, true, PAGES_HUGE);
}

static void *chunk_make_load(void)
{
	return map_aligned(SLAB_CHUNK, true, PAGES_LATER);
}

static void chunk_drop(void *chunk)
{
	munmap(chunk, SLAB_CHUNK);
}

/* A chunk takes ~70 ms of puts to fill at 200 k puts/s (14 k records of 144 bytes); the worker makes one in 1-10 ms. */
#define STEADY_AHEAD 2

void slab_start(void)
{
	prefault_start(SLAB_CHUNK, SIZE_MAX, STEADY_AHEAD, chunk_make, chunk_drop);
}

size_t slab_populate(size_t bytes)
{
	size_t faulted;

	if (!bytes && !loading) /* slab_start's worker keeps its chunks */
		return 0;
	faulted = prefault_stop();
	loading = bytes != 0;
	if (!bytes) {
		slab_start();
		return faulted;
	}
	prefault_start(SLAB_CHUNK, bytes / SLAB_CHUNK + 1, PREFAULT_AHEAD, chunk_make_load, chunk_drop);
	return 0;
}

void slab_fini(void)
{
	prefault_stop();
	loading = false;
	for (size_t i = 1; i < nchunks; i++)
		munmap(head_of((uint32_t)i), SLAB_CHUNK);
	free(slab_chunks);
	slab_chunks = NULL;
	nchunks = capchunks = 0;
	memset(classes, 0, sizeof(classes));
}
