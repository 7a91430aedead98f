/*
 * Random protobuf field values for the codec tests (test_key_codec.c, test_key_wire.c): every width, and the
 * proto3 zero (left out on the wire) a third of the time. Reproducible: each test keeps its own seed.
 */
#ifndef MMC_TEST_RAND_FIELDS_H
#define MMC_TEST_RAND_FIELDS_H

#include <stdint.h>
#include <stdlib.h>

static inline uint64_t rand_u64(unsigned *seed)
{
	uint64_t v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 16 | (uint64_t)(rand_r(seed) & 0xffff);
	return v;
}

/* 0 a third of the time, else a value of up to `bits` bits (1..64). */
static inline uint64_t rand_field(unsigned *seed, int bits)
{
	uint64_t v = rand_u64(seed);

	if (rand_r(seed) % 3 == 0)
		return 0;
	return bits >= 64 ? v >> (rand_r(seed) % 64) : (v & ((UINT64_C(1) << bits) - 1)) >> (rand_r(seed) % bits);
}

#endif
