/*
 * The local-copy ceiling: a single-thread memcpy of the same batch of blocks, cache-hot (the same source and
 * destination every call, as a benchmark loop that reuses its buffers sees them) and cold (walking a ring of
 * 2 x 512 MiB, larger than the L3 this VM reports, so every byte comes from DRAM).
 */
#ifndef MMC_BENCH_MEMCPY_H
#define MMC_BENCH_MEMCPY_H

#include <stddef.h>

#include "bench.h"

/* GB/s of copying batch blocks of sh->block bytes; hot from src to dst, cold through the ring. */
double memcpy_hot(const struct shape *sh, void *const *src, void *const *dst, int batch, double seconds);
double memcpy_cold(const struct shape *sh, int batch, double seconds);
void memcpy_cold_free(void);

#endif
