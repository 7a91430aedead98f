/*
 * arena: a bump allocator reset after every request. protobuf-c decodes a request into it (through the pbc member)
 * and replies are built in it, so a request costs no malloc/free pairs once the arena has grown to the working size.
 *
 * Allocations are 16-byte aligned and live until the next arena_reset() or arena_fini(); there is no free of one
 * allocation. The arena owns its chunks; a caller must not keep a pointer into it past a reset. arena_reset() keeps
 * the newest chunk (the largest) unless it is over 64 MiB, so one huge request does not pin its memory.
 *
 * Errors: arena_alloc() returns NULL when malloc fails; nothing else fails.
 *
 * Thread-safety: none; one arena per connection or per thread.
 *
 *   arena_init(a)         an empty arena; allocates nothing
 *   arena_alloc(a, size)  size bytes, 16-byte aligned, or NULL
 *   arena_reset(a)        frees every allocation at once
 *   arena_fini(a)         frees the chunks; a may be initialised again
 */
#ifndef MMC_ARENA_H
#define MMC_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head; /* chunk being filled; older chunks follow */
	size_t peak;              /* bytes in use at the fullest point since the last trim */
	ProtobufCAllocator pbc;   /* hands protobuf-c the arena */
};

void arena_init(struct arena *a);
void *arena_alloc(struct arena *a, size_t size); /* 16-byte aligned; NULL when out of memory */
/* Frees everything allocated since the last reset; keeps one chunk big enough for the usual request. */
void arena_reset(struct arena *a);
void arena_fini(struct arena *a);

#endif
