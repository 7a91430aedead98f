/*
 * Copies whose destination nobody here reads next: a put into a pool (its own or a same-host owner's), or a get
 * larger than the cache. Plain memcpy first reads every destination line into the cache (a read for ownership) and
 * then evicts lines the caller needed; streaming (non-temporal) stores write around the cache, so a copy between
 * two cold buffers moves two bytes over the memory bus per byte copied instead of three. Measured on the 2-core
 * Xeon of docs/performance.md: 1 MiB pieces between cold buffers 6.4-6.7 GB/s against glibc memcpy's 5.1-5.2. A
 * get that fits in the cache is better left to memcpy, whose destination stays cached for the caller:
 * copy_should_stream decides. AVX-512 or SSE2 stores by the CPU (checked once); plain memcpy on other
 * architectures. Thread-safe.
 */
#ifndef MMC_COPY_STREAM_H
#define MMC_COPY_STREAM_H

#include <stdbool.h>
#include <stddef.h>

/* Pieces smaller than this go by memcpy: a few lines gain nothing from bypassing the cache. */
#define COPY_STREAM_PIECE_MIN (16u << 10)

/*
 * Copies n bytes from src to dst (which must not overlap), the bulk with streaming stores, and fences them: on
 * return every byte is visible to other processes as after memcpy. Either pointer may have any alignment. Returns
 * dst, as memcpy does, so that either can be called through one pointer.
 */
void *copy_stream(void *dst, const void *src, size_t n);

/*
 * Whether a get of total bytes should stream into the caller's buffers: only when it is larger than what this
 * core's cache (L2) keeps, so that they would have left the cache before the caller reads them anyway.
 */
bool copy_should_stream(size_t total);

/* For the unit test: the stores in use ("avx512", "sse2" or "memcpy"), and a switch to the narrowest the CPU has
 * (false: the widest again), so that each implementation is tested where the CPU has both. */
const char *copy_stream_kind(void);
void copy_stream_narrow(bool on);

#endif
