/* lib/crc32c.c: published vectors, streaming over pieces, and the SSE4.2 path against the table path. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

/* RFC 3720 (iSCSI) B.4 and the usual check value. */
Test(crc32c, known_vectors)
{
	unsigned char buf[32];

	cr_assert_eq(crc32c(0, "123456789", 9), 0xE3069283u);
	cr_assert_eq(crc32c_sw(0, "123456789", 9), 0xE3069283u);
	cr_assert_eq(crc32c(0, "", 0), 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	cr_assert_eq(crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	cr_assert_eq(crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	cr_assert_eq(crc32c(0, buf, 32), 0x113FDB5Cu);
}

static unsigned char *random_bytes(size_t n, unsigned seed)
{
	unsigned char *p = malloc(n);

	cr_assert_not_null(p);
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rand();
	return p;
}

/* Lengths around every block boundary of the interleaved path (256 and 8192 bytes, three streams each). */
Test(crc32c, hw_and_sw_agree_on_every_length_and_alignment)
{
	enum { MAX = 3 * 8192 * 2 + 3 * 256 * 2 + 64 };
	unsigned char *p = random_bytes(MAX + 8, 1);
	static const size_t lens[] = {1,    7,    8,    9,    255,   256,   767,   768,   769,   1535,
	                              1536, 4096, 8191, 8192, 24575, 24576, 24577, 25344, 49152, MAX};

	if (!crc32c_hw_available())
		cr_log_warn("no SSE4.2 on this CPU: only the table path is checked");
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t a = 0; a < 8; a++)
			cr_assert_eq(crc32c_hw(0, p + a, lens[l]), crc32c_sw(0, p + a, lens[l]), "len %zu align %zu",
			             lens[l], a);
	free(p);
}

/* An object's pieces checksummed one after another give the CRC of the whole object. */
Test(crc32c, streams_over_pieces)
{
	enum { N = 100000 };
	unsigned char *p = random_bytes(N, 2);
	uint32_t whole = crc32c(0, p, N);

	srand(3);
	for (int round = 0; round < 50; round++) {
		uint32_t c = 0;

		for (size_t at = 0; at < N;) {
			size_t n = (size_t)rand() % 30000;

			n = n > N - at ? N - at : n;
			c = crc32c(c, p + at, n);
			at += n;
		}
		cr_assert_eq(c, whole, "round %d", round);
	}
	cr_assert_eq(crc32c_sw(crc32c_sw(0, p, 1000), p + 1000, N - 1000), whole);
	free(p);
}

/* One flipped bit anywhere changes the CRC: what the reader's check relies on. */
Test(crc32c, detects_a_flipped_bit)
{
	enum { N = 65536 };
	unsigned char *p = random_bytes(N, 4);
	uint32_t good = crc32c(0, p, N);

	for (size_t at = 0; at < N; at += 4099) {
		p[at] ^= 0x10;
		cr_assert_neq(crc32c(0, p, N), good, "flip at %zu", at);
		p[at] ^= 0x10;
	}
	free(p);
}
