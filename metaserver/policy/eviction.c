#include "eviction.h"

#include "allocator.h"
#include "clock.h"
#include "lease.h"
#include "log.h"
#include "meta_policy.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "services.h"
#include "space.h"
#include "tier.h"

static bool object_on(const struct object *o, const struct service *svc)
{
	for (int i = 0; i < o->nblobs; i++)
		if (o->blobs[i].svc && blob_svc(&o->blobs[i]) == svc)
			return true;
	return false;
}

/*
 * Evicts LRU-tail objects while more(m, media, arg) holds; skips leased objects (counted in *skipped, as is a walk
 * stopped at its bound) and those whose every service is detached (after a restart, until they rejoin: their bytes
 * are not counted in the space evicting them is to free, and a move would have no connection to go on). At most
 * EVICT_SKIP_MAX are passed over, so a request's cost stays bounded when most of the tail is pinned. on: only
 * objects with a replica there (NULL: any).
 */
static uint64_t evict_while(struct meta *m, uint32_t media, const struct service *on,
                            bool (*more)(struct meta *, uint32_t, const void *), const void *arg, uint64_t *skipped)
{
	uint64_t now = clock_ms(), evicted = 0, passed = 0;
	struct object *o = olist_last(m, OLIST_LRU + media), *prev;

	for (; o && passed < EVICT_SKIP_MAX && more(m, media, arg); o = prev) {
		prev = olist_prev(o);
		if (!object_readable(o) || (on && !object_on(o, on))) {
			passed++;
			continue;
		}
		if (object_leased(o, now)) {
			(*skipped)++;
			passed++;
			continue;
		}
		log_debug("op=evict key=\"%.*s\" size=%llu", (int)o->keylen, object_key(o),
		          (unsigned long long)o->size);
		if (!tier_demote_victim(m, o)) /* one tier down when there is room, else gone */
			object_drop(m, o);
		evicted++;
	}
	if (passed >= EVICT_SKIP_MAX)
		(*skipped)++; /* stopped short, not out of victims: the request waits and tries again (blocked) */
	m->stats.evictions += evicted;
	return evicted;
}

static bool above(struct meta *m, uint32_t media, const void *arg)
{
	uint64_t used, total;

	space_usage(m, media, &used, &total);
	/* moves in flight give bytes back */
	used = used > m->policy->freeing[media] ? used - m->policy->freeing[media] : 0;
	return used > *(const uint64_t *)arg;
}

struct room {
	uint64_t size;
	uint32_t replicas;
	bool held;          /* some of the room is held until a commit lands */
	struct service *on; /* the room must be there (NULL: on any replicas services) */
};

static bool no_room(struct meta *m, uint32_t media, const void *arg)
{
	struct room *r = (struct room *)arg;
	struct allocator *a = r->on ? service_segment(r->on, media)->alloc : NULL;
	uint64_t held, lost;

	/* a demote gives its DRAM back only when its copy lands, and then holds it until its record's write does: once
	 * the moves in flight (counted for the whole media: a bound on this walk, not a promise) and the holds add up
	 * to the request, it waits for them (blocked) instead of moving the rest of the LRU down a tier */
	if (a)
		held = alloc_held(a);
	else
		space_held(m, media, &held, &lost);
	if (m->policy->freeing[media] + held >= r->size * r->replicas) {
		r->held = true;
		return false;
	}
	if (a)
		return alloc_largest_free(a) < r->size;
	return space_services_with_room(m, media, r->size, &r->held) < r->replicas;
}

/* Drops the tenant's least recently used objects, media by media, until it has room for bytes more. */
static uint64_t evict_tenant(struct meta *m, uint32_t tenant, uint64_t bytes)
{
	struct tenant *t = &m->tenants.t[tenant];
	uint64_t now = clock_ms(), evicted = 0, seen = 0;

	for (uint32_t media = 0; media < MEDIA_COUNT && !tenant_fits(t, bytes); media++) {
		struct object *o = olist_last(m, OLIST_LRU + media), *prev;

		for (; o && !tenant_fits(t, bytes) && seen < TENANT_SCAN_MAX; o = prev, seen++) {
			prev = olist_prev(o);
			if (tenant_of_key(m, object_key(o), o->keylen) != tenant || object_leased(o, now))
				continue;
			log_debug("op=evict key=\"%.*s\" size=%llu reason=tenant_quota tenant=%s", (int)o->keylen,
			          object_key(o), (unsigned long long)o->size, t->name);
			object_drop(m, o); /* not one tier down: the quota counts every media */
			evicted++;
		}
	}
	t->quota_evicted += evicted;
	m->stats.evictions += evicted;
	return evicted;
}

int eviction_tenant_room(struct meta *m, uint32_t tenant, uint64_t bytes)
{
	struct tenant *t = &m->tenants.t[tenant];

	if (tenant_fits(t, bytes))
		return 0;
	/* an object larger than the whole quota would take every object of the tenant and still not fit */
	if (!t->max_bytes || bytes <= t->max_bytes)
		evict_tenant(m, tenant, bytes);
	if (tenant_fits(t, bytes))
		return 0;
	t->refused++;
	return MMC_NOT_ENOUGH_MEMORY;
}

void eviction_check(struct meta *m, uint32_t media)
{
	uint64_t used, total, target, n, skipped = 0;

	space_usage(m, media, &used, &total);
	if (total == 0 || used * 100 <= total * m->conf.evict_high)
		return;
	target = total * m->conf.evict_low / 100;
	n = evict_while(m, media, NULL, above, &target, &skipped);
	log_info("op=evict media=%u evicted=%llu skipped_leased=%llu used_before=%llu total=%llu", media,
	         (unsigned long long)n, (unsigned long long)skipped, (unsigned long long)used,
	         (unsigned long long)total);
}

/* Evicts until r's room is there (or coming); *blocked when waiting for it is worth it. */
static uint64_t make_room(struct meta *m, uint32_t media, struct room *r, bool *blocked)
{
	uint64_t skipped = 0, n = evict_while(m, media, r->on, no_room, r, &skipped);

	/* the last victim's space may be held until its delete commits: then waiting is worth it */
	if (!r->on)
		space_services_with_room(m, media, r->size, &r->held);
	*blocked = skipped > 0 || r->held || !olist_empty(m, OLIST_ZOMBIES) || m->policy->freeing[media] > 0;
	return n;
}

uint64_t eviction_make_room(struct meta *m, uint32_t media, uint64_t size, uint32_t replicas, bool *blocked)
{
	struct room r = {size, replicas, false, NULL};

	return make_room(m, media, &r, blocked);
}

uint64_t eviction_make_room_on(struct meta *m, struct service *svc, uint32_t media, uint64_t size, bool *blocked)
{
	struct room r = {size, 1, false, svc};

	if (!svc || !service_segment(svc, media)) {
		*blocked = false;
		return 0;
	}
	return make_room(m, media, &r, blocked);
}
