#include "radix.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"

/* One read of the array costs far less than a pass of the sort; the loader's arrays often come in order already. */
static bool in_order(const struct radix_item *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i].key < v[i - 1].key)
			return false;
	return true;
}

int radix_sort(struct radix_item *v, size_t n)
{
	size_t count[8][256];
	struct radix_item *tmp, *src = v, *dst;

	if (n < 2 || in_order(v, n))
		return 0;
	if (!(tmp = malloc(n * sizeof(*tmp))))
		return MMC_MALLOC_FAILED;
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++)
		for (int d = 0; d < 8; d++)
			count[d][(v[i].key >> (8 * d)) & 0xff]++;
	dst = tmp;
	for (int d = 0; d < 8; d++) {
		size_t at = 0;

		if (count[d][(v[0].key >> (8 * d)) & 0xff] == n)
			continue; /* every key has this byte: the pass would change nothing */
		for (int b = 0; b < 256; b++) {
			size_t c = count[d][b];

			count[d][b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[d][(src[i].key >> (8 * d)) & 0xff]++] = src[i];
		src = dst;
		dst = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}
