#include "store_gva.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "clock.h"
#include "gva_tracker.h"
#include "key_rpc.h"
#include "lg.h"
#include "store.h"
#include "xfer.h"

static int check_keys(mmc_store *s, const char *const *keys, size_t n)
{
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	if (!keys || n == 0 || n > MMC_BATCH_MAX)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < n; i++)
		if (!store_key_ok(s, keys[i]))
			return MMC_INVALID_PARAM;
	return 0;
}

/* The grants a call's reply brought, added to the tracker at once after it: the tracker's lock is not held over the
 * round trip, which would stop every copy of the process for as long. */
struct grants {
	struct gva_entry *v;
	size_t n, cap;
	bool failed; /* out of memory for one */
};

static void grant(struct grants *g, const struct gva_entry *e)
{
	struct gva_entry *v = array_grow(g->v, &g->cap, g->n + 1, sizeof(*v), 16);

	if (!v) {
		g->failed = true;
		return;
	}
	g->v = v;
	g->v[g->n++] = *e;
}

/* Adds what g holds; 0 or MMC_MALLOC_FAILED (nothing added). */
static int grants_add(mmc_store *s, struct grants *g)
{
	int rc = g->failed ? MMC_MALLOC_FAILED : 0;

	if (!rc && g->n) {
		pthread_rwlock_wrlock(&s->gva->lock);
		rc = gva_tracker_add(s->gva, g->v, g->n, clock_ms());
		pthread_rwlock_unlock(&s->gva->lock);
	}
	free(g->v);
	return rc;
}

/* ---- write side ---- */

struct malloc_ctx {
	struct grants got;
	const char *const *keys;
	const size_t *sizes;
	mmc_gva *gvas;
	uint64_t t0;
	uint64_t losses;
	pthread_t thread;
};

static bool on_malloc(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct malloc_ctx *m = arg;
	struct gva_entry e;

	if (r->result || r->blobs_count == 0)
		return true;
	memset(&e, 0, sizeof(e));
	e.start = mmc_gva_make(r->blobs[0].rank, r->blobs[0].media, r->blobs[0].offset);
	e.end = e.start + r->size;
	e.incarnation = r->blobs[0].incarnation;
	e.kind = GVA_WRITE;
	e.readable = r->blobs[0].state == MMC_BLOB_READABLE;
	e.expiry_ms = m->t0 + (r->lease_ms ? r->lease_ms : 0);
	e.losses = m->losses;
	e.token = r->token;
	e.thread = m->thread;
	strcpy(e.key, m->keys[i]);
	if (r->size != m->sizes[i] && !e.readable)
		return true;
	m->gvas[i] = e.start;
	/* an allocation already made, unfinished (this batch's own earlier entry, another thread's malloc): its
	 * writer's grant stands, and one that expires at once would retire it (the newer of two grants of a range
	 * wins) and refuse that writer's copies */
	if (!e.readable && !r->lease_ms)
		return true;
	grant(&m->got, &e);
	return true;
}

int mmc_batch_malloc(mmc_store *s, const char *const *keys, const size_t *sizes, size_t n, uint16_t media,
                     uint64_t lease_ttl_ms, mmc_gva *gvas)
{
	STORE_CALL(s);
	struct malloc_ctx m = {{NULL, 0, 0, false}, keys, sizes, gvas, clock_ms(), 0, pthread_self()};
	struct key_rpc k = {.body = WB_MALLOC, .req = mmc_KeyBatch_init_zero, .on_result = on_malloc, .arg = &m};
	uint64_t *sz;
	int rc = check_keys(s, keys, n), added;

	if (gvas && n <= MMC_BATCH_MAX)
		memset(gvas, 0, n * sizeof(*gvas));
	if (!rc && (!sizes || !gvas || media != MMC_MEDIA_DRAM))
		rc = MMC_INVALID_PARAM;
	for (size_t i = 0; !rc && i < n; i++)
		if (!sizes[i])
			rc = MMC_INVALID_PARAM;
	if (rc)
		return rc;
	if (!(sz = malloc(n * sizeof(*sz))))
		return MMC_MALLOC_FAILED;
	for (size_t i = 0; i < n; i++)
		sz[i] = sizes[i];
	m.losses = meta_conn_losses(s->meta); /* only now: s was checked */
	k.req.media = media;
	k.req.lease_ttl_ms = lease_ttl_ms;
	k.req.replica_num = 1;
	k.req.flags = MMC_WIRE_FLAG_SPREAD;
	k.items = (struct wire_items){.n = n, .keys = keys, .sizes = sz};
	rc = key_rpc_call(s, &k);
	free(sz);
	added = grants_add(s, &m.got);
	if (!rc)
		rc = added;
	/* a failed call gives no address (mmc.h): one decoded before a malformed reply or a lost grant would be
	 * copied into with no allocation behind it that this store knows of; the allocations made expire */
	if (rc)
		memset(gvas, 0, n * sizeof(*gvas));
	return rc;
}

struct finish_ctx {
	int *results;
	const size_t *index; /* item i is key index[i] */
};

static bool on_finish(void *arg, size_t i, const mmc_KeyResult *r)
{
	const struct finish_ctx *f = arg;

	f->results[f->index[i]] = r->result;
	return true;
}

/*
 * A finish names the allocation, not only the key (its token): threads of a store share a session, so a thread
 * whose write lease ran out and whose key another thread allocated again would otherwise publish that allocation
 * before its copies were done. Its own allocation gone, it gets MMC_UNMATCHED_KEY. And it goes only to the server
 * that granted it (pinned): a server since gone took its allocations with it, and its successor may have given
 * their tokens to others.
 */
int mmc_batch_write_finish(mmc_store *s, const char *const *keys, const int32_t *write_results, size_t n, int *results)
{
	STORE_CALL(s);
	struct finish_ctx f = {results, NULL};
	struct key_rpc k = {.body = WB_WRITE_FINISH, .req = mmc_KeyBatch_init_zero, .on_result = on_finish, .arg = &f};
	pthread_t self = pthread_self();
	struct gva_keys ck;
	uint64_t *tokens, *seqs, *losses, now;
	size_t *index, m = 0;
	int rc = check_keys(s, keys, n);

	if (!rc && (!write_results || !results))
		rc = MMC_INVALID_PARAM;
	if (rc)
		return fail_all(results, n, rc);
	if (!(tokens = calloc(4 * n, sizeof(*tokens))))
		return fail_all(results, n, MMC_MALLOC_FAILED);
	if (gva_keys_init(&ck, keys, n)) {
		free(tokens);
		return fail_all(results, n, MMC_MALLOC_FAILED);
	}
	seqs = tokens + n;
	losses = seqs + n;
	index = (size_t *)(losses + n);
	now = meta_conn_losses(s->meta);
	for (size_t i = 0; i < n; i++)
		losses[i] = now;
	pthread_rwlock_rdlock(&s->gva->lock);
	gva_tracker_finish_grants(s->gva, &ck, self, tokens, seqs, losses);
	pthread_rwlock_unlock(&s->gva->lock);
	for (size_t i = 0; i < n; i++) {
		results[i] = MMC_UNMATCHED_KEY; /* granted by a server since gone, unless sent */
		if (losses[i] == now)
			index[m++] = i;
	}
	f.index = index;
	k.items = (struct wire_items){.n = m, .keys = keys, .index = index, .values = write_results, .tokens = tokens};
	k.pinned = true;
	k.on_conn = now;
	rc = m ? key_rpc_call(s, &k) : 0;
	if (rc == 0) {
		pthread_rwlock_wrlock(&s->gva->lock);
		gva_tracker_drop_finished(s->gva, &ck, seqs, self);
		pthread_rwlock_unlock(&s->gva->lock);
	}
	gva_keys_fini(&ck);
	free(tokens);
	return rc ? fail_all(results, n, rc) : 0;
}

/* ---- read side ---- */

struct lease_ctx {
	struct grants got;
	const char *const *keys;
	int *results;
	uint64_t t0;
	uint64_t losses;
};

static bool on_lease(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct lease_ctx *l = arg;

	l->results[i] = r->result;
	for (pb_size_t b = 0; !r->result && b < r->blobs_count; b++) {
		struct gva_entry e;

		memset(&e, 0, sizeof(e));
		e.start = mmc_gva_make(r->blobs[b].rank, r->blobs[b].media, r->blobs[b].offset);
		e.end = e.start + r->size;
		e.incarnation = r->blobs[b].incarnation;
		e.kind = GVA_READ;
		e.expiry_ms = l->t0 + r->lease_ms;
		e.losses = l->losses;
		e.token = r->token;
		strcpy(e.key, l->keys[i]);
		grant(&l->got, &e);
	}
	return true;
}

int mmc_batch_add_lease(mmc_store *s, const char *const *keys, size_t n, uint64_t lease_ttl_ms, int *results)
{
	STORE_CALL(s);
	struct lease_ctx l = {{NULL, 0, 0, false}, keys, results, clock_ms(), 0};
	struct key_rpc k = {.body = WB_ADD_LEASE, .req = mmc_KeyBatch_init_zero, .on_result = on_lease, .arg = &l};
	struct gva_keys ck;
	int rc = check_keys(s, keys, n);

	if (!rc && !results)
		rc = MMC_INVALID_PARAM;
	if (rc)
		return fail_all(results, n, rc);
	if (gva_keys_init(&ck, keys, n))
		return fail_all(results, n, MMC_MALLOC_FAILED);
	l.losses = meta_conn_losses(s->meta); /* only now: s was checked */
	k.req.lease_ttl_ms = lease_ttl_ms;
	k.items = (struct wire_items){.n = n, .keys = keys};
	pthread_rwlock_rdlock(&s->gva->leases);
	rc = key_rpc_call(s, &k);
	if (rc == 0 && l.got.failed)
		rc = MMC_MALLOC_FAILED;
	if (rc == 0) { /* a key leased again: its old ranges are replaced */
		pthread_rwlock_wrlock(&s->gva->lock);
		gva_tracker_drop_reads(s->gva, &ck, results, 0, NULL);
		rc = gva_tracker_add(s->gva, l.got.v, l.got.n, clock_ms());
		pthread_rwlock_unlock(&s->gva->lock);
	}
	pthread_rwlock_unlock(&s->gva->leases);
	gva_keys_fini(&ck);
	free(l.got.v);
	return rc ? fail_all(results, n, rc) : 0;
}

int mmc_batch_remove_lease(mmc_store *s, const char *const *keys, size_t n)
{
	STORE_CALL(s);
	struct gva_keys ck;
	int rc = check_keys(s, keys, n), *results;
	bool expired = false, *held, *released;

	if (rc)
		return rc;
	if (!(results = calloc(n, sizeof(*results) + 2 * sizeof(*held))))
		return MMC_MALLOC_FAILED;
	held = (bool *)(results + n);
	released = held + n;
	if (gva_keys_init(&ck, keys, n)) {
		free(results);
		return MMC_MALLOC_FAILED;
	}
	pthread_rwlock_wrlock(&s->gva->leases);
	pthread_rwlock_wrlock(&s->gva->lock);
	gva_tracker_drop_reads(s->gva, &ck, NULL, clock_ms(), held);
	pthread_rwlock_unlock(&s->gva->lock);
	rc = key_batch_codes(s, WB_REMOVE_LEASE, keys, NULL, n, 0, results);
	pthread_rwlock_unlock(&s->gva->leases);
	/* released where the record held it and the server let it go: a lease the server no longer has (lost with a
	 * failover, reclaimed) was not; a key repeated in the batch is released by its first entry */
	for (size_t i = 0; !rc && i < n; i++)
		released[gva_keys_place(&ck, i)] |= results[i] != MMC_LEASE_EXPIRED;
	for (size_t i = 0; !rc && i < n; i++)
		expired |= !held[gva_keys_place(&ck, i)] || !released[gva_keys_place(&ck, i)];
	gva_keys_fini(&ck);
	free(results);
	if (rc)
		return rc;
	return expired ? MMC_LEASE_EXPIRED : 0;
}

/* ---- copies ---- */

static bool direct_is_write(int32_t d)
{
	return d == MMC_COPY_L2G || d == MMC_COPY_H2G || d == MMC_COPY_L2GH || d == MMC_COPY_H2GH;
}

static bool direct_is_read(int32_t d)
{
	return d == MMC_COPY_G2L || d == MMC_COPY_G2H || d == MMC_COPY_GH2L || d == MMC_COPY_GH2H;
}

/*
 * xfer's lease on a copy's writes: each range goes out only under the write lease it was planned under (expiry[key],
 * or expiry_ms for every range when expiry is NULL), granted by the server still connected (losses). Past either
 * the space may be another object's, and a write that waited for a window slot or for a refusing peer would land in
 * it. A range's lease ending fails that range alone (a keyed copy's other keys go on).
 */
struct copy_lease {
	struct meta_conn *meta;
	uint64_t losses, expiry_ms;
	const uint64_t *expiry;
};

static int copy_lease_holds(void *arg, size_t key)
{
	const struct copy_lease *l = arg;
	uint64_t now = clock_ms(), until = key == XFER_NO_KEY ? UINT64_MAX
	                                   : l->expiry        ? l->expiry[key]
	                                                      : l->expiry_ms; /* a fence: none */

	return meta_conn_losses(l->meta) == l->losses && now < until && now < meta_conn_held_until(l->meta)
	           ? 0
	           : MMC_LEASE_EXPIRED;
}

/* Whether grant e may be copied to (write) or from now: past its write lease the space may already belong to another
 * object, and a grant of a server gone since was never its successor's. MMC_LEASE_EXPIRED when not. */
static int grant_usable(const struct gva_entry *e, bool write, uint64_t now, uint64_t losses)
{
	if (write && !e->readable && (e->expiry_ms <= now || e->losses != losses))
		return MMC_LEASE_EXPIRED;
	if (!write && e->losses != losses)
		return MMC_LEASE_EXPIRED;
	return 0;
}

/* The lease a copy of e runs under (UINT64_MAX: none, a write into a published object is skipped). */
static uint64_t grant_expiry(const struct gva_entry *e, bool write)
{
	return !write || !e->readable ? e->expiry_ms : UINT64_MAX;
}

/* One range, [g, g + size) of grant e, to or from buf: its xfer key, which has the one piece pc. */
static void range_key(const struct gva_entry *e, uint64_t g, void *buf, size_t size, bool write, struct xfer_key *xk,
                      struct xfer_piece *pc)
{
	*pc = (struct xfer_piece){buf, size};
	xk->pieces = pc;
	xk->npieces = 1;
	xk->ntargets = 1;
	xk->targets[0] = (struct xfer_target){mmc_gva_rank(g), e->incarnation, mmc_gva_media(g), mmc_gva_offset(g)};
	xk->skip = write && e->readable; /* already published */
}

/* Whether a range can be an RMA target at all: an SSD range is not (its service moves those bytes:
 * mmc_prefetch_keys). */
static bool range_ok(uint64_t g, const void *buf, size_t size)
{
	return buf && size && mmc_gva_valid(g) && mmc_gva_media(g) != MMC_MEDIA_SSD;
}

/* mmc_batch_copy's plan: every range in some live grant of this store, checked before anything moves; *expiry the
 * earliest lease of them. Caller holds the read lock. */
static int plan_any(struct mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n,
                    bool write, struct xfer_key *xk, struct xfer_piece *pieces, uint64_t *expiry)
{
	uint64_t now = clock_ms(), losses = meta_conn_losses(s->meta);
	int rc;

	*expiry = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct gva_entry *e;

		if (!range_ok(gvas[i], bufs[i], sizes[i]) ||
		    !(e = gva_tracker_find(s->gva, gvas[i], sizes[i], write ? GVA_WRITE : GVA_READ)))
			return MMC_INVALID_PARAM;
		if ((rc = grant_usable(e, write, now, losses)) != 0)
			return rc;
		if (grant_expiry(e, write) < *expiry)
			*expiry = grant_expiry(e, write);
		range_key(e, gvas[i], bufs[i], sizes[i], write, &xk[i], &pieces[i]);
	}
	return 0;
}

/* A keyed copy's arguments: per key its grant (keys[i], gvas[i]) and counts[i] ranges, in key order. */
struct keyed {
	const char *const *keys;
	const mmc_gva *gvas;
	const uint32_t *counts;
	const uint64_t *offsets;
	void *const *bufs;
	const size_t *sizes;
	size_t n;
};

/* Key i's grant: the live one of its kind at gvas[i], if it is for keys[i] and starts there. 0, MMC_INVALID_PARAM
 * (a bad key or GVA), MMC_LEASE_EXPIRED (the caller's grant ended: none is there, or another one, for another key
 * or for the key at another place). */
static int keyed_grant(struct mmc_store *s, const struct keyed *k, size_t i, bool write, const struct gva_entry **e)
{
	if (!store_key_ok(s, k->keys[i]) || !mmc_gva_valid(k->gvas[i]))
		return MMC_INVALID_PARAM;
	*e = gva_tracker_find(s->gva, k->gvas[i], 1, write ? GVA_WRITE : GVA_READ);
	return *e && (*e)->start == k->gvas[i] && strcmp((*e)->key, k->keys[i]) == 0 ? 0 : MMC_LEASE_EXPIRED;
}

/* Plans key i's ranges from range `at` on: results[i] 0, or its code with none of them planned (skipped); expiry[i]
 * the lease they run under. Caller holds the read lock. */
static void plan_key(struct mmc_store *s, const struct keyed *k, size_t i, size_t at, bool write, uint64_t now,
                     uint64_t losses, struct xfer_key *xk, struct xfer_piece *pieces, uint64_t *expiry, int *results)
{
	const struct gva_entry *e = NULL;
	int rc = keyed_grant(s, k, i, write, &e);

	if (!rc)
		rc = grant_usable(e, write, now, losses);
	for (uint32_t j = 0; !rc && j < k->counts[i]; j++) {
		uint64_t off = k->offsets[at + j], size = k->sizes[at + j], g = k->gvas[i] + off;

		if (!range_ok(g, k->bufs[at + j], size) || off > e->end - e->start || size > e->end - e->start - off)
			rc = MMC_INVALID_PARAM;
		else
			range_key(e, g, k->bufs[at + j], size, write, &xk[at + j], &pieces[at + j]);
	}
	for (uint32_t j = 0; rc && j < k->counts[i]; j++)
		xk[at + j].skip = true;
	expiry[i] = rc ? UINT64_MAX : grant_expiry(e, write);
	results[i] = rc;
}

/* A key's result after its copy: its ranges' first error; a read that ended after its lease, or after the server
 * that granted it went away, may have read reused memory. */
static int keyed_result(const struct xfer_key *xk, uint32_t count, int rc, bool write, uint64_t expiry, bool lost)
{
	for (uint32_t j = 0; !rc && j < count; j++)
		rc = xk[j].result;
	if (!rc && ((!write && clock_ms() >= expiry) || lost))
		rc = MMC_LEASE_EXPIRED;
	return rc;
}

/* Whether a read's grants may be gone by now: the server that granted them is silent past the heartbeat window
 * (paused, cut off: a successor may have given the space away), whatever their own lease says. */
static bool reads_unheld(struct mmc_store *s, bool write)
{
	return !write && clock_ms() >= meta_conn_held_until(s->meta);
}

/* xfer's part of a copy, writes under copy_lease until expiry; then whether what it moved may not be the grants'
 * any more: the server that granted them was lost, or for reads went silent. */
static bool run_copies(struct mmc_store *s, bool write, struct xfer_key *xk, size_t n, uint64_t losses,
                       const struct copy_lease *until)
{
	struct copy_lease lease = {s->meta, losses, until->expiry_ms, until->expiry};
	struct xfer_hook hook = {.lease = copy_lease_holds, .arg = &lease};

	xfer_run(s, write, xk, n, 0, write ? &hook : NULL);
	return meta_conn_losses(s->meta) != losses || reads_unheld(s, write);
}

int mmc_batch_copy(mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n, int32_t direct,
                   uint32_t flag)
{
	STORE_CALL(s);
	bool write = direct_is_write(direct), lost;
	struct xfer_key *xk = NULL;
	struct xfer_piece *pieces = NULL;
	uint64_t expiry, losses;
	int rc = store_check_ready(s);

	(void)flag;
	if (rc)
		return rc;
	losses = meta_conn_losses(s->meta);
	if (!gvas || !bufs || !sizes || n > MMC_BATCH_MAX * MMC_LAYERS_MAX || (!write && !direct_is_read(direct)))
		return MMC_INVALID_PARAM;
	if (n == 0)
		return 0;
	if (!(xk = calloc(n, sizeof(*xk))) || !(pieces = calloc(n, sizeof(*pieces)))) {
		rc = MMC_MALLOC_FAILED;
		goto out;
	}
	pthread_rwlock_rdlock(&s->gva->lock);
	rc = plan_any(s, gvas, bufs, sizes, n, write, xk, pieces, &expiry);
	pthread_rwlock_unlock(&s->gva->lock);
	if (rc)
		goto out;
	/* a read lease already over: nothing is read, so the caller's buffers keep what they held */
	if (!write && (clock_ms() >= expiry || reads_unheld(s, write))) {
		rc = MMC_LEASE_EXPIRED;
		goto out;
	}
	lost = run_copies(s, write, xk, n, losses, &(struct copy_lease){.expiry_ms = expiry});
	for (size_t i = 0; i < n && !rc; i++)
		rc = xk[i].result;
	if (!rc && ((!write && clock_ms() >= expiry) || lost))
		rc = MMC_LEASE_EXPIRED;
out:
	free(xk);
	free(pieces);
	return rc;
}

/* The keyed copy's arguments as mmc.h gives them: 0, or MMC_INVALID_PARAM; *total the ranges. */
static int keyed_check(const struct keyed *k, int32_t direct, const int *results, size_t *total)
{
	*total = 0;
	if (!k->keys || !k->gvas || !k->counts || !results || k->n > MMC_BATCH_MAX ||
	    (!direct_is_write(direct) && !direct_is_read(direct)))
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < k->n; i++)
		*total += k->counts[i];
	if (*total > MMC_BATCH_MAX * MMC_LAYERS_MAX || (*total && (!k->offsets || !k->bufs || !k->sizes)))
		return MMC_INVALID_PARAM;
	return 0;
}

int mmc_batch_copy_keys(mmc_store *s, const char *const *keys, const mmc_gva *gvas, const uint32_t *counts,
                        const uint64_t *offsets, void *const *bufs, const size_t *sizes, size_t n, int32_t direct,
                        uint32_t flag, int *results)
{
	STORE_CALL(s);
	struct keyed k = {keys, gvas, counts, offsets, bufs, sizes, n};
	bool write = direct_is_write(direct), lost;
	struct xfer_key *xk = NULL;
	struct xfer_piece *pieces = NULL;
	uint64_t *expiry = NULL, *range_expiry = NULL, losses, now;
	size_t total, at = 0;
	int rc = store_check_ready(s);

	(void)flag;
	if (rc || (rc = keyed_check(&k, direct, results, &total)) != 0)
		return rc;
	if (n == 0)
		return 0;
	if (!(xk = calloc(total ? total : 1, sizeof(*xk))) || !(pieces = calloc(total ? total : 1, sizeof(*pieces))) ||
	    !(expiry = calloc(n, sizeof(*expiry))) ||
	    !(range_expiry = calloc(total ? total : 1, sizeof(*range_expiry)))) {
		rc = MMC_MALLOC_FAILED;
		goto out;
	}
	losses = meta_conn_losses(s->meta);
	now = clock_ms();
	pthread_rwlock_rdlock(&s->gva->lock);
	for (size_t i = 0; i < n; at += counts[i++])
		plan_key(s, &k, i, at, write, now, losses, xk, pieces, expiry, results);
	pthread_rwlock_unlock(&s->gva->lock);
	for (size_t i = 0, from = 0; i < n; from += counts[i++]) {
		/* a read lease already over: nothing of the key is read, its buffers keep what they held */
		if (!results[i] && !write && (clock_ms() >= expiry[i] || reads_unheld(s, write))) {
			results[i] = MMC_LEASE_EXPIRED;
			for (uint32_t j = 0; j < counts[i]; j++)
				xk[from + j].skip = true;
		}
		for (uint32_t j = 0; j < counts[i]; j++) /* each range under its own key's write lease */
			range_expiry[from + j] = expiry[i];
	}
	lost = total ? run_copies(s, write, xk, total, losses, &(struct copy_lease){.expiry = range_expiry})
	             : meta_conn_losses(s->meta) != losses;
	for (size_t i = 0, from = 0; i < n; from += counts[i++])
		results[i] = keyed_result(&xk[from], counts[i], results[i], write, expiry[i], lost);
out:
	free(xk);
	free(pieces);
	free(expiry);
	free(range_expiry);
	return rc;
}
