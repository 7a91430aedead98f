/*
 * Keys that collide under hash_stable(), the unkeyed mix that indexed the meta server's tables before they were
 * keyed: a client that knows the hash computes them in microseconds. The hash-flooding tests check that they spread
 * like random keys under hash_bytes().
 */
#ifndef MMC_TEST_FLOOD_KEYS_H
#define MMC_TEST_FLOOD_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a flood string key, without the NUL. */
#define FLOOD_KEY_LEN 16

/*
 * n distinct keys of FLOOD_KEY_LEN ASCII bytes (no NUL inside, NUL-terminated) that all share one 64-bit
 * hash_stable() value, whatever tag is. Every key starts with tag (a letter), so two tags give disjoint sets.
 */
void flood_string_keys(char (*keys)[FLOOD_KEY_LEN + 1], size_t n, char tag);

/* The 64-bit hash_stable() every flood string key has. */
uint64_t flood_string_hash(void);

/*
 * n distinct non-negative block keys whose hash_stable() of their 8 bytes (how the KVCM hashed them) has its low 32
 * bits zero: one bucket of any table of up to 2^32 buckets. The same n keys every call.
 */
void flood_block_keys(int64_t *keys, size_t n);

#endif
