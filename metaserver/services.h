/*
 * Membership: local services join (Register), leave (Unregister, a closed connection, a missed heartbeat) and,
 * after a meta server restart, come back (re-Register with their rank and incarnation). Loop thread only.
 */
#ifndef MMC_SERVICES_H
#define MMC_SERVICES_H

#include "meta.h"
#include "mmc.pb-c.h"

struct segment *service_segment(struct service *svc, uint32_t media);
struct service *service_get(struct meta *m, uint32_t rank);

/* Joins s as a local service (new, or returning with its old rank and incarnation). Returns 0 or MMC_*. */
int service_register(struct meta *m, struct session *s, const Mmc__Register *req, struct service **out);
/* Removes svc and every blob on it (objects with no blob left are dropped). */
void service_unmount(struct meta *m, struct service *svc, const char *why);
/* Unmounts detached services whose rejoin deadline passed. */
void services_sweep(struct meta *m, uint64_t now_ms);

/* Loads services from LMDB as detached, with a rejoin deadline. */
int services_load(struct meta *m);
void services_fini(struct meta *m);

#endif
