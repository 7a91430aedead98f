#include "extent.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lg.h"
#include "mmc/mmc.h"
#include "per_key.h"
#include "store.h"

struct extent_cache {
	pthread_mutex_t lock;
	struct extent_group *groups;
	uint64_t backoff_until_ms;
};

struct extent_cache *extent_cache_new(void)
{
	struct extent_cache *c = calloc(1, sizeof(*c));

	if (c)
		pthread_mutex_init(&c->lock, NULL);
	return c;
}

void extent_cache_free(struct extent_cache *c)
{
	if (!c)
		return;
	while (c->groups) {
		struct extent_group *g = c->groups;

		c->groups = g->next;
		free(g);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool same_class(const struct extent_class *a, const struct extent_class *b)
{
	return a->replicas == b->replicas && a->npreferred == b->npreferred && a->spread == b->spread &&
	       a->lanes == b->lanes && memcmp(a->preferred, b->preferred, a->npreferred * sizeof(a->preferred[0])) == 0;
}

/* Sends g's ExtentReturn (no reply); a group of a lost connection died with it. */
static void send_return(struct mmc_store *s, const struct extent_group *g)
{
	mmc_ExtentReturn ret = mmc_ExtentReturn_init_zero;
	uint64_t *ids = g->failed_writes ? ret.failed : ret.ids;
	pb_size_t *n = g->failed_writes ? &ret.failed_count : &ret.ids_count;

	for (uint32_t i = 0; i < g->n && i < MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES; i++)
		ids[(*n)++] = g->ext[i].id;
	if (*n)
		meta_send_on(s->meta, g->losses, WB_EXTENT_RETURN, mmc_ExtentReturn_fields, &ret);
}

/* Returns and frees every group on the list. */
static void give_back(struct mmc_store *s, struct extent_group *list)
{
	while (list) {
		struct extent_group *g = list;

		list = g->next;
		send_return(s, g);
		free(g);
	}
}

static uint64_t carved(uint64_t size)
{
	return (size + 4095) & ~(uint64_t)4095; /* the meta server's allocation unit */
}

/* Deals the keys over `lanes` lanes in contiguous runs (key j of m to lane j * lanes / m: consecutive keys stay
 * adjacent in the pool, so their writes merge) and adds up what each lane needs. */
static void deal(const struct extent_keys *k, uint32_t lanes, uint64_t *need)
{
	memset(need, 0, MMC_WIRE_EXTENT_LANES * sizeof(*need));
	for (size_t j = 0; j < k->m; j++) {
		uint32_t l = (uint32_t)(j * lanes / k->m);

		PER_KEY(k->lane, k->index[j], k->stride) = (uint8_t)l;
		need[l] += carved(PER_KEY(k->sizes, k->index[j], k->stride));
	}
}

static uint64_t total(const struct extent_keys *k)
{
	uint64_t t = 0;

	for (size_t j = 0; j < k->m; j++)
		t += carved(PER_KEY(k->sizes, k->index[j], k->stride));
	return t;
}

/* Takes the keys' ranges off g's lanes when they all fit (base[l]: where lane l's run starts). */
static bool carve_from(struct extent_group *g, const struct extent_keys *k, uint64_t *base)
{
	uint64_t need[MMC_WIRE_EXTENT_LANES];

	deal(k, g->lanes, need);
	for (uint32_t l = 0; l < g->lanes; l++)
		if (g->size - g->used[l] < need[l])
			return false;
	for (uint32_t l = 0; l < g->lanes; l++) {
		base[l] = g->used[l];
		g->used[l] += need[l];
	}
	g->inflight++;
	return true;
}

/* Retires groups that can no longer be carved (another connection, past their freshness, too full for these keys)
 * and unlinks the retired ones nobody carves from onto *done. Returns the group of cls the keys were carved from,
 * or NULL. Under c->lock. */
static struct extent_group *scan(struct extent_cache *c, const struct extent_class *cls, const struct extent_keys *k,
                                 uint64_t *base, uint64_t losses, uint64_t now, struct extent_group **done,
                                 uint32_t *live)
{
	struct extent_group **gp = &c->groups, *g, *found = NULL;

	*live = 0;
	while ((g = *gp)) {
		if (g->losses != losses || now >= g->fresh_until_ms)
			g->retired = true;
		if (!g->retired && !found && same_class(&g->cls, cls)) {
			if (carve_from(g, k, base))
				found = g;
			else
				g->retired = true;
		}
		if (g->retired && g->inflight == 0) {
			*gp = g->next;
			g->next = *done;
			*done = g;
			continue;
		}
		*live += !g->retired;
		gp = &g->next;
	}
	return found;
}

static int decode_grant(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	struct extent_group *g = c->arg;
	mmc_ExtentGrant r = mmc_ExtentGrant_init_zero;
	pb_istream_t st = pb_istream_from_buffer(data, len);

	if (body == WB_REPLY) /* a server without extents answers the unknown body with a code */
		return meta_decode_reply(c, body, data, len);
	if (body != WB_EXTENT_GRANT || !pb_decode(&st, mmc_ExtentGrant_fields, &r))
		return MMC_INTERNAL_ERROR;
	g->n = r.extents_count;
	memcpy(g->ext, r.extents, sizeof(g->ext));
	g->idle_ms = r.idle_ms;
	return r.result;
}

/* True when the grant is what was asked for: replicas extents per lane, 1..cls lanes (no more lanes than distinct
 * services), all of one size that holds the whole batch. */
static bool grant_ok(struct extent_group *g, uint64_t need)
{
	if (g->n == 0 || g->n % g->cls.replicas || g->n / g->cls.replicas > g->cls.lanes || g->idle_ms == 0)
		return false;
	g->lanes = g->n / g->cls.replicas;
	for (uint32_t i = 0; i < g->n; i++)
		if (g->ext[i].size != g->ext[0].size || g->ext[i].size < need)
			return false;
	return true;
}

/* Asks for a new group of class cls (one round trip) whose every lane could hold all of need. */
static int grant(struct mmc_store *s, const struct extent_class *cls, uint64_t need, struct extent_group *g,
                 uint64_t deadline_ms)
{
	mmc_ExtentRequest req = mmc_ExtentRequest_init_zero;
	struct mcall c = {.decode = decode_grant, .arg = g, .deadline_ms = deadline_ms};
	uint64_t t0 = clock_ms(), ask = EXTENT_BYTES / cls->lanes;
	int rc;

	req.bytes = EXTENT_BATCHES * need > ask ? EXTENT_BATCHES * need : ask;
	if (req.bytes > EXTENT_ASK_MAX / cls->lanes)
		req.bytes = EXTENT_ASK_MAX / cls->lanes;
	req.min_bytes = need;
	req.lanes = cls->lanes;
	req.replica_num = cls->replicas;
	req.preferred_count = cls->npreferred;
	memcpy(req.preferred, cls->preferred, cls->npreferred * sizeof(req.preferred[0]));
	req.flags = cls->spread ? MMC_WIRE_FLAG_SPREAD : 0;
	g->cls = *cls;
	if ((rc = meta_call(s->meta, WB_EXTENT_REQUEST, mmc_ExtentRequest_fields, &req, &c)))
		return rc;
	g->losses = c.losses; /* the extents belong to the server that answered, which may be a new one */
	g->size = g->ext[0].size;
	g->fresh_until_ms = t0 + g->idle_ms / 2;
	/* an RMA may stall for rma_timeout_ms before it is cancelled: it must end well inside the server's idle time */
	if (!grant_ok(g, need) || 4ull * s->conf.c.rma_timeout_ms > g->idle_ms ||
	    meta_conn_losses(s->meta) != g->losses) {
		send_return(s, g);
		return MMC_NOT_ENOUGH_MEMORY;
	}
	return 0;
}

/* A refused grant: a bad class (a dead preferred rank) is the put's own error, which the key-by-key path reports;
 * an rma_timeout_ms too long for the server's idle time rules extents out for good; else wait a little. */
static void back_off(struct mmc_store *s, const struct extent_group *g, int rc)
{
	struct extent_cache *c = s->extents;

	lg_debug("put: no extent (%s): allocating key by key", mmc_strerror(rc));
	pthread_mutex_lock(&c->lock);
	if (g->idle_ms && 4ull * s->conf.c.rma_timeout_ms > g->idle_ms)
		c->backoff_until_ms = UINT64_MAX;
	else if (rc != MMC_INVALID_PARAM)
		c->backoff_until_ms = clock_ms() + EXTENT_BACKOFF_MS;
	pthread_mutex_unlock(&c->lock);
}

int extents_take(struct mmc_store *s, const struct extent_class *cls, const struct extent_keys *k,
                 struct extent_group **out, uint64_t *base, uint64_t deadline_ms)
{
	struct extent_cache *c = s->extents;
	struct extent_group *g, *done = NULL;
	uint64_t now = clock_ms(), need = total(k);
	uint32_t live;
	int rc = 0;

	if (need > EXTENT_ASK_MAX / cls->lanes) /* a batch this large pays for its two round trips */
		return MMC_NOT_ENOUGH_MEMORY;
	pthread_mutex_lock(&c->lock);
	g = scan(c, cls, k, base, meta_conn_losses(s->meta), now, &done, &live);
	if (!g && (now < c->backoff_until_ms || live >= EXTENT_GROUPS_MAX))
		rc = MMC_NOT_ENOUGH_MEMORY;
	pthread_mutex_unlock(&c->lock);
	give_back(s, done);
	if (g || rc)
		return g ? (*out = g, 0) : rc;
	if (!(g = calloc(1, sizeof(*g))))
		return MMC_MALLOC_FAILED;
	if ((rc = grant(s, cls, need, g, deadline_ms))) {
		back_off(s, g, rc);
		free(g);
		return rc;
	}
	carve_from(g, k, base); /* every lane holds the whole batch */
	pthread_mutex_lock(&c->lock);
	g->next = c->groups;
	c->groups = g;
	pthread_mutex_unlock(&c->lock);
	*out = g;
	return 0;
}

void extents_done(struct mmc_store *s, struct extent_group *g, uint64_t confirmed_ms, bool refused, bool failed_writes)
{
	struct extent_cache *c = s->extents;
	struct extent_group **gp, *done = NULL;

	pthread_mutex_lock(&c->lock);
	g->inflight--;
	g->retired |= refused || failed_writes;
	g->failed_writes |= failed_writes;
	if (confirmed_ms && confirmed_ms + g->idle_ms / 2 > g->fresh_until_ms)
		g->fresh_until_ms = confirmed_ms + g->idle_ms / 2;
	if (g->retired && g->inflight == 0) {
		for (gp = &c->groups; *gp && *gp != g; gp = &(*gp)->next)
			;
		if (*gp)
			*gp = g->next;
		g->next = NULL;
		done = g;
	}
	pthread_mutex_unlock(&c->lock);
	give_back(s, done);
}
