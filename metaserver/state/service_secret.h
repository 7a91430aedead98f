/*
 * What proves a local service's identity when it rejoins: a secret the Register reply gives the registering process
 * alone, HMAC-SHA256(service key, rank || incarnation). Rank and incarnation are public (every key query names
 * them); the secret is never sent again, so a rejoin that names another service's rank and incarnation without its
 * secret is refused and changes nothing.
 *
 * Derived rather than stored, so the service record keeps its layout and a restart loses nothing: the service key
 * (32 random bytes) is made once per data dir and kept in LMDB beside the records it vouches for; incarnations are
 * never reused (next_incarnation is durable before any Register is answered), so no two registrations share one.
 * Loop thread only.
 */
#ifndef MMC_SERVICE_SECRET_H
#define MMC_SERVICE_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "wire_limits.h"

/* Loads the data dir's service key, or makes and persists one. Returns 0 or MMC_ERROR. */
int service_secret_init(struct meta *m);
/* The secret of (rank, incarnation). Returns 0, or MMC_ERROR when libcrypto fails. */
int service_secret(const struct meta *m, uint32_t rank, uint64_t incarnation, uint8_t out[MMC_WIRE_MAC]);
/* Whether secret (len bytes) is svc's, compared in constant time. */
bool service_secret_ok(const struct meta *m, const struct service *svc, const void *secret, size_t len);

#endif
