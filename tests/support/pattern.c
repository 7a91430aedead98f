#include "pattern.h"

#include <string.h>

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

void pattern_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1, w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		w = next(&x);
		memcpy(p + i, &w, 8);
	}
	w = next(&x);
	memcpy(p + i, &w, len - i);
}

size_t pattern_check(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1, w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		w = next(&x);
		if (memcmp(p + i, &w, 8))
			goto find;
	}
	w = next(&x);
	if (memcmp(p + i, &w, len - i) == 0)
		return len;
find:
	for (size_t j = 0; j < 8 && i + j < len; j++)
		if (p[i + j] != ((unsigned char *)&w)[j])
			return i + j;
	return len;
}
