/*
 * A stable LSD radix sort of (key, value) pairs by key, for the loader's arrays of 10^7 entries (qsort there took
 * seconds): 8 passes of 8 bits at most, none for a byte that every key shares, and none at all for an array in
 * order already (records stored under ids come in the order objects were made, which is often the order of their
 * pages and their LRU stamps).
 */
#ifndef MMC_RADIX_H
#define MMC_RADIX_H

#include <stddef.h>
#include <stdint.h>

struct radix_item {
	uint64_t key;
	uint64_t val;
};

/* Sorts v[0..n) by key; equal keys keep their order. Returns 0, or MMC_MALLOC_FAILED (v unchanged). */
int radix_sort(struct radix_item *v, size_t n);

#endif
