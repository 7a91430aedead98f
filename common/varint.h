/*
 * protobuf's base-128 varints, for the codecs that write frames by hand (libmmc's framing, the meta server's key
 * batches, the KV Cache Manager's gRPC messages): one definition, so a length never disagrees with its encoding.
 */
#ifndef MMC_VARINT_H
#define MMC_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes v takes as a varint (1..10). */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v at p, which has room for varint_len(v) bytes; returns the byte after it. */
static inline uint8_t *varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

#endif
