/*
 * A store's allocation extents: one meta round trip for small puts. The meta server grants, per placement class
 * (replicas, preferred ranks, spread), a group of extents, one per replica on distinct services, held under this
 * store's session; puts carve the same range out of every extent of the group (lockstep bump pointers), write their
 * bytes by RMA and publish them with one PutBatch that names the places. A group is trusted only under the meta
 * connection it was granted on (meta_conn_losses) and only while the server cannot have taken it back as idle:
 * carving stops half the server's idle time after the last put it confirmed. Thread-safe (one leaf lock, held over
 * no call). The header of both halves: extent.c grants, carves and returns; extent_put.c sends the PutBatch.
 */
#ifndef MMC_EXTENT_H
#define MMC_EXTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mmc.pb.h"
#include "wire.h"
#include "xfer.h"
#include "wire_limits.h"

struct mmc_store;

/* Frame bodies of lib/proto/mmc.proto (beside wire.h's). */
enum {
	WB_EXTENT_REQUEST = 34,
	WB_PUT = 35,
	WB_EXTENT_RETURN = 36,
	WB_EXTENT_GRANT = 64,
};

#define EXTENT_OBJECT_MAX (4u << 20)   /* larger objects take the alloc + commit path */
#define EXTENT_BYTES      (16u << 20)  /* asked for per extent, or room for EXTENT_BATCHES batches if that is more */
#define EXTENT_BATCHES    4u           /* so that a grant's round trip is paid once per this many batches */
#define EXTENT_ASK_MAX    (256u << 20) /* the most asked for (the server's most); a larger batch allocates by key */
#define EXTENT_GROUPS_MAX 8u           /* classes one store keeps at a time */
#define EXTENT_BACKOFF_MS 1000u        /* after a refused grant, allocate key by key for this long */

/* Where a put's replicas go: keys of one class share extents. */
struct extent_class {
	uint32_t replicas;
	int32_t preferred[MMC_WIRE_REPLICAS];
	uint32_t npreferred;
	bool spread;
	uint32_t lanes; /* asked for; spread: MMC_WIRE_EXTENT_LANES, placed by free space on distinct services */
};

struct extent_group {
	struct extent_group *next;
	struct extent_class cls;
	uint64_t losses;                      /* meta_conn_losses() when granted */
	uint64_t size;                        /* bytes of each extent */
	uint64_t used[MMC_WIRE_EXTENT_LANES]; /* carved so far, per lane */
	uint64_t fresh_until_ms;              /* clock_ms(): no carve after this */
	uint64_t idle_ms;                     /* the server's: an extent no put named for this long is taken back */
	uint32_t inflight;                    /* puts carving from it that have not finished */
	bool retired;                         /* no new carves; returned to the server when inflight drops to 0 */
	bool failed_writes;                   /* a write into it was given up: returned as "failed" (quarantine) */
	uint32_t lanes;                       /* granted: at most the class's, no more than distinct services */
	uint32_t n;                           /* lanes * replicas */
	mmc_Extent ext[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES]; /* lane l's replica r: ext[l * replicas + r] */
};

struct extent_cache;

struct extent_cache *extent_cache_new(void);
/* Forgets every group (the session they belong to is closing). NULL is ignored. */
void extent_cache_free(struct extent_cache *c);

/* The keys a put carves: key index[j] of m, of sizes[index[j]] bytes; lane[index[j]] gets its lane. */
struct extent_keys {
	size_t m;
	const size_t *index;
	const uint64_t *sizes; /* per key */
	uint8_t *lane;         /* per key */
	size_t stride;         /* of sizes and lane: PER_KEY */
};

/*
 * Carves the keys out of a group of class cls, dealt over its lanes in runs of consecutive keys, asking the meta
 * server for a new group when none has room (one round trip). On 0, *g is pinned until extents_done, k->lane is
 * set, and each lane's keys follow each other from base[l]: replica r of lane l's run starts at
 * g->ext[l * replicas + r].offset + base[l]. Otherwise the put allocates key by key:
 * MMC_NOT_ENOUGH_MEMORY (no room, or a grant was refused less than EXTENT_BACKOFF_MS ago), or what the grant call
 * returned. deadline_ms: the put's, for a grant while the connection is down (mcall.deadline_ms).
 */
int extents_take(struct mmc_store *s, const struct extent_class *cls, const struct extent_keys *k,
                 struct extent_group **g, uint64_t *base, uint64_t deadline_ms);

/*
 * A put that took g is done. confirmed_ms: the clock_ms() before its PutBatch was sent when the server accepted a
 * place in g (the server's idle clock restarted no earlier), 0 otherwise; refused: the server turned a place in g
 * down (g is retired); failed_writes: a write into g failed or was given up, and may still land (g is retired, and
 * returned as such: the server sets its space aside until the owners are seen running). The last put of a retired
 * group sends its ExtentReturn (no reply).
 */
void extents_done(struct mmc_store *s, struct extent_group *g, uint64_t confirmed_ms, bool refused, bool failed_writes);

/* The items of one PutBatch: key index[i] of a put, replica r written at xk[key].targets[r] inside lane[key] of g. */
struct extent_put {
	size_t n;
	const size_t *index;
	const char *const *keys;
	const uint64_t *sizes;
	const struct wire_checksum *sums; /* per key */
	const struct xfer_key *xk;
	const uint8_t *lane; /* per key */
	const struct extent_group *g;
	size_t stride; /* of the per-key fields: PER_KEY */
};

/* The PutBatch of p, to send as fields NULL, msg h (wire.h); p must outlive the encode. */
void extent_put_hand(struct wire_hand *h, const struct extent_put *p);

/*
 * Sends the PutBatch (one round trip, answered once the records are durable) and hands each KeyResult to fn, in
 * item order. Returns the whole-call result: 0, a server code, or a transport error (MMC_NOT_CONNECTED_META,
 * MMC_TIMEOUT). Never sent twice: a put's places live only in the session that holds the extents. deadline_ms as
 * extents_take's.
 */
int extents_put_call(struct mmc_store *s, const struct extent_put *p,
                     bool (*fn)(void *arg, size_t i, const mmc_KeyResult *r), void *arg, uint64_t deadline_ms);

#endif
