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
		if (!store_key_ok(keys[i]))
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
		rc = gva_tracker_add(s->gva, g->v, g->n);
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
	if (!rc && (!sizes || !gvas || (media != MMC_MEDIA_DRAM && media != MMC_MEDIA_HBM)))
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
	rc = key_rpc_call(s, &k);
	if (rc == 0 && l.got.failed)
		rc = MMC_MALLOC_FAILED;
	if (rc == 0) { /* a key leased again: its old ranges are replaced */
		pthread_rwlock_wrlock(&s->gva->lock);
		gva_tracker_drop_reads(s->gva, &ck, results, 0, NULL);
		rc = gva_tracker_add(s->gva, l.got.v, l.got.n);
		pthread_rwlock_unlock(&s->gva->lock);
	}
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
	pthread_rwlock_wrlock(&s->gva->lock);
	gva_tracker_drop_reads(s->gva, &ck, NULL, clock_ms(), held);
	pthread_rwlock_unlock(&s->gva->lock);
	rc = key_batch_codes(s, WB_REMOVE_LEASE, keys, NULL, n, 0, results);
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
 * xfer's lease on a copy's writes: they go out only under the write leases they were planned under (expiry_ms,
 * the earliest), granted by the server still connected (losses). Past either the space may be another object's,
 * and a write that waited for a window slot or for a refusing peer would land in it.
 */
struct copy_lease {
	struct meta_conn *meta;
	uint64_t losses, expiry_ms;
};

static int copy_lease_holds(void *arg)
{
	const struct copy_lease *l = arg;

	uint64_t now = clock_ms();

	return meta_conn_losses(l->meta) == l->losses && now < l->expiry_ms && now < meta_conn_held_until(l->meta)
	           ? 0
	           : MMC_LEASE_EXPIRED;
}

/* The grant a keyed copy's range must fall in: the one for keys[i] that starts at bases[i]. */
struct copy_grants {
	const char *const *keys;
	const mmc_gva *bases;
};

/* 0, MMC_INVALID_PARAM (no such key or base given, or no grant for a plain copy: cg NULL) or MMC_LEASE_EXPIRED
 * (the range's grant is another one: the caller's ended and its space was granted again, for another key or for
 * the key at another place). */
static int grant_is_callers(const struct copy_grants *cg, size_t i, const struct gva_entry *e)
{
	if (!cg)
		return e ? 0 : MMC_INVALID_PARAM;
	if (!store_key_ok(cg->keys[i]) || !mmc_gva_valid(cg->bases[i]))
		return MMC_INVALID_PARAM;
	return e && e->start == cg->bases[i] && strcmp(e->key, cg->keys[i]) == 0 ? 0 : MMC_LEASE_EXPIRED;
}

/* Checks every range before anything moves; fills one xfer key per copy; *expiry: the earliest lease of the reads,
 * or of the writes not yet published. Caller holds the read lock. */
static int plan_copies(struct mmc_store *s, const struct copy_grants *cg, const mmc_gva *gvas, void *const *bufs,
                       const size_t *sizes, size_t n, bool write, struct xfer_key *xk, struct xfer_piece *pieces,
                       uint64_t *expiry)
{
	uint64_t now = clock_ms(), losses = meta_conn_losses(s->meta);
	int rc;

	*expiry = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t g = gvas[i];
		const struct gva_entry *e;

		/* an SSD range is no RMA target: its service moves those bytes (mmc_prefetch_keys) */
		if (!bufs[i] || !sizes[i] || !mmc_gva_valid(g) || mmc_gva_media(g) == MMC_MEDIA_SSD)
			return MMC_INVALID_PARAM;
		e = gva_tracker_find(s->gva, g, sizes[i], write ? GVA_WRITE : GVA_READ);
		if ((rc = grant_is_callers(cg, i, e)) != 0)
			return rc;
		/* past its write lease the space may already belong to another object: never write there; nor under a
		 * lease from a server that has gone since (its successor never granted it) */
		if (write && !e->readable && (e->expiry_ms <= now || e->losses != losses))
			return MMC_LEASE_EXPIRED;
		if (!write && e->losses != losses)
			return MMC_LEASE_EXPIRED;
		if ((!write || !e->readable) && e->expiry_ms < *expiry)
			*expiry = e->expiry_ms;
		pieces[i] = (struct xfer_piece){bufs[i], sizes[i]};
		xk[i].pieces = &pieces[i];
		xk[i].npieces = 1;
		xk[i].ntargets = 1;
		xk[i].targets[0] =
		    (struct xfer_target){mmc_gva_rank(g), e->incarnation, mmc_gva_media(g), mmc_gva_offset(g)};
		xk[i].skip = write && e->readable; /* already published */
	}
	return 0;
}

/* cg: the grants a keyed copy names (mmc_batch_copy_keys), NULL for any of this store's (mmc_batch_copy). */
static int copy_ranges(struct mmc_store *s, const struct copy_grants *cg, const mmc_gva *gvas, void *const *bufs,
                       const size_t *sizes, size_t n, int32_t direct)
{
	bool write = direct_is_write(direct);
	struct xfer_key *xk;
	struct xfer_piece *pieces;
	struct copy_lease lease;
	struct xfer_hook hook = {.lease = copy_lease_holds, .arg = &lease};
	uint64_t expiry, losses;
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	losses = meta_conn_losses(s->meta);
	if (!gvas || !bufs || !sizes || (cg && (!cg->keys || !cg->bases)) || n > MMC_BATCH_MAX * MMC_LAYERS_MAX ||
	    (!write && !direct_is_read(direct)))
		return MMC_INVALID_PARAM;
	if (n == 0)
		return 0;
	xk = calloc(n, sizeof(*xk));
	pieces = calloc(n, sizeof(*pieces));
	if (!xk || !pieces) {
		rc = MMC_MALLOC_FAILED;
		goto out;
	}
	pthread_rwlock_rdlock(&s->gva->lock);
	rc = plan_copies(s, cg, gvas, bufs, sizes, n, write, xk, pieces, &expiry);
	pthread_rwlock_unlock(&s->gva->lock);
	if (rc)
		goto out;
	/* a read lease already over: nothing is read, so the caller's buffers keep what they held */
	if (!write && clock_ms() >= expiry) {
		rc = MMC_LEASE_EXPIRED;
		goto out;
	}
	lease = (struct copy_lease){s->meta, losses, expiry};
	xfer_run(s, write, xk, n, 0, write ? &hook : NULL);
	for (size_t i = 0; i < n && !rc; i++)
		rc = xk[i].result;
	/* a read that ended after its lease, or after the server that granted it went away, may have read reused
	 * memory */
	if (!rc && ((!write && clock_ms() >= expiry) || meta_conn_losses(s->meta) != losses))
		rc = MMC_LEASE_EXPIRED;
out:
	free(xk);
	free(pieces);
	return rc;
}

int mmc_batch_copy(mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n, int32_t direct,
                   uint32_t flag)
{
	STORE_CALL(s);
	(void)flag;
	return copy_ranges(s, NULL, gvas, bufs, sizes, n, direct);
}

int mmc_batch_copy_keys(mmc_store *s, const char *const *keys, const mmc_gva *bases, const mmc_gva *gvas,
                        void *const *bufs, const size_t *sizes, size_t n, int32_t direct, uint32_t flag)
{
	STORE_CALL(s);
	struct copy_grants granted = {keys, bases};

	(void)flag;
	return copy_ranges(s, &granted, gvas, bufs, sizes, n, direct);
}
