#include "block_key.h"

size_t block_keys_from_tokens(const int64_t *tokens, size_t ntokens, int32_t block_size, int64_t *out)
{
	size_t bs = block_size > 0 ? (size_t)block_size : 1, n = ntokens / bs;
	uint64_t h = 0;

	for (size_t b = 0; b < n; b++) {
		for (size_t t = b * bs; t < (b + 1) * bs; t++) {
			/* the hash_combine step of the reference: arithmetic shift of the signed value, wrapping sums
			 */
			uint64_t sh = (uint64_t)((int64_t)h >> 32);

			h ^= (uint64_t)tokens[t] + UINT64_C(0x9e3779b97f4a7c15) + (h << 12) + sh;
		}
		out[b] = (int64_t)h;
	}
	return n;
}
