/*
 * Read and write leases on objects: a session's hold that keeps an object's space from reuse until it is released
 * or expires. Records come from one pool indexed by uint32_t (0: none) and chain through the object, so a get takes
 * and gives back a lease without a malloc. Loop thread only.
 */
#ifndef MMC_LEASE_H
#define MMC_LEASE_H

#include <stdbool.h>
#include <stdint.h>

struct lease;
struct meta;
struct object;

/* Grants session a lease on o. ttl_ms 0 uses ock.mmc.meta.lease_ttl_ms; counted (a get) adds a count, uncounted (an
 * add_lease) sets the pin; either extends the expiry. Returns the granted ttl in ms, or 0 when out of memory. */
uint64_t lease_grant(struct meta *m, struct object *o, uint64_t session, uint64_t ttl_ms, bool counted);
/* The lease a client asking for asked_ms gets (0: the server's default): at most ock.mmc.meta.lease_ttl_max_ms
 * (or the default, when that is longer), since a lease pins space no eviction reaches, also after its holder left. */
uint64_t lease_ttl_of(const struct meta *m, uint64_t asked_ms);
/* Releases one count of session's lease (a get's release), or with all=true its add_lease pin (remove_lease); the
 * record goes when neither is left. gen: the record the grant answered (lease_gen), 0 for whichever session holds;
 * a release of a grant that expired names a record pruned since, and must not end the count of one granted after
 * it to another thread of the session. Returns false if it held no such count or pin. */
bool lease_release(struct meta *m, struct object *o, uint64_t session, bool all, uint32_t gen);
/* Whether session holds on o what a release takes: with pin, an add_lease pin; else a get's count (in record gen,
 * unless 0). */
bool lease_holds(struct object *o, uint64_t session, bool pin, uint32_t gen);
/* The number of session's lease record on o (what a get's reply names for its release), 0: none. */
uint32_t lease_gen(struct object *o, uint64_t session);
/* True when a lease on o is still live (expired ones are pruned). */
bool object_leased(struct object *o, uint64_t now_ms);
/* The lease session holds on o, or NULL; valid until the next lease_grant. */
struct lease *lease_find(struct object *o, uint64_t session);
/* Gives every lease record of o back to the pool (o is being freed). */
void leases_free_all(struct object *o);
/* Frees the pool (objects_fini: no object holds a lease any more). */
void leases_fini(void);

#endif
