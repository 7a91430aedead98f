#include "hash.h"

#include <string.h>

/* 64-bit multiply-mix over 8-byte words (the murmur/wyhash family): keys are short, so avoid per-byte loops. */
static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (len * UINT64_C(0x100000001b3));
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, p, 8);
		h = mix(h ^ w) + UINT64_C(0x9e3779b97f4a7c15);
		p += 8;
		len -= 8;
	}
	w = 0;
	memcpy(&w, p, len);
	return mix(h ^ w ^ ((uint64_t)len << 56));
}
