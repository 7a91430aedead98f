#include "services.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "objects.h"
#include "persist.h"
#include "quarantine.h"
#include "service_secret.h"

/* LMDB record of a service, keyed by the rank as 4 big-endian bytes. */
struct rec_service {
	uint32_t version;
	uint32_t nsegs;
	uint64_t incarnation;
	struct {
		uint32_t media;
		uint32_t pad;
		uint64_t size;
	} segs[MMC_WIRE_SEGMENTS];
	char host[256];
	uint32_t pid;
};

#define REC_VERSION 1

/*
 * A service's SSD tier file, keyed by the rank's 4 bytes and 's' (a record of its own, which releases before this
 * one skip with a warning): a service loaded after a restart knows its file, so that when it does not rejoin (it
 * died with the server) its SSD keys wait for a successor that brings the file, as they do when it leaves.
 */
struct rec_service_ssd {
	uint32_t version;
	uint32_t pad;
	uint64_t incarnation; /* the service's: a record a release without these left behind names another */
	uint8_t id[MMC_WIRE_SSD_ID];
	char path[1024];
};

#define REC_SSD_VERSION 1
#define SSD_KEY_LEN     5

/*
 * An orphaned SSD tier (its service left, its keys wait for a successor that brings the file), keyed by the rank its
 * blobs' records name and 'o': a meta server restarted meanwhile loads it, with its objects, instead of dropping
 * them as blobs of a service that is gone. That rank is given to no new service while the orphan waits.
 */
struct rec_orphan {
	uint32_t version;
	uint32_t pad;
	uint64_t incarnation;
	uint64_t ssd_size;
	uint8_t id[MMC_WIRE_SSD_ID];
	char host[256];
	char path[1024];
};

#define REC_ORPHAN_VERSION 1
static int rejoin_refused_bucket;
static const char next_incarnation_key[] = "next_incarnation";

static void rank_key(uint32_t rank, unsigned char out[4])
{
	out[0] = (unsigned char)(rank >> 24);
	out[1] = (unsigned char)(rank >> 16);
	out[2] = (unsigned char)(rank >> 8);
	out[3] = (unsigned char)rank;
}

static uint32_t rank_of_key(const unsigned char k[4])
{
	return (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3];
}

struct segment *service_segment(struct service *svc, uint32_t media)
{
	for (uint32_t i = 0; i < svc->nsegs; i++)
		if (svc->segs[i].media == media)
			return &svc->segs[i];
	return NULL;
}

struct service *service_get(struct meta *m, uint32_t rank)
{
	return rank < MMC_RANKS_MAX ? m->ranks[rank] : NULL;
}

static void ssd_key(uint32_t rank, unsigned char out[SSD_KEY_LEN])
{
	rank_key(rank, out);
	out[4] = 's';
}

static void orphan_key(uint32_t rank, unsigned char out[SSD_KEY_LEN])
{
	rank_key(rank, out);
	out[4] = 'o';
}

static void orphan_persist(struct meta *m, const struct service *o)
{
	struct rec_orphan r;
	unsigned char k[SSD_KEY_LEN];

	memset(&r, 0, sizeof(r));
	r.version = REC_ORPHAN_VERSION;
	r.incarnation = o->incarnation;
	r.ssd_size = o->segs[0].size;
	memcpy(r.id, o->ssd_id, sizeof(r.id));
	memcpy(r.host, o->host, sizeof(r.host));
	_Static_assert(sizeof(r.path) == sizeof(o->ssd_path), "the record holds the whole path");
	memcpy(r.path, o->ssd_path, sizeof(r.path));
	orphan_key(o->orphan_of, k);
	persist_put(m->persist, m->db_services, k, sizeof(k), &r, sizeof(r));
}

static void service_persist_ssd(struct meta *m, const struct service *svc)
{
	struct rec_service_ssd r;
	unsigned char k[SSD_KEY_LEN];

	ssd_key(svc->rank, k);
	if (!svc->has_ssd_id) {
		persist_del(m->persist, m->db_services, k, sizeof(k)); /* the rank's earlier service may have had one */
		return;
	}
	memset(&r, 0, sizeof(r));
	r.version = REC_SSD_VERSION;
	r.incarnation = svc->incarnation;
	memcpy(r.id, svc->ssd_id, sizeof(r.id));
	_Static_assert(sizeof(r.path) == sizeof(svc->ssd_path), "the record holds the whole path");
	memcpy(r.path, svc->ssd_path, sizeof(r.path));
	persist_put(m->persist, m->db_services, k, sizeof(k), &r, sizeof(r));
}

static void service_persist(struct meta *m, struct service *svc)
{
	struct rec_service r;
	unsigned char k[4];

	memset(&r, 0, sizeof(r));
	r.version = REC_VERSION;
	r.nsegs = svc->nsegs;
	r.incarnation = svc->incarnation;
	for (uint32_t i = 0; i < svc->nsegs; i++) {
		r.segs[i].media = svc->segs[i].media;
		r.segs[i].size = svc->segs[i].size;
	}
	memcpy(r.host, svc->host, sizeof(r.host));
	r.pid = svc->pid;
	rank_key(svc->rank, k);
	persist_put(m->persist, m->db_services, k, sizeof(k), &r, sizeof(r));
	persist_put(m->persist, m->db_info, next_incarnation_key, sizeof(next_incarnation_key) - 1,
	            &m->next_incarnation, sizeof(m->next_incarnation));
	service_persist_ssd(m, svc);
}

static enum persist_seq_state batch_state(const void *persist, uint64_t seq)
{
	return persist_seq_state(persist, seq);
}

/* Every pool's allocator learns from the persistence layer when freed space may be reused. */
static struct allocator *segment_allocator(struct meta *m, uint64_t size)
{
	struct allocator *a = alloc_create(size);

	if (a)
		alloc_set_durability(a, batch_state, m->persist);
	return a;
}

struct service *service_slots[SERVICE_SLOTS];
static uint32_t slot_cursor; /* where the search for a free slot starts */

/* A zeroed service with a slot of its own (what its blobs name it by), or NULL. */
static struct service *service_new(void)
{
	struct service *svc;

	for (uint32_t n = 1; n < SERVICE_SLOTS; n++) {
		uint32_t slot = (slot_cursor + n) % SERVICE_SLOTS;

		if (slot == 0 || service_slots[slot])
			continue;
		if (!(svc = calloc(1, sizeof(*svc))))
			return NULL;
		list_init(&svc->quarantine);
		svc->slot = slot;
		service_slots[slot] = svc;
		slot_cursor = slot;
		return svc;
	}
	return NULL;
}

static void service_free(struct service *svc)
{
	MMC_ASSERT(svc->nblobs == 0); /* no blob may name its slot once it is reused */
	quarantine_fini(svc);
	for (uint32_t i = 0; i < svc->nsegs; i++)
		alloc_destroy(svc->segs[i].alloc); /* NULL-safe: an orphaned SSD allocator was handed over */
	service_slots[svc->slot] = NULL;
	free(svc);
}

static bool same_ssd(const struct service *svc, const uint8_t *id)
{
	return svc->has_ssd_id && memcmp(svc->ssd_id, id, MMC_WIRE_SSD_ID) == 0;
}

/* How many connected services other than self bring the SSD file with identity id. */
static unsigned connected_with_ssd(const struct meta *m, const struct service *self, const uint8_t *id)
{
	unsigned n = 0;

	for (uint32_t r = 0; r < m->rank_hi; r++) {
		const struct service *o = m->ranks[r];

		n += o && o != self && o->session && same_ssd(o, id);
	}
	return n;
}

/*
 * The orphaned SSD tier in the file req's service brings, by the file's own identity: the same path on a host of
 * the same name may be another file (a fresh disk, a cloned host), whose bytes are not the orphan's keys. An
 * identity that another live service or a second orphan also has is a copied file (a cloned disk or VM image):
 * which copy holds the keys cannot be told, so none adopts them.
 */
static struct service *find_orphan(struct meta *m, const struct service *self, const struct service_spec *req)
{
	struct service *found = NULL;
	unsigned n = 0;

	if (req->ssd_id_len != MMC_WIRE_SSD_ID)
		return NULL;
	for (struct list *it = m->orphans.next; it != &m->orphans; it = it->next) {
		struct service *o = list_entry(it, struct service, orphan_link);

		if (same_ssd(o, req->ssd_id) && n++ == 0)
			found = o;
	}
	if (found)
		n += connected_with_ssd(m, self, req->ssd_id);
	if (n > 1)
		log_warn("op=adopt_ssd err=copied_file host=\"%s\" path=\"%s\" services=%u: SSD tier files with one "
		         "identity, a copy; none adopts the keys",
		         self->host, req->ssd_path ? req->ssd_path : "", n);
	return n == 1 ? found : NULL;
}

/* Moves blob b to the service arg (same media and offset). */
static void hand_over(struct meta *m, struct object *o, struct blob *b, void *arg)
{
	uint32_t media = b->media;
	uint64_t offset = blob_offset(b);

	blob_forget(b);
	blob_place(b, arg, media, offset);
}

static void hand_over_ssd(struct meta *m, struct object *o, struct blob *b, void *arg)
{
	if (b->media == MMC_MEDIA_SSD)
		hand_over(m, o, b, arg);
}

static void adopt_blob(struct meta *m, struct object *o, struct blob *b, void *arg)
{
	hand_over(m, o, b, arg);
	if (o->persisted)
		object_persist(m, o); /* now under the new rank and incarnation */
}

static void lose_blob(struct meta *m, struct object *o, struct blob *b, void *arg)
{
	object_lose_blob(m, o, b);
}

/* The orphan o goes (adopted, or its wait is over): its record with it. */
static void orphan_forget(struct meta *m, struct service *o)
{
	unsigned char k[SSD_KEY_LEN];

	orphan_key(o->orphan_of, k);
	persist_del(m->persist, m->db_services, k, sizeof(k));
	list_del(&o->orphan_link);
	service_free(o);
}

static void adopt(struct meta *m, struct service *svc, struct service *o)
{
	struct segment *seg = service_segment(svc, MMC_MEDIA_SSD);
	uint64_t n = o->nblobs;

	alloc_destroy(seg->alloc);
	seg->alloc = o->segs[0].alloc;
	o->segs[0].alloc = NULL;
	objects_each_blob(m, o, adopt_blob, svc);
	orphan_forget(m, o);
	log_info("op=adopt_ssd rank=%u path=\"%s\" blobs=%llu", svc->rank, svc->ssd_path, (unsigned long long)n);
}

/* Orphans nobody adopted in time: their objects go. */
static void orphans_sweep(struct meta *m, uint64_t now_ms)
{
	struct list *it, *next;

	for (it = m->orphans.next; it != &m->orphans; it = next) {
		struct service *o = list_entry(it, struct service, orphan_link);

		next = it->next;
		if (o->rejoin_deadline_ms > now_ms)
			continue;
		objects_each_blob(m, o, lose_blob, NULL);
		orphan_forget(m, o);
	}
}

/*
 * The SSD file outlives the process: its blobs wait, unreadable, for a service that brings the same file (its
 * ssd_id) to adopt them (ock.mmc.meta.rejoin_timeout_ms), instead of being dropped with the DRAM ones.
 */
static void orphan_ssd(struct meta *m, struct service *svc)
{
	struct segment *seg = service_segment(svc, MMC_MEDIA_SSD);
	struct service *o;

	/* a connected service already brings this file (its successor registered before this one's end was seen):
	 * the file is in use again, and its old keys may be overwritten; they go with this service */
	if (!seg || !svc->has_ssd_id || connected_with_ssd(m, svc, svc->ssd_id) || !(o = service_new()))
		return;
	o->rank = UINT32_MAX;
	o->orphan_of = svc->rank;
	o->incarnation = svc->incarnation;
	memcpy(o->host, svc->host, sizeof(o->host));
	memcpy(o->ssd_path, svc->ssd_path, sizeof(o->ssd_path));
	memcpy(o->ssd_id, svc->ssd_id, sizeof(o->ssd_id));
	o->has_ssd_id = true;
	o->nsegs = 1;
	o->segs[0] = *seg;
	seg->alloc = NULL; /* the orphan owns the SSD allocator now */
	o->rejoin_deadline_ms = clock_ms() + m->conf.rejoin_timeout_ms;
	objects_each_blob(m, svc, hand_over_ssd, o);
	list_add_tail(&m->orphans, &o->orphan_link);
	orphan_persist(m, o);
	log_info("op=orphan_ssd host=\"%s\" path=\"%s\" blobs=%llu", o->host, o->ssd_path,
	         (unsigned long long)o->nblobs);
}

const char *const unmount_reason_names[UNMOUNT_COUNT] = {"unregister",     "eof",          "heartbeat_timeout",
                                                         "did_not_rejoin", "pool_changed", "other"};

static enum unmount_reason unmount_reason_of(const char *why)
{
	for (int i = 0; i < UNMOUNT_OTHER; i++)
		if (strcmp(why, unmount_reason_names[i]) == 0)
			return (enum unmount_reason)i;
	return UNMOUNT_OTHER;
}

/* Takes the service off its rank; its SSD blobs go to an orphan, the rest are lost. Returns how many were lost. */
static uint64_t service_drop(struct meta *m, struct service *svc)
{
	uint64_t lost;

	orphan_ssd(m, svc);
	lost = svc->nblobs;
	objects_each_blob(m, svc, lose_blob, NULL);
	if (svc->session)
		svc->session->svc = NULL;
	m->ranks[svc->rank] = NULL;
	m->nservices--;
	return lost;
}

void service_unmount(struct meta *m, struct service *svc, const char *why)
{
	unsigned char k[4], ks[SSD_KEY_LEN];
	uint64_t lost;

	if (m->moves_lost)
		m->moves_lost(m, svc);
	lost = service_drop(m, svc);
	m->stats.unmounts[unmount_reason_of(why)]++;
	rank_key(svc->rank, k);
	persist_del(m->persist, m->db_services, k, sizeof(k));
	ssd_key(svc->rank, ks);
	persist_del(m->persist, m->db_services, ks, sizeof(ks));
	log_info("op=unmount rank=%u incarnation=%llu host=\"%s\" pid=%u blobs=%llu reason=%s", svc->rank,
	         (unsigned long long)svc->incarnation, svc->host, svc->pid, (unsigned long long)lost, why);
	service_free(svc);
}

static int check_register(const struct service_spec *req)
{
	if (req->nsegs == 0 || req->nsegs > MMC_WIRE_SEGMENTS)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < req->nsegs; i++) {
		const struct service_spec_segment *sg = &req->segs[i];

		if (sg->media >= MEDIA_COUNT || sg->size < ALLOC_ALIGN)
			return MMC_INVALID_PARAM;
		for (size_t j = 0; j < i; j++)
			if (req->segs[j].media == sg->media)
				return MMC_INVALID_PARAM;
	}
	if (req->addr_len == 0 || req->addr_len > MMC_WIRE_ADDR_MAX || !req->provider ||
	    strlen(req->provider) >= sizeof(((struct service *)0)->provider))
		return MMC_INVALID_PARAM;
	if (req->ssd_id_len && req->ssd_id_len != MMC_WIRE_SSD_ID)
		return MMC_INVALID_PARAM;
	if ((req->boot_id && strlen(req->boot_id) >= sizeof(((struct service *)0)->boot_id)) ||
	    (req->pool_path && strlen(req->pool_path) >= sizeof(((struct service *)0)->pool_path)))
		return MMC_INVALID_PARAM;
	return 0;
}

static bool same_segments(const struct service *svc, const struct service_spec *req)
{
	if (svc->nsegs != req->nsegs)
		return false;
	for (size_t i = 0; i < req->nsegs; i++)
		if (svc->segs[i].media != req->segs[i].media || svc->segs[i].size != req->segs[i].size)
			return false;
	return true;
}

/* Fabric coordinates may change when a service reconnects; placement state does not. */
static void set_coordinates(struct service *svc, struct session *s, const struct service_spec *req)
{
	memcpy(svc->fabric_addr, req->fabric_addr, req->addr_len);
	svc->addr_len = (uint32_t)req->addr_len;
	strcpy(svc->provider, req->provider);
	for (size_t i = 0; i < req->nsegs; i++) {
		svc->segs[i].base = req->segs[i].base;
		svc->segs[i].key = req->segs[i].key;
		svc->segs[i].host_key = req->host_key[i];
	}
	snprintf(svc->boot_id, sizeof(svc->boot_id), "%s", req->boot_id ? req->boot_id : "");
	/* the SSD file's too: a service loaded after a restart knew neither, and one that rejoined may leave again */
	snprintf(svc->ssd_path, sizeof(svc->ssd_path), "%s", req->ssd_path ? req->ssd_path : "");
	if ((svc->has_ssd_id = req->ssd_id_len == MMC_WIRE_SSD_ID))
		memcpy(svc->ssd_id, req->ssd_id, MMC_WIRE_SSD_ID);
	snprintf(svc->pool_path, sizeof(svc->pool_path), "%s", req->pool_path ? req->pool_path : "");
	memcpy(svc->host, s->host, sizeof(svc->host));
	svc->pid = s->pid;
	svc->session = s;
	svc->rejoin_deadline_ms = 0;
	s->svc = svc;
}

/* Neither a service's nor the one an orphan's records name, unless req brings that orphan's file (it adopts it). */
static bool rank_free(const struct meta *m, uint32_t r, const struct service_spec *req)
{
	if (m->ranks[r])
		return false;
	for (const struct list *it = m->orphans.next; it != &m->orphans; it = it->next) {
		const struct service *o = list_entry(it, struct service, orphan_link);

		if (o->orphan_of == r && (req->ssd_id_len != MMC_WIRE_SSD_ID || !same_ssd(o, req->ssd_id)))
			return false;
	}
	return true;
}

static int pick_rank(struct meta *m, const struct service_spec *req, uint32_t *rank)
{
	uint32_t cap = m->conf.world_size;

	if (req->world_size && req->world_size < cap)
		cap = req->world_size;
	if (req->rank >= 0 && (uint32_t)req->rank < cap && rank_free(m, (uint32_t)req->rank, req)) {
		*rank = (uint32_t)req->rank;
		return 0;
	}
	for (uint32_t r = 0; r < cap; r++) {
		if (rank_free(m, r, req)) {
			*rank = r;
			return 0;
		}
	}
	return MMC_EXCEED_CAPACITY;
}

static int rejoin(struct meta *m, struct session *s, const struct service_spec *req, struct service **out)
{
	struct service *svc = req->rank >= 0 && req->incarnation ? service_get(m, (uint32_t)req->rank) : NULL;

	if (!svc || svc->incarnation != req->incarnation)
		return MMC_UNMATCHED_KEY;
	if (!service_secret_ok(m, svc, req->secret, req->secret_len)) {
		log_ratelimited(&rejoin_refused_bucket, LOG_WARN,
		                "op=rejoin rank=%u incarnation=%llu host=\"%s\" pid=%u err=bad_secret session=%s",
		                svc->rank, (unsigned long long)svc->incarnation, s->host, s->pid,
		                svc->session ? "alive" : "detached");
		return MMC_NOT_AUTHORIZED;
	}
	if (!same_segments(svc, req)) {
		service_unmount(m, svc, "pool_changed");
		return MMC_UNMATCHED_KEY;
	}
	if (svc->session) { /* a half-open old connection: the same process is back on a new one */
		svc->session->svc = NULL;
		if (m->moves_lost)
			m->moves_lost(m, svc);
	} else /* loaded after a restart: the crashed server's puts may still be writing into its free space */
		svc->writable_after_ms = clock_ms() + m->conf.rejoin_write_grace_ms;
	set_coordinates(svc, s, req);
	service_persist_ssd(m, svc); /* its record may predate the file's: a release before them, another file */
	log_info("op=rejoin rank=%u incarnation=%llu host=\"%s\" pid=%u blobs=%llu", svc->rank,
	         (unsigned long long)svc->incarnation, svc->host, svc->pid, (unsigned long long)svc->nblobs);
	*out = svc;
	return 0;
}

/* How many services, connected, loaded or orphaned, have the SSD file with identity id. */
static unsigned holders_of_ssd(const struct meta *m, const uint8_t *id)
{
	unsigned n = 0;

	for (uint32_t r = 0; r < m->rank_hi; r++)
		n += m->ranks[r] && same_ssd(m->ranks[r], id);
	for (const struct list *it = m->orphans.next; it != &m->orphans; it = it->next)
		n += same_ssd(list_entry(it, struct service, orphan_link), id);
	return n;
}

/*
 * A service loaded after a restart and not back yet whose SSD file req's service brings, on the same host and path:
 * its process is gone, since a store holds its file's lock for as long as it runs and req's store holds it now, so
 * it will never rejoin. It leaves at once, its SSD tier orphaned for req's service to adopt (it died with the
 * server: a power cut of a head node that also lends); waiting out its rejoin instead, req's service would start
 * the file afresh and the keys would go with the old one. Another host or path, or a second holder of the identity,
 * is a copied file (a cloned disk or VM image), whose lock says nothing of the original: that one may be alive and
 * about to rejoin, and is left to.
 */
static void retire_detached(struct meta *m, const struct session *s, const struct service_spec *req)
{
	struct service *svc = NULL;

	if (req->ssd_id_len != MMC_WIRE_SSD_ID || !req->ssd_path || holders_of_ssd(m, req->ssd_id) != 1)
		return;
	for (uint32_t r = 0; r < m->rank_hi && !svc; r++)
		if (m->ranks[r] && same_ssd(m->ranks[r], req->ssd_id))
			svc = m->ranks[r];
	if (!svc || svc->session || !svc->rejoin_deadline_ms || strcmp(svc->host, s->host) != 0 ||
	    strcmp(svc->ssd_path, req->ssd_path) != 0)
		return;
	log_info("op=retire rank=%u incarnation=%llu path=\"%s\": its SSD file is back with a new service", svc->rank,
	         (unsigned long long)svc->incarnation, svc->ssd_path);
	service_unmount(m, svc, "did_not_rejoin");
}

int service_register(struct meta *m, struct session *s, const struct service_spec *req, struct service **out)
{
	struct service *svc, *orphan;
	uint32_t rank;
	int rc;

	if ((rc = check_register(req)))
		return rc;
	if (s->svc)
		return MMC_REPEAT_CALL;
	rc = rejoin(m, s, req, out);
	if (rc == 0 || rc == MMC_NOT_AUTHORIZED)
		return rc;
	retire_detached(m, s, req);
	if ((rc = pick_rank(m, req, &rank)))
		return rc;
	svc = service_new();
	if (!svc)
		return MMC_MALLOC_FAILED;
	svc->rank = rank;
	svc->nsegs = (uint32_t)req->nsegs;
	for (uint32_t i = 0; i < svc->nsegs; i++) {
		svc->segs[i].media = req->segs[i].media;
		svc->segs[i].size = req->segs[i].size;
		svc->segs[i].alloc = segment_allocator(m, req->segs[i].size);
		if (!svc->segs[i].alloc) {
			service_free(svc);
			return MMC_MALLOC_FAILED;
		}
	}
	svc->incarnation = ++m->next_incarnation;
	set_coordinates(svc, s, req);
	/* a pool we unmounted, back as a new incarnation: writes granted on the old one may still arrive until its
	 * store has closed the key they use, right after this answer */
	if (req->rank >= 0 && req->incarnation)
		svc->writable_after_ms = clock_ms() + m->conf.rejoin_write_grace_ms;
	if (service_segment(svc, MMC_MEDIA_SSD) && (orphan = find_orphan(m, svc, req)) &&
	    service_segment(svc, MMC_MEDIA_SSD)->size == orphan->segs[0].size)
		adopt(m, svc, orphan);
	m->ranks[rank] = svc;
	m->nservices++;
	if (rank >= m->rank_hi)
		m->rank_hi = rank + 1;
	service_persist(m, svc);
	log_info("op=mount rank=%u incarnation=%llu host=\"%s\" pid=%u provider=\"%s\" dram=%llu", rank,
	         (unsigned long long)svc->incarnation, svc->host, svc->pid, svc->provider,
	         (unsigned long long)(service_segment(svc, MMC_MEDIA_DRAM) ? service_segment(svc, MMC_MEDIA_DRAM)->size
	                                                                   : 0));
	*out = svc;
	return 0;
}

void services_sweep(struct meta *m, uint64_t now_ms)
{
	orphans_sweep(m, now_ms);
	for (uint32_t r = 0; r < m->rank_hi; r++) {
		struct service *svc = m->ranks[r];

		if (svc && !svc->session && svc->rejoin_deadline_ms && svc->rejoin_deadline_ms <= now_ms)
			service_unmount(m, svc, "did_not_rejoin");
	}
}

static void service_attach(struct meta *m, struct service *svc, uint64_t rejoin_deadline_ms)
{
	svc->rejoin_deadline_ms = rejoin_deadline_ms;
	m->ranks[svc->rank] = svc;
	m->nservices++;
	if (svc->rank >= m->rank_hi)
		m->rank_hi = svc->rank + 1;
}

static int load_service(struct meta *m, const void *key, size_t klen, const void *val, size_t vlen, uint64_t deadline)
{
	const unsigned char *kb = key;
	struct rec_service rec, *r = &rec;
	struct service *svc;
	uint32_t rank;

	/* stored values carry no alignment guarantee: copy before reading fields */
	if (klen != 4 || vlen != sizeof(rec))
		return MMC_ERROR;
	memcpy(&rec, val, sizeof(rec));
	if (r->version != REC_VERSION || r->nsegs == 0 || r->nsegs > MMC_WIRE_SEGMENTS)
		return MMC_ERROR;
	rank = rank_of_key(kb);
	if (rank >= MMC_RANKS_MAX || m->ranks[rank] || !(svc = service_new()))
		return MMC_ERROR;
	svc->rank = rank;
	svc->incarnation = r->incarnation;
	svc->nsegs = r->nsegs;
	for (uint32_t i = 0; i < r->nsegs; i++) {
		svc->segs[i].media = r->segs[i].media;
		svc->segs[i].size = r->segs[i].size;
		if (!(svc->segs[i].alloc = segment_allocator(m, r->segs[i].size))) {
			service_free(svc);
			return MMC_ERROR;
		}
	}
	memcpy(svc->host, r->host, sizeof(svc->host));
	svc->host[sizeof(svc->host) - 1] = '\0';
	svc->pid = r->pid;
	service_attach(m, svc, deadline);
	return 0;
}

struct services_load {
	struct meta *m;
	uint64_t deadline;
};

static int load_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct services_load *l = arg;

	if (klen != SSD_KEY_LEN && load_service(l->m, key, klen, val, vlen, l->deadline))
		log_warn("op=load_service err=bad_record");
	return 0;
}

/* An orphan's record: a service at the rank its blobs name, holding its SSD tier only, so that the objects load onto
 * it; services_settle makes it an orphan again. */
static int load_orphan(struct services_load *l, const unsigned char *kb, const void *val, size_t vlen)
{
	uint32_t rank = rank_of_key(kb);
	struct rec_orphan r;
	struct service *svc;

	memcpy(&r, val, vlen < sizeof(r) ? vlen : sizeof(r));
	if (vlen != sizeof(r) || r.version != REC_ORPHAN_VERSION || rank >= MMC_RANKS_MAX || l->m->ranks[rank] ||
	    !r.ssd_size) {
		log_warn("op=load_service err=bad_orphan_record rank=%u", rank);
		persist_del(l->m->persist, l->m->db_services, kb, SSD_KEY_LEN); /* it would be refused at every load */
		return 0;
	}
	if (!(svc = service_new()))
		return MMC_ERROR;
	svc->rank = rank;
	svc->incarnation = r.incarnation;
	svc->nsegs = 1;
	svc->segs[0].media = MMC_MEDIA_SSD;
	svc->segs[0].size = r.ssd_size;
	if (!(svc->segs[0].alloc = segment_allocator(l->m, r.ssd_size))) {
		service_free(svc);
		return MMC_ERROR;
	}
	memcpy(svc->host, r.host, sizeof(svc->host));
	svc->host[sizeof(svc->host) - 1] = '\0';
	memcpy(svc->ssd_path, r.path, sizeof(svc->ssd_path));
	svc->ssd_path[sizeof(svc->ssd_path) - 1] = '\0';
	memcpy(svc->ssd_id, r.id, sizeof(svc->ssd_id));
	svc->has_ssd_id = true;
	svc->revived = true;
	service_attach(l->m, svc, l->deadline);
	return 0;
}

/* A loaded service's SSD file (a second pass: a Redis scan has no order). */
static int load_ssd_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	const unsigned char *kb = key;
	struct services_load *l = arg;
	struct rec_service_ssd r;
	struct service *svc;

	if (klen == SSD_KEY_LEN && kb[4] == 'o')
		return load_orphan(l, kb, val, vlen);
	if (klen != SSD_KEY_LEN || kb[4] != 's')
		return 0;
	svc = service_get(l->m, rank_of_key(kb));
	if (vlen != sizeof(r) || !svc || !service_segment(svc, MMC_MEDIA_SSD)) {
		log_warn("op=load_service err=bad_ssd_record");
		return 0;
	}
	memcpy(&r, val, sizeof(r));
	if (r.version != REC_SSD_VERSION) {
		log_warn("op=load_service err=bad_ssd_record");
		return 0;
	}
	if (r.incarnation != svc->incarnation)
		return 0; /* left behind by an earlier service of the rank */
	memcpy(svc->ssd_id, r.id, sizeof(svc->ssd_id));
	svc->has_ssd_id = true;
	memcpy(svc->ssd_path, r.path, sizeof(svc->ssd_path));
	svc->ssd_path[sizeof(svc->ssd_path) - 1] = '\0';
	return 0;
}

int services_load(struct meta *m)
{
	struct services_load l = {m, clock_ms() + m->conf.rejoin_timeout_ms};
	unsigned char next[64]; /* room for a record of another size, which is ignored as before */
	size_t len = 0;
	int rc;

	if (service_secret_init(m))
		return MMC_ERROR;
	rc = persist_get(m->persist, m->db_info, next_incarnation_key, sizeof(next_incarnation_key) - 1, next,
	                 sizeof(next), &len);
	if (rc == 0 && len == sizeof(uint64_t))
		memcpy(&m->next_incarnation, next, sizeof(uint64_t));
	else if (rc != 0 && rc != MMC_OBJECT_NOT_EXISTS)
		return MMC_ERROR;
	if (persist_scan(m->persist, m->db_services, load_one, &l) ||
	    persist_scan(m->persist, m->db_services, load_ssd_one, &l))
		return MMC_ERROR;
	if (m->nservices)
		log_info("op=load services=%u waiting_to_rejoin_ms=%u", m->nservices, m->conf.rejoin_timeout_ms);
	return 0;
}

void services_settle(struct meta *m)
{
	for (uint32_t r = 0; r < m->rank_hi; r++) {
		struct service *svc = m->ranks[r];

		if (!svc || !svc->revived)
			continue;
		log_info("op=load_orphan rank=%u host=\"%s\" path=\"%s\" blobs=%llu", r, svc->host, svc->ssd_path,
		         (unsigned long long)svc->nblobs);
		svc->revived = false;
		service_drop(m, svc); /* loses none: the orphan takes every blob of an SSD-only service */
		service_free(svc);
	}
}

void services_fini(struct meta *m)
{
	/* shutdown: objects are already freed, nothing is persisted */
	while (!list_empty(&m->orphans)) {
		struct service *o = list_entry(m->orphans.next, struct service, orphan_link);

		list_del(&o->orphan_link);
		o->nblobs = 0;
		service_free(o);
	}
	for (uint32_t r = 0; r < MMC_RANKS_MAX; r++) {
		if (m->ranks[r]) {
			m->ranks[r]->nblobs = 0;
			service_free(m->ranks[r]);
			m->ranks[r] = NULL;
		}
	}
	m->nservices = 0;
}
