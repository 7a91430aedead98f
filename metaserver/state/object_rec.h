/* The store's record of a READABLE object (objects.c writes it, object_load.c reads it). Loop thread only. */
#ifndef MMC_OBJECT_REC_H
#define MMC_OBJECT_REC_H

#include <stdint.h>

#include "wire_limits.h"

/*
 * Store record of a READABLE object: header, then (version 2 and on) the writer's checksum, then (version 3) its LRU
 * stamp (lru.h), then nblobs rec_blob. Written as version 3; versions 1 and 2 load with stamp 0, the oldest.
 */
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
#define REC_VERSION       3

/* A record, as written (version 3) and as read back: older versions leave ck or stamp zero. */
struct rec {
	struct rec_object h;
	struct rec_checksum ck;
	uint64_t stamp;
	struct rec_blob b[2 * MMC_WIRE_REPLICAS];
};

#endif
