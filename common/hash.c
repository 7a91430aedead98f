#include "hash.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mmc/mmc.h"

/* ---- SipHash (Aumasson and Bernstein, 2012) with 1 compression and 3 finalization rounds, as Python and Rust use */

struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13) ^ s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17) ^ s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline void sip_absorb(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	s->v0 ^= m;
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return le64toh(w);
}

/* The initial state is the key xored with these ("somepseudorandomlygeneratedbytes"). */
#define SIP_C0 UINT64_C(0x736f6d6570736575)
#define SIP_C1 UINT64_C(0x646f72616e646f6d)
#define SIP_C2 UINT64_C(0x6c7967656e657261)
#define SIP_C3 UINT64_C(0x7465646279746573)

/* The last block: the n < 8 bytes left at p, and the string's length in the top byte. */
static inline uint64_t last_word(const unsigned char *p, size_t n, size_t len)
{
	uint64_t last = (uint64_t)len << 56;

	if (n && len >= 8) /* the string's last 8 bytes, shifted down to its tail: one load, not n */
		return last | load_le64(p + n - 8) >> (8 * (8 - n));
	for (size_t i = 0; i < n; i++)
		last |= (uint64_t)p[i] << (8 * i);
	return last;
}

static uint64_t siphash13(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
	struct sip s = {k0 ^ SIP_C0, k1 ^ SIP_C1, k0 ^ SIP_C2, k1 ^ SIP_C3};
	const unsigned char *p = data;
	size_t n;

	for (n = len; n >= 8; n -= 8, p += 8)
		sip_absorb(&s, load_le64(p));
	sip_absorb(&s, last_word(p, n, len));
	s.v2 ^= 0xff;
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t hash_keyed(const unsigned char *key, const void *data, size_t len)
{
	return siphash13(load_le64(key), load_le64(key + 8), data, len);
}

/* ---- the process key */

static uint64_t key0, key1;
static atomic_bool keyed; /* key0 and key1 hold random bits: release/acquire orders them before it */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static int read_urandom(unsigned char *buf, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t r = 0;

	if (fd < 0)
		return MMC_ERROR;
	while (got < len && ((r = read(fd, buf + got, len - got)) > 0 || (r < 0 && errno == EINTR)))
		got += r > 0 ? (size_t)r : 0;
	close(fd);
	return got == len ? 0 : MMC_ERROR;
}

/* getrandom() blocks until the kernel's pool is seeded, so the key is never weak; a kernel or seccomp filter
 * without it falls back to /dev/urandom. */
static int random_bytes(unsigned char *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = getrandom(buf + got, len - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && errno != EINTR)
			return read_urandom(buf, len);
	}
	return 0;
}

static void draw_key(void)
{
	unsigned char k[HASH_KEY_LEN];

	if (random_bytes(k, sizeof(k)))
		return;
	key0 = load_le64(k);
	key1 = load_le64(k + 8);
	atomic_store_explicit(&keyed, true, memory_order_release);
}

int hash_init(void)
{
	pthread_once(&key_once, draw_key);
	return atomic_load_explicit(&keyed, memory_order_acquire) ? 0 : MMC_ERROR;
}

static void need_key(void)
{
	if (!atomic_load_explicit(&keyed, memory_order_acquire) && hash_init()) {
		/* an unkeyed index would let any client make every lookup walk one chain: refuse to run */
		fputs("mmc: no randomness for the hash key (getrandom and /dev/urandom failed)\n", stderr);
		abort();
	}
}

uint64_t hash_bytes(const void *data, size_t len)
{
	need_key();
	return siphash13(key0, key1, data, len);
}

/*
 * ---- eight strings at once. A SipRound is a chain of dependent additions and rotations, so one string keeps few
 * of the core's ALUs busy; eight states side by side in AVX-512 registers (which rotate in one instruction, where
 * AVX2 takes three) do eight strings in about the time of 2.5.
 */

#define LANES 8

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* sip_round() on eight states: v[j] holds word j of each. */
AVX512 static inline void sip_round8(__m512i *v)
{
	v[0] = _mm512_add_epi64(v[0], v[1]);
	v[1] = _mm512_xor_si512(_mm512_rol_epi64(v[1], 13), v[0]);
	v[0] = _mm512_rol_epi64(v[0], 32);
	v[2] = _mm512_add_epi64(v[2], v[3]);
	v[3] = _mm512_xor_si512(_mm512_rol_epi64(v[3], 16), v[2]);
	v[0] = _mm512_add_epi64(v[0], v[3]);
	v[3] = _mm512_xor_si512(_mm512_rol_epi64(v[3], 21), v[0]);
	v[2] = _mm512_add_epi64(v[2], v[1]);
	v[1] = _mm512_xor_si512(_mm512_rol_epi64(v[1], 17), v[2]);
	v[2] = _mm512_rol_epi64(v[2], 32);
}

AVX512 static inline void sip_absorb8(__m512i *v, __m512i m)
{
	v[3] = _mm512_xor_si512(v[3], m);
	sip_round8(v);
	v[0] = _mm512_xor_si512(v[0], m);
}

/* The 8-byte word at off of each string, string i in lane i, put together in registers: eight stores read back
 * as one 64-byte load would wait for the stores to drain (no store forwarding). */
#define WORD(i) ((long long)load_le64((const unsigned char *)data[i] + off))
AVX512 static inline __m512i words8(const void *const *data, size_t off)
{
	return _mm512_set_epi64(WORD(7), WORD(6), WORD(5), WORD(4), WORD(3), WORD(2), WORD(1), WORD(0));
}

/* The last block of each string, off being where its tail starts. */
#define LAST(i) ((long long)last_word((const unsigned char *)data[i] + off, len - off, len))
AVX512 static inline __m512i last8(const void *const *data, size_t off, size_t len)
{
	return _mm512_set_epi64(LAST(7), LAST(6), LAST(5), LAST(4), LAST(3), LAST(2), LAST(1), LAST(0));
}

/* siphash13() of eight strings of length len. */
AVX512 static void siphash13_x8(uint64_t k0, uint64_t k1, const void *const *data, size_t len, uint64_t *out)
{
	__m512i v[4] = {_mm512_set1_epi64((long long)(k0 ^ SIP_C0)), _mm512_set1_epi64((long long)(k1 ^ SIP_C1)),
	                _mm512_set1_epi64((long long)(k0 ^ SIP_C2)), _mm512_set1_epi64((long long)(k1 ^ SIP_C3))};
	size_t off;

	for (off = 0; off + 8 <= len; off += 8)
		sip_absorb8(v, words8(data, off));
	sip_absorb8(v, last8(data, off, len));
	v[2] = _mm512_xor_si512(v[2], _mm512_set1_epi64(0xff));
	sip_round8(v);
	sip_round8(v);
	sip_round8(v);
	_mm512_storeu_si512(out, _mm512_xor_si512(_mm512_xor_si512(v[0], v[1]), _mm512_xor_si512(v[2], v[3])));
}

/* The eight lengths from len on are one. */
static bool same_length(const size_t *len)
{
	for (int i = 1; i < LANES; i++)
		if (len[i] != len[0])
			return false;
	return true;
}

/* Hashes the eight strings at data side by side where the CPU can and they share a length: returns LANES, or 0
 * when it did nothing. */
static size_t hash_eight(const void *const *data, const size_t *len, uint64_t *out)
{
	if (!__builtin_cpu_supports("avx512f") || !same_length(len))
		return 0;
	siphash13_x8(key0, key1, data, len[0], out);
	return LANES;
}
#undef WORD
#undef LAST
#else
static size_t hash_eight(const void *const *data, const size_t *len, uint64_t *out)
{
	(void)data, (void)len, (void)out;
	return 0;
}
#endif

void hash_bytes_many(size_t n, const void *const *data, const size_t *len, uint64_t *out)
{
	need_key();
	for (size_t i = 0, done; i < n; i += done) {
		done = n - i >= LANES ? hash_eight(data + i, len + i, out + i) : 0;
		if (!done) {
			out[i] = siphash13(key0, key1, data[i], len[i]);
			done = 1;
		}
	}
}

/* ---- the stable hash: a 64-bit multiply-mix over 8-byte words (the murmur/wyhash family). Do not change it: its
 * values name files that outlive the process (see hash.h). */

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

uint64_t hash_stable(const void *data, size_t len)
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
