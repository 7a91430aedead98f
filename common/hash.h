/*
 * 64-bit hashes of byte strings. hash_bytes() is keyed with a secret drawn once per process, for every table indexed
 * by keys a client chooses (the meta server's object index, the KVCM block, instance, session and file indexes):
 * without the key nobody can compute keys that share a bucket. hash_stable() is the same in every process, for the
 * few values that leave the process.
 */
#ifndef MMC_HASH_H
#define MMC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the key of hash_keyed(). */
#define HASH_KEY_LEN 16

/*
 * Draws this process's hash key from getrandom() (/dev/urandom where that fails). Call it once at start and refuse
 * to start on failure; hash_bytes() draws the key itself if nobody did. Returns 0, or MMC_ERROR when the kernel
 * gives no randomness. Thread-safe; later calls return the first call's result.
 */
int hash_init(void);

/*
 * SipHash-1-3 of data under this process's key: differs between processes, so never store or send it. Aborts the
 * process when no key can be drawn (hash_init() lets a caller fail more politely). Thread-safe.
 */
uint64_t hash_bytes(const void *data, size_t len);

/*
 * hash_bytes() of n byte strings at once: out[i] = hash_bytes(data[i], len[i]). Where the CPU has AVX-512, eight
 * strings of one length are hashed together, about three times faster each (the keys of one batch mostly share a
 * length); elsewhere, and for the rest, one at a time. The arrays are the caller's and are only read during the call.
 * Thread-safe.
 */
void hash_bytes_many(size_t n, const void *const *data, const size_t *len, uint64_t *out);

/* SipHash-1-3 of data under key (HASH_KEY_LEN bytes). */
uint64_t hash_keyed(const unsigned char *key, const void *data, size_t len);

/*
 * An unkeyed multiply-mix, the same in every process and every release: for hashes that are persisted or sent
 * (a file name in a KVCM location). Anyone can compute keys that collide under it, so it must never index a table of
 * client-chosen keys.
 */
uint64_t hash_stable(const void *data, size_t len);

#endif
