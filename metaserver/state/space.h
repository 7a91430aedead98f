/*
 * Space accounting over every local service's pools, per media: what placement and eviction decide from and what
 * /metrics reports; and the one way pool space goes back to an allocator. Loop thread only.
 */
#ifndef MMC_SPACE_H
#define MMC_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

/* Bytes used (held ones not counted) and total of a media over all attached services. */
void space_usage(const struct meta *m, uint32_t media, uint64_t *used, uint64_t *total);
/* Bytes of the media held until the commit of their delete lands, and held for good after a failed commit. */
void space_held(const struct meta *m, uint32_t media, uint64_t *held, uint64_t *lost);
/* Services of the media with a free hole of at least size bytes, or with that much held until a commit lands (*held
 * set when any is held): room that is on its way counts, so eviction does not evict more than it needs. */
uint32_t space_services_with_room(const struct meta *m, uint32_t media, uint64_t size, bool *held);

/*
 * Gives a blob's range back to its service's allocator. unlink_seq is the persistence batch holding the change
 * that stops every record on disk pointing at the range (0: no record ever did); the range is reused only once
 * that batch is durable (alloc_release_after). Every release of pool space goes through here.
 */
void space_release(struct meta *m, struct service *svc, uint32_t media, uint64_t offset, uint64_t unlink_seq);

#endif
