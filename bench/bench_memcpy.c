#include "bench_memcpy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RING ((size_t)512 << 20)

static char *ring_src, *ring_dst;
static size_t ring_at;

/* One call copies the batch piece by piece, as the layer calls move them. */
static void copy_block(const struct shape *sh, char *dst, const char *src)
{
	for (int j = 0; j < sh->npieces; j++) {
		memcpy(dst, src, sh->piece[j]);
		dst += sh->piece[j];
		src += sh->piece[j];
	}
}

static double rate(struct samples *s, const struct shape *sh, int batch)
{
	double med = samples_median(s);

	samples_free(s);
	return med > 0 ? (double)sh->block * batch / med / 1e9 : 0;
}

double memcpy_hot(const struct shape *sh, void *const *src, void *const *dst, int batch, double seconds)
{
	struct samples s = {0};
	double end = now_s() + seconds;

	do {
		double t0 = now_s();

		for (int i = 0; i < batch; i++)
			copy_block(sh, dst[i], src[i]);
		samples_add(&s, now_s() - t0);
	} while (now_s() < end || s.n < 3);
	return rate(&s, sh, batch);
}

static int ring_map(void)
{
	if (ring_src)
		return 0;
	ring_src = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ring_dst = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring_src == MAP_FAILED || ring_dst == MAP_FAILED) {
		ring_src = NULL;
		return -1;
	}
	memset(ring_src, 0x5a, RING);
	memset(ring_dst, 0xa5, RING);
	return 0;
}

double memcpy_cold(const struct shape *sh, int batch, double seconds)
{
	struct samples s = {0};
	double end = now_s() + seconds;

	if (ring_map() || sh->block > RING)
		return 0;
	do {
		double t0;

		t0 = now_s();
		for (int i = 0; i < batch; i++) {
			if (ring_at + sh->block > RING)
				ring_at = 0;
			copy_block(sh, ring_dst + ring_at, ring_src + ring_at);
			ring_at += (sh->block + 4095) & ~(size_t)4095;
		}
		samples_add(&s, now_s() - t0);
	} while (now_s() < end || s.n < 3);
	return rate(&s, sh, batch);
}

void memcpy_cold_free(void)
{
	if (ring_src) {
		munmap(ring_src, RING);
		munmap(ring_dst, RING);
	}
	ring_src = ring_dst = NULL;
}
