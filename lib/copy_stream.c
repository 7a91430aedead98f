#include "copy_stream.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define STREAM_ALIGN 64u /* a cache line: the widest store's alignment, and what a partial line would waste */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static size_t cache_bytes = 2u << 20; /* when the system does not say */

#if defined(__x86_64__)
#include <immintrin.h>

static bool have_avx512;
static _Atomic bool use_avx512;

/* n is a multiple of 256, dst 64-byte aligned. */
__attribute__((target("avx512f"))) static void stream_avx512(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i += 256) {
		__m512i a = _mm512_loadu_si512(src + i), b = _mm512_loadu_si512(src + i + 64),
		        c = _mm512_loadu_si512(src + i + 128), d = _mm512_loadu_si512(src + i + 192);

		_mm512_stream_si512((void *)(dst + i), a);
		_mm512_stream_si512((void *)(dst + i + 64), b);
		_mm512_stream_si512((void *)(dst + i + 128), c);
		_mm512_stream_si512((void *)(dst + i + 192), d);
	}
}

/* SSE2 is in every x86-64. Same contract as stream_avx512. */
static void stream_sse2(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i += 64) {
		__m128i a = _mm_loadu_si128((const void *)(src + i)), b = _mm_loadu_si128((const void *)(src + i + 16)),
		        c = _mm_loadu_si128((const void *)(src + i + 32)),
		        d = _mm_loadu_si128((const void *)(src + i + 48));

		_mm_stream_si128((void *)(dst + i), a);
		_mm_stream_si128((void *)(dst + i + 16), b);
		_mm_stream_si128((void *)(dst + i + 32), c);
		_mm_stream_si128((void *)(dst + i + 48), d);
	}
}

/* Copies the largest multiple of 256 bytes of n it can; returns how many. */
static size_t stream_bulk(char *dst, const char *src, size_t n)
{
	n &= ~(size_t)255;
	if (use_avx512)
		stream_avx512(dst, src, n);
	else
		stream_sse2(dst, src, n);
	_mm_sfence(); /* streaming stores are weakly ordered: what follows (a commit, a fence check) must see them */
	return n;
}
#else
static size_t stream_bulk(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	return n;
}
#endif

static void init(void)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

	if (l2 > 0)
		cache_bytes = (size_t)l2;
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_avx512 = __builtin_cpu_supports("avx512f");
	use_avx512 = have_avx512;
#endif
}

void *copy_stream(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;
	size_t head = (STREAM_ALIGN - (uintptr_t)d % STREAM_ALIGN) % STREAM_ALIGN, done;

	if (n < COPY_STREAM_PIECE_MIN)
		return memcpy(d, s, n);
	pthread_once(&once, init);
	memcpy(d, s, head);
	done = stream_bulk(d + head, s + head, n - head);
	memcpy(d + head + done, s + head + done, n - head - done);
	return dst;
}

bool copy_should_stream(size_t total)
{
	pthread_once(&once, init);
	return total > cache_bytes;
}

const char *copy_stream_kind(void)
{
	pthread_once(&once, init);
#if defined(__x86_64__)
	return use_avx512 ? "avx512" : "sse2";
#else
	return "memcpy";
#endif
}

void copy_stream_narrow(bool on)
{
	pthread_once(&once, init);
#if defined(__x86_64__)
	use_avx512 = have_avx512 && !on;
#else
	(void)on;
#endif
}
