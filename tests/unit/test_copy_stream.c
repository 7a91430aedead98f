/* lib/copy_stream.c: byte-exact copies of every length around its edges, at every alignment, with both kinds of
 * store, and nothing written outside the destination. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy_stream.h"

#define GUARD 128

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (unsigned char)(x >> 24);
	}
}

/* Copies n bytes from src+soff to dst+doff in fresh buffers and checks the copy and both guards. */
static void one(size_t n, size_t soff, size_t doff)
{
	unsigned char *src = aligned_alloc(64, (n + soff + 64 + 63) & ~(size_t)63);
	unsigned char *dst = aligned_alloc(64, (n + doff + 2 * GUARD + 63) & ~(size_t)63);

	cr_assert(src && dst);
	fill(src + soff, n, (unsigned)(n + soff));
	memset(dst, 0xee, n + doff + 2 * GUARD);
	copy_stream(dst + GUARD + doff, src + soff, n);
	cr_assert(memcmp(dst + GUARD + doff, src + soff, n) == 0, "%s: %zu bytes, src +%zu, dst +%zu differ",
	          copy_stream_kind(), n, soff, doff);
	for (size_t i = 0; i < GUARD + doff; i++)
		cr_assert_eq(dst[i], 0xee, "byte before the destination written (%zu bytes, dst +%zu)", n, doff);
	for (size_t i = GUARD + doff + n; i < n + doff + 2 * GUARD; i++)
		cr_assert_eq(dst[i], 0xee, "byte after the destination written (%zu bytes, dst +%zu)", n, doff);
	free(src);
	free(dst);
}

static void every_edge(void)
{
	static const size_t lens[] = {0,
	                              1,
	                              63,
	                              COPY_STREAM_PIECE_MIN - 1,
	                              COPY_STREAM_PIECE_MIN,
	                              COPY_STREAM_PIECE_MIN + 1,
	                              COPY_STREAM_PIECE_MIN + 255,
	                              COPY_STREAM_PIECE_MIN + 256,
	                              (64u << 10) + 63,
	                              (1u << 20) + 17};
	static const size_t offs[] = {0, 1, 8, 16, 31, 32, 63};

	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t s = 0; s < sizeof(offs) / sizeof(offs[0]); s++)
			for (size_t d = 0; d < sizeof(offs) / sizeof(offs[0]); d++)
				one(lens[l], offs[s], offs[d]);
}

Test(copy_stream, widest_stores_copy_every_length_and_alignment)
{
	copy_stream_narrow(false);
	every_edge();
}

Test(copy_stream, narrowest_stores_copy_every_length_and_alignment)
{
	copy_stream_narrow(true);
	every_edge();
	copy_stream_narrow(false);
}

Test(copy_stream, only_gets_larger_than_the_cache_stream)
{
	cr_assert_not(copy_should_stream(64u << 10));
	cr_assert(copy_should_stream((size_t)1 << 30));
}
