#include "extents.h"
#include "meta_policy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "alloc_queue.h"
#include "allocator.h"
#include "clock.h"
#include "eviction.h"
#include "log.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "objects.h"
#include "placement.h"
#include "quarantine.h"
#include "services.h"
#include "space.h"

static uint64_t aligned(uint64_t size)
{
	return (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
}

/* struct meta is zeroed by its owner and has no init hook of ours: the list starts on first use. */
/* Initialised on first use. Ids start at random: a PutBatch or an ExtentReturn written for the server run before
 * (a call that waited for the new connection and went out on it) must name no extent of this one. */
static struct list *all(struct meta *m)
{
	if (!m->policy->extents.next) {
		list_init(&m->policy->extents);
		if (getrandom(&m->policy->next_extent_id, sizeof(m->policy->next_extent_id), 0) !=
		    sizeof(m->policy->next_extent_id))
			m->policy->next_extent_id = clock_ns();
		m->policy->next_extent_id >>= 1; /* room to count up */
	}
	return &m->policy->extents;
}

static uint32_t count_held(const struct session *s)
{
	uint32_t n = 0;

	for (const struct extent *e = s->extents; e; e = e->snext)
		n++;
	return n;
}

static int check_call(const struct extent_call *c)
{
	if (c->bytes == 0 || c->min_bytes == 0 || c->min_bytes > c->bytes || c->bytes > EXTENT_BYTES_MAX ||
	    c->lanes == 0 || c->lanes > MMC_WIRE_EXTENT_LANES)
		return MMC_INVALID_PARAM;
	return placement_check_preferred(c->preferred, c->npreferred, c->replicas);
}

/* Lanes need distinct services: with fewer than asked for, each of the lanes there can be is that much larger. */
static uint32_t lanes_possible(const struct meta *m, const struct extent_call *c)
{
	uint32_t n = placement_usable_services(m, MMC_MEDIA_DRAM) / c->replicas;

	return n == 0 ? 1 : n < c->lanes ? n : c->lanes;
}

/* One store must not take a large share of the pool for space it has not written yet: 1/16 of the media at most. */
static uint64_t grant_size(const struct meta *m, const struct extent_call *c, uint32_t lanes)
{
	uint64_t used, total, want = c->bytes / lanes * c->lanes;

	space_usage(m, MMC_MEDIA_DRAM, &used, &total);
	if (want > total / 16 / lanes)
		want = total / 16 / lanes;
	if (want > EXTENT_BYTES_MAX)
		want = EXTENT_BYTES_MAX;
	want &= ~(uint64_t)(ALLOC_ALIGN - 1);
	return want > aligned(c->min_bytes) ? want : aligned(c->min_bytes);
}

/* Extents are not evicted: all of them together never hold more than EXTENT_SHARE of the media uncarved, so that
 * idle ones (given back only after EXTENT_IDLE_MS) cannot starve the allocations eviction makes room for. */
static bool over_share(struct meta *m, uint64_t more)
{
	uint64_t used, total;

	space_usage(m, MMC_MEDIA_DRAM, &used, &total);
	return extents_uncarved(m, MMC_MEDIA_DRAM) + more > total / EXTENT_SHARE;
}

/* Turns blob b of the scratch object placement filled into extent e: the space stays reserved, now under s. */
static void adopt(struct meta *m, struct session *s, struct blob *b, uint64_t size, struct extent *e)
{
	*e = (struct extent){.session = s,
	                     .id = ++m->policy->next_extent_id,
	                     .rank = blob_svc(b)->rank,
	                     .media = b->media,
	                     .incarnation = blob_svc(b)->incarnation,
	                     .start = blob_offset(b),
	                     .size = size,
	                     .idle_at_ms = clock_ms() + EXTENT_IDLE_MS,
	                     .npieces = 1};
	e->pieces[0].start = blob_offset(b);
	e->pieces[0].end = blob_offset(b) + size;
	blob_forget(b);
	list_add_tail(all(m), &e->link);
	m->policy->uncarved[e->media] += size;
	e->snext = s->extents;
	s->extents = e;
}

/* Places one lane: replicas extents of *size bytes (the first lane settles the size for the others). A later lane
 * takes only services the lanes before (out[-k]) did not, and evicts nothing: a lane is there to spread a batch. */
static int grant_lane(struct meta *m, const struct extent_call *call, uint32_t lane, uint64_t *size,
                      struct extent **out)
{
	struct service *avoid[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES];
	struct place_req pr = {.avoid = avoid,
	                       .navoid = lane * call->replicas,
	                       .strict = true,
	                       .size = *size,
	                       .replicas = call->replicas,
	                       .preferred = call->preferred,
	                       .npreferred = call->npreferred,
	                       .spread = call->spread,
	                       .media = MMC_MEDIA_DRAM,
	                       .writer = call->session};
	struct extent *e[MMC_WIRE_REPLICAS] = {0};
	struct object *o = NULL;
	int rc = 0;

	for (uint32_t i = 0; i < pr.navoid; i++)
		avoid[i] = service_get(m, (out - pr.navoid)[i]->rank);
	for (uint32_t r = 0; r < call->replicas; r++)
		if (!(e[r] = malloc(sizeof(*e[r]))))
			rc = MMC_MALLOC_FAILED;
	if (!rc && !(o = object_new("", 0, (uint8_t)call->replicas)))
		rc = MMC_MALLOC_FAILED;
	if (!rc)
		rc = placement_reserve_extent(m, &pr, o, aligned(call->min_bytes), lane == 0);
	for (uint32_t r = 0; r < call->replicas; r++) {
		if (rc)
			free(e[r]);
		else
			adopt(m, call->session, &o->blobs[r], aligned(pr.size), out[r] = e[r]);
	}
	if (o)
		object_free(o);
	*size = aligned(pr.size);
	return rc;
}

int extents_grant(struct meta *m, const struct extent_call *call, struct extent **out, uint32_t *lanes)
{
	struct extent_call lane = *call;
	uint64_t size;
	int rc = check_call(call);

	if (rc)
		return rc;
	if (count_held(call->session) + call->replicas * call->lanes > EXTENT_SESSION_MAX)
		return MMC_EXCEED_CAPACITY;
	if (!list_empty(&m->policy->parked)) /* first come, first placed: waiting allocations go first */
		return MMC_NOT_ENOUGH_MEMORY;
	size = grant_size(m, call, lanes_possible(m, call));
	if (over_share(m, size * call->replicas * lanes_possible(m, call)))
		return MMC_NOT_ENOUGH_MEMORY;
	if ((rc = grant_lane(m, &lane, 0, &size, out)))
		return rc;
	/* every lane of one size, the store carves them alike; no more lanes than services to spread over */
	lane.bytes = lane.min_bytes = size;
	for (*lanes = 1; *lanes < call->lanes; ++*lanes)
		if (grant_lane(m, &lane, *lanes, &size, &out[*lanes * call->replicas]))
			break;
	for (uint32_t i = 0; i < *lanes * call->replicas; i++)
		out[i]->grant = out[0]->id;
	log_debug("op=extent_grant session=%llu replicas=%u lanes=%u bytes=%llu rank=%u offset=%llu",
	          (unsigned long long)call->session->id, call->replicas, *lanes, (unsigned long long)size, out[0]->rank,
	          (unsigned long long)out[0]->start);
	return 0;
}

static struct extent *held(const struct session *s, uint64_t id)
{
	for (struct extent *e = s->extents; e; e = e->snext)
		if (e->id == id)
			return e;
	return NULL;
}

/* The uncarved piece of e that holds all of [start, end), or -1. */
static int piece_of(const struct extent *e, uint64_t start, uint64_t end)
{
	for (uint32_t i = 0; i < e->npieces; i++)
		if (e->pieces[i].start <= start && end <= e->pieces[i].end)
			return (int)i;
	return -1;
}

/* The service an extent is on, if it is still the one the extent was granted on. */
static struct service *extent_service(struct meta *m, const struct extent *e)
{
	struct service *svc = service_get(m, e->rank);

	return svc && svc->incarnation == e->incarnation && service_segment(svc, e->media) ? svc : NULL;
}

static int check_place(struct meta *m, const struct session *s, const struct put_place *p, uint64_t size,
                       struct extent **out)
{
	struct extent *e = held(s, p->extent);
	struct service *svc = e ? extent_service(m, e) : NULL;
	int i;

	/* not this session's, or its service left (a rank that came back is another incarnation) */
	if (!svc || !svc->session || e->rank != p->rank || e->incarnation != p->incarnation)
		return MMC_UNMATCHED_KEY;
	if (p->offset % ALLOC_ALIGN || p->offset + size < p->offset ||
	    (i = piece_of(e, p->offset, p->offset + size)) < 0)
		return MMC_INVALID_PARAM;
	/* a carve from the middle splits a piece: past the table's size the store allocates the key again */
	if (e->pieces[i].start < p->offset && p->offset + size < e->pieces[i].end && e->npieces == EXTENT_PIECES_MAX)
		return MMC_UNMATCHED_KEY;
	*out = e;
	return 0;
}

/* Keeps e, and with it every extent of its grant, until idle_at_ms: the store counts a grant as fresh while any
 * put into any of its extents is taken (a one-key batch feeds one lane of four), and carves the others then too. */
/* A renewed extent goes to the end of the list: idle_at_ms only grows, so the list stays in idle order and the sweep
 * stops at the first extent still in use. */
static void renew_one(struct meta *m, struct extent *e, uint64_t idle_at_ms)
{
	e->idle_at_ms = idle_at_ms;
	list_del(&e->link);
	list_add_tail(all(m), &e->link);
}

static void renew(struct meta *m, struct extent *e, uint64_t idle_at_ms)
{
	if (e->idle_at_ms == idle_at_ms)
		return; /* the batch renewed it and its grant already */
	/* not a lane whose service left: it idles out and gives its count back (its space is gone from the total) */
	for (struct extent *x = e->session->extents; x; x = x->snext)
		if (x->grant == e->grant && x != e && extent_service(m, x))
			renew_one(m, x, idle_at_ms);
	renew_one(m, e, idle_at_ms);
}

/* Takes [start, end) out of e's uncarved pieces and makes it a block of its own (checked by check_place). */
static int carve(struct meta *m, struct extent *e, uint64_t start, uint64_t end, uint64_t now_ms)
{
	int i = piece_of(e, start, end);
	uint64_t pstart = e->pieces[i].start, pend = e->pieces[i].end;
	int rc = alloc_split(service_segment(extent_service(m, e), e->media)->alloc, start, end - start);

	if (rc)
		return rc;
	if (pstart < start && end < pend) {
		memmove(&e->pieces[i + 2], &e->pieces[i + 1], (e->npieces - (uint32_t)i - 1) * sizeof(e->pieces[0]));
		e->pieces[i + 1].start = end;
		e->pieces[i + 1].end = pend;
		e->pieces[i].end = start;
		e->npieces++;
	} else if (pstart < start) {
		e->pieces[i].end = start;
	} else if (end < pend) {
		e->pieces[i].start = end;
	} else {
		memmove(&e->pieces[i], &e->pieces[i + 1], (e->npieces - (uint32_t)i - 1) * sizeof(e->pieces[0]));
		e->npieces--;
	}
	m->policy->uncarved[e->media] -= end - start;
	renew(m, e, now_ms + EXTENT_IDLE_MS);
	return 0;
}

/* Checks every place of it before anything changes: *durable untouched, nothing carved on failure. */
static int check_item(struct meta *m, const struct session *s, const struct put_item *it, size_t *len,
                      struct extent **ext)
{
	int rc;

	if (!object_key_ok(it->key, len) || it->size == 0 || it->size > UINT64_MAX / 2 || it->nplaces == 0 ||
	    it->nplaces > MMC_WIRE_REPLICAS || it->checksum_type > MMC_WIRE_CHECKSUM_CRC32C)
		return MMC_INVALID_PARAM;
	for (size_t j = 0; j < it->nplaces; j++) {
		if ((rc = check_place(m, s, &it->places[j], aligned(it->size), &ext[j])))
			return rc;
		for (size_t k = 0; k < j; k++)
			if (it->places[k].rank == it->places[j].rank)
				return MMC_INVALID_PARAM;
	}
	return 0;
}

/* Gives back the blocks of o carved so far (a later carve failed): no record ever named them. */
static void uncarve(struct meta *m, struct object *o, size_t carved)
{
	for (size_t j = 0; j < carved; j++) {
		struct blob *b = &o->blobs[j];

		space_release(m, blob_svc(b), b->media, blob_offset(b), 0);
		blob_forget(b);
	}
}

int extents_put(struct meta *m, struct session *s, const struct put_item *it, uint64_t now_ms, bool *durable)
{
	struct extent *ext[MMC_WIRE_REPLICAS];
	struct object *o;
	size_t len;
	int rc = check_item(m, s, it, &len, ext);

	if (rc)
		return rc;
	MMC_ASSERT(it->hash == object_hash(it->key, len)); /* else the key would go into another key's chain */
	if ((o = alloc_queue_existing(m, it->key, len, it->hash, durable)))
		return alloc_queue_exists_code(s, o); /* its bytes stay in the extent's uncarved space */
	if (m->tenants.n && (rc = eviction_tenant_room(m, s->tenant, tenant_bytes(it->size, (uint32_t)it->nplaces))))
		return rc; /* its bytes stay in the extent's uncarved space, as a duplicate's do */
	if (!(o = object_new(it->key, len, (uint8_t)it->nplaces)))
		return MMC_MALLOC_FAILED;
	for (size_t j = 0; j < it->nplaces; j++) {
		const struct put_place *p = &it->places[j];
		struct service *svc = extent_service(m, ext[j]);

		if ((rc = carve(m, ext[j], p->offset, p->offset + aligned(it->size), now_ms))) {
			uncarve(m, o, j);
			object_free(o);
			return rc;
		}
		blob_place(&o->blobs[j], svc, ext[j]->media, p->offset);
	}
	o->size = it->size;
	o->checksum_type = (uint8_t)it->checksum_type;
	o->checksum = it->checksum;
	o->state = MMC_BLOB_ALLOCATED;
	object_index_add(m, o, it->hash);
	object_publish(m, o);
	return o->persisted ? 0 : MMC_META_BACKUP_ERROR; /* its record could not be queued: not on disk */
}

/*
 * The uncarved space goes back: no record ever pointed at it (the space-reuse invariant holds trivially). At once
 * when the store says none of its writes there failed; otherwise a write it gave up on may still land there, and the
 * space goes to quarantine first (a failed write, a store that left or went idle mid-put).
 */
static void give_back(struct meta *m, struct extent *e, bool reachable)
{
	struct service *svc = extent_service(m, e);
	struct extent **p = &e->session->extents;
	uint64_t now = clock_ms();

	for (uint32_t i = 0; i < e->npieces; i++) {
		m->policy->uncarved[e->media] -= e->pieces[i].end - e->pieces[i].start;
		if (svc && reachable)
			space_quarantine(m, svc, e->media, e->pieces[i].start, now);
		else if (svc)
			space_release(m, svc, e->media, e->pieces[i].start, 0);
	}
	while (*p && *p != e)
		p = &(*p)->snext;
	if (*p)
		*p = e->snext;
	list_del(&e->link);
	if (svc && e->npieces)
		objects_space_freed(m);
	free(e);
}

void extents_return(struct meta *m, struct session *s, uint64_t id, bool failed_writes)
{
	struct extent *e = held(s, id);

	if (e)
		give_back(m, e, failed_writes);
}

void extents_session_closed(struct meta *m, struct session *s)
{
	while (s->extents)
		give_back(m, s->extents, true);
}

void extents_sweep(struct meta *m, uint64_t now_ms)
{
	struct list *head = all(m), *it, *next;

	for (it = head->next; it != head; it = next) {
		struct extent *e = list_entry(it, struct extent, link);

		next = it->next;
		if (e->idle_at_ms > now_ms)
			break; /* in idle order (renew_one): the rest are in use too */
		log_debug("op=extent_idle session=%llu extent=%llu", (unsigned long long)e->session->id,
		          (unsigned long long)e->id);
		give_back(m, e, true);
	}
}

uint64_t extents_uncarved(struct meta *m, uint32_t media)
{
	all(m); /* the first call of a run draws its extent ids' start: a grant asks this first */
	return m->policy->uncarved[media];
}
