/*
 * Every key a store sends, in its tenant's namespace (state/tenants.h): the RPC layer rewrites the keys of a
 * request before any handler sees them, so no layer below can reach another tenant's key by mistake. Replies carry
 * no key, so there is nothing to strip on the way out; remove_matching matches the key as the store wrote it.
 * Loop thread only.
 */
#ifndef MMC_TENANT_KEYS_H
#define MMC_TENANT_KEYS_H

#include <stddef.h>

#include "mmc.pb-c.h"

struct conn;

/*
 * Rewrites the keys of kb and put (either may be NULL) for c's tenant, in the request arena:
 * a tenant's key gets its tag; a key that cannot be one of the tenant's (too long with its tag, or, with tenants
 * configured, a default tenant's key that starts with the tag's byte) becomes "", which every handler refuses as
 * MMC_INVALID_PARAM for that item. Without tenants configured it does nothing.
 */
void tenant_keys_map(struct conn *c, Mmc__KeyBatch *kb, Mmc__PutBatch *put);

/* The key as c's store wrote it, or NULL when key (len bytes, as stored) is not in c's tenant's namespace. */
const char *tenant_key_own(const struct conn *c, const char *key, size_t len);

#endif
