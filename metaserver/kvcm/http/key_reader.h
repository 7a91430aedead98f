/*
 * Readers of the raw body of the key queries' usual request (getCacheLocation, getCacheLocationLen: block_keys;
 * getHostCacheState: block_cache_keys): one array of integer keys and a few scalar members. At 20000 keys, jansson
 * building and freeing a tree of such a body is about half of the request's server time; these readers parse the
 * keys straight into an array. A body of any other shape is declined and jansson reads it, so every body gets the
 * same reply either way.
 */
#ifndef MMC_KVCM_KEY_READER_H
#define MMC_KVCM_KEY_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

/* On success c->body holds the body's other members, c->parsed the keys. */
extern const struct route_reader block_keys_reader;
extern const struct route_reader block_cache_keys_reader;

/*
 * The keys of array name read by c's route reader: true and *keys (the caller frees it; at least one key, no more
 * than kvcm.service.max_keys_per_request), or false when the body was read by jansson, which has them instead.
 */
bool key_reader_take(struct call *c, const char *name, int64_t **keys, size_t *n);

#endif
