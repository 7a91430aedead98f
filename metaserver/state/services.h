/*
 * Membership: local services join (Register), leave (Unregister, a closed connection, a missed heartbeat) and,
 * after a meta server restart, come back (re-Register with their rank and incarnation). Loop thread only.
 */
#ifndef MMC_SERVICES_H
#define MMC_SERVICES_H

#include "meta.h"

struct segment *service_segment(struct service *svc, uint32_t media);
struct service *service_get(struct meta *m, uint32_t rank);

/* What a local service says of itself when it registers (the RPC layer's Register, decoded). */
struct service_spec_segment {
	uint32_t media;
	uint64_t size, base, key;
};

struct service_spec {
	int32_t rank;         /* the rank it had (rejoin), or -1 */
	uint64_t incarnation; /* the incarnation it had, or 0 */
	uint32_t world_size;  /* 0: the server's */
	const uint8_t *fabric_addr;
	size_t addr_len;
	const char *provider;
	const char *ssd_path;  /* NULL: none */
	const uint8_t *ssd_id; /* the SSD tier file's identity (MMC_WIRE_SSD_ID bytes); NULL: not given */
	size_t ssd_id_len;
	const char *boot_id;   /* NULL or "": unknown (no host path) */
	const char *pool_path; /* NULL or "": private pool */
	const uint8_t *secret; /* a rejoin: the secret its Register reply gave (service_secret.h) */
	size_t secret_len;
	size_t nsegs;
	struct service_spec_segment segs[MMC_WIRE_SEGMENTS];
	uint64_t host_key[MMC_WIRE_SEGMENTS]; /* per segment: the host path's key, 0 when not mappable */
};

/* Joins s as a local service (new, or returning with its old rank and incarnation). Returns 0 or MMC_*:
 * MMC_INVALID_PARAM (segments, address or provider out of bounds), MMC_REPEAT_CALL, MMC_EXCEED_CAPACITY,
 * MMC_MALLOC_FAILED, MMC_NOT_AUTHORIZED (a rejoin of a known rank and incarnation without its secret: nothing
 * changed). */
int service_register(struct meta *m, struct session *s, const struct service_spec *req, struct service **out);
/* Removes svc and every blob on it (objects with no blob left are dropped). */
void service_unmount(struct meta *m, struct service *svc, const char *why);
/* The label of each enum unmount_reason in mmc_unmounts_total{reason}. */
extern const char *const unmount_reason_names[];
/* Unmounts detached services whose rejoin deadline passed. */
void services_sweep(struct meta *m, uint64_t now_ms);

/* Loads services from LMDB as detached, with a rejoin deadline. */
int services_load(struct meta *m);
/* After the objects loaded: the orphaned SSD tiers among the loaded services, holding their objects, wait again for a
 * successor (ock.mmc.meta.rejoin_timeout_ms from now). */
void services_settle(struct meta *m);
void services_fini(struct meta *m);

#endif
