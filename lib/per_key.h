/*
 * Per-key fields read where they live. A call keeps one record per key (store_data.c's plan); the layers under it
 * (wire items, extents, transfers) read a field of key k through a pointer to key 0's field and the records' size,
 * so no field is copied out into an array of its own. Plain arrays pass a stride of 0.
 */
#ifndef MMC_PER_KEY_H
#define MMC_PER_KEY_H

#include <stddef.h>

/* The field of key k: first points at key 0's, stride is the bytes from one key's record to the next (0: first is
 * a plain array). An lvalue when first is not const. */
#define PER_KEY(first, k, stride)                                                                                      \
	(*(__typeof__(first))((const char *)(first) + (k) * ((stride) ? (stride) : sizeof(*(first)))))

#endif
