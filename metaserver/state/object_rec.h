/* The store's record of a READABLE object (objects.c writes it, object_load.c reads it). Loop thread only. */
#ifndef MMC_OBJECT_REC_H
#define MMC_OBJECT_REC_H

#include <stdint.h>

#include "wire_limits.h"

/*
 * A record lives in the table OBJECTS_TABLE under the object's id (REC_KEY_LEN bytes, big-endian), not under its
 * key: ids only grow, so the store's key order is the order objects were made and each group commit appends at the
 * right edge of the store's tree, where records under random keys dirtied a page of their own each (at 10^7 objects
 * that was 9-12 us of the writer thread per put). Its value: header, the writer's checksum, the LRU stamp (lru.h),
 * nblobs rec_blob, then the key's bytes (version 4).
 *
 * Stores of format 2 and before kept records under the object's key in OBJECTS_TABLE_KEYED, without the key in the
 * value: version 1 with neither checksum nor stamp, 2 with the checksum, 3 with both. A load moves them.
 */
#define OBJECTS_TABLE       "objects_by_id"
#define OBJECTS_TABLE_KEYED "objects"
#define REC_KEY_LEN         8

struct rec_object {
	uint32_t version;
	uint32_t nblobs;
	uint64_t size;
};

struct rec_checksum {
	uint32_t type; /* MMC_WIRE_CHECKSUM_* */
	uint32_t value;
};

struct rec_blob {
	uint32_t rank;
	uint32_t media;
	uint64_t incarnation;
	uint64_t offset;
};

#define REC_VERSION_PLAIN 1
#define REC_VERSION_SUM   2
#define REC_VERSION_STAMP 3
#define REC_VERSION       4

/* A record, as written (version 4, the key after b[nblobs]) and as read back: older versions leave ck or stamp zero. */
struct rec {
	struct rec_object h;
	struct rec_checksum ck;
	uint64_t stamp;
	struct rec_blob b[2 * MMC_WIRE_REPLICAS];
};

static inline void rec_key_of(uint64_t id, unsigned char k[REC_KEY_LEN])
{
	for (int i = 0; i < REC_KEY_LEN; i++)
		k[i] = (unsigned char)(id >> (8 * (REC_KEY_LEN - 1 - i)));
}

static inline uint64_t rec_id_of(const unsigned char k[REC_KEY_LEN])
{
	uint64_t id = 0;

	for (int i = 0; i < REC_KEY_LEN; i++)
		id = id << 8 | k[i];
	return id;
}

#endif
