/*
 * put / get of single buffers, layer lists and batches of either. Every form becomes the same plan: per key a list
 * of local pieces. A put of small objects carves them out of the store's allocation extents, writes them by RMA
 * and publishes them with one put RPC; larger objects, and keys no extent takes, go by one allocate RPC, all RMA
 * writes, one commit RPC. A get is one get RPC, all RMA reads, one (unanswered) release.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "crc32c.h"
#include "extent.h"
#include "log.h"
#include "store_ops.h"

struct plan {
	size_t n;
	const char *const *keys;
	struct xfer_key *xk;
	struct xfer_piece *pieces;
	uint64_t *totals;
	uint64_t *lease_ms;         /* get: the lease granted on each key */
	uint64_t *tokens;           /* get: the object each lease was granted on */
	struct wire_checksum *sums; /* put: what the commit sends; get: what the reply said */
	bool *damaged;              /* get: the bytes that landed differ from sums */
	bool *found;                /* put: the server answered that the key exists (the first writer wins) */
	int *results;
	uint8_t *state;  /* per key: PK_* */
	size_t *index;   /* scratch: keys taking part in the next RPC */
	uint8_t *lane;   /* put through extents: the lane of each key */
	uint8_t summing; /* put: the state whose keys the posted hook checksums */
	bool confirmed;  /* put through extents: the server published at least one key */
	bool refused;    /* put through extents: the server turned a place down */
	/* clock_ms() by which a lost meta connection must be back: one for the whole call, however many round trips
	 * and passes it takes (retry_ms from its start) */
	uint64_t deadline_ms;
};

/* PK_EXTENT: a put key written into an extent, published by the put RPC */
enum { PK_SKIP = 0, PK_ACTIVE = 1, PK_LEASED = 2, PK_EXTENT = 3 };

/* ---- plans ---- */

static void plan_free(struct plan *p)
{
	free(p->xk);
	free(p->pieces);
	free(p->totals);
	free(p->lease_ms);
	free(p->tokens);
	free(p->sums);
	free(p->damaged);
	free(p->found);
	free(p->state);
	free(p->index);
	free(p->lane);
}

static int plan_alloc(struct plan *p, size_t n, size_t npieces, const char *const *keys, int *results)
{
	memset(p, 0, sizeof(*p));
	memset(results, 0, n * sizeof(*results));
	p->n = n;
	p->keys = keys;
	p->results = results;
	p->xk = calloc(n, sizeof(*p->xk));
	p->pieces = calloc(npieces, sizeof(*p->pieces));
	p->totals = calloc(n, sizeof(*p->totals));
	p->tokens = calloc(n, sizeof(*p->tokens));
	p->lease_ms = calloc(n, sizeof(*p->lease_ms));
	p->sums = calloc(n, sizeof(*p->sums));
	p->damaged = calloc(n, sizeof(*p->damaged));
	p->found = calloc(n, sizeof(*p->found));
	p->state = calloc(n, sizeof(*p->state));
	p->index = calloc(n, sizeof(*p->index));
	p->lane = calloc(n, sizeof(*p->lane));
	if (!p->xk || !p->pieces || !p->totals || !p->tokens || !p->lease_ms || !p->sums || !p->damaged || !p->found ||
	    !p->state || !p->index || !p->lane) {
		plan_free(p);
		return MMC_MALLOC_FAILED;
	}
	return 0;
}

/* Keys in `want` state, for an RPC; returns how many. */
static size_t plan_select(struct plan *p, uint8_t want)
{
	size_t m = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] == want)
			p->index[m++] = i;
	return m;
}

/* ---- checksums (ock.mmc.client.verify_checksum) ---- */

/* CRC32C of a key's pieces in object order: the object's bytes, however a put or a get splits them. */
static uint32_t pieces_crc(const struct xfer_key *x)
{
	uint32_t c = 0;

	for (uint32_t i = 0; i < x->npieces; i++)
		c = crc32c(c, x->pieces[i].buf, x->pieces[i].len);
	return c;
}

/*
 * Writer: checksums the allocated keys' bytes while their RMAs are in flight (xfer's posted hook): the peer or the
 * provider moves the bytes meanwhile, so the pass costs little wall time. The commit carries the result.
 */
static void sum_puts(void *arg)
{
	struct plan *p = arg;

	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] == p->summing)
			p->sums[i] = (struct wire_checksum){MMC_WIRE_CHECKSUM_CRC32C, pieces_crc(&p->xk[i])};
}

/*
 * Reader: checks one key over what landed in the caller's buffers as soon as it has (xfer's landed hook), while
 * the batch's later keys are still in flight and this key's bytes are still in cache. Objects written without a
 * checksum are read unverified.
 */
static void check_get(void *arg, size_t i)
{
	struct plan *p = arg;

	if (p->state[i] == PK_LEASED && p->sums[i].type == MMC_WIRE_CHECKSUM_CRC32C)
		p->damaged[i] = pieces_crc(&p->xk[i]) != p->sums[i].value;
}

/* A damaged key fails unless it failed already (a transfer error, or its lease expired first). One log line. */
static void verify_gets(struct plan *p)
{
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->results[i] || !p->damaged[i])
			continue;
		p->results[i] = MMC_CHECKSUM_MISMATCH;
		first = bad++ ? first : i;
	}
	if (bad)
		lg_warn("get key=\"%s\" rank=%u offset=%llu err=checksum_mismatch keys=%zu", p->keys[first],
		        p->xk[first].targets[0].rank, (unsigned long long)p->xk[first].targets[0].offset, bad);
}

/* ---- put ---- */

static bool on_alloc(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	size_t k = p->index[i];
	struct xfer_key *x = &p->xk[k];

	if (r->result == MMC_DUPLICATED_OBJECT) { /* first writer wins: not an error */
		p->state[k] = PK_SKIP;
		p->results[k] = 0;
		p->found[k] = true;
		return true;
	}
	if (r->result || r->blobs_count == 0) {
		p->state[k] = PK_SKIP;
		p->results[k] = r->result ? r->result : MMC_INTERNAL_ERROR;
		return true;
	}
	p->tokens[k] = r->token;
	x->ntargets = r->blobs_count;
	for (pb_size_t b = 0; b < r->blobs_count; b++)
		x->targets[b] = (struct xfer_target){r->blobs[b].rank, r->blobs[b].incarnation, r->blobs[b].media,
		                                     r->blobs[b].offset};
	return true;
}

static bool on_commit(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	size_t k = p->index[i];

	if (p->results[k] == 0)
		p->results[k] = r->result;
	return true;
}

static void set_replicas(mmc_KeyBatch *req, const mmc_replicate_config *rc)
{
	req->replica_num = rc && rc->replica_num ? rc->replica_num : 1;
	req->preferred_count = rc ? rc->preferred_count : 0;
	for (pb_size_t i = 0; i < req->preferred_count; i++)
		req->preferred[i] = rc->preferred_local_service_ids[i];
}

/* Sets the result of every key in state `st` to code and skips it from now on. */
static void fail_state(struct plan *p, uint8_t st, int code)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] == st) {
			p->results[i] = code;
			p->state[i] = PK_SKIP;
		}
}

/*
 * The connection a put's places came on (losses) died under keys index[0..n) of p: a commit that waited for the
 * next one reached a server that never made the allocations (MMC_UNMATCHED_KEY), a write failed against a pool
 * re-keyed for it, a put of extent places met a server that never granted them. A key its server did not commit
 * is a key lost with the connection, for run_put to put again (within retry_ms).
 */
static void lost_with_connection(struct mmc_store *s, struct plan *p, size_t n, uint64_t losses)
{
	for (size_t i = 0; s->conf.c.retry_ms && meta_conn_losses(s->meta) != losses && i < n; i++)
		if (p->results[p->index[i]])
			p->results[p->index[i]] = MMC_NOT_CONNECTED_META;
}

/* alloc, RMA, commit: the keys still PK_ACTIVE. */
static int put_by_key(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	struct key_rpc k = {.body = WB_ALLOC,
	                    .req = mmc_KeyBatch_init_zero,
	                    .on_result = on_alloc,
	                    .arg = p,
	                    .deadline_ms = p->deadline_ms};
	struct xfer_hook sum = {.posted = sum_puts, .arg = p};
	uint64_t losses;
	int32_t *values;
	int rc_call;

	set_replicas(&k.req, rc);
	k.req.flags = spread ? MMC_WIRE_FLAG_SPREAD : 0;
	k.items =
	    (struct wire_items){.n = plan_select(p, PK_ACTIVE), .keys = p->keys, .index = p->index, .sizes = p->totals};
	if (k.items.n == 0)
		return 0;
	rc_call = key_rpc_call(s, &k);
	if (rc_call) {
		for (size_t i = 0; i < k.items.n; i++)
			p->results[p->index[i]] = rc_call;
		return rc_call;
	}
	/* the server that placed these keys is gone: a restarted one may have given the space to someone else */
	losses = k.losses;
	if (meta_conn_losses(s->meta) != losses) {
		fail_state(p, PK_ACTIVE, MMC_NOT_CONNECTED_META);
		return MMC_NOT_CONNECTED_META;
	}
	for (size_t i = 0; i < p->n; i++)
		p->xk[i].result = p->state[i] == PK_ACTIVE ? 0 : 1;
	p->summing = PK_ACTIVE;
	xfer_run(s, 1, p->xk, p->n, s->conf.c.verify_checksum ? &sum : NULL);

	/* commit what was allocated: written keys become readable, failed ones are dropped */
	values = calloc(p->n, sizeof(*values));
	if (!values) {
		fail_state(p, PK_ACTIVE, MMC_MALLOC_FAILED);
		return MMC_MALLOC_FAILED;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (p->state[i] != PK_ACTIVE)
			continue;
		values[i] = p->xk[i].result;
		p->results[i] = p->xk[i].result;
	}
	k = (struct key_rpc){.body = WB_COMMIT,
	                     .req = mmc_KeyBatch_init_zero,
	                     .on_result = on_commit,
	                     .arg = p,
	                     .deadline_ms = p->deadline_ms};
	k.items = (struct wire_items){.n = plan_select(p, PK_ACTIVE),
	                              .keys = p->keys,
	                              .index = p->index,
	                              .values = values,
	                              .tokens = p->tokens,
	                              .checksums = p->sums};
	if (k.items.n && (rc_call = key_rpc_call(s, &k)))
		for (size_t i = 0; i < k.items.n; i++)
			if (p->results[p->index[i]] == 0)
				p->results[p->index[i]] = rc_call;
	free(values);
	lost_with_connection(s, p, k.items.n, losses);
	return 0;
}

/* ---- put through extents: one round trip ---- */

/* Marks the keys small enough for an extent PK_EXTENT; returns how many. */
static size_t mark_small(struct plan *p)
{
	size_t m = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->state[i] != PK_ACTIVE || p->totals[i] > EXTENT_OBJECT_MAX)
			continue;
		p->state[i] = PK_EXTENT;
		m++;
	}
	return m;
}

static void class_of(struct extent_class *c, const mmc_replicate_config *rc, bool spread)
{
	memset(c, 0, sizeof(*c));
	c->replicas = rc && rc->replica_num ? rc->replica_num : 1;
	c->npreferred = rc ? rc->preferred_count : 0;
	for (uint32_t i = 0; i < c->npreferred; i++)
		c->preferred[i] = rc->preferred_local_service_ids[i];
	c->spread = spread;
	/* a batch is dealt over lanes on distinct services, as alloc spreads it; replicas all on preferred ranks
	 * leave nothing to spread */
	c->lanes = spread && c->npreferred < c->replicas ? MMC_WIRE_EXTENT_LANES : 1;
}

/* Replica r of an extent key of lane l goes to that lane's extent r, at base[l] and up, key after key. */
static void aim(struct plan *p, const struct extent_group *g, uint64_t *base)
{
	uint32_t n = g->cls.replicas;

	for (size_t i = 0; i < p->n; i++) {
		struct xfer_key *x = &p->xk[i];
		const mmc_Extent *ext = &g->ext[p->lane[i] * n];

		x->result = p->state[i] == PK_EXTENT ? 0 : 1;
		if (x->result)
			continue;
		x->ntargets = n;
		for (uint32_t r = 0; r < n; r++)
			x->targets[r] = (struct xfer_target){ext[r].rank, ext[r].incarnation, ext[r].media,
			                                     ext[r].offset + base[p->lane[i]]};
		base[p->lane[i]] += (p->totals[i] + 4095) & ~(uint64_t)4095; /* the server's allocation unit */
	}
}

static bool on_put(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	size_t k = p->index[i];

	if (r->result == MMC_UNMATCHED_KEY) { /* the server no longer holds that extent for us: allocate it again */
		p->state[k] = PK_ACTIVE;
		p->refused = true;
		return true;
	}
	p->state[k] = PK_SKIP;
	p->results[k] = r->result == MMC_DUPLICATED_OBJECT ? 0 : r->result; /* first writer wins */
	p->found[k] = r->result == MMC_DUPLICATED_OBJECT;
	p->confirmed |= r->result == 0;
	return true;
}

/* Writes the extent keys and publishes them with one put RPC; keys it could not place stay PK_ACTIVE. */
static void put_extents(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	struct xfer_hook sum = {.posted = sum_puts, .arg = p};
	struct extent_class cls;
	struct extent_group *g;
	struct extent_put ep;
	struct extent_keys k = {0, p->index, p->totals, p->lane};
	uint64_t base[MMC_WIRE_EXTENT_LANES], t0;
	bool failed_writes = false;
	int rc_call;

	class_of(&cls, rc, spread);
	if (mark_small(p))
		k.m = plan_select(p, PK_EXTENT);
	if (!k.m || extents_take(s, &cls, &k, &g, base, p->deadline_ms)) {
		for (size_t i = 0; i < p->n; i++)
			p->state[i] = p->state[i] == PK_EXTENT ? PK_ACTIVE : p->state[i];
		return;
	}
	aim(p, g, base);
	p->summing = PK_EXTENT;
	/* the extents died with the connection they were granted on (a restarted server may reuse the space) */
	if (meta_conn_losses(s->meta) == g->losses)
		xfer_run(s, 1, p->xk, p->n, s->conf.c.verify_checksum ? &sum : NULL);
	/* a key whose write failed (its service may be dying) goes again by key, and nobody carves from g any more */
	p->confirmed = p->refused = false;
	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] == PK_EXTENT && p->xk[i].result) {
			p->state[i] = PK_ACTIVE;
			p->refused = failed_writes = true;
		}
	if (meta_conn_losses(s->meta) != g->losses)
		fail_state(p, PK_EXTENT, MMC_NOT_CONNECTED_META);
	t0 = clock_ms();
	ep = (struct extent_put){plan_select(p, PK_EXTENT), p->index, p->keys, p->totals, p->sums, p->xk, p->lane, g};
	if (ep.n && (rc_call = extents_put_call(s, &ep, on_put, p, p->deadline_ms)))
		fail_state(p, PK_EXTENT, rc_call);
	lost_with_connection(s, p, ep.n, g->losses);
	extents_done(s, g, p->confirmed ? t0 : 0, p->refused, failed_writes);
}

/* Makes the keys a lost connection failed PK_ACTIVE again (and only those); returns how many. */
static size_t requeue_lost(struct plan *p)
{
	size_t m = 0;

	for (size_t i = 0; i < p->n; i++) {
		bool lost = p->results[i] == MMC_NOT_CONNECTED_META;

		p->state[i] = lost ? PK_ACTIVE : PK_SKIP;
		if (lost) {
			p->results[i] = 0;
			m++;
		}
	}
	return m;
}

/*
 * A key put again that the server says exists may be an allocation of this very put that a server still alive
 * holds for the connection that died (until it sees that connection close), not an object: only a readable one is
 * the put's success. The others count as lost, to go again. One exist round trip, on the retry path only.
 */
static void confirm_found(struct mmc_store *s, struct plan *p)
{
	const char **keys = malloc(p->n * sizeof(*keys));
	int *codes = malloc(p->n * sizeof(*codes));
	size_t m = 0;

	for (size_t i = 0; keys && codes && i < p->n; i++)
		if (p->found[i] && p->results[i] == 0)
			keys[m++] = p->keys[i];
	if (m && keys && codes)
		key_batch_codes_until(s, WB_EXIST, keys, NULL, m, 0, p->deadline_ms, codes);
	for (size_t i = 0, j = 0; i < p->n; i++) {
		if (!p->found[i] || p->results[i])
			continue;
		if (!keys || !codes || codes[j++] != 1)
			p->results[i] = MMC_NOT_CONNECTED_META;
		p->found[i] = false;
	}
	free(keys);
	free(codes);
}

/*
 * Keys whose put a dying connection failed go again from the start, within retry_ms, as the caller would send
 * them: their placement died with the server and their writes have ended. The successor knows no allocation of
 * the dead server; a commit that landed before the death finds the key present, which a put answers MMC_OK.
 */
static int run_put(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	int rc_call;

	for (size_t i = 0; i < p->n; i++)
		p->state[i] = PK_ACTIVE;
	for (unsigned pass = 0;; pass++) {
		memset(p->found, 0, p->n * sizeof(*p->found));
		put_extents(s, p, rc, spread);
		rc_call = put_by_key(s, p, rc, spread);
		if (pass)
			confirm_found(s, p);
		if (!s->conf.c.retry_ms || clock_ms() >= p->deadline_ms || !requeue_lost(p))
			return rc_call;
		lg_info("put: the meta server connection was lost under the put: putting its keys again");
		if (pass) /* a third pass or later: what holds the keys up takes a server's while, not a round trip */
			nanosleep(&(struct timespec){0, 20000000L << (pass < 4 ? pass : 4)}, NULL);
	}
}

/* ---- get ---- */

static bool on_get(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	size_t k = p->index[i];
	struct xfer_key *x = &p->xk[k];

	if (r->result || r->blobs_count != 1) {
		p->state[k] = PK_SKIP;
		p->results[k] = r->result ? r->result : MMC_INTERNAL_ERROR;
		return true;
	}
	p->state[k] = PK_LEASED;
	p->tokens[k] = r->token;
	p->sums[k] = (struct wire_checksum){r->checksum_type, r->checksum};
	if (r->size != p->totals[k]) {
		p->results[k] = MMC_INVALID_PARAM;
		x->result = MMC_INVALID_PARAM;
	}
	p->lease_ms[k] = r->lease_ms; /* it runs from (before) our request */
	x->ntargets = 1;
	x->targets[0] =
	    (struct xfer_target){r->blobs[0].rank, r->blobs[0].incarnation, r->blobs[0].media, r->blobs[0].offset};
	return true;
}

static void release_leases(struct mmc_store *s, struct plan *p)
{
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_items items = {
	    .n = plan_select(p, PK_LEASED), .keys = p->keys, .index = p->index, .tokens = p->tokens};

	if (!items.n)
		return;
	req.flags = MMC_WIRE_FLAG_NOREPLY;
	wire_items_bind(&req, &items);
	meta_send_deferred(s->meta, WB_RELEASE, mmc_KeyBatch_fields, &req); /* the lease ends anyway: no hurry */
}

static int get_once(struct mmc_store *s, struct plan *p, bool *lost)
{
	struct key_rpc k = {.body = WB_GET,
	                    .req = mmc_KeyBatch_init_zero,
	                    .on_result = on_get,
	                    .arg = p,
	                    .deadline_ms = p->deadline_ms};
	struct xfer_hook check = {.landed = check_get, .arg = p};
	uint64_t t0 = clock_ms(), t1, losses = meta_conn_losses(s->meta);
	int rc_call;

	for (size_t i = 0; i < p->n; i++) {
		p->state[i] = PK_ACTIVE;
		p->results[i] = 0;
		p->damaged[i] = false;
		p->xk[i].result = 0;
	}
	k.req.lease_ttl_ms = s->conf.c.lease_ttl_ms;
	k.items = (struct wire_items){.n = plan_select(p, PK_ACTIVE), .keys = p->keys, .index = p->index};
	rc_call = key_rpc_call(s, &k);
	if (rc_call)
		return fail_all(p->results, p->n, rc_call);
	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] != PK_LEASED)
			p->xk[i].result = 1;
	xfer_run(s, 0, p->xk, p->n, s->conf.c.verify_checksum ? &check : NULL);
	t1 = clock_ms();
	/* the leases died with the server that granted them: its successor may already have reused the memory */
	*lost = meta_conn_losses(s->meta) != losses;
	for (size_t i = 0; i < p->n; i++) {
		if (p->state[i] != PK_LEASED || p->results[i])
			continue;
		p->results[i] = *lost ? MMC_NOT_CONNECTED_META : p->xk[i].result;
		/* a copy that outlived its lease may have read reused memory */
		if (p->results[i] == 0 && t1 >= t0 + p->lease_ms[i])
			p->results[i] = MMC_LEASE_EXPIRED;
	}
	if (!*lost)
		release_leases(s, p);
	verify_gets(p);
	return 0;
}

/* A get is safe to repeat: a new lookup takes new leases. One whose transfer outlived its connection goes again,
 * within retry_ms. */
static int run_get(struct mmc_store *s, struct plan *p)
{
	bool lost = false;
	int rc;

	while ((rc = get_once(s, p, &lost)) == 0 && lost && s->conf.c.retry_ms && clock_ms() < p->deadline_ms)
		lg_info("a get's transfer outlived its meta server connection: looking the keys up again");
	return rc;
}

/* ---- argument checks and the public calls ---- */

static int check_rc(const mmc_replicate_config *rc)
{
	uint16_t replicas;

	if (!rc)
		return 0;
	replicas = rc->replica_num ? rc->replica_num : 1;
	if (replicas > MMC_REPLICA_MAX || rc->preferred_count > replicas)
		return MMC_INVALID_PARAM;
	return 0;
}

static int check_batch(const mmc_store *s, const char *const *keys, size_t n, const int *results)
{
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	if (!keys || !results || n == 0 || n > MMC_BATCH_MAX)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < n; i++)
		if (!store_key_ok(keys[i]))
			return MMC_INVALID_PARAM;
	return 0;
}

/* Fills the plan's pieces from per-key layer lists (layers == NULL: one buffer per key). */
static int plan_fill(struct plan *p, const void *const *const *bufs, const size_t *const *sizes, const size_t *layers)
{
	size_t at = 0;

	for (size_t i = 0; i < p->n; i++) {
		size_t nl = layers[i];
		uint64_t total = 0;

		if (!bufs[i] || !sizes[i] || nl == 0 || nl > MMC_LAYERS_MAX)
			return MMC_INVALID_PARAM;
		p->xk[i].pieces = &p->pieces[at];
		p->xk[i].npieces = (uint32_t)nl;
		for (size_t l = 0; l < nl; l++) {
			if (!bufs[i][l] || !sizes[i][l])
				return MMC_INVALID_PARAM;
			p->pieces[at++] = (struct xfer_piece){(void *)bufs[i][l], sizes[i][l]};
			total += sizes[i][l];
		}
		p->totals[i] = total;
	}
	return 0;
}

static int batch_layers(mmc_store *s, bool put, const char *const *keys, const void *const *const *bufs,
                        const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                        const mmc_replicate_config *rc, bool spread, int *results)
{
	struct plan p;
	size_t npieces = 0;
	int err = check_batch(s, keys, n, results);

	if (!err &&
	    (!bufs || !sizes || !layers || !(put ? direct_is_put(direct) : direct_is_get(direct)) || check_rc(rc)))
		err = MMC_INVALID_PARAM;
	for (size_t i = 0; !err && i < n; i++)
		npieces += layers[i] <= MMC_LAYERS_MAX ? layers[i] : 0;
	if (err)
		return fail_all(results, n, err);
	if ((err = plan_alloc(&p, n, npieces ? npieces : 1, keys, results)))
		return fail_all(results, n, err);
	p.deadline_ms = call_deadline(s);
	err = plan_fill(&p, bufs, sizes, layers);
	if (err)
		fail_all(results, n, err);
	else
		err = put ? run_put(s, &p, rc, spread) : run_get(s, &p);
	plan_free(&p);
	return err;
}

int mmc_batch_put_from_layers(mmc_store *s, const char *const *keys, const void *const *const *bufs,
                              const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                              const mmc_replicate_config *rc, int *results)
{
	return batch_layers(s, true, keys, bufs, sizes, layers, n, direct, rc, true, results);
}

int mmc_batch_get_into_layers(mmc_store *s, const char *const *keys, void *const *const *bufs,
                              const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct, int *results)
{
	return batch_layers(s, false, keys, (const void *const *const *)bufs, sizes, layers, n, direct, NULL, false,
	                    results);
}

/* Single-buffer batches: each key is a one-layer key. */
static int batch_flat(mmc_store *s, bool put, const char *const *keys, const void *const *bufs, const size_t *sizes,
                      size_t n, int32_t direct, const mmc_replicate_config *rc, bool spread, int *results)
{
	const void *const **lb;
	const size_t **ls;
	size_t *ln;
	int rc_call;

	rc_call = check_batch(s, keys, n, results);
	if (!rc_call && (!bufs || !sizes))
		rc_call = MMC_INVALID_PARAM;
	if (rc_call)
		return fail_all(results, n, rc_call);
	lb = malloc(n * sizeof(*lb));
	ls = malloc(n * sizeof(*ls));
	ln = malloc(n * sizeof(*ln));
	if (!lb || !ls || !ln) {
		rc_call = fail_all(results, n, MMC_MALLOC_FAILED);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		lb[i] = &bufs[i];
		ls[i] = &sizes[i];
		ln[i] = 1;
	}
	rc_call = batch_layers(s, put, keys, lb, ls, ln, n, direct, rc, spread, results);
out:
	free(lb);
	free(ls);
	free(ln);
	return rc_call;
}

int mmc_batch_put_from(mmc_store *s, const char *const *keys, const void *const *bufs, const size_t *sizes, size_t n,
                       int32_t direct, const mmc_replicate_config *rc, int *results)
{
	return batch_flat(s, true, keys, bufs, sizes, n, direct, rc, true, results);
}

int mmc_batch_get_into(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes, size_t n,
                       int32_t direct, int *results)
{
	return batch_flat(s, false, keys, (const void *const *)bufs, sizes, n, direct, NULL, false, results);
}

int mmc_put_from(mmc_store *s, const char *key, const void *buf, size_t size, int32_t direct,
                 const mmc_replicate_config *rc)
{
	int result, err = batch_flat(s, true, &key, &buf, &size, 1, direct, rc, false, &result);

	return err ? err : result;
}

int mmc_get_into(mmc_store *s, const char *key, void *buf, size_t size, int32_t direct)
{
	int result, err = batch_flat(s, false, &key, (const void *const *)&buf, &size, 1, direct, NULL, false, &result);

	return err ? err : result;
}

int mmc_put_from_layers(mmc_store *s, const char *key, const void *const *bufs, const size_t *sizes, size_t layers,
                        int32_t direct, const mmc_replicate_config *rc)
{
	int result, err = batch_layers(s, true, &key, &bufs, &sizes, &layers, 1, direct, rc, false, &result);

	return err ? err : result;
}

int mmc_get_into_layers(mmc_store *s, const char *key, void *const *bufs, const size_t *sizes, size_t layers,
                        int32_t direct)
{
	int result, err = batch_layers(s, false, &key, (const void *const *const *)&bufs, &sizes, &layers, 1, direct,
	                               NULL, false, &result);

	return err ? err : result;
}
