/*
 * The peer cache: what a store knows of the local services it moves bytes to and from (rank -> fabric address,
 * pool segments and keys), and for services on this host the mapping of their pool (the host path, host_map.h),
 * which needs no fabric and so no common provider. One meta round trip per service, then reused until the service
 * or the meta connection changes.
 */
#ifndef MMC_PEERS_H
#define MMC_PEERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fabric.h"
#include "wire_limits.h"

struct host_map;
struct mmc_store;

/* What a client needs to reach one local service's pool. */
struct peer {
	uint32_t rank;
	uint64_t incarnation;
	fi_addr_t fa;
	bool self;            /* this store's own pool: memcpy, not RMA */
	struct host_map *map; /* another process's pool on this host, mapped: memcpy (NULL: RMA) */
	uint64_t host_key;    /* what map's header must say (host_map_usable) */
	uint64_t losses;      /* meta_conn_losses() when fetched: a key learnt before a restart may be stale */
	uint32_t nsegs;
	struct {
		uint32_t media;
		uint64_t base, key, size;
	} segs[MMC_WIRE_SEGMENTS];
};

/* The cache, one entry per rank; a store embeds it (mmc_store.peers). */
struct peers {
	pthread_rwlock_t lock;
	struct peer *by_rank[MMC_RANKS_MAX];
	_Atomic uint64_t swept_ms; /* peers_sweep() last looked for same-host owners that left */
};

/*
 * Resolves (rank, incarnation) to a peer, asking the meta server on a miss or a stale entry (another incarnation,
 * or an entry learnt before the meta connection was lost); incarnation 0 takes whichever is registered. *out is a
 * copy of the cache entry and holds a reference to its map, if any: the caller ends with peer_release().
 * Thread-safe. Returns 0; MMC_INVALID_PARAM (rank out of range); MMC_LINK_NOT_FOUND (rank now holds another
 * incarnation, or the service cannot be reached from here: another provider and no same-host mapping);
 * MMC_MALLOC_FAILED; or what the ServiceQuery call returned (a server code, MMC_NOT_CONNECTED_META, MMC_TIMEOUT).
 */
int peers_get(struct mmc_store *s, uint32_t rank, uint64_t incarnation, struct peer *out);
/* Drops the map reference a peers_get() gave p (if any) and clears p->map. Thread-safe for distinct p. */
void peer_release(struct peer *p);
/* The owner of map left or changed (map NULL: an RMA to rank failed): drop rank's cache entry if it still uses map
 * (the next get asks again). Copies already handed out keep their own reference. Thread-safe; out-of-range ranks
 * are ignored. */
void peers_forget(struct mmc_store *s, uint32_t rank, const struct host_map *map);
/* At most every PEERS_SWEEP_MS: unmaps the pools of same-host owners that left or were killed, so that a reader does
 * not keep a gone process's memory alive. Thread-safe: one caller per period does the sweep, the others return. */
void peers_sweep(struct mmc_store *s);
#define PEERS_SWEEP_MS 200
/* An empty cache. peers_fini() frees every entry and drops its map reference; no other call may run on p then. */
void peers_init(struct peers *p);
void peers_fini(struct peers *p);

#endif
