#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN ((size_t)64 << 10)

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

static void *pbc_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

static void pbc_free(void *data, void *ptr)
{
	/* freed in bulk by arena_reset */
}

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->peak = 0;
	a->pbc.alloc = pbc_alloc;
	a->pbc.free = pbc_free;
	a->pbc.allocator_data = a;
}

void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		size_t want = size > CHUNK_MIN ? size : CHUNK_MIN;

		if (c && want < c->size * 2)
			want = c->size * 2;
		c = malloc(sizeof(*c) + want);
		if (!c)
			return NULL;
		c->size = want;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += size;
	return p;
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *c = a->head, *next;

	if (!c)
		return;
	/* keep the newest (largest) chunk, drop the rest */
	for (next = c->next; next;) {
		struct arena_chunk *n = next->next;

		free(next);
		next = n;
	}
	c->next = NULL;
	c->used = 0;
	/* a one-off huge request should not pin its memory forever */
	if (c->size > ((size_t)64 << 20)) {
		free(c);
		a->head = NULL;
	}
}

void arena_fini(struct arena *a)
{
	arena_reset(a);
	free(a->head);
	a->head = NULL;
}
