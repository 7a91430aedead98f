/* A fast 64-bit hash of byte strings, for the meta server's object index and the client's lease table. */
#ifndef MMC_HASH_H
#define MMC_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *data, size_t len);

#endif
