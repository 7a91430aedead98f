/* Deterministic test content: the bytes of a block are a function of (seed, offset). */
#ifndef MMC_TEST_PATTERN_H
#define MMC_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

void pattern_fill(void *buf, size_t len, uint64_t seed);
/* Returns the index of the first byte that differs, or len when all match. */
size_t pattern_check(const void *buf, size_t len, uint64_t seed);

#endif
