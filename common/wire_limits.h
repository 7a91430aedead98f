/* Limits and constants of the wire protocol, shared by libmmc and mmc-metaserver (one place for each limit). */
#ifndef MMC_WIRE_LIMITS_H
#define MMC_WIRE_LIMITS_H

#include <stdint.h>

#define MMC_WIRE_VERSION 1 /* major: a server refuses a Hello with another one */
#define MMC_WIRE_MINOR                                                                                                 \
	4 /* compatible additions: 1 = cluster secret, service secrets; 2 = tenants;                                   \
	   * 3 = Register.ssd_id; 4 = MMC_WIRE_MINOR_BEING_WRITTEN */
/* A put of a key another put is still writing is answered MMC_UNMATCHED_STATE (a store of this minor or later waits
 * that put out), not MMC_DUPLICATED_OBJECT, which a store takes for "stored" */
#define MMC_WIRE_MINOR_BEING_WRITTEN 4
#define MMC_WIRE_NONCE               32          /* bytes of each Hello / AuthChallenge nonce */
#define MMC_WIRE_MAC                 32          /* bytes of an HMAC-SHA256 proof or a service secret */
#define MMC_WIRE_SSD_ID              16          /* bytes of an SSD tier file's identity (Register.ssd_id) */
#define MMC_AUTH_TOKEN_MIN           16          /* bytes of a cluster secret at least */
#define MMC_FRAME_MAX                (64u << 20) /* bytes of one Frame, without the 4-byte length */
#define MMC_WIRE_KEYS_MAX            16384
#define MMC_WIRE_KEY_MAX             255
#define MMC_WIRE_PATTERN_MAX         1023 /* remove_matching: regular expression bytes */
#define MMC_WIRE_REPLICAS            8
#define MMC_WIRE_SEGMENTS            3
#define MMC_WIRE_ADDR_MAX            256
#define MMC_RANKS_MAX                1024 /* hard cap on world_size */
#define MMC_TENANT_NAME_MAX          16   /* Hello.tenant: 1..16 bytes of [A-Za-z0-9_-]; "" is the default tenant */

/* bytes of one Frame before the hello is through (a Hello or an AuthProof takes a few hundred): a peer that proved
 * nothing cannot make the server hold more */
#define MMC_WIRE_HELLO_FRAME_MAX 4096u

/* ExtentRequest.lanes: groups of replica extents one grant places, a batch's keys dealt over them */
#define MMC_WIRE_EXTENT_LANES 4

/* KeyBatch.flags */
#define MMC_WIRE_FLAG_SPREAD  0x1u /* alloc: batch placement (spread by free space) rather than local-first */
#define MMC_WIRE_FLAG_NOREPLY 0x2u /* release: the caller does not wait */

/* KeyItem.checksum_type, KeyResult.checksum_type: what the object's checksum is */
enum mmc_checksum_type {
	MMC_WIRE_CHECKSUM_NONE = 0,
	MMC_WIRE_CHECKSUM_CRC32C = 1,
};

/* Blob.state */
enum mmc_blob_state {
	MMC_BLOB_NONE = 0,
	MMC_BLOB_ALLOCATED = 1,
	MMC_BLOB_READABLE = 2,
	MMC_BLOB_REMOVING = 3,
};

/* BlobTask.op */
enum mmc_task_op {
	MMC_TASK_COPY = 1, /* copy size bytes from (src_media, src_offset) to (dst_media, dst_offset) */
};

/*
 * A GVA names (local service, media, offset) in 64 bits: bits 63..48 hold rank + 1 (so no valid GVA is 0),
 * bits 47..46 the media, bits 45..0 the offset (64 TiB per media per service).
 */
#define MMC_GVA_OFFSET_BITS 46
#define MMC_GVA_OFFSET_MASK ((UINT64_C(1) << MMC_GVA_OFFSET_BITS) - 1)

static inline uint64_t mmc_gva_make(uint32_t rank, uint32_t media, uint64_t offset)
{
	return ((uint64_t)(rank + 1) << 48) | ((uint64_t)(media & 3) << MMC_GVA_OFFSET_BITS) |
	       (offset & MMC_GVA_OFFSET_MASK);
}

static inline int mmc_gva_valid(uint64_t gva)
{
	return (gva >> 48) != 0;
}

static inline uint32_t mmc_gva_rank(uint64_t gva)
{
	return (uint32_t)(gva >> 48) - 1;
}

static inline uint32_t mmc_gva_media(uint64_t gva)
{
	return (uint32_t)(gva >> MMC_GVA_OFFSET_BITS) & 3;
}

static inline uint64_t mmc_gva_offset(uint64_t gva)
{
	return gva & MMC_GVA_OFFSET_MASK;
}

#endif
