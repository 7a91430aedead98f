/*
 * due_heap: a binary min-heap of things due at a time, for a timer that serves the earliest first (the KVCM
 * deleter's jobs and write sessions' expiries). Intrusive: an element embeds a struct due_node, which knows its place,
 * so removing one from the middle (a session finished before it expired) is O(log n) too.
 *
 * The heap owns its array of pointers; the caller owns the elements, which must stay in place while in the heap.
 * Equal times come out in no particular order. A zeroed struct due_heap is an empty heap.
 *
 * Errors: due_heap_push() returns 0 or MMC_MALLOC_FAILED (the heap unchanged); nothing else fails.
 *
 * Thread-safety: none; the heap's owner serialises.
 *
 *   due_heap_top(h)         the earliest node, or NULL
 *   due_heap_push(h, d)     adds d, whose due_ms is set; to change a time, remove, set, push
 *   due_heap_remove(h, d)   takes d (which must be in h) out
 *   due_heap_free(h)        frees the array (not the elements) and empties h
 *   due_entry(d, type, m)   the element holding node d
 */
#ifndef MMC_DUE_HEAP_H
#define MMC_DUE_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct due_node {
	uint64_t due_ms;
	size_t idx; /* its place in the heap */
};

struct due_heap {
	struct due_node **v;
	size_t n, cap;
};

/* The element of type holding node d as member. */
#define due_entry(d, type, member) ((type *)(void *)((char *)(d)-offsetof(type, member)))

/* The earliest node, or NULL when the heap is empty. */
static inline struct due_node *due_heap_top(const struct due_heap *h)
{
	return h->n ? h->v[0] : NULL;
}

/* Adds d (d->due_ms set). Returns 0, or MMC_MALLOC_FAILED with the heap unchanged. */
int due_heap_push(struct due_heap *h, struct due_node *d);
/* Takes d out of the heap. */
void due_heap_remove(struct due_heap *h, struct due_node *d);
/* Frees the heap's array (not the elements) and empties it. */
void due_heap_free(struct due_heap *h);

#endif
