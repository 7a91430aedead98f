/*
 * alloc (put) and malloc (GVA) requests. Keys are placed one after the other; when the pool is full and the only
 * evictable bytes are pinned by read leases (or held until a delete commits), the request waits (up to
 * ock.mmc.meta.evict_wait_ms) for them instead of failing, and resumes where it stopped, in arrival order. Replies go
 * out through policy_ops, matched by request id, so a waiting request does not hold back the session's other
 * requests. Loop thread only.
 */
#ifndef MMC_ALLOC_QUEUE_H
#define MMC_ALLOC_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "policy_ops.h"

struct alloc_call {
	struct key_call keys; /* keys and sizes; lease_ttl_ms is the GVA write lease (0: the server's) */
	bool gva;             /* batch_malloc: an existing key answers with its address instead of a duplicate */
	bool spread;          /* batch placement over services by free space */
	uint32_t media;
	uint32_t replicas; /* 1..MMC_WIRE_REPLICAS */
	const int32_t *preferred;
	uint32_t npreferred;
};

/* Places call's keys and replies (reply_keys), or parks the request until room comes back. A call that breaks the
 * rules (replicas, duplicate preferred ranks) is answered MMC_INVALID_PARAM (reply_code). */
void alloc_queue_submit(struct meta *m, const struct alloc_call *call);
/* The object a new put of key (hash: object_hash of it) meets, or NULL: first writer wins, also over an object whose
 * services are away (rejoining after a restart, an orphaned SSD tier); *durable is set when the existing object's
 * record had to be queued again (its batch may have failed), so the reply must wait for the commit. */
struct object *alloc_queue_existing(struct meta *m, const char *key, size_t len, uint64_t hash, bool *durable);
/* What a put of session s that meets o is answered: MMC_DUPLICATED_OBJECT (the first writer won), or, while another
 * put is still writing o and s's store can wait that writer out, MMC_UNMATCHED_STATE: that writer may still fail, and
 * a put told its key exists must not return before the value it stands for is stored. A GVA allocation answers
 * MMC_DUPLICATED_OBJECT, as before. */
int alloc_queue_exists_code(const struct session *s, const struct object *o);
/* Space was freed (or time passed): returns idle extents, resumes waiting requests in arrival order; those past their
 * deadline fail. */
void alloc_queue_kick(struct meta *m);
/* The session's connection is closing: its waiting requests are dropped unanswered, its extents returned. */
void alloc_queue_session_closed(struct meta *m, struct session *s);
/* Frees every waiting request (shutdown). */
void alloc_queue_fini(struct meta *m);

#endif
