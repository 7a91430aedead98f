/*
 * Growth of append-only arrays: one place for the doubling and the overflow check that every such array needs.
 * Not thread-safe by itself; the array's owner serialises.
 */
#ifndef MMC_ARRAY_H
#define MMC_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Returns arr with room for at least need elements of elem bytes: arr itself when *cap suffices, else a
 * reallocation to a doubled capacity (starting at first), with *cap updated. Returns NULL when out of memory; arr
 * stays valid and *cap unchanged.
 */
static inline void *array_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t n = *cap ? *cap : first;
	void *p;

	if (need <= *cap)
		return arr;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem || !(p = realloc(arr, n * elem)))
		return NULL;
	*cap = n;
	return p;
}

#endif
