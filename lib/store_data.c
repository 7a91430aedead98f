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
#include "hash.h"
#include "key_rpc.h"
#include "lg.h"
#include "store.h"
#include "xfer.h"

/* One key of a call: all the plan knows about it. The fields every pass scans come first. */
struct plan_key {
	uint8_t state; /* PK_* */
	uint8_t lane;  /* put through extents: the lane of the key */
	bool found;    /* put: the server answered that the key exists (the first writer wins) */
	bool waits;    /* put: another put was writing the key: it goes by alloc, answered before anything is written */
	bool damaged;  /* get: the bytes that landed differ from sum */
	int result;    /* the caller's results[i] once the call ends */
	uint64_t total;
	uint64_t token;           /* put: the allocation; get: the object the lease was granted on */
	uint64_t lease_ms;        /* get: the lease granted on the key */
	uint32_t lease;           /* get: the server's lease record the read is counted in, named by its release */
	uint64_t landed_ms;       /* prefix get: clock_ms() when its bytes had all landed; 0: not (yet) */
	struct wire_checksum sum; /* put: what the commit sends; get: what the reply said */
	struct xfer_key xk;       /* xk.result: the key's writes or read (a put's commit sends it) */
};

struct plan {
	size_t n;
	const char *const *keys;
	struct plan_key *rec;      /* n records; the one allocation of the call, pieces and index carved from it */
	struct xfer_piece *pieces; /* every key's local pieces, key after key */
	size_t *index;             /* scratch: keys taking part in the next RPC */
	uint8_t summing;           /* put: the state whose keys the posted hook checksums */
	bool verify;               /* prefix get: check each key as it lands (verify_checksum) */
	bool confirmed;            /* put through extents: the server published at least one key */
	bool stored;               /* put: the server published or committed a key of this call */
	bool refused;              /* put through extents: the server turned a place down */
	struct meta_conn *meta;    /* put: the connection its space was granted on, and meta_conn_losses() then */
	uint64_t grant;
	uint64_t write_until_ms; /* put through extents: clock_ms() after which the server may take the space back */
	/* clock_ms() by which a lost meta connection must be back: one for the whole call, however many round trips
	 * and passes it takes (retry_ms from its start) */
	uint64_t deadline_ms;
};

/* PK_EXTENT: a put key written into an extent, published by the put RPC */
enum { PK_SKIP = 0, PK_ACTIVE = 1, PK_LEASED = 2, PK_EXTENT = 3 };

/* ---- plans ---- */

/* One block: the records, then the pieces, then the index (each part's size keeps the next one aligned). */
static int plan_alloc(struct plan *p, size_t n, size_t npieces, const char *const *keys)
{
	memset(p, 0, sizeof(*p));
	p->rec = calloc(1, n * sizeof(*p->rec) + npieces * sizeof(*p->pieces) + n * sizeof(*p->index));
	if (!p->rec)
		return MMC_MALLOC_FAILED;
	p->n = n;
	p->keys = keys;
	p->pieces = (struct xfer_piece *)(p->rec + n);
	p->index = (size_t *)(p->pieces + npieces);
	return 0;
}

static int plan_fail_all(struct plan *p, int code)
{
	for (size_t i = 0; i < p->n; i++)
		p->rec[i].result = code;
	return code;
}

/* Keys in `want` state, for an RPC; returns how many. */
static size_t plan_select(struct plan *p, uint8_t want)
{
	size_t m = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->rec[i].state == want)
			p->index[m++] = i;
	return m;
}

/* The items of an RPC about the keys in state `want`; the caller points the fields it sends at rec[0]'s. */
static struct wire_items plan_items(struct plan *p, uint8_t want)
{
	return (struct wire_items){
	    .n = plan_select(p, want), .keys = p->keys, .index = p->index, .stride = sizeof(*p->rec)};
}

/* Hands the keys in state `want` to xfer_run and skips the others. */
static void plan_xfer(struct mmc_store *s, struct plan *p, int write, uint8_t want, const struct xfer_hook *hook)
{
	for (size_t i = 0; i < p->n; i++)
		p->rec[i].xk.skip = p->rec[i].state != want || p->rec[i].result;
	xfer_run(s, write, &p->rec[0].xk, p->n, sizeof(*p->rec), hook);
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
		if (p->rec[i].state == p->summing)
			p->rec[i].sum = (struct wire_checksum){MMC_WIRE_CHECKSUM_CRC32C, pieces_crc(&p->rec[i].xk)};
}

/*
 * xfer's lease on a put's space: it was granted on the meta connection p->grant counts. Once that connection is
 * lost, a restarted server may give the space to another object after its rejoin grace, so a write that waited
 * for a window slot or for a peer that refused it (up to rma_timeout_ms) must not go out after the loss is known.
 * Space carved from an extent is held only so long after a put last named the extent's grant: a write held up past
 * that (a window wait, a process paused) must not go out either; its key goes again by key.
 */
static int grant_holds(void *arg, size_t key)
{
	const struct plan *p = arg;
	uint64_t now = clock_ms();

	(void)key; /* one grant, one write deadline for the whole call */
	/* a session the server may have closed meanwhile (this process paused past its heartbeat timeout) holds
	 * nothing either, although this thread may run before the one that reads the connection's end */
	if (meta_conn_losses(p->meta) != p->grant || now >= meta_conn_held_until(p->meta))
		return MMC_NOT_CONNECTED_META;
	return p->write_until_ms && now >= p->write_until_ms ? MMC_TIMEOUT : 0;
}

/* Writes the keys in state want into space granted on the meta connection of losses. */
static void plan_write(struct mmc_store *s, struct plan *p, uint8_t want, uint64_t losses)
{
	struct xfer_hook h = {.posted = s->conf.c.verify_checksum ? sum_puts : NULL, .lease = grant_holds, .arg = p};

	p->summing = want;
	p->meta = s->meta;
	p->grant = losses;
	plan_xfer(s, p, 1, want, &h);
}

/*
 * Reader: checks one key over what landed in the caller's buffers as soon as it has (xfer's landed hook), while
 * the batch's later keys are still in flight and this key's bytes are still in cache. Objects written without a
 * checksum are read unverified.
 */
static void check_get(void *arg, size_t i)
{
	struct plan_key *r = &((struct plan *)arg)->rec[i];

	if (r->state == PK_LEASED && r->sum.type == MMC_WIRE_CHECKSUM_CRC32C)
		r->damaged = pieces_crc(&r->xk) != r->sum.value;
}

/* A damaged key fails unless it failed already (a transfer error, or its lease expired first). One log line. */
static void verify_gets(struct plan *p)
{
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->rec[i].result || !p->rec[i].damaged)
			continue;
		p->rec[i].result = MMC_CHECKSUM_MISMATCH;
		first = bad++ ? first : i;
	}
	if (bad)
		lg_warn("get key=\"%s\" rank=%u offset=%llu err=checksum_mismatch keys=%zu", p->keys[first],
		        p->rec[first].xk.targets[0].rank, (unsigned long long)p->rec[first].xk.targets[0].offset, bad);
}

/* ---- put ---- */

static bool on_alloc(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	struct plan_key *k = &p->rec[p->index[i]];
	struct xfer_key *x = &k->xk;

	if (r->result == MMC_DUPLICATED_OBJECT) { /* first writer wins: not an error */
		k->state = PK_SKIP;
		k->result = 0;
		k->found = true;
		return true;
	}
	if (r->result ||
	    r->blobs_count == 0) { /* MMC_UNMATCHED_STATE (another put is writing the key): run_put waits */
		k->state = PK_SKIP;
		k->result = r->result ? r->result : MMC_INTERNAL_ERROR;
		return true;
	}
	k->token = r->token;
	x->ntargets = r->blobs_count;
	for (pb_size_t b = 0; b < r->blobs_count; b++)
		x->targets[b] = (struct xfer_target){r->blobs[b].rank, r->blobs[b].incarnation, r->blobs[b].media,
		                                     r->blobs[b].offset};
	return true;
}

static bool on_commit(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	struct plan_key *k = &p->rec[p->index[i]];

	if (k->result == 0)
		k->result = r->result;
	p->stored |= k->result == 0;
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
		if (p->rec[i].state == st) {
			p->rec[i].result = code;
			p->rec[i].state = PK_SKIP;
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
	for (size_t i = 0; store_retries(s) && meta_conn_losses(s->meta) != losses && i < n; i++)
		if (p->rec[p->index[i]].result)
			p->rec[p->index[i]].result = MMC_NOT_CONNECTED_META;
}

/* alloc, RMA, commit: the keys still PK_ACTIVE. */
static int put_by_key(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	struct key_rpc k = {.body = WB_ALLOC,
	                    .req = mmc_KeyBatch_init_zero,
	                    .on_result = on_alloc,
	                    .arg = p,
	                    .deadline_ms = p->deadline_ms};
	uint64_t losses;
	int rc_call;

	set_replicas(&k.req, rc);
	k.req.flags = spread ? MMC_WIRE_FLAG_SPREAD : 0;
	k.items = plan_items(p, PK_ACTIVE);
	k.items.sizes = &p->rec[0].total;
	if (k.items.n == 0)
		return 0;
	rc_call = key_rpc_call(s, &k);
	if (rc_call) {
		for (size_t i = 0; i < k.items.n; i++)
			p->rec[p->index[i]].result = rc_call;
		return rc_call;
	}
	/* the server that placed these keys is gone: a restarted one may have given the space to someone else */
	losses = k.losses;
	if (meta_conn_losses(s->meta) != losses) {
		fail_state(p, PK_ACTIVE, MMC_NOT_CONNECTED_META);
		return MMC_NOT_CONNECTED_META;
	}
	plan_write(s, p, PK_ACTIVE, losses);

	/* commit what was allocated: written keys become readable, failed ones (value: xk.result) are dropped */
	for (size_t i = 0; i < p->n; i++)
		if (p->rec[i].state == PK_ACTIVE)
			p->rec[i].result = p->rec[i].xk.result;
	/* on the allocations' own connection: the next server gives the same tokens to other allocations */
	k = (struct key_rpc){.body = WB_COMMIT,
	                     .req = mmc_KeyBatch_init_zero,
	                     .on_result = on_commit,
	                     .arg = p,
	                     .deadline_ms = p->deadline_ms,
	                     .pinned = true,
	                     .on_conn = losses};
	k.items = plan_items(p, PK_ACTIVE);
	k.items.values = &p->rec[0].xk.result;
	k.items.tokens = &p->rec[0].token;
	k.items.checksums = &p->rec[0].sum;
	if (k.items.n && (rc_call = key_rpc_call(s, &k)))
		for (size_t i = 0; i < k.items.n; i++)
			if (p->rec[p->index[i]].result == 0)
				p->rec[p->index[i]].result = rc_call;
	lost_with_connection(s, p, k.items.n, losses);
	return 0;
}

/* ---- put through extents: one round trip ---- */

/* Marks the keys small enough for an extent PK_EXTENT; returns how many. */
static size_t mark_small(struct plan *p)
{
	size_t m = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->rec[i].state != PK_ACTIVE || p->rec[i].total > EXTENT_OBJECT_MAX || p->rec[i].waits)
			continue;
		p->rec[i].state = PK_EXTENT;
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
		struct plan_key *k = &p->rec[i];
		const mmc_Extent *ext = &g->ext[k->lane * n];

		if (k->state != PK_EXTENT)
			continue;
		k->xk.ntargets = n;
		for (uint32_t r = 0; r < n; r++)
			k->xk.targets[r] = (struct xfer_target){ext[r].rank, ext[r].incarnation, ext[r].media,
			                                        ext[r].offset + base[k->lane]};
		base[k->lane] += (k->total + 4095) & ~(uint64_t)4095; /* the server's allocation unit */
	}
}

static bool on_put(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	struct plan_key *k = &p->rec[p->index[i]];

	if (r->result == MMC_UNMATCHED_KEY) { /* the server no longer holds that extent for us: allocate it again */
		k->state = PK_ACTIVE;
		p->refused = true;
		return true;
	}
	k->state = PK_SKIP;
	k->result = r->result == MMC_DUPLICATED_OBJECT ? 0 : r->result; /* first writer wins */
	k->found = r->result == MMC_DUPLICATED_OBJECT;
	p->confirmed |= r->result == 0;
	p->stored |= r->result == 0;
	return true;
}

/* Writes the extent keys and publishes them with one put RPC; keys it could not place stay PK_ACTIVE. */
static void put_extents(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	struct extent_class cls;
	struct extent_group *g;
	struct extent_put ep;
	struct extent_keys k = {
	    .index = p->index, .sizes = &p->rec[0].total, .lane = &p->rec[0].lane, .stride = sizeof(*p->rec)};
	uint64_t base[MMC_WIRE_EXTENT_LANES], t0;
	bool failed_writes = false;
	int rc_call;

	class_of(&cls, rc, spread);
	if (mark_small(p))
		k.m = plan_select(p, PK_EXTENT);
	/* the group was fresh when carved: the server keeps it at least idle_ms / 2 after that (extent.c) */
	t0 = clock_ms();
	if (!k.m || extents_take(s, &cls, &k, &g, base, p->deadline_ms)) {
		for (size_t i = 0; i < p->n; i++)
			p->rec[i].state = p->rec[i].state == PK_EXTENT ? PK_ACTIVE : p->rec[i].state;
		return;
	}
	aim(p, g, base);
	p->write_until_ms = t0 + g->idle_ms / 2;
	/* the extents die with the connection they were granted on (a restarted server may reuse the space) */
	if (meta_conn_losses(s->meta) == g->losses)
		plan_write(s, p, PK_EXTENT, g->losses);
	p->write_until_ms = 0;
	/* a key whose write failed (its service may be dying) goes again by key, and nobody carves from g any more */
	p->confirmed = p->refused = false;
	for (size_t i = 0; i < p->n; i++)
		if (p->rec[i].state == PK_EXTENT && p->rec[i].xk.result) {
			p->rec[i].state = PK_ACTIVE;
			p->refused = failed_writes = true;
		}
	if (meta_conn_losses(s->meta) != g->losses)
		fail_state(p, PK_EXTENT, MMC_NOT_CONNECTED_META);
	t0 = clock_ms();
	ep = (struct extent_put){.n = plan_select(p, PK_EXTENT),
	                         .index = p->index,
	                         .keys = p->keys,
	                         .sizes = &p->rec[0].total,
	                         .sums = &p->rec[0].sum,
	                         .xk = &p->rec[0].xk,
	                         .lane = &p->rec[0].lane,
	                         .g = g,
	                         .stride = sizeof(*p->rec)};
	if (ep.n && (rc_call = extents_put_call(s, &ep, on_put, p, p->deadline_ms)))
		fail_state(p, PK_EXTENT, rc_call);
	lost_with_connection(s, p, ep.n, g->losses);
	extents_done(s, g, p->confirmed ? t0 : 0, p->refused, failed_writes);
}

/*
 * Makes PK_ACTIVE again (and only those) the keys a lost connection failed, when lost, and the keys another put is
 * still writing (MMC_UNMATCHED_STATE), when busy; a key still being written that may not wait any more fails with
 * MMC_TIMEOUT. Returns how many keys go again, and in *nlost how many of them were lost.
 */
static size_t requeue(struct plan *p, bool lost, bool busy, size_t *nlost)
{
	size_t m = 0;

	*nlost = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct plan_key *k = &p->rec[i];
		bool was_lost = lost && k->result == MMC_NOT_CONNECTED_META;
		bool again = was_lost || (busy && k->result == MMC_UNMATCHED_STATE);

		k->state = again ? PK_ACTIVE : PK_SKIP;
		k->waits |= again && !was_lost;
		if (k->result == MMC_UNMATCHED_STATE && !again)
			k->result = MMC_TIMEOUT;
		if (again) {
			k->result = 0;
			*nlost += was_lost;
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
		if (p->rec[i].found && p->rec[i].result == 0)
			keys[m++] = p->keys[i];
	if (m && keys && codes)
		key_batch_codes_until(s, WB_EXIST, keys, NULL, m, 0, p->deadline_ms, codes);
	for (size_t i = 0, j = 0; i < p->n; i++) {
		struct plan_key *k = &p->rec[i];

		if (!k->found || k->result)
			continue;
		if (!keys || !codes || codes[j++] != 1)
			k->result = MMC_NOT_CONNECTED_META;
		k->found = false;
	}
	free(keys);
	free(codes);
}

struct keyed {
	uint64_t hash;
	size_t i;
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash ? 1 : x->i < y->i ? -1 : x->i > y->i;
}

/* Whether an entry before i with the hash of key i (at h, in sorted large[0..n)) names the same key. */
static bool repeats_earlier(const struct plan *p, const struct keyed *large, size_t n, uint64_t h, size_t i)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first entry with that hash */
		size_t mid = (lo + hi) / 2;

		if (large[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && large[lo].hash == h && large[lo].i < i; lo++)
		if (strcmp(p->keys[large[lo].i], p->keys[i]) == 0)
			return true;
	return false;
}

/*
 * A key repeated in one batch is stored once, its first entry winning (mmc.h). Entries of one path reach the server
 * in the batch's order, but a small entry goes through an extent, published before the allocate round trip of the
 * large ones: a small key repeated after a large one goes by alloc with it (as a key another put is writing does).
 * Only a batch of both sizes pays for the look.
 */
static int order_repeats(struct plan *p)
{
	size_t nlarge = 0, m = 0;
	struct keyed *large;
	uint64_t *hashes;
	size_t *lens;

	for (size_t i = 0; i < p->n; i++)
		nlarge += p->rec[i].total > EXTENT_OBJECT_MAX;
	if (!nlarge || nlarge == p->n)
		return 0;
	if (!(hashes = malloc(p->n * (sizeof(*hashes) + sizeof(*lens)) + nlarge * sizeof(*large))))
		return MMC_MALLOC_FAILED;
	lens = (size_t *)(hashes + p->n);
	large = (struct keyed *)(lens + p->n);
	for (size_t i = 0; i < p->n; i++)
		lens[i] = strlen(p->keys[i]);
	hash_bytes_many(p->n, (const void *const *)p->keys, lens, hashes);
	for (size_t i = 0; i < p->n; i++)
		if (p->rec[i].total > EXTENT_OBJECT_MAX)
			large[m++] = (struct keyed){hashes[i], i};
	qsort(large, m, sizeof(*large), cmp_keyed);
	for (size_t i = 0; i < p->n; i++)
		if (p->rec[i].total <= EXTENT_OBJECT_MAX && repeats_earlier(p, large, m, hashes[i], i))
			p->rec[i].waits = true;
	free(hashes);
	return 0;
}

/*
 * Keys whose put a dying connection failed go again from the start, within retry_ms, as the caller would send
 * them: their placement died with the server and their writes have ended. The successor knows no allocation of
 * the dead server; a commit that landed before the death finds the key present, which a put answers MMC_OK.
 *
 * A key another put is still writing goes again too, within timeout_ms: that put may yet fail, so this one ends
 * only once a value is stored, that put's (found: MMC_OK) or, if it failed, its own.
 */
static int run_put(struct mmc_store *s, struct plan *p, const mmc_replicate_config *rc, bool spread)
{
	uint64_t busy_until = clock_ms() + s->conf.c.timeout_ms;
	unsigned waits = 0, losses = 0;
	int rc_call;

	if ((rc_call = order_repeats(p)))
		return plan_fail_all(p, rc_call);
	for (size_t i = 0; i < p->n; i++)
		p->rec[i].state = PK_ACTIVE;
	for (;;) {
		size_t nlost;
		uint64_t now;

		for (size_t i = 0; i < p->n; i++)
			p->rec[i].found = false;
		put_extents(s, p, rc, spread);
		rc_call = put_by_key(s, p, rc, spread);
		if (losses) /* "exists" may be this put's own allocation, held for the connection that died */
			confirm_found(s, p);
		now = clock_ms();
		/* a store being torn down ends a wait for another writer, as for a lost connection */
		if (!requeue(p, store_retries(s) && now < p->deadline_ms,
		             now < busy_until && atomic_load(&s->state) == ST_READY, &nlost))
			return p->stored ? 0 : rc_call; /* mmc.h: an error return means nothing is stored */
		if (nlost) {
			lg_info("put: the meta server connection was lost under the put: putting its keys again");
			if (losses) /* lost again: what holds the keys up takes a server's while, not a round trip */
				nanosleep(&(struct timespec){0, 20000000L << (losses < 4 ? losses : 4)}, NULL);
			losses++;
		} else { /* another writer's put takes its RMA's while: 1 ms, doubling up to 64 ms */
			nanosleep(&(struct timespec){0, 1000000L << (waits < 6 ? waits : 6)}, NULL);
			waits++;
			/* the connection was up all round: a loss after this wait gets all of retry_ms again */
			p->deadline_ms = call_deadline(s);
		}
	}
}

/* ---- get ---- */

static bool on_get(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct plan *p = arg;
	struct plan_key *k = &p->rec[p->index[i]];
	struct xfer_key *x = &k->xk;

	if (r->result || r->blobs_count != 1) {
		k->state = PK_SKIP;
		k->result = r->result ? r->result : MMC_INTERNAL_ERROR;
		return true;
	}
	k->state = PK_LEASED;
	k->token = r->token;
	k->lease = r->lease;
	k->sum = (struct wire_checksum){r->checksum_type, r->checksum};
	if (r->size != k->total) /* leased, to be released, but not read */
		k->result = MMC_INVALID_PARAM;
	k->lease_ms = r->lease_ms; /* it runs from (before) our request */
	x->ntargets = 1;
	x->targets[0] =
	    (struct xfer_target){r->blobs[0].rank, r->blobs[0].incarnation, r->blobs[0].media, r->blobs[0].offset};
	return true;
}

/* The leases of the keys looked up. deferred: they end anyway, so the release may ride with the next frame. */
static void release_leases(struct mmc_store *s, struct plan *p, bool deferred)
{
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_items items = plan_items(p, PK_LEASED);
	struct wire_key_batch kb;

	if (!items.n)
		return;
	items.tokens = &p->rec[0].token;
	items.leases = &p->rec[0].lease; /* a late release of an expired get must not end a later get's count */
	req.flags = MMC_WIRE_FLAG_NOREPLY;
	wire_key_batch_init(&kb, &req, &items);
	if (deferred)
		meta_send_deferred(s->meta, WB_RELEASE, NULL, &kb.hand);
	else
		meta_send(s->meta, WB_RELEASE, NULL, &kb.hand);
}

/* Whether the leases lookup k brought may be gone: the connection its last try went out on was lost, or the server
 * went silent past its heartbeat window (paused, cut off: a successor may have given the space away). */
static bool leases_gone(struct mmc_store *s, const struct key_rpc *k)
{
	return meta_conn_losses(s->meta) != k->losses || clock_ms() >= meta_conn_held_until(s->meta);
}

static int get_once(struct mmc_store *s, struct plan *p, bool *lost)
{
	struct key_rpc k = {.body = WB_GET,
	                    .req = mmc_KeyBatch_init_zero,
	                    .on_result = on_get,
	                    .arg = p,
	                    .deadline_ms = p->deadline_ms};
	struct xfer_hook check = {.landed = check_get, .arg = p};
	uint64_t t0 = clock_ms(), t1;
	int rc_call;

	for (size_t i = 0; i < p->n; i++) {
		p->rec[i].state = PK_ACTIVE;
		p->rec[i].result = 0;
		p->rec[i].damaged = false;
	}
	k.req.lease_ttl_ms = s->conf.c.lease_ttl_ms;
	k.items = plan_items(p, PK_ACTIVE);
	rc_call = key_rpc_call(s, &k);
	if (rc_call)
		return plan_fail_all(p, rc_call);
	plan_xfer(s, p, 0, PK_LEASED, s->conf.c.verify_checksum ? &check : NULL);
	t1 = clock_ms();
	/* the leases died with the server that granted them: its successor may already have reused the memory. The
	 * connection that granted them is the lookup's last try (k.losses): a lookup retried on a new connection
	 * holds leases of that one */
	*lost = leases_gone(s, &k);
	for (size_t i = 0; i < p->n; i++) {
		struct plan_key *r = &p->rec[i];

		if (r->state != PK_LEASED || r->result)
			continue;
		r->result = *lost ? MMC_NOT_CONNECTED_META : r->xk.result;
		/* a copy that outlived its lease may have read reused memory */
		if (r->result == 0 && t1 >= t0 + r->lease_ms)
			r->result = MMC_LEASE_EXPIRED;
	}
	if (meta_conn_losses(s->meta) == k.losses) /* a server merely silent may answer the release yet */
		release_leases(s, p, true);
	verify_gets(p);
	return 0;
}

/* ---- a prefix under a deadline ---- */

/* A key of a prefix landed: when, for its lease (a later key may be given up at the deadline), and its checksum. */
static void prefix_landed(void *arg, size_t i)
{
	struct plan *p = arg;

	p->rec[i].landed_ms = clock_ms();
	if (p->verify)
		check_get(arg, i);
}

/* Skips the keys after the first that cannot land (missing, or another size): a prefix ends there anyway. */
static void cut_prefix(struct plan *p)
{
	size_t i = 0;

	while (i < p->n && p->rec[i].state == PK_LEASED && !p->rec[i].result)
		i++;
	for (; i < p->n; i++)
		if (p->rec[i].state == PK_LEASED && !p->rec[i].result)
			p->rec[i].result = MMC_TIMEOUT; /* not read: only the prefix before it counts */
}

/*
 * One lookup, the reads, one release, all by `until`. The leases are taken for the time left, so those of keys
 * given up end with the deadline even if the release were lost; the release itself goes out at once.
 */
static int get_prefix(struct mmc_store *s, struct plan *p, uint64_t until, size_t *landed)
{
	uint64_t t0 = clock_ms(), t1;
	struct key_rpc k = {.body = WB_GET,
	                    .req = mmc_KeyBatch_init_zero,
	                    .on_result = on_get,
	                    .arg = p,
	                    .deadline_ms = until < p->deadline_ms ? until : p->deadline_ms,
	                    .reply_by_ms = until};
	struct xfer_hook hook = {.landed = prefix_landed, .arg = p};
	int rc;

	*landed = 0;
	p->verify = s->conf.c.verify_checksum;
	for (size_t i = 0; i < p->n; i++)
		p->rec[i].state = PK_ACTIVE;
	k.req.lease_ttl_ms = until > t0 ? until - t0 : 1;
	k.items = plan_items(p, PK_ACTIVE);
	if ((rc = key_rpc_call(s, &k)))
		return rc == MMC_TIMEOUT ? 0 : plan_fail_all(p, rc); /* no answer in time: nothing landed */
	cut_prefix(p);
	for (size_t i = 0; i < p->n; i++)
		p->rec[i].xk.skip = p->rec[i].state != PK_LEASED || p->rec[i].result;
	xfer_run_until(s, 0, &p->rec[0].xk, p->n, sizeof(*p->rec), &hook, until);
	t1 = clock_ms();
	for (size_t i = 0; i < p->n; i++) {
		struct plan_key *r = &p->rec[i];

		if (r->state != PK_LEASED || r->result)
			continue;
		r->result = leases_gone(s, &k) ? MMC_NOT_CONNECTED_META : r->xk.result;
		/* the lease runs to the deadline: what landed before it was read under the lease */
		if (r->result == 0 && (r->landed_ms ? r->landed_ms : t1) >= t0 + r->lease_ms)
			r->result = MMC_LEASE_EXPIRED;
	}
	if (meta_conn_losses(s->meta) == k.losses) /* as get_once: the leases are the lookup's last try's */
		release_leases(s, p, false);
	verify_gets(p);
	while (*landed < p->n && p->rec[*landed].result == 0)
		(*landed)++;
	return 0;
}

/* A get is safe to repeat: a new lookup takes new leases. One whose transfer outlived its connection goes again,
 * within retry_ms. */
static int run_get(struct mmc_store *s, struct plan *p)
{
	bool lost = false;
	int rc;

	while ((rc = get_once(s, p, &lost)) == 0 && lost && store_retries(s) && clock_ms() < p->deadline_ms)
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
		if (!store_key_ok(s, keys[i]))
			return MMC_INVALID_PARAM;
	return 0;
}

/* The caller's buffers: per key a list of layers, or (flat) one buffer. */
struct plan_src {
	bool flat;
	const void *const *const *bufs; /* key i: layers[i] buffers bufs[i][l] of sizes[i][l] bytes */
	const size_t *const *sizes;
	const size_t *layers;
	const void *const *buf; /* flat: key i is buf[i], size[i] bytes */
	const size_t *size;
};

/* Key i's buffers as a layer list (a flat key is a list of one); returns how many. */
static size_t src_key(const struct plan_src *src, size_t i, const void *const **bufs, const size_t **sizes)
{
	if (src->flat) {
		*bufs = &src->buf[i];
		*sizes = &src->size[i];
		return 1;
	}
	*bufs = src->bufs[i];
	*sizes = src->sizes[i];
	return src->layers[i];
}

static int check_src(const struct plan_src *src)
{
	if (src->flat ? !src->buf || !src->size : !src->bufs || !src->sizes || !src->layers)
		return MMC_INVALID_PARAM;
	return 0;
}

/* The pieces the plan needs room for (a key over MMC_LAYERS_MAX fails in plan_fill, before any is written). */
static size_t src_pieces(const struct plan_src *src, size_t n)
{
	size_t npieces = 0;

	if (src->flat)
		return n;
	for (size_t i = 0; i < n; i++)
		npieces += src->layers[i] <= MMC_LAYERS_MAX ? src->layers[i] : 0;
	return npieces;
}

/* Fills the plan's pieces and totals from the caller's buffers. */
static int plan_fill(struct plan *p, const struct plan_src *src)
{
	size_t at = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct plan_key *k = &p->rec[i];
		const void *const *bufs;
		const size_t *sizes;
		size_t nl = src_key(src, i, &bufs, &sizes);

		if (!bufs || !sizes || nl == 0 || nl > MMC_LAYERS_MAX)
			return MMC_INVALID_PARAM;
		k->xk.pieces = &p->pieces[at];
		k->xk.npieces = (uint32_t)nl;
		for (size_t l = 0; l < nl; l++) {
			/* a sum that wrapped would pass the size checks and copy the real lengths */
			if (!bufs[l] || !sizes[l] || sizes[l] > SIZE_MAX - k->total)
				return MMC_INVALID_PARAM;
			p->pieces[at++] = (struct xfer_piece){(void *)bufs[l], sizes[l]};
			k->total += sizes[l];
		}
	}
	return 0;
}

/* Every public data call: one plan (one allocation), run, and its results copied out. */
static int batch(mmc_store *s, bool put, const char *const *keys, const struct plan_src *src, size_t n, int32_t direct,
                 const mmc_replicate_config *rc, bool spread, int *results)
{
	struct plan p;
	size_t npieces;
	int err = check_batch(s, keys, n, results);

	if (!err && (check_src(src) || !(put ? direct_is_put(direct) : direct_is_get(direct)) || check_rc(rc)))
		err = MMC_INVALID_PARAM;
	if (err)
		return fail_all(results, n, err);
	npieces = src_pieces(src, n);
	if ((err = plan_alloc(&p, n, npieces ? npieces : 1, keys)))
		return fail_all(results, n, err);
	p.deadline_ms = call_deadline(s);
	err = plan_fill(&p, src);
	if (err)
		plan_fail_all(&p, err);
	else
		err = put ? run_put(s, &p, rc, spread) : run_get(s, &p);
	for (size_t i = 0; i < n; i++)
		results[i] = p.rec[i].result;
	free(p.rec);
	return err;
}

/* The prefix calls: the checks and the plan of every get, then get_prefix. */
static int prefix(mmc_store *s, const char *const *keys, const struct plan_src *src, size_t n, int32_t direct,
                  uint32_t timeout_ms, size_t *landed)
{
	uint64_t until = clock_ms() + timeout_ms;
	struct plan p;
	size_t npieces;
	int dummy = 0, err = landed ? check_batch(s, keys, n, &dummy) : MMC_INVALID_PARAM;

	if (landed)
		*landed = 0;
	if (!err && (check_src(src) || !direct_is_get(direct)))
		err = MMC_INVALID_PARAM;
	if (err)
		return err;
	npieces = src_pieces(src, n);
	if ((err = plan_alloc(&p, n, npieces ? npieces : 1, keys)))
		return err;
	p.deadline_ms = call_deadline(s);
	err = plan_fill(&p, src);
	if (!err)
		err = get_prefix(s, &p, until, landed);
	free(p.rec);
	return err;
}

int mmc_batch_get_into_prefix(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes, size_t n,
                              int32_t direct, uint32_t timeout_ms, size_t *landed)
{
	STORE_CALL(s);
	struct plan_src src = {.flat = true, .buf = (const void *const *)bufs, .size = sizes};

	return prefix(s, keys, &src, n, direct, timeout_ms, landed);
}

int mmc_batch_get_into_layers_prefix(mmc_store *s, const char *const *keys, void *const *const *bufs,
                                     const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                     uint32_t timeout_ms, size_t *landed)
{
	STORE_CALL(s);
	struct plan_src src = {.bufs = (const void *const *const *)bufs, .sizes = sizes, .layers = layers};

	return prefix(s, keys, &src, n, direct, timeout_ms, landed);
}

static int batch_layers(mmc_store *s, bool put, const char *const *keys, const void *const *const *bufs,
                        const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                        const mmc_replicate_config *rc, bool spread, int *results)
{
	struct plan_src src = {.bufs = bufs, .sizes = sizes, .layers = layers};

	return batch(s, put, keys, &src, n, direct, rc, spread, results);
}

/* Single-buffer batches: each key is a one-layer key. */
static int batch_flat(mmc_store *s, bool put, const char *const *keys, const void *const *bufs, const size_t *sizes,
                      size_t n, int32_t direct, const mmc_replicate_config *rc, bool spread, int *results)
{
	struct plan_src src = {.flat = true, .buf = bufs, .size = sizes};

	return batch(s, put, keys, &src, n, direct, rc, spread, results);
}

int mmc_batch_put_from_layers(mmc_store *s, const char *const *keys, const void *const *const *bufs,
                              const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                              const mmc_replicate_config *rc, int *results)
{
	STORE_CALL(s);
	return batch_layers(s, true, keys, bufs, sizes, layers, n, direct, rc, true, results);
}

int mmc_batch_get_into_layers(mmc_store *s, const char *const *keys, void *const *const *bufs,
                              const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct, int *results)
{
	STORE_CALL(s);
	return batch_layers(s, false, keys, (const void *const *const *)bufs, sizes, layers, n, direct, NULL, false,
	                    results);
}

int mmc_batch_put_from(mmc_store *s, const char *const *keys, const void *const *bufs, const size_t *sizes, size_t n,
                       int32_t direct, const mmc_replicate_config *rc, int *results)
{
	STORE_CALL(s);
	return batch_flat(s, true, keys, bufs, sizes, n, direct, rc, true, results);
}

int mmc_batch_get_into(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes, size_t n,
                       int32_t direct, int *results)
{
	STORE_CALL(s);
	return batch_flat(s, false, keys, (const void *const *)bufs, sizes, n, direct, NULL, false, results);
}

int mmc_put_from(mmc_store *s, const char *key, const void *buf, size_t size, int32_t direct,
                 const mmc_replicate_config *rc)
{
	STORE_CALL(s);
	int result, err = batch_flat(s, true, &key, &buf, &size, 1, direct, rc, false, &result);

	return err ? err : result;
}

int mmc_get_into(mmc_store *s, const char *key, void *buf, size_t size, int32_t direct)
{
	STORE_CALL(s);
	int result, err = batch_flat(s, false, &key, (const void *const *)&buf, &size, 1, direct, NULL, false, &result);

	return err ? err : result;
}

int mmc_put_from_layers(mmc_store *s, const char *key, const void *const *bufs, const size_t *sizes, size_t layers,
                        int32_t direct, const mmc_replicate_config *rc)
{
	STORE_CALL(s);
	int result, err = batch_layers(s, true, &key, &bufs, &sizes, &layers, 1, direct, rc, false, &result);

	return err ? err : result;
}

int mmc_get_into_layers(mmc_store *s, const char *key, void *const *bufs, const size_t *sizes, size_t layers,
                        int32_t direct)
{
	STORE_CALL(s);
	int result, err = batch_layers(s, false, &key, (const void *const *const *)&bufs, &sizes, &layers, 1, direct,
	                               NULL, false, &result);

	return err ? err : result;
}
