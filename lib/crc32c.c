#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define CRC_X86 1
#endif

#define POLY 0x82f63b78u /* Castagnoli, bit-reflected */

/*
 * The crc32 instruction has a latency of three cycles and a throughput of one: three independent streams over
 * adjacent blocks keep it busy, and their CRCs are joined by shifting each over the blocks after it (a linear map
 * of the 32-bit state, four table lookups). Long blocks for the bulk, short ones for what is left.
 */
#define CRC_LONG  8192
#define CRC_SHORT 256

static uint32_t slice[8][256]; /* slice[k][b]: byte b followed by k zero bytes */
static uint32_t shift_long[4][256], shift_short[4][256];
static bool have_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static inline uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* The state after len bytes from state c, without the initial and final inversion. */
static uint32_t sw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = slice[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w = load_le64(p) ^ c;

		c = slice[7][w & 0xff] ^ slice[6][(w >> 8) & 0xff] ^ slice[5][(w >> 16) & 0xff] ^
		    slice[4][(w >> 24) & 0xff] ^ slice[3][(w >> 32) & 0xff] ^ slice[2][(w >> 40) & 0xff] ^
		    slice[1][(w >> 48) & 0xff] ^ slice[0][w >> 56];
	}
	while (len--)
		c = slice[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

static void slice_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		slice[0][b] = c;
	}
	for (int k = 1; k < 8; k++)
		for (uint32_t b = 0; b < 256; b++)
			slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xff];
}

#ifdef CRC_X86
/* Running over len zero bytes is linear in the state: tabulate it on each state byte from the 32 unit states. */
static void shift_init(uint32_t t[4][256], size_t len)
{
	static const unsigned char zeros[CRC_LONG];
	uint32_t unit[32];

	for (int i = 0; i < 32; i++)
		unit[i] = sw_raw(UINT32_C(1) << i, zeros, len);
	for (int k = 0; k < 4; k++) {
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t v = 0;

			for (int j = 0; j < 8; j++)
				if (b & (1u << j))
					v ^= unit[8 * k + j];
			t[k][b] = v;
		}
	}
}

static inline uint32_t shift(uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* Three streams over [p, p + 3 * block) from state c; returns the state after all of it. */
__attribute__((target("sse4.2"))) static uint32_t hw_three(uint32_t c, const unsigned char *p, size_t block,
                                                           uint32_t t[4][256])
{
	uint64_t c0 = c, c1 = 0, c2 = 0;

	for (const unsigned char *end = p + block; p < end; p += 8) {
		uint64_t w0, w1, w2;

		memcpy(&w0, p, 8);
		memcpy(&w1, p + block, 8);
		memcpy(&w2, p + 2 * block, 8);
		c0 = _mm_crc32_u64(c0, w0);
		c1 = _mm_crc32_u64(c1, w1);
		c2 = _mm_crc32_u64(c2, w2);
	}
	return shift(t, shift(t, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64;

	while (len && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8(c, *p++);
		len--;
	}
	for (; len >= 3 * CRC_LONG; p += 3 * CRC_LONG, len -= 3 * CRC_LONG)
		c = hw_three(c, p, CRC_LONG, shift_long);
	for (; len >= 3 * CRC_SHORT; p += 3 * CRC_SHORT, len -= 3 * CRC_SHORT)
		c = hw_three(c, p, CRC_SHORT, shift_short);
	for (c64 = c; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c64 = _mm_crc32_u64(c64, w);
	}
	for (c = (uint32_t)c64; len; len--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

static void init(void)
{
	slice_init();
#ifdef CRC_X86
	__builtin_cpu_init();
	have_hw = __builtin_cpu_supports("sse4.2");
	if (have_hw) {
		shift_init(shift_long, CRC_LONG);
		shift_init(shift_short, CRC_SHORT);
	}
#endif
}

bool crc32c_hw_available(void)
{
	pthread_once(&once, init);
	return have_hw;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, init);
	return ~sw_raw(~crc, buf, len);
}

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
#ifdef CRC_X86
	if (crc32c_hw_available())
		return ~hw_raw(~crc, buf, len);
#endif
	return crc32c_sw(crc, buf, len);
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_hw(crc, buf, len);
}
