/*
 * Tenants of the object store (ock.mmc.meta.tenants_file): who a connection is, the namespace its keys live in,
 * and what it may hold. A tenant is named by the secret a store proves in its hello (rpc/auth.c), never by a field a
 * store sets alone. Inside the server a tenant's key is its tag (0xFF, the name, 0xFF) then the store's key: no key
 * of the default tenant starts with 0xFF (the RPC layer refuses one while tenants are configured), so the
 * namespaces cannot meet, and the default tenant's keys are stored exactly as before. The tag never leaves the
 * server towards a store. Counts (objects, pool bytes) are kept at the index's add and delete; quotas are checked
 * at placement (policy/). Loop thread only.
 */
#ifndef MMC_TENANTS_H
#define MMC_TENANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_limits.h"

#define TENANT_TAG     0xFFu /* first and last byte of a tenant's tag */
#define TENANTS_MAX    256   /* the default tenant and 255 named ones */
#define TENANT_TAG_MAX (MMC_TENANT_NAME_MAX + 2)
#define TENANT_NONE    UINT32_MAX /* a tagged key of no configured tenant (one since removed from the file) */

struct meta;
struct object;

struct tenant {
	char name[MMC_TENANT_NAME_MAX + 1]; /* "default" for tenant 0 */
	uint8_t tag[TENANT_TAG_MAX];        /* 0xFF name 0xFF; empty for the default tenant */
	uint8_t taglen;
	char secret[256];     /* what its stores prove; "" for the default tenant (the cluster secret) */
	uint64_t max_bytes;   /* pool bytes its objects may take (size x replicas); 0: no limit */
	uint64_t max_objects; /* objects it may hold; 0: no limit */
	uint64_t bytes;       /* what its indexed objects take */
	uint64_t objects;
	uint64_t refused;       /* placements refused for its quota */
	uint64_t quota_evicted; /* its own objects evicted to make room inside its quota */
	bool removed;           /* no longer in the file (a reload): no hello may claim it; its keys stay counted */
};

/* Every tenant: t[0] is the default one; n == 0 when no tenants file is configured (no counting at all). */
struct tenants {
	struct tenant *t;
	uint32_t n;
};

/*
 * Reads the tenants file at path into m->tenants (replacing nothing: called once, before the load). One tenant a
 * line: `name secret_file [max_bytes=SIZE] [max_objects=N]`; `#` starts a comment. The name `default` sets the
 * default tenant's quotas and takes `-` as its secret file (it proves the cluster secret). The file must not be
 * readable or writable by group or others; a relative secret file is relative to the file's folder. cluster is the
 * cluster secret ("" none): no tenant may share it, nor one tenant another's. Returns 0 or MMC_INVALID_PARAM with
 * a message in err (never holding a secret).
 */
int tenants_load(struct meta *m, const char *path, const char *cluster, char *err, size_t errlen);
/*
 * SIGHUP: reads the tenants file at path again. A tenant keeps its index and counts; secrets and quotas take the
 * file's values (a changed secret holds for the next hellos); a new name is added; a name no longer in the file is
 * marked removed (its stores' connections are the RPC layer's to close). Only with tenants configured. Returns 0,
 * or MMC_INVALID_PARAM with a message in err and the running table unchanged.
 */
int tenants_reload(struct meta *m, const char *path, const char *cluster, char *err, size_t errlen);
/* tenants_reload in two steps, for a reload that must fail whole before it changes anything: the file read and
 * checked into *fresh (0, or MMC_INVALID_PARAM with a message in err and nothing to free), then taken into the
 * running table (which consumes *fresh). */
int tenants_reread(const struct meta *m, const char *path, const char *cluster, struct tenants *fresh, char *err,
                   size_t errlen);
void tenants_take(struct meta *m, struct tenants *fresh);
/* Frees the table. */
void tenants_free(struct meta *m);

/* The configured tenant called name (1..MMC_TENANT_NAME_MAX bytes), or NULL (also for a removed one). */
struct tenant *tenant_by_name(struct meta *m, const char *name);

/* The index of the tenant that key (len bytes, as stored) belongs to: 0 for an untagged key, TENANT_NONE for the
 * tag of a tenant no longer configured. Only with tenants configured. */
uint32_t tenant_of_key(const struct meta *m, const char *key, size_t len);

/* o's space is held (delta 1: indexed, or its tenant configured since) or given back (-1): its tenant's counts
 * follow, once each way (o->counted). A removed object still pinned (a lease, a put in flight) still counts: its
 * space is still its tenant's. */
void tenant_count(struct meta *m, struct object *o, int delta);

/* The pool bytes an object of size bytes in replicas blobs takes, as its tenant's quota counts them. */
uint64_t tenant_bytes(uint64_t size, uint32_t replicas);

/* Whether tenant t can take one more object of bytes pool bytes (size x replicas) within its quotas. */
bool tenant_fits(const struct tenant *t, uint64_t bytes);

#endif
