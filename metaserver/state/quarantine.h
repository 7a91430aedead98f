/*
 * Space a write may still reach. An RMA write its writer gave up on can still land: while the owner of the pool is
 * stopped, the write waits in the owner's socket, and the owner applies it as soon as it runs again, whatever the
 * writer did meanwhile (closing its connection does not take back bytes the owner's kernel already holds). So the
 * space of a put that failed, of a writer that went away mid-put and of an extent a failed write went into is not
 * handed out again at once: it is set aside until its owner has been seen running (frames arriving from it) for
 * QUARANTINE_RUN_MS after the space was set aside. A running owner applies what its sockets hold within
 * microseconds, so a later put can no longer be overwritten there. The space-reuse invariant (allocator.h) still
 * applies when the space is finally released. Loop thread only.
 */
#ifndef MMC_QUARANTINE_H
#define MMC_QUARANTINE_H

#include <stdint.h>

#include "meta.h"

#define QUARANTINE_RUN_MS 1000u

/* Sets [offset, ...) of svc's media aside instead of releasing it; released later as space_release would. Space of
 * a service that leaves meanwhile goes with it. */
void space_quarantine(struct meta *m, struct service *svc, uint32_t media, uint64_t offset, uint64_t now_ms);
/* svc's session sent a frame at seen_ms: releases what it has been seen running long enough for. */
void quarantine_seen(struct meta *m, struct service *svc, uint64_t seen_ms);
/* Forgets what svc has set aside (it leaves; its allocator goes with it). */
void quarantine_fini(struct service *svc);
/* Bytes set aside on media over all services: reserved in their allocators, not in use. */
uint64_t quarantine_bytes(const struct meta *m, uint32_t media);

#endif
