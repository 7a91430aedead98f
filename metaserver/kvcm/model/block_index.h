/*
 * One instance's index: block key -> block, each block holding its cache locations, and the blocks in LRU order
 * of their last write (reclaim picks the oldest). Loop thread only.
 */
#ifndef MMC_KVCM_BLOCK_INDEX_H
#define MMC_KVCM_BLOCK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct block *block_find(const struct instance *inst, int64_t key);
/*
 * A hint for a block_find(key) to come, for loops that know their keys ahead: first (chain false) the bucket is
 * fetched, some iterations later (chain true) the first block of its chain. A lookup then waits for no memory.
 */
void block_prefetch(const struct instance *inst, int64_t key, bool chain);
/* The block of key, created (empty, at the LRU tail) when missing; NULL when out of memory. */
struct block *block_get(struct instance *inst, int64_t key);
/* Unlinks and frees an empty block. */
void block_remove(struct instance *inst, struct block *b);
/* Moves b to the LRU tail with a new stamp (a write). */
void block_touch(struct instance *inst, struct block *b, uint64_t now_us);
/* Makes inst's index an empty table (inst just allocated). */
void block_index_init(struct instance *inst);
/* Frees every block and location of inst (shutdown). */
void block_index_free(struct instance *inst);

/* A location with room for its specs; strings copied into the same allocation. NULL when out of memory. */
struct location *location_new(struct storage *s, uint16_t nspecs, const char *const *names, const char *const *uris);
/* An event-report location named er_key (no usage bytes: the reporter owns the data). */
struct location *location_new_er(struct storage *s, const char *er_key, uint16_t nspecs, const char *const *names,
                                 const char *const *uris);
/* Frees l (and its rendered JSON). */
void location_free(struct location *l);
struct location *location_find(const struct block *b, const char *id);
/* The location named id that is (pending) or is not (!pending) handed to the deleter: an event reporter's name
 * (kvs#...) may be on one of each, its old copy waiting for its delete beside the one it reported since. */
struct location *location_find_as(const struct block *b, const char *id, bool pending);
/* Unlinks l from b (not freed). */
void location_unlink(struct block *b, struct location *l);
/* A SERVING location a reader may use (storage available, data present), or NULL. */
struct location *location_pick(struct kvcm *k, const struct block *b);
/*
 * What a query shows of b (the reference's merge of a key's locations, e.g. one written per spec group): winner
 * (location_pick's) first, then b's other readable locations on the same storage, at most cap in all. Returns
 * how many were put in out.
 */
#define LOCATION_MERGE_MAX 64
size_t location_merge_set(struct kvcm *k, const struct block *b, struct location *winner, struct location **out,
                          size_t cap);

#endif
