#include "store_gva.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "clock.h"
#include "key_rpc.h"
#include "lg.h"
#include "store.h"
#include "xfer.h"

enum { GVA_WRITE = 1, GVA_READ = 2 };

struct gva_entry {
	uint64_t start, end; /* [start, end) in GVA space */
	uint64_t incarnation;
	uint64_t expiry_ms;
	uint64_t losses; /* meta_conn_losses() when granted: a lease does not outlive its server */
	uint64_t seq;    /* order of arrival: of two entries over one range, the later is the grant that holds */
	uint8_t kind;
	bool readable; /* write entry of an object that was already published: copies into it are skipped */
	bool dropped;
	char key[MMC_KEY_MAX + 1];
};

/* Entries of one kind never overlap (prune_overlaps): each byte of GVA space has at most one grant per kind. */
struct gva_tracker {
	pthread_rwlock_t lock;
	struct gva_entry *v; /* sorted by start, then seq */
	size_t n, cap;
	uint64_t seq;
};

struct gva_tracker *gva_tracker_new(void)
{
	struct gva_tracker *t = calloc(1, sizeof(*t));

	if (t)
		pthread_rwlock_init(&t->lock, NULL);
	return t;
}

void gva_tracker_free(struct gva_tracker *t)
{
	if (!t)
		return;
	pthread_rwlock_destroy(&t->lock);
	free(t->v);
	free(t);
}

static int cmp_start(const void *a, const void *b)
{
	const struct gva_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Drops every entry that a later entry of its kind overlaps. Two live grants of one kind never share a byte (the
 * server hands a range to one object at a time), so the earlier one is stale: a write lease that ran out or was
 * never finished, a read lease never removed, a grant of a server since gone. Kept, it could win a lookup over
 * the grant that holds now, and a copy would be checked against the wrong lease or, for a stale entry of a
 * published object, skipped: the new object published over bytes it never wrote. Entries are sorted; one pass:
 * of the kept entries of a kind only the last can overlap the next (the others end before it starts).
 */
static void prune_overlaps(struct gva_tracker *t)
{
	size_t last[GVA_READ + 1], w = 0;
	bool any[GVA_READ + 1] = {false};

	for (size_t r = 0; r < t->n; r++) {
		struct gva_entry *e = &t->v[r];
		uint8_t k = e->kind;

		if (any[k] && t->v[last[k]].end > e->start) {
			if (t->v[last[k]].seq > e->seq) {
				e->dropped = true;
				continue;
			}
			t->v[last[k]].dropped = true;
		}
		last[k] = r;
		any[k] = true;
	}
	for (size_t r = 0; r < t->n; r++)
		if (!t->v[r].dropped)
			t->v[w++] = t->v[r];
	t->n = w;
}

/* Orders t's entries by start for find() and drops the stale ones; an empty table has no array to hand qsort (NULL
 * is undefined there even for no elements). Caller holds the write lock. */
static void sort_entries(struct gva_tracker *t)
{
	if (t->n > 1) {
		qsort(t->v, t->n, sizeof(*t->v), cmp_start);
		prune_overlaps(t);
	}
}

/* Entry of the kind containing [gva, gva+len), or NULL: only the last of the kind that starts at or before gva
 * can (entries of a kind never overlap). Caller holds the lock. */
static struct gva_entry *find(struct gva_tracker *t, uint64_t gva, uint64_t len, uint8_t kind)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) { /* first entry with start > gva */
		size_t mid = (lo + hi) / 2;

		if (t->v[mid].start <= gva)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0; i--) {
		struct gva_entry *e = &t->v[i - 1];

		if (e->kind != kind)
			continue;
		return gva + len <= e->end && gva + len >= gva ? e : NULL;
	}
	return NULL;
}

/* Drops every entry of kind for the given keys (one pass). Caller holds the write lock. */
static void drop_keys(struct gva_tracker *t, const char *const *keys, size_t n, uint8_t kind)
{
	size_t w = 0;

	for (size_t r = 0; r < t->n; r++) {
		bool gone = false;

		for (size_t k = 0; k < n && !gone && t->v[r].kind == kind; k++)
			gone = strcmp(t->v[r].key, keys[k]) == 0;
		if (!gone)
			t->v[w++] = t->v[r];
	}
	t->n = w;
}

static int add_entry(struct gva_tracker *t, const struct gva_entry *e)
{
	struct gva_entry *v = array_grow(t->v, &t->cap, t->n + 1, sizeof(*v), 64);

	if (!v)
		return MMC_MALLOC_FAILED;
	t->v = v;
	t->v[t->n] = *e;
	t->v[t->n++].seq = ++t->seq;
	return 0;
}

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

/* ---- write side ---- */

struct malloc_ctx {
	struct gva_tracker *t;
	const char *const *keys;
	const size_t *sizes;
	mmc_gva *gvas;
	uint64_t t0;
	uint64_t losses;
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
	strcpy(e.key, m->keys[i]);
	if (r->size != m->sizes[i] && !e.readable)
		return true;
	if (add_entry(m->t, &e) == 0)
		m->gvas[i] = e.start;
	return true;
}

int mmc_batch_malloc(mmc_store *s, const char *const *keys, const size_t *sizes, size_t n, uint16_t media,
                     uint64_t lease_ttl_ms, mmc_gva *gvas)
{
	struct malloc_ctx m = {NULL, keys, sizes, gvas, clock_ms(), 0};
	struct key_rpc k = {.body = WB_MALLOC, .req = mmc_KeyBatch_init_zero, .on_result = on_malloc, .arg = &m};
	uint64_t *sz;
	int rc = check_keys(s, keys, n);

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
	m.t = s->gva;
	m.losses = meta_conn_losses(s->meta); /* only now: s was checked */
	k.req.media = media;
	k.req.lease_ttl_ms = lease_ttl_ms;
	k.req.replica_num = 1;
	k.req.flags = MMC_WIRE_FLAG_SPREAD;
	k.items = (struct wire_items){.n = n, .keys = keys, .sizes = sz};
	pthread_rwlock_wrlock(&s->gva->lock);
	rc = key_rpc_call(s, &k);
	sort_entries(s->gva);
	pthread_rwlock_unlock(&s->gva->lock);
	free(sz);
	return rc;
}

int mmc_batch_write_finish(mmc_store *s, const char *const *keys, const int32_t *write_results, size_t n, int *results)
{
	int rc = check_keys(s, keys, n);

	if (!rc && (!write_results || !results))
		rc = MMC_INVALID_PARAM;
	if (rc)
		return fail_all(results, n, rc);
	rc = key_batch_codes(s, WB_WRITE_FINISH, keys, write_results, n, 0, results);
	if (rc)
		return rc;
	pthread_rwlock_wrlock(&s->gva->lock);
	drop_keys(s->gva, keys, n, GVA_WRITE);
	pthread_rwlock_unlock(&s->gva->lock);
	return 0;
}

/* ---- read side ---- */

struct lease_ctx {
	struct gva_tracker *t;
	const char *const *keys;
	int *results;
	uint64_t t0;
	uint64_t losses;
};

static bool on_lease(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct lease_ctx *l = arg;
	const char *key = l->keys[i];

	l->results[i] = r->result;
	if (r->result)
		return true;
	/* renewing: the key's old ranges are replaced */
	drop_keys(l->t, &key, 1, GVA_READ);
	for (pb_size_t b = 0; b < r->blobs_count; b++) {
		struct gva_entry e;

		memset(&e, 0, sizeof(e));
		e.start = mmc_gva_make(r->blobs[b].rank, r->blobs[b].media, r->blobs[b].offset);
		e.end = e.start + r->size;
		e.incarnation = r->blobs[b].incarnation;
		e.kind = GVA_READ;
		e.expiry_ms = l->t0 + r->lease_ms;
		e.losses = l->losses;
		strcpy(e.key, key);
		if (add_entry(l->t, &e))
			l->results[i] = MMC_MALLOC_FAILED;
	}
	return true;
}

int mmc_batch_add_lease(mmc_store *s, const char *const *keys, size_t n, uint64_t lease_ttl_ms, int *results)
{
	struct lease_ctx l = {NULL, keys, results, clock_ms(), 0};
	struct key_rpc k = {.body = WB_ADD_LEASE, .req = mmc_KeyBatch_init_zero, .on_result = on_lease, .arg = &l};
	int rc = check_keys(s, keys, n);

	if (!rc && !results)
		rc = MMC_INVALID_PARAM;
	if (rc)
		return fail_all(results, n, rc);
	l.t = s->gva;
	l.losses = meta_conn_losses(s->meta); /* only now: s was checked */
	k.req.lease_ttl_ms = lease_ttl_ms;
	k.items = (struct wire_items){.n = n, .keys = keys};
	pthread_rwlock_wrlock(&s->gva->lock);
	rc = key_rpc_call(s, &k);
	sort_entries(s->gva);
	pthread_rwlock_unlock(&s->gva->lock);
	return rc ? fail_all(results, n, rc) : 0;
}

int mmc_batch_remove_lease(mmc_store *s, const char *const *keys, size_t n)
{
	uint64_t now = clock_ms();
	int rc = check_keys(s, keys, n), *results;
	bool expired = false;

	if (rc)
		return rc;
	pthread_rwlock_wrlock(&s->gva->lock);
	for (size_t i = 0; i < n; i++) {
		bool held = false;

		for (size_t e = 0; e < s->gva->n && !held; e++)
			held = s->gva->v[e].kind == GVA_READ && s->gva->v[e].expiry_ms > now &&
			       strcmp(s->gva->v[e].key, keys[i]) == 0;
		expired |= !held;
	}
	drop_keys(s->gva, keys, n, GVA_READ);
	pthread_rwlock_unlock(&s->gva->lock);
	if (!(results = calloc(n, sizeof(*results))))
		return MMC_MALLOC_FAILED;
	rc = key_batch_codes(s, WB_REMOVE_LEASE, keys, NULL, n, 0, results);
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

	return meta_conn_losses(l->meta) == l->losses && clock_ms() < l->expiry_ms ? 0 : MMC_LEASE_EXPIRED;
}

/* Checks every range before anything moves; fills one xfer key per copy; *expiry: the earliest lease of the reads,
 * or of the writes not yet published. Caller holds the read lock. */
static int plan_copies(struct mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n,
                       bool write, struct xfer_key *xk, struct xfer_piece *pieces, uint64_t *expiry)
{
	uint64_t now = clock_ms(), losses = meta_conn_losses(s->meta);

	*expiry = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t g = gvas[i];
		struct gva_entry *e;

		if (!bufs[i] || !sizes[i] || !mmc_gva_valid(g))
			return MMC_INVALID_PARAM;
		e = find(s->gva, g, sizes[i], write ? GVA_WRITE : GVA_READ);
		if (!e)
			return MMC_INVALID_PARAM;
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

int mmc_batch_copy(mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n, int32_t direct,
                   uint32_t flag)
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
	if (!gvas || !bufs || !sizes || n > MMC_BATCH_MAX * MMC_LAYERS_MAX || (!write && !direct_is_read(direct)))
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
	rc = plan_copies(s, gvas, bufs, sizes, n, write, xk, pieces, &expiry);
	pthread_rwlock_unlock(&s->gva->lock);
	if (rc)
		goto out;
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
