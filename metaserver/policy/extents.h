/*
 * Allocation extents: one meta round trip for small puts. A store is granted, per replica, a range of a service's
 * pool held under its session; it carves objects out of it itself, writes them by RMA and publishes them with one
 * put that names where each replica went. The server checks every place against the extents the session holds on a
 * live (rank, incarnation) before an object exists, so nothing is readable before its bytes are written, and the
 * space a put did not use goes back to its pool when the session ends, the store returns the extent, or no put named
 * it for EXTENT_IDLE_MS. No extent outlives the server run that granted it: none is on disk. Loop thread only.
 */
#ifndef MMC_EXTENTS_H
#define MMC_EXTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"

#define EXTENT_IDLE_MS     60000u       /* an extent no put named for this long is returned */
#define EXTENT_BYTES_MAX   (256u << 20) /* the most one request may ask for, per extent */
#define EXTENT_SESSION_MAX 64u          /* extents one session may hold at a time */
#define EXTENT_PIECES_MAX  16u          /* uncarved ranges of one extent (commits out of order split them) */
#define EXTENT_SHARE       4u           /* all extents together hold at most 1/4 of the media uncarved */

struct extent {
	struct list link;     /* meta_policy.extents */
	struct extent *snext; /* the holding session's extents */
	struct session *session;
	uint64_t id;
	uint64_t grant; /* the id of its grant's first extent: a store keeps a grant's extents as one */
	uint32_t rank, media;
	uint64_t incarnation;
	uint64_t start, size; /* as granted */
	uint64_t idle_at_ms;  /* returned when no put names it before this */
	uint32_t npieces;
	struct {
		uint64_t start, end;
	} pieces[EXTENT_PIECES_MAX]; /* not carved yet, in address order; each is one reserved allocator block */
};

/* An ExtentRequest as the policy layer takes it. */
struct extent_call {
	struct session *session;
	uint64_t bytes, min_bytes; /* wanted and least useful size of each extent */
	uint32_t replicas;         /* 1..MMC_WIRE_REPLICAS */
	const int32_t *preferred;  /* ranks that must each hold one */
	uint32_t npreferred;
	bool spread;    /* by free space rather than in the writer's own pool first */
	uint32_t lanes; /* 1..MMC_WIRE_EXTENT_LANES groups of replicas extents, each placed on its own */
};

/*
 * Grants *lanes (1..call->lanes) groups of call->replicas extents (lane l's replica r at out[l * replicas + r]),
 * each group on distinct services placed as an object would be: preferred ranks, then the writer's own pool unless
 * spread, then the roomiest. All of one size: the largest up to bytes (times call->lanes over the lanes there are
 * services for, and at most 1/16 of the media over them) that fits the first lane without evicting, else min_bytes
 * after eviction. Later lanes go only where no earlier lane
 * is, and only while that fits without evicting: they spread a batch over services, nothing more. Never waits: a
 * request behind waiting allocations, or one with no room, gets MMC_NOT_ENOUGH_MEMORY (the store then allocates key by
 * key). MMC_INVALID_PARAM (sizes, replicas, duplicate or dead preferred ranks), MMC_EXCEED_CAPACITY (the session holds
 * EXTENT_SESSION_MAX), MMC_MALLOC_FAILED.
 */
int extents_grant(struct meta *m, const struct extent_call *call, struct extent **out, uint32_t *lanes);

/* One replica of a put: where it was written. */
struct put_place {
	uint64_t extent;
	uint32_t rank;
	uint64_t incarnation;
	uint64_t offset;
};

struct put_item {
	const char *key;
	uint64_t size;
	uint32_t checksum_type, checksum;
	const struct put_place *places; /* one per replica */
	size_t nplaces;
	uint64_t hash; /* object_hash of key: the caller hashes a batch first, to prefetch its lookups */
};

/*
 * Publishes one object s wrote into its extents: READABLE, its record in this turn's batch (the reply waits for it).
 * now_ms is clock_ms() of the batch: the extents it carves stay held until EXTENT_IDLE_MS after it.
 * Every place must lie, size rounded up to 4 KiB, inside an uncarved part of an extent s holds, on the live service
 * (rank, incarnation) it names, all on distinct services; the places become the object's blocks. Returns 0;
 * MMC_DUPLICATED_OBJECT (the key exists: first writer wins, nothing carved; *durable as alloc_queue_existing);
 * MMC_UNMATCHED_STATE (another put is still writing the key: alloc_queue_exists_code; nothing carved);
 * MMC_INVALID_PARAM (key, size, checksum type, places out of their extent or overlapping what was carved);
 * MMC_UNMATCHED_KEY (an extent s does not hold, or whose service is gone or is another incarnation: the store
 * allocates it again); MMC_MALLOC_FAILED.
 */
int extents_put(struct meta *m, struct session *s, const struct put_item *it, uint64_t now_ms, bool *durable);

/* s is done with extent id (unknown ids are ignored): its uncarved space goes back to the pool, through quarantine
 * when failed_writes (a write of s there was given up and may still land). */
void extents_return(struct meta *m, struct session *s, uint64_t id, bool failed_writes);
/* The session is closing: every extent it holds goes back, through quarantine (its writes may be in flight). */
void extents_session_closed(struct meta *m, struct session *s);
/* Returns the extents no put named since their idle_at_ms, through quarantine. */
void extents_sweep(struct meta *m, uint64_t now_ms);
/* Bytes of the media reserved in extents and not carved yet (for /metrics and tests). */
uint64_t extents_uncarved(struct meta *m, uint32_t media);

#endif
