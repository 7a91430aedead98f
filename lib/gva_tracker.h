/*
 * The GVA grants one store holds: the ranges mmc_batch_malloc() allocated (write grants, until finished) and the
 * ranges mmc_batch_add_lease() leased (read grants, until released), each with its key, its lease end and the meta
 * connection that granted it, so mmc_batch_copy() checks every range before a byte moves (store_gva.c).
 *
 * Live grants of one kind never share a byte: the server hands a range to one object at a time, so of two grants
 * over one byte the earlier is stale (a write lease that ran out or was never finished, a read lease never
 * released, a grant of a server since gone), and gva_tracker_sort() retires it. A retired read grant goes; a
 * retired write grant stays, out of every lookup, for the finish of the thread that asked for it, which must then
 * name its own (gone) allocation and not the key's newer one.
 *
 * Not thread-safe by itself: callers hold lock, for reading to look up, for writing to change anything.
 */
#ifndef MMC_GVA_TRACKER_H
#define MMC_GVA_TRACKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "mmc/mmc.h"

enum gva_kind { GVA_WRITE = 1, GVA_READ = 2 };

struct gva_entry {
	uint64_t start, end; /* [start, end) in GVA space */
	uint64_t incarnation;
	uint64_t expiry_ms;
	uint64_t losses;  /* meta_conn_losses() when granted: a lease does not outlive its server */
	uint64_t token;   /* the object the grant is for, as the server names it */
	uint64_t seq;     /* set by gva_tracker_add: order of arrival */
	uint64_t hash;    /* set by gva_tracker_add: hash_bytes() of key */
	pthread_t thread; /* a write grant's: the thread that asked for it */
	uint8_t kind;     /* enum gva_kind */
	bool readable;    /* write grant of an object already published: copies into it are skipped */
	bool retired;     /* a later grant of its kind holds its range: never found, see the top of this file */
	char key[MMC_KEY_MAX + 1];
};

struct gva_tracker {
	pthread_rwlock_t lock;
	/*
	 * Held shared by mmc_batch_add_lease() from its request to its grants' entry here, exclusive by
	 * mmc_batch_remove_lease() over its drop here and its request: the server and this table then see one key's add
	 * and remove in the same order (a remove sent after an add, whose drop ran before the add's grant was entered,
	 * left a grant here on a lease the server had let go, and copies read a range reused meanwhile).
	 */
	pthread_rwlock_t leases;
	struct gva_entry *v; /* sorted by start, then seq, between calls */
	size_t n, cap;
	uint64_t seq; /* the last entry's */
};

/* NULL when memory is exhausted. */
struct gva_tracker *gva_tracker_new(void);
void gva_tracker_free(struct gva_tracker *t);

/* Adds the n grants of v (their seq and hash set here, in order), then sorts, retires what they overlap and drops
 * the read grants that ran out a minute or more before now_ms. Returns 0, or MMC_MALLOC_FAILED with nothing added.
 * Write lock. */
int gva_tracker_add(struct gva_tracker *t, const struct gva_entry *v, size_t n, uint64_t now_ms);

/* The live grant of the kind holding all of [gva, gva + len), or NULL. The pointer is good while the lock is held.
 * Read lock. */
const struct gva_entry *gva_tracker_find(const struct gva_tracker *t, uint64_t gva, uint64_t len, enum gva_kind kind);

/*
 * The keys of one call, hashed once: a pass over the grants then costs O(grants + keys), where comparing each grant
 * with each key cost O(grants × keys) (a call of 4096 keys over as many grants: 16 M string compares). A key given
 * twice is found at its last place. Owns nothing of keys, which must outlive it.
 */
struct gva_keys {
	struct hmap map;
	struct gva_key_slot *slot;
	const char *const *keys;
	size_t n;
};

/* 0, or MMC_MALLOC_FAILED (nothing to free). */
int gva_keys_init(struct gva_keys *k, const char *const *keys, size_t n);
void gva_keys_fini(struct gva_keys *k);
/* The place of keys[i] as found (its last place): the index a pass's per-key arrays are filled at. */
size_t gva_keys_place(const struct gva_keys *k, size_t i);

/* For each key i of k: the write grant a finish of it by thread self names (mmc.h, mmc_batch_write_finish):
 * self's latest for the key, else the key's live one. tokens[i] and seqs[i] are its token and seq, 0 when none;
 * losses[i] its losses (left as it was when none). Read lock. */
void gva_tracker_finish_grants(const struct gva_tracker *t, const struct gva_keys *k, pthread_t self, uint64_t *tokens,
                               uint64_t *seqs, uint64_t *losses);
/* Drops what a finish of k's keys by self settled: the grants seqs names, and self's older write grants of those
 * keys. Write lock. */
void gva_tracker_drop_finished(struct gva_tracker *t, const struct gva_keys *k, const uint64_t *seqs, pthread_t self);

/* Drops the read grants of k's keys whose results[i] is 0 (results NULL: every key's). held (NULL or k->n flags, at
 * the keys' places) learns which keys had a read grant live at now_ms. Write lock. */
void gva_tracker_drop_reads(struct gva_tracker *t, const struct gva_keys *k, const int *results, uint64_t now_ms,
                            bool *held);

#endif
