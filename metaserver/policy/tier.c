#include "tier.h"
#include "meta_policy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "allocator.h"
#include "array.h"
#include "clock.h"
#include "eviction.h"
#include "hash.h"
#include "key_result.h"
#include "lease.h"
#include "log.h"
#include "lru.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "persist.h"
#include "placement.h"
#include "policy_ops.h"
#include "services.h"
#include "space.h"

enum task_kind { T_DEMOTE, T_PROMOTE, T_STAGE };

/* A request waiting for moves: a get, an evict or a prefetch batch. */
struct tier_req {
	struct list link;  /* meta_policy.tier_reqs */
	struct session *s; /* NULL once its connection closed */
	uint64_t id;
	uint64_t session;
	uint64_t lease_ttl_ms;
	bool get;
	size_t n, pending;
	struct key_result res[];
};

struct waiter {
	struct tier_req *req;
	size_t idx;
};

/* An SSD read that found no DRAM room: retried as space comes back, until ock.mmc.meta.evict_wait_ms. */
struct read_wait {
	struct list link; /* meta_policy.read_waits */
	struct tier_req *req;
	size_t idx;
	bool want_promote;
	uint64_t deadline_ms;
	char key[MMC_WIRE_KEY_MAX + 1];
};

struct task {
	struct list link;       /* meta_policy.tasks */
	struct hmap_node hlink; /* meta_policy.task_ids */
	uint64_t id;
	enum task_kind kind;
	struct object *o;
	struct service *svc;
	uint64_t src_offset, dst_offset, size;
	size_t nwaiters, capwaiters;
	struct waiter *waiters;
};

#define TASK_ID_BIT (UINT64_C(1) << 63) /* the server's request ids, apart from any client's */

static uint64_t id_hash(uint64_t id)
{
	return hash_bytes(&id, sizeof(id));
}

static uint64_t task_hash(const struct hmap_node *n)
{
	return id_hash(hmap_entry(n, struct task, hlink)->id);
}

static uint64_t pages(uint64_t size)
{
	return (size + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1);
}

void tier_init(struct meta *m)
{
	uint64_t *next = &m->policy->next_task_id;

	/* a restarted server numbers its tasks from elsewhere than the one before it, so that a late answer to an old
	 * task (from a service that does not drop them on a lost connection) does not name a new one */
	if (getrandom(next, sizeof(*next), 0) != sizeof(*next))
		*next = clock_ns();
	m->moves_lost = tier_moves_lost;
	list_init(&m->policy->tasks);
	hmap_init(&m->policy->task_ids, task_hash, 64);
	list_init(&m->policy->tier_reqs);
	list_init(&m->orphans);
	list_init(&m->policy->read_waits);
}

bool tier_on_ssd(const struct object *o)
{
	return object_media(o) == MMC_MEDIA_SSD;
}

/* The one live blob of a single-replica object, or NULL. */
static struct blob *only_blob(struct object *o)
{
	struct blob *found = NULL;

	for (int i = 0; i < o->nblobs; i++) {
		if (!o->blobs[i].svc)
			continue;
		if (found)
			return NULL;
		found = &o->blobs[i];
	}
	return found;
}

static bool dram_below_watermark(struct meta *m)
{
	uint64_t used, total;

	space_usage(m, MMC_MEDIA_DRAM, &used, &total);
	return total && used * 100 < total * m->conf.rewarm_watermark;
}

/* ---- tasks ---- */

static struct task *task_new(struct meta *m, enum task_kind kind, struct object *o, struct service *svc, uint64_t src,
                             uint64_t dst)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->id = TASK_ID_BIT | ++m->policy->next_task_id;
	if (hmap_insert(&m->policy->task_ids, &t->hlink, id_hash(t->id))) {
		free(t);
		return NULL;
	}
	t->kind = kind;
	t->o = o;
	t->svc = svc;
	t->src_offset = src;
	t->dst_offset = dst;
	t->size = o->size;
	o->busy++;
	list_add_tail(&m->policy->tasks, &t->link);
	return t;
}

static int task_wait(struct task *t, struct tier_req *r, size_t idx)
{
	struct waiter *w = array_grow(t->waiters, &t->capwaiters, t->nwaiters + 1, sizeof(*w), 4);

	if (!w)
		return MMC_MALLOC_FAILED;
	t->waiters = w;
	t->waiters[t->nwaiters++] = (struct waiter){r, idx};
	r->pending++;
	return 0;
}

static void task_send(struct meta *m, struct task *t)
{
	struct blob_task bt = {
	    .id = t->id,
	    .op = MMC_TASK_COPY,
	    .src_media = t->kind == T_DEMOTE ? MMC_MEDIA_DRAM : MMC_MEDIA_SSD,
	    .dst_media = t->kind == T_DEMOTE ? MMC_MEDIA_SSD : MMC_MEDIA_DRAM,
	    .src_offset = t->src_offset,
	    .dst_offset = t->dst_offset,
	    .size = t->size,
	};

	m->policy->ops->send_task(m, t->svc, &bt);
}

static struct task *task_of(struct meta *m, const struct object *o, enum task_kind kind)
{
	for (struct list *it = m->policy->tasks.next; it != &m->policy->tasks; it = it->next) {
		struct task *t = list_entry(it, struct task, link);

		if (t->o == o && t->kind == kind)
			return t;
	}
	return NULL;
}

/* A range no record on disk points at: a move's target that never became the object's home, or a stage copy. */
static void release_raw(struct meta *m, struct service *svc, uint32_t media, uint64_t offset)
{
	space_release(m, svc, media, offset, 0);
}

/* ---- requests ---- */

static struct tier_req *req_new(const struct key_call *call, bool get)
{
	struct tier_req *r = calloc(1, sizeof(*r) + call->n * sizeof(struct key_result));

	if (!r)
		return NULL;
	r->s = call->session;
	r->id = call->id;
	r->session = call->session->id;
	r->lease_ttl_ms = call->lease_ttl_ms;
	r->get = get;
	r->n = call->n;
	list_init(&r->link);
	return r;
}

/* Replies (when the connection is still there) and frees r once nothing is pending. */
static void req_settle(struct meta *m, struct tier_req *r)
{
	if (r->pending)
		return;
	if (r->s) /* evict / prefetch persist moves */
		m->policy->ops->reply_keys(m, r->s, r->id, r->res, r->n, !r->get);
	list_del(&r->link);
	free(r);
}

static void req_park(struct meta *m, struct tier_req *r)
{
	if (r->pending)
		list_add_tail(&m->policy->tier_reqs, &r->link);
	else
		req_settle(m, r);
}

/* Serves a get's key from o (now in DRAM): a counted read lease and the DRAM blob. */
static void serve_get(struct meta *m, struct tier_req *r, size_t i, struct object *o, int blob)
{
	struct key_result *res = &r->res[i];

	res->lease_ms = lease_grant(m, o, r->session, r->lease_ttl_ms, true);
	res->result = res->lease_ms ? 0 : MMC_MALLOC_FAILED;
	key_result_note(res, o, blob);
	res->lease = lease_gen(o, r->session);
}

/* ---- starting moves ---- */

static int reserve(struct service *svc, uint32_t media, uint64_t size, uint64_t *off)
{
	struct segment *seg = service_segment(svc, media);

	return seg ? alloc_reserve(seg->alloc, size, off) : MMC_NOT_ENOUGH_MEMORY;
}

/* DRAM -> SSD on the object's own service. A leased object may move: its readers keep the old DRAM range. */
static int start_demote(struct meta *m, struct object *o, struct tier_req *r, size_t idx)
{
	struct blob *b = only_blob(o);
	struct task *t;
	uint64_t off;

	/* a service not back since a restart has no connection to take the task */
	if (!b || b->media != MMC_MEDIA_DRAM || o->busy || !blob_svc(b)->session ||
	    !service_segment(blob_svc(b), MMC_MEDIA_SSD))
		return MMC_NOT_STARTED;
	if (reserve(blob_svc(b), MMC_MEDIA_SSD, o->size, &off))
		return MMC_NOT_ENOUGH_MEMORY;
	if (!(t = task_new(m, T_DEMOTE, o, blob_svc(b), blob_offset(b), off))) {
		release_raw(m, blob_svc(b), MMC_MEDIA_SSD, off);
		return MMC_MALLOC_FAILED;
	}
	if (r && task_wait(t, r, idx))
		r->res[idx].result = MMC_MALLOC_FAILED;
	olist_del(o);
	olist_add_tail(m, OLIST_MOVING, o);
	m->policy->freeing[MMC_MEDIA_DRAM] += pages(o->size);
	task_send(m, t);
	return 0;
}

bool tier_demote_victim(struct meta *m, struct object *o)
{
	return start_demote(m, o, NULL, 0) == 0;
}

/* SSD -> DRAM: a promote (the object moves back) or a stage (a transient copy for one reader). Returns
 * MMC_NOT_ENOUGH_MEMORY, with *blocked set when evicted objects will give DRAM back soon. */
static int try_read(struct meta *m, struct object *o, struct tier_req *r, size_t idx, bool want_promote, bool *blocked)
{
	struct blob *b = only_blob(o);
	struct task *t = o->promoting ? task_of(m, o, T_PROMOTE) : NULL;
	bool promote;
	uint64_t off;

	if (t) /* a rewarm is already on its way: wait for it */
		return task_wait(t, r, idx);
	if (!b || b->media != MMC_MEDIA_SSD || !blob_svc(b)->session)
		return MMC_OBJECT_NOT_EXISTS;
	/* a promote frees the SSD copy when done: never while another task still reads it */
	promote = want_promote && o->busy == 0;
	if (!promote && !r->get)
		return MMC_ERROR; /* a prefetch while a stage is in flight: retry */
	/* the read lands in the service's own pool, which may still take a write granted before it came back: as for a
	 * put, nothing goes there before its grace ends (start_read waits that long); and a key read by as many stages
	 * as its count of tasks holds waits for one to end (the count wrapping to 0 would unpin it under them) */
	*blocked = placement_in_grace(blob_svc(b)) || o->busy == OBJECT_BUSY_MAX;
	if (*blocked)
		return MMC_NOT_ENOUGH_MEMORY;
	if (reserve(blob_svc(b), MMC_MEDIA_DRAM, o->size, &off)) {
		/* make room the way an allocation does, on the service the copy must land on: demote or evict its least
		 * recently used (room on another service is of no use to this read) */
		eviction_make_room_on(m, blob_svc(b), MMC_MEDIA_DRAM, o->size, blocked);
		if (reserve(blob_svc(b), MMC_MEDIA_DRAM, o->size, &off))
			return MMC_NOT_ENOUGH_MEMORY;
	}
	eviction_check(m, MMC_MEDIA_DRAM); /* a rewarm must leave room for the next one */
	if (!(t = task_new(m, promote ? T_PROMOTE : T_STAGE, o, blob_svc(b), blob_offset(b), off))) {
		release_raw(m, blob_svc(b), MMC_MEDIA_DRAM, off);
		return MMC_MALLOC_FAILED;
	}
	o->promoting |= promote;
	if (task_wait(t, r, idx))
		r->res[idx].result = MMC_MALLOC_FAILED;
	task_send(m, t);
	return 0;
}

static int start_read(struct meta *m, struct object *o, struct tier_req *r, size_t idx, bool want_promote)
{
	struct read_wait *w;
	bool blocked;
	int rc = try_read(m, o, r, idx, want_promote, &blocked);
	uint64_t grace;

	if (rc != MMC_NOT_ENOUGH_MEMORY || !blocked)
		return rc;
	/* a service in its grace takes the read at its end, whatever evict_wait_ms says: a known, short wait */
	grace = placement_in_grace(blob_svc(only_blob(o))) ? blob_svc(only_blob(o))->writable_after_ms : 0;
	if ((!m->conf.evict_wait_ms && !grace) || !(w = calloc(1, sizeof(*w))))
		return rc;
	w->req = r;
	w->idx = idx;
	w->want_promote = want_promote;
	w->deadline_ms = clock_ms() + m->conf.evict_wait_ms;
	if (grace > w->deadline_ms)
		w->deadline_ms = grace;
	memcpy(w->key, object_key(o), (size_t)o->keylen);
	r->pending++;
	list_add_tail(&m->policy->read_waits, &w->link);
	return 0;
}

/* ---- completions ---- */

/* A demoted object's readers keep reading its old DRAM range: it goes to a removed copy holding their leases. */
static void let_go_of_dram(struct meta *m, struct object *o, struct service *svc, uint64_t offset, uint64_t unlink_seq)
{
	struct object *z;

	if (!object_leased(o, clock_ms())) {
		space_release(m, svc, MMC_MEDIA_DRAM, offset, unlink_seq);
		objects_space_freed(m);
		return;
	}
	if (!(z = objects_dram_copy(m, o, svc, offset, unlink_seq))) {
		/* out of memory for the copy that holds the readers' leases: the range stays out of use in this run
		 * rather than be given to a put while they read it */
		log_warn("op=demote key=\"%.*s\" err=no_memory_for_reader_copy", (int)o->keylen, object_key(o));
		space_release(m, svc, MMC_MEDIA_DRAM, offset, ALLOC_SEQ_NEVER);
		return;
	}
	z->id = o->id; /* the readers' releases name this id */
	z->leases = o->leases;
	o->leases = 0;
}

static int finish_demote(struct meta *m, struct task *t, int result)
{
	static int bucket; /* a full or failing disk fails every demote: a few lines a second, not one each */
	struct object *o = t->o;
	struct blob *b = only_blob(o);

	m->policy->freeing[MMC_MEDIA_DRAM] -= pages(t->size);
	if (result == 0 && o->state == MMC_BLOB_READABLE && b && b->media == MMC_MEDIA_DRAM) {
		uint64_t dram = blob_offset(b);

		uint64_t seq = 0;

		/* the record moves to SSD first: the DRAM range is reused only once no record on disk names it, never
		 * in this run when the new record could not even be queued (the old one, naming DRAM, stays) */
		blob_move(b, MMC_MEDIA_SSD, t->dst_offset);
		if (o->persisted)
			seq = object_persist(m, o) ? persist_wait_seq(m->persist) : ALLOC_SEQ_NEVER;
		let_go_of_dram(m, o, blob_svc(b), dram, seq);
		olist_del(o);
		lru_push(m, o);
		return 0;
	}
	release_raw(m, t->svc, MMC_MEDIA_SSD, t->dst_offset);
	if (o->state != MMC_BLOB_READABLE)
		return MMC_OBJECT_NOT_EXISTS;
	log_ratelimited(&bucket, LOG_WARN, "op=demote key=\"%.*s\" err=%d", (int)o->keylen, object_key(o), result);
	olist_del(o);
	if (t->nwaiters) { /* an explicit evict: the key stays in DRAM and the caller hears why */
		lru_push(m, o);
		return result ? result : MMC_ERROR;
	}
	object_drop(m, o); /* an eviction victim that could not move is evicted */
	return 0;
}

/* The stage of one get: a transient DRAM copy, leased by the reader and freed when the lease ends. */
static void serve_stage(struct meta *m, struct task *t, struct waiter *w)
{
	struct key_result *res = &w->req->res[w->idx];
	struct object *z = w->req->s ? objects_dram_copy(m, t->o, t->svc, t->dst_offset, 0) : NULL;

	if (!z) {
		release_raw(m, t->svc, MMC_MEDIA_DRAM, t->dst_offset);
		objects_space_freed(m);
		res->result = MMC_MALLOC_FAILED;
		return;
	}
	z->id = object_next_id(m);
	serve_get(m, w->req, w->idx, z, 0);
}

static void finish_read(struct meta *m, struct task *t, int result)
{
	struct object *o = t->o;
	struct blob *b = only_blob(o);
	bool ok = result == 0 && o->state == MMC_BLOB_READABLE && b && b->media == MMC_MEDIA_SSD;
	int code = result ? result : MMC_OBJECT_NOT_EXISTS;

	if (t->kind == T_PROMOTE)
		o->promoting = false;
	if (!ok) {
		release_raw(m, t->svc, MMC_MEDIA_DRAM, t->dst_offset);
		objects_space_freed(m);
		for (size_t i = 0; i < t->nwaiters; i++)
			t->waiters[i].req->res[t->waiters[i].idx].result = code;
		return;
	}
	if (t->kind == T_STAGE) {
		if (!t->nwaiters) { /* its reader could not be recorded (out of memory): nobody takes the copy */
			release_raw(m, t->svc, MMC_MEDIA_DRAM, t->dst_offset);
			objects_space_freed(m);
		}
		for (size_t i = 0; i < t->nwaiters; i++)
			serve_stage(m, t, &t->waiters[i]);
		return;
	}
	/* promote: nothing else reads the SSD copy (a promote starts only on an idle object); its range is reused once
	 * the record naming the DRAM copy is on disk */
	{
		uint64_t ssd_offset = blob_offset(b), unlinked;

		blob_move(b, MMC_MEDIA_DRAM, t->dst_offset);
		/* a get's release names the id it read: the copy a demote left for readers before it keeps this one,
		 * and the object read from now on takes another, or a release by one of them would end a lease on the
		 * other */
		persist_group_begin(m->persist); /* the old record's delete and the new one's write land together */
		unlinked = object_renumber(m, o);
		if (unlinked) {
			object_persist_moved(m,
			                     o); /* the old record's delete is retried if the batch fails: so is this */
		}
		persist_group_end(m->persist);
		/* the SSD range goes once no record names it: the old one deleted, the new one naming DRAM written */
		space_release(m, blob_svc(b), MMC_MEDIA_SSD, ssd_offset,
		              unlinked && unlinked != ALLOC_SEQ_NEVER ? persist_wait_seq(m->persist) : unlinked);
	}
	olist_del(o);
	lru_push(m, o);
	for (size_t i = 0; i < t->nwaiters; i++) {
		struct tier_req *r = t->waiters[i].req;

		if (r->get)
			serve_get(m, r, t->waiters[i].idx, o, (int)(b - o->blobs));
		else
			r->res[t->waiters[i].idx].result = 0;
	}
}

static void complete(struct meta *m, struct task *t, int result)
{
	struct object *o = t->o;

	list_del(&t->link);
	hmap_remove(&m->policy->task_ids, &t->hlink, id_hash(t->id)); /* false for one tier_moves_lost set aside */
	/* o stays pinned (busy) until the end: a victim that could not move is dropped by finish_demote, and that
	 * must leave it on the zombie list for object_unpin below rather than free it under us */
	if (t->kind == T_DEMOTE) {
		int code = finish_demote(m, t, result);

		for (size_t i = 0; i < t->nwaiters; i++)
			t->waiters[i].req->res[t->waiters[i].idx].result = code;
	} else {
		finish_read(m, t, result);
	}
	for (size_t i = 0; i < t->nwaiters; i++) {
		t->waiters[i].req->pending--;
		req_settle(m, t->waiters[i].req);
	}
	o->busy--;
	if (o->state == MMC_BLOB_REMOVING)
		object_unpin(m, o);
	free(t->waiters);
	free(t);
}

void tier_task_done(struct meta *m, const struct service *svc, uint64_t id, int result)
{
	/* by id, not by a walk of every move in flight: any session may send answers, as many as it likes */
	hmap_foreach_hash(&m->policy->task_ids, id_hash(id), n)
	{
		struct task *t = hmap_entry(n, struct task, hlink);

		if (t->id == id && svc && t->svc == svc) {
			complete(m, t, result);
			return;
		}
	}
}

/*
 * Fails svc's moves, giving their reservations back while its allocators are still its own: a leaving service's SSD
 * allocator goes on with its orphan, and to the service that adopts it.
 */
void tier_moves_lost(struct meta *m, struct service *svc)
{
	struct list lost = LIST_INIT(lost), *it, *next;

	/* set aside first: a completion's reply may close a connection (out of memory) and so run this for another
	 * service, which frees its own tasks, the next of a walk over the shared list among them */
	for (it = m->policy->tasks.next; it != &m->policy->tasks; it = next) {
		next = it->next;
		struct task *t = list_entry(it, struct task, link);

		if (t->svc == svc) { /* out of the id table too: an answer meanwhile must not complete it twice */
			list_del(it);
			hmap_remove(&m->policy->task_ids, &t->hlink, id_hash(t->id));
			list_add_tail(&lost, it);
		}
	}
	while (!list_empty(&lost))
		complete(m, list_entry(lost.next, struct task, link), MMC_ERROR);
}

void tier_session_closed(struct meta *m, struct session *s)
{
	for (struct list *it = m->policy->tier_reqs.next; it != &m->policy->tier_reqs; it = it->next) {
		struct tier_req *r = list_entry(it, struct tier_req, link);

		if (r->s == s)
			r->s = NULL;
	}
}

static struct object *lookup(struct meta *m, const char *key, int32_t *result);

void tier_kick(struct meta *m)
{
	struct list *it, *next;

	for (it = m->policy->read_waits.next; it != &m->policy->read_waits; it = next) {
		struct read_wait *w = list_entry(it, struct read_wait, link);
		struct key_result *res = &w->req->res[w->idx];
		struct object *o = lookup(m, w->key, &res->result);
		bool blocked = false;
		int rc = 0;

		next = it->next;
		if (o && !tier_on_ssd(o) && w->req->get) /* someone else brought it back meanwhile */
			serve_get(m, w->req, w->idx, o, object_pick_blob(m, o, NULL));
		else if (o && tier_on_ssd(o))
			rc = try_read(m, o, w->req, w->idx, w->want_promote, &blocked);
		if (rc == MMC_NOT_ENOUGH_MEMORY && clock_ms() < w->deadline_ms)
			continue; /* still no room: keep waiting */
		if (rc)
			res->result = rc;
		list_del(&w->link);
		w->req->pending--;
		req_settle(m, w->req);
		free(w);
	}
}

void tier_fini(struct meta *m)
{
	while (!list_empty(&m->policy->read_waits)) {
		struct read_wait *w = list_entry(m->policy->read_waits.next, struct read_wait, link);

		list_del(&w->link);
		free(w);
	}
	while (!list_empty(&m->policy->tasks)) {
		struct task *t = list_entry(m->policy->tasks.next, struct task, link);

		list_del(&t->link);
		free(t->waiters);
		free(t);
	}
	hmap_free(&m->policy->task_ids);
	while (!list_empty(&m->policy->tier_reqs)) {
		struct tier_req *r = list_entry(m->policy->tier_reqs.next, struct tier_req, link);

		list_del(&r->link);
		free(r);
	}
}

/* ---- requests ---- */

static struct object *lookup(struct meta *m, const char *key, int32_t *result)
{
	const char *k = key ? key : "";

	return object_find_readable(m, key, object_hash(k, strlen(k)), result);
}

void tier_get(struct meta *m, const struct key_call *call)
{
	struct tier_req *r = req_new(call, true);
	bool rewarm = dram_below_watermark(m);

	if (!r) {
		m->policy->ops->reply_code(m, call->session, call->id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		struct object *o = lookup(m, call->keys[i], &r->res[i].result);
		int rc;

		if (!o)
			continue;
		object_touch(m, o);
		if (!tier_on_ssd(o)) {
			serve_get(m, r, i, o, object_pick_blob(m, o, call->session));
			continue;
		}
		if ((rc = start_read(m, o, r, i, rewarm)))
			r->res[i].result = rc;
	}
	req_park(m, r);
}

static int evict_one(struct meta *m, struct object *o, struct tier_req *r, size_t i)
{
	struct task *t;
	int rc;

	if (tier_on_ssd(o))
		return 0;                             /* already there */
	if (o->busy && (t = task_of(m, o, T_DEMOTE))) /* a move in flight makes it busy: no walk for the others */
		return task_wait(t, r, i);
	rc = start_demote(m, o, r, i);
	if (rc == MMC_NOT_STARTED || rc == MMC_NOT_ENOUGH_MEMORY) {
		/* no SSD on its service, no room there, or several replicas: the seed's rule, remove from DRAM */
		object_drop(m, o);
		return 0;
	}
	return rc;
}

void tier_move(struct meta *m, const struct key_call *call, bool evict)
{
	struct tier_req *r = req_new(call, false);

	if (!r) {
		m->policy->ops->reply_code(m, call->session, call->id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		struct object *o = lookup(m, call->keys[i], &r->res[i].result);

		if (!o)
			continue;
		if (evict)
			r->res[i].result = evict_one(m, o, r, i);
		else if (tier_on_ssd(o))
			r->res[i].result = start_read(m, o, r, i, true);
	}
	req_park(m, r);
}
