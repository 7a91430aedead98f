/*
 * common/hash.c: SipHash-1-3 against published values, the stable hash pinned, and keys crafted against the unkeyed
 * hash (tests/support/flood_keys.c) spreading like random keys under the keyed one.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flood_keys.h"
#include "hash.h"

/* Enough keys for a 2^16-bucket table, full: the KVCM's most block keys in one request. */
#define NKEYS    65536
#define NBUCKETS 65536

Test(hash, siphash13_matches_published_values)
{
	/* Rust's core::hash::sip tests: SipHasher13, key 00..0f, empty input */
	unsigned char key[HASH_KEY_LEN];
	/* CPython 3.11's hash() of bytes is SipHash-1-3; under PYTHONHASHSEED=42 its key is these bytes */
	static const unsigned char py42[HASH_KEY_LEN] = {0xaf, 0x90, 0xcd, 0x68, 0xd3, 0x4f, 0x50, 0xdc,
	                                                 0xc1, 0xe9, 0x99, 0xfe, 0x9f, 0xbb, 0x20, 0xb9};
	static const unsigned char zero[HASH_KEY_LEN];

	for (int i = 0; i < HASH_KEY_LEN; i++)
		key[i] = (unsigned char)i;
	cr_assert_eq(hash_keyed(key, "", 0), UINT64_C(0xabac0158050fc4dc));
	/* python3 -c "print('%016x' % (hash(b'...') % 2**64))" with PYTHONHASHSEED=0 (an all-zero key) and 42 */
	cr_assert_eq(hash_keyed(zero, "a", 1), UINT64_C(0x407448d2b89b1813));
	cr_assert_eq(hash_keyed(zero, "abcdefgh", 8), UINT64_C(0x3f7b849c0b8e35ea));
	cr_assert_eq(hash_keyed(zero, "hello world, this is mmc", 24), UINT64_C(0x0262a2534fcb6081));
	cr_assert_eq(hash_keyed(py42, "a", 1), UINT64_C(0xfe4a47335692551e));
	cr_assert_eq(hash_keyed(py42, "abcdefgh", 8), UINT64_C(0xb441be6d79f21056));
	cr_assert_eq(hash_keyed(py42, "0123456789abcdef0123456789abcdef01234", 37), UINT64_C(0xd5fcab3274ce496a));
}

/*
 * Many at once equal one at a time: runs of eight of one length (taken eight side by side where the CPU has
 * AVX-512: lengths 0, 7, 8, 9 and 72, keys at odd addresses), runs broken by one other length, and a tail of fewer
 * than eight.
 */
Test(hash, many_at_once_equal_one_at_a_time)
{
	enum { N = 8 * 40 + 5 };
	static const size_t lens[] = {0, 7, 8, 9, 72, 200, 1};
	static unsigned char bytes[N][256];
	const void *data[N];
	size_t len[N];
	uint64_t many[N];

	srand(29);
	for (size_t i = 0; i < N; i++) {
		for (size_t b = 0; b < sizeof(bytes[i]); b++)
			bytes[i][b] = (unsigned char)rand();
		data[i] = bytes[i] + i % 3;
		len[i] = lens[(i / 8) % 7];
		if (i % 8 == 5 && (i / 8) % 4 == 3)
			len[i] = 71; /* one odd length breaks this run of eight */
	}
	len[N - 1] = 3;
	hash_bytes_many(N, data, len, many);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(many[i], hash_bytes(data[i], len[i]), "string %zu, length %zu", i, len[i]);
	hash_bytes_many(0, data, len, many);
}

/* KVCM file names built from it are persisted and handed to clients: the values of every earlier release. */
Test(hash, stable_hash_never_changes)
{
	cr_assert_eq(hash_stable("1|2|3", 5), UINT64_C(0x52f524978369d42b));
	cr_assert_eq(hash_stable("7", 1), UINT64_C(0x9e6cc3663e28cd1c));
	cr_assert_eq(hash_stable("123456789012345|2|-3", 20), UINT64_C(0x5e2d3e4954888a14));
}

/* The longest chain when each of the n hashes goes to bucket hash % NBUCKETS. */
static unsigned max_chain(const uint64_t *hash, size_t n)
{
	unsigned *count = calloc(NBUCKETS, sizeof(*count)), max = 0;

	cr_assert_not_null(count);
	for (size_t i = 0; i < n; i++)
		if (++count[hash[i] % NBUCKETS] > max)
			max = count[hash[i] % NBUCKETS];
	free(count);
	return max;
}

/* Random keys put about 8 in the longest of 2^16 chains; crafted ones may do twice that and a little more. */
static void expect_spread(const uint64_t *crafted, const uint64_t *random, const char *what)
{
	unsigned c = max_chain(crafted, NKEYS), r = max_chain(random, NKEYS);

	cr_expect_leq(c, 2 * r + 4, "%s: longest chain %u, %u for random keys", what, c, r);
}

Test(hash, string_keys_crafted_against_the_stable_hash_spread)
{
	char(*keys)[FLOOD_KEY_LEN + 1] = malloc(NKEYS * sizeof(*keys));
	uint64_t *crafted = malloc(NKEYS * sizeof(*crafted)), *random = malloc(NKEYS * sizeof(*random));
	char k[32];

	cr_assert(keys && crafted && random);
	flood_string_keys(keys, NKEYS, 'a');
	for (size_t i = 0; i < NKEYS; i++) {
		cr_assert_eq(strlen(keys[i]), FLOOD_KEY_LEN);
		cr_assert_eq(hash_stable(keys[i], FLOOD_KEY_LEN), flood_string_hash(), "key %zu does not collide", i);
		cr_assert(i == 0 || strcmp(keys[i], keys[i - 1]) > 0, "keys are distinct (in order)");
		crafted[i] = hash_bytes(keys[i], FLOOD_KEY_LEN);
		snprintf(k, sizeof(k), "%016zx", i * 2654435761u);
		random[i] = hash_bytes(k, strlen(k));
	}
	cr_assert_eq(max_chain(crafted, 1), 1);
	expect_spread(crafted, random, "string keys");
	free(keys);
	free(crafted);
	free(random);
}

Test(hash, block_keys_crafted_against_the_stable_hash_spread)
{
	int64_t *keys = malloc(NKEYS * sizeof(*keys));
	uint64_t *old = malloc(NKEYS * sizeof(*old)), *crafted = malloc(NKEYS * sizeof(*crafted)),
	         *random = malloc(NKEYS * sizeof(*random));

	cr_assert(keys && old && crafted && random);
	flood_block_keys(keys, NKEYS);
	for (size_t i = 0; i < NKEYS; i++) {
		int64_t seq = (int64_t)i * 7919;

		cr_assert_geq(keys[i], 0);
		old[i] = hash_stable(&keys[i], sizeof(keys[i]));
		crafted[i] = hash_bytes(&keys[i], sizeof(keys[i]));
		random[i] = hash_bytes(&seq, sizeof(seq));
	}
	cr_assert_eq(max_chain(old, NKEYS), NKEYS, "the crafted keys share one bucket of the stable hash");
	expect_spread(crafted, random, "block keys");
	free(keys);
	free(old);
	free(crafted);
	free(random);
}

/* Criterion runs each test in a fresh process that has not hashed yet: the child and this one each draw a key. */
Test(hash, each_process_draws_its_own_key)
{
	static const unsigned char k1[HASH_KEY_LEN] = {1}, k2[HASH_KEY_LEN] = {2};
	uint64_t mine, theirs = 0;
	int fd[2], status;
	pid_t pid;

	cr_assert_neq(hash_keyed(k1, "key", 3), hash_keyed(k2, "key", 3));
	cr_assert_eq(pipe(fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		mine = hash_bytes("key", 3);
		_exit(write(fd[1], &mine, sizeof(mine)) == sizeof(mine) ? 0 : 1);
	}
	cr_assert_eq(read(fd[0], &theirs, sizeof(theirs)), (ssize_t)sizeof(theirs));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(hash_init(), 0);
	mine = hash_bytes("key", 3);
	cr_assert_neq(mine, theirs, "two processes hashed with one key");
	cr_assert_eq(hash_bytes("key", 3), mine, "one process, one key");
	close(fd[0]);
	close(fd[1]);
}
