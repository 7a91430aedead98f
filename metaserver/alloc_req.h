/*
 * alloc (put) and malloc (GVA) requests. Keys are placed one after the other; when the pool is full and the only
 * evictable bytes are pinned by read leases, the request waits (up to ock.mmc.meta.evict_wait_ms) for those leases
 * to end instead of failing, and resumes where it stopped. Replies are matched by request id, so a waiting request
 * does not hold back the connection's other requests. Loop thread only.
 */
#ifndef MMC_ALLOC_REQ_H
#define MMC_ALLOC_REQ_H

#include "meta.h"
#include "mmc.pb-c.h"

struct conn;

/* Handles an ALLOC or MALLOC frame: replies now, or parks the request. */
void alloc_req_start(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req);
/* Space was freed (or time passed): resumes waiting requests in arrival order. */
void alloc_req_kick(struct meta *m);
/* The connection is closing: its waiting requests are dropped. */
void alloc_req_conn_closed(struct meta *m, struct conn *c);
/* Frees every waiting request (shutdown). */
void alloc_req_fini(struct meta *m);

#endif
