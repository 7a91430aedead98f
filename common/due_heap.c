#include "due_heap.h"

#include <stdlib.h>

#include "array.h"
#include "mmc/mmc.h"

static void swap(struct due_heap *h, size_t a, size_t b)
{
	struct due_node *t = h->v[a];

	h->v[a] = h->v[b];
	h->v[b] = t;
	h->v[a]->idx = a;
	h->v[b]->idx = b;
}

static void sift_up(struct due_heap *h, size_t i)
{
	while (i && h->v[(i - 1) / 2]->due_ms > h->v[i]->due_ms) {
		swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void sift_down(struct due_heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < h->n && h->v[l]->due_ms < h->v[m]->due_ms)
			m = l;
		if (r < h->n && h->v[r]->due_ms < h->v[m]->due_ms)
			m = r;
		if (m == i)
			return;
		swap(h, i, m);
		i = m;
	}
}

int due_heap_push(struct due_heap *h, struct due_node *d)
{
	struct due_node **v = array_grow(h->v, &h->cap, h->n + 1, sizeof(*v), 256);

	if (!v)
		return MMC_MALLOC_FAILED;
	h->v = v;
	d->idx = h->n++;
	h->v[d->idx] = d;
	sift_up(h, d->idx);
	return 0;
}

void due_heap_remove(struct due_heap *h, struct due_node *d)
{
	size_t i = d->idx;

	if (--h->n == i)
		return;
	swap(h, i, h->n);
	sift_down(h, i);
	sift_up(h, i);
}

void due_heap_free(struct due_heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
