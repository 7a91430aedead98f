/*
 * Block keys derived from token ids on the server (reference kvcm.md §3.5): chained, so each block's key depends
 * on every token before it; a trailing partial block is ignored.
 */
#ifndef MMC_KVCM_BLOCK_KEY_H
#define MMC_KVCM_BLOCK_KEY_H

#include <stddef.h>
#include <stdint.h>

/* Writes floor(ntokens / block_size) keys to out (room for that many) and returns their count. */
size_t block_keys_from_tokens(const int64_t *tokens, size_t ntokens, int32_t block_size, int64_t *out);

#endif
