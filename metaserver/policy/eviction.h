/*
 * DRAM eviction: per-media LRU by bytes with high/low watermarks (ock.mmc.evict_threshold_high / _low).
 * Objects under a read lease and objects still being written are never evicted. Loop thread only.
 */
#ifndef MMC_EVICTION_H
#define MMC_EVICTION_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

/* After an allocation: when media usage is above the high mark, evicts least recently used objects until it is
 * below the low mark. */
void eviction_check(struct meta *m, uint32_t media);

/* Before failing an allocation: evicts least recently used objects until `replicas` services have a free hole of
 * `size` bytes, or nothing evictable is left, or the demotes in flight will free replicas * size. Returns the number
 * of objects evicted; *blocked is set when leased objects (or removed objects still leased) hold memory that comes
 * back when their leases end, or demotes are in flight. */
uint64_t eviction_make_room(struct meta *m, uint32_t media, uint64_t size, uint32_t replicas, bool *blocked);

/* The same for one service that must hold the object (a preferred rank, an SSD key's own service): evicts only
 * objects with a replica there, until it has a free hole of size bytes. */
uint64_t eviction_make_room_on(struct meta *m, struct service *svc, uint32_t media, uint64_t size, bool *blocked);

/*
 * Before placing an object of bytes pool bytes for tenant (an index of meta.tenants, tenants configured): when the
 * tenant's quota (objects, pool bytes) has no room for it, evicts the tenant's own least recently used objects, never
 * another tenant's, looking at most at TENANT_SCAN_MAX records of the LRUs. Returns 0, or MMC_NOT_ENOUGH_MEMORY
 * when there is still no room (counted in the tenant's refused).
 */
int eviction_tenant_room(struct meta *m, uint32_t tenant, uint64_t bytes);

/* The LRU records one quota check looks through for the tenant's objects: other tenants' cold objects between it
 * and the tail bound its cost. */
#define TENANT_SCAN_MAX 65536
/* The objects one eviction passes over (leased, or on services not back yet) before it gives up for this request:
 * a tail of pinned objects bounds its cost (the request waits, blocked, and tries again). */
#define EVICT_SKIP_MAX 65536

#endif
