#include "flood_keys.h"

#include <string.h>

#include "hash.h"

/* hash_stable()'s constants: the tests must attack the real thing, so it is checked against them in test_hash.c. */
#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)
#define M1     UINT64_C(0xff51afd7ed558ccd)
#define M2     UINT64_C(0xc4ceb9fe1a85ec53)
/* The value every flood string key brings the state to before the last mix: any constant does. */
#define TARGET UINT64_C(0x4d4d43464c4f4f44)

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= M1;
	h ^= h >> 33;
	h *= M2;
	h ^= h >> 33;
	return h;
}

/* The inverse of an odd number modulo 2^64 (Newton: each step doubles the correct low bits, 3 to start). */
static uint64_t inverse(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

/* mix() backwards: h ^= h >> 33 undoes itself, the multiplies undo by the inverse. */
static uint64_t unmix(uint64_t h)
{
	h ^= h >> 33;
	h *= inverse(M2);
	h ^= h >> 33;
	h *= inverse(M1);
	h ^= h >> 33;
	return h;
}

/* The state hash_stable() starts from for a key of len bytes. */
static uint64_t start_state(size_t len)
{
	return GOLDEN ^ (len * UINT64_C(0x100000001b3));
}

static uint64_t load(const char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/* True when all 8 bytes of w are ASCII and none is NUL. */
static int ascii_word(uint64_t w)
{
	for (int i = 0; i < 8; i++, w >>= 8)
		if ((w & 0xff) == 0 || (w & 0x80))
			return 0;
	return 1;
}

/*
 * A 16-byte key is two words: state h1 = mix(start ^ w0) + GOLDEN after the first, and the hash is
 * mix(mix(h1 ^ w1) + GOLDEN). So w1 = h1 ^ TARGET gives every w0 the same hash; w0 counts in base 32 and is
 * kept when w1 happens to be ASCII (1 in 270).
 */
void flood_string_keys(char (*keys)[FLOOD_KEY_LEN + 1], size_t n, char tag)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuv";
	uint64_t count = 0, w1;
	char *k;

	for (size_t i = 0; i < n; count++) {
		k = keys[i];
		k[0] = tag;
		for (int d = 1; d < 8; d++)
			k[d] = digits[(count >> (5 * (7 - d))) & 31];
		w1 = (mix(start_state(FLOOD_KEY_LEN) ^ load(k)) + GOLDEN) ^ TARGET;
		if (!ascii_word(w1))
			continue;
		memcpy(k + 8, &w1, 8);
		k[FLOOD_KEY_LEN] = '\0';
		i++;
	}
}

uint64_t flood_string_hash(void)
{
	return mix(mix(TARGET) + GOLDEN);
}

/* An 8-byte key w hashes to mix(mix(start ^ w) + GOLDEN): run that backwards from hashes i << 32. */
void flood_block_keys(int64_t *keys, size_t n)
{
	for (uint64_t h = 1; n; h++) {
		uint64_t w = unmix(unmix(h << 32) - GOLDEN) ^ start_state(8);

		if ((int64_t)w >= 0) {
			*keys++ = (int64_t)w;
			n--;
		}
	}
}
