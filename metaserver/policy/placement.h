/*
 * Where an object's replicas go. A single put prefers the writer's own pool, then the roomiest service on the
 * writer's host (first replica only), a batch spreads keys over services by free space; every replica is on a distinct
 * service; preferred services each get one replica. Either every replica is reserved or none is. Loop thread only.
 */
#ifndef MMC_PLACEMENT_H
#define MMC_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

struct place_req {
	uint64_t size;
	uint32_t replicas;        /* 1..8 */
	const int32_t *preferred; /* ranks that must each hold a replica */
	uint32_t npreferred;
	bool spread; /* batch placement */
	uint32_t media;
	const struct session *writer;
	/* services the roomiest choice passes over while another fits (an extent grant's earlier lanes); strict:
	 * never takes one of them */
	struct service *const *avoid;
	uint32_t navoid;
	bool strict;
};

/*
 * Reserves space for every replica of o (o->nblobs == r->replicas) and links the blobs to their services,
 * evicting unleased objects when the media is full. Returns 0; MMC_NOT_ENOUGH_MEMORY (no room, or fewer services
 * than replicas; *blocked tells whether room will come without the caller: read leases pin memory that will be
 * freed, or after a restart or takeover services are still rejoining or in their rejoin grace); MMC_INVALID_PARAM
 * (a preferred rank that is not a live service with this media, nor one rejoining).
 */
int placement_reserve(struct meta *m, const struct place_req *r, struct object *o, bool *blocked);

/* Whether svc is in its rejoin grace (ock.mmc.meta.rejoin_write_grace_ms, from svc->writable_after_ms): back after a
 * restart or as a new incarnation, its pool may still take a write granted before (a provider that does not check
 * keys lets it land, or one its store had not fenced yet), so nothing new is put there until it ends. */
bool placement_in_grace(const struct service *svc);

/* clock_ms() when the last service of the media in its rejoin grace takes bytes again; 0: none is in it. */
uint64_t placement_grace_end(const struct meta *m, uint32_t media);

/* Attached services of the media that take new bytes now (not in their rejoin grace). */
uint32_t placement_usable_services(const struct meta *m, uint32_t media);

/* 0 when replicas is 1..MMC_WIRE_REPLICAS and the n preferred ranks are at most that many, all distinct; else
 * MMC_INVALID_PARAM. */
int placement_check_preferred(const int32_t *preferred, uint32_t n, uint32_t replicas);

/*
 * Reserves an allocation extent per replica, placed as an object of r->size bytes would be: the largest size from
 * r->size down (halving, not below min_size) that fits without evicting; else, with may_evict, min_size evicting as
 * an object would. r->size is set to the size reserved. Returns as placement_reserve (never waits).
 */
int placement_reserve_extent(struct meta *m, struct place_req *r, struct object *o, uint64_t min_size, bool may_evict);

#endif
