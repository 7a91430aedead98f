/*
 * A bump allocator reset after every request: protobuf-c decodes a request into it and replies are built in it,
 * so a request costs no malloc/free pairs once the arena has grown to the working size. Loop thread only.
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
