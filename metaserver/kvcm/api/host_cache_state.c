/*
 * getHostCacheState (reference kvcm.md §4.14): for each live reporter host of the instance, how many of the
 * given keys it holds as a prefix (both event-report types of a host together), and optionally how far one L2
 * peer would extend that prefix for the p2p_host_count hosts with the largest prefix. Hosts holding not even the
 * first key are left out; hosts come in name order. use_eagle_pop drops the last block of every prefix.
 * QT_PREFIX_MATCH_WITH_MAMBA is answered by host_cache_mamba.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "hash.h"
#include "host_cache_state.h"
#include "key_reader.h"
#include "kvcm_state.h"
#include "reporter.h"

#define HOSTS_MAX 4096

static bool medium_wanted(const char **mediums, size_t n, const char *medium)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(mediums[i], medium) == 0)
			return true;
	return n == 0;
}

static int by_host(const void *a, const void *b)
{
	return strcmp(((const struct host_state *)a)->host, ((const struct host_state *)b)->host);
}

/* The distinct live hosts reporting for the instance. */
static size_t live_hosts(struct call *c, struct host_state *hs)
{
	size_t n = 0;

	for (struct reporter *r = reporter_first(c->k); r && n < HOSTS_MAX; r = r->next) {
		bool seen = false;

		if (r->inst != c->inst || r->tombstone || !r->available)
			continue;
		for (size_t i = 0; i < n && !seen; i++)
			seen = strcmp(hs[i].host, r->host) == 0;
		if (!seen)
			hs[n++].host = r->host;
	}
	qsort(hs, n, sizeof(*hs), by_host);
	return n;
}

static struct host_state *host_of(struct host_state *hs, size_t nh, const char *host)
{
	struct host_state key = {.host = host};

	return bsearch(&key, hs, nh, sizeof(*hs), by_host);
}

static int spec_index(const struct instance *inst, const char *name)
{
	for (uint32_t i = 0; i < inst->nspecs; i++)
		if (strcmp(inst->specs[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Mamba: the instance specs l holds, into h's masks for key j. Specs the instance never declared need no mask. */
static void mark_specs(const struct host_query *q, const struct instance *inst, struct host_state *h,
                       const struct location *l, size_t j)
{
	for (uint16_t s = 0; s < l->nspecs; s++) {
		int i = spec_index(inst, l->specs[s].name);
		uint64_t bit = UINT64_C(1) << (i % 64);

		if (i < 0)
			continue;
		h->all[j * q->words + (size_t)i / 64] |= bit;
		if (l->type == ST_EVENT_REPORT_L2)
			h->l2[j * q->words + (size_t)i / 64] |= bit;
	}
}

/*
 * What one er_key (kvs#<type>#<medium>#<host>) stands for in this request. Every block of a reporter repeats
 * the same few strings, so parsing them, finding the reporter and the host once per string instead of once per
 * location takes most of the work out of a long query.
 */
struct er_source {
	const char *er_key; /* NULL: a free slot */
	size_t len;
	struct host_state *h; /* NULL: not a live host of the instance, or a medium not asked for */
	const struct reporter *r;
};

/* A fixed memo, not a growing table (so not common/hmap.h): a query allocates nothing for it. A power of two; more
 * distinct strings than half of it take the slow path. */
#define SOURCES 1024

struct sources {
	struct er_source slot[SOURCES];
	size_t used;
};

static void source_fill(struct call *c, struct host_query *q, const struct location *l, struct er_source *src,
                        const char **mediums, size_t nm)
{
	char host[KVCM_NAME_MAX], medium[64];

	src->er_key = l->er_key;
	src->len = strlen(l->er_key);
	src->h = NULL;
	src->r = NULL;
	if (!er_location_host(l, host, sizeof(host), medium, sizeof(medium)) || !medium_wanted(mediums, nm, medium))
		return;
	src->h = host_of(q->hs, q->nh, host);
	src->r = src->h ? reporter_find(c->k, c->inst, l->type, host) : NULL;
}

/* l's source, from the cache when its string was seen before; tmp when the cache is full. */
static struct er_source *source_of(struct call *c, struct host_query *q, struct sources *ss, const struct location *l,
                                   struct er_source *tmp, const char **mediums, size_t nm)
{
	size_t len = strlen(l->er_key), i = hash_bytes(l->er_key, len) & (SOURCES - 1);

	for (; ss->slot[i].er_key; i = (i + 1) & (SOURCES - 1))
		if (ss->slot[i].len == len && memcmp(ss->slot[i].er_key, l->er_key, len) == 0)
			return &ss->slot[i];
	if (ss->used >= SOURCES / 2) {
		source_fill(c, q, l, tmp, mediums, nm);
		return tmp;
	}
	ss->used++;
	source_fill(c, q, l, &ss->slot[i], mediums, nm);
	return &ss->slot[i];
}

#define PREFETCH_AHEAD 8

/* One pass over each key's locations marks which hosts hold it; it also finds the first key the index lacks. */
static void mark_holders(struct call *c, struct host_query *q, struct sources *ss, const char **mediums, size_t nm)
{
	q->valid = q->n;
	for (size_t j = 0; j < q->n; j++) {
		struct block *b;

		if (j + 2 * PREFETCH_AHEAD < q->n)
			block_prefetch(c->inst, q->keys[j + 2 * PREFETCH_AHEAD], false);
		if (j + PREFETCH_AHEAD < q->n)
			block_prefetch(c->inst, q->keys[j + PREFETCH_AHEAD], true);
		b = block_find(c->inst, q->keys[j]);
		if (!b && q->valid == q->n)
			q->valid = j;
		for (struct location *l = b ? b->locs : NULL; l; l = l->next) {
			struct er_source tmp, *src;

			if (!l->er_key || !(src = source_of(c, q, ss, l, &tmp, mediums, nm))->h ||
			    !er_location_visible_by(src->r, l))
				continue;
			src->h->has[j] = true;
			src->h->has_l2[j] = src->h->has_l2[j] || l->type == ST_EVENT_REPORT_L2;
			if (q->words)
				mark_specs(q, c->inst, src->h, l, j);
		}
	}
}

struct ranked {
	uint64_t local;
	size_t i;
};

static int by_local(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->local != y->local)
		return x->local > y->local ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

bool host_top_by_local(const struct host_query *q, size_t p2p, size_t **out, size_t *n)
{
	struct ranked *r = calloc(q->nh + 1, sizeof(*r));

	*n = 0;
	*out = calloc(q->nh + 1, sizeof(**out));
	if (!r || !*out) {
		free(r);
		return false;
	}
	for (size_t i = 0; i < q->nh; i++)
		if (q->hs[i].local)
			r[(*n)++] = (struct ranked){q->hs[i].local, i};
	qsort(r, *n, sizeof(*r), by_local);
	if (*n > p2p)
		*n = p2p;
	for (size_t i = 0; i < *n; i++)
		(*out)[i] = r[i].i;
	free(r);
	return true;
}

static int by_key(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t host_distinct_keys(int64_t *keys, size_t n)
{
	uint64_t d = 0;

	qsort(keys, n, sizeof(*keys), by_key);
	for (size_t i = 0; i < n; i++)
		d += !i || keys[i] != keys[i - 1];
	return d;
}

/*
 * The plain rule's peer: past h's own prefix, the L2 hosts holding every key h lacks so far; the prefix ends
 * where none is left, so the single peer reaching furthest gives it.
 */
static void with_peer(const struct host_query *q, struct host_state *h, int64_t *fetched)
{
	size_t end = h->stop, nf = 0;

	for (size_t p = 0; p < q->nh; p++) {
		size_t e = h->stop;

		while (&q->hs[p] != h && e < q->valid && (h->has[e] || q->hs[p].has_l2[e]))
			e++;
		if (e > end)
			end = e;
	}
	for (size_t j = h->stop; j < end; j++)
		if (!h->has[j])
			fetched[nf++] = q->keys[j];
	h->fetch = host_distinct_keys(fetched, nf);
	h->total = q->eagle && end ? end - 1 : end;
}

static bool prefix_match(struct host_query *q, size_t p2p)
{
	size_t *top, ntop;
	int64_t *fetched;

	for (size_t i = 0; i < q->nh; i++) {
		struct host_state *h = &q->hs[i];

		while (h->stop < q->valid && h->has[h->stop])
			h->stop++;
		h->local = h->total = q->eagle && h->stop ? h->stop - 1 : h->stop;
	}
	if (!host_top_by_local(q, p2p, &top, &ntop))
		return false;
	fetched = calloc(q->n + 1, sizeof(*fetched));
	for (size_t i = 0; fetched && i < ntop; i++)
		with_peer(q, &q->hs[top[i]], fetched);
	free(top);
	free(fetched);
	return fetched || !ntop;
}

/* The query type in force, or -1 after failing c. */
static int query_type(struct call *c)
{
	int qt = jd_enum(&c->d, c->body, "query_type", &enum_query_type);

	if (qt == QT_UNSPECIFIED)
		qt = c->inst->default_query_type ? c->inst->default_query_type : QT_PREFIX_MATCH;
	if (call_decode_failed(c))
		return -1;
	if (qt != QT_PREFIX_MATCH && qt != QT_PREFIX_MATCH_WITH_MAMBA) {
		call_fail(c, KC_INVALID_ARGUMENT, "getHostCacheState supports QT_PREFIX_MATCH(_WITH_MAMBA) only");
		return -1;
	}
	return qt;
}

static bool use_eagle_pop(const struct instance *inst)
{
	return json_is_true(json_object_get(json_object_get(inst->info, "model_deployment"), "use_eagle_pop"));
}

/* The peer fields only when a peer was asked for: the reference leaves them out otherwise (proto3 drops a 0). */
static void reply(struct call *c, const struct host_query *q, bool p2p)
{
	struct jw *o = &c->out;

	call_ok(c, "Host cache state retrieved successfully");
	jw_key(o, "hosts");
	jw_arr(o);
	for (size_t i = 0; i < q->nh; i++) {
		if (!q->hs[i].local)
			continue;
		jw_obj(o);
		jw_kstr(o, "host_ip_port", q->hs[i].host);
		jw_ki64s(o, "local", (int64_t)q->hs[i].local);
		if (p2p) {
			jw_ki64s(o, "p2p_1_fetch", (int64_t)q->hs[i].fetch);
			jw_ki64s(o, "p2p_1_total_match", (int64_t)q->hs[i].total);
		}
		/* the newest reference's name for the prefix with a peer's help, and the oldest one's for local */
		jw_ki64s(o, "global", (int64_t)q->hs[i].total);
		jw_ki64s(o, "prefix_match_blocks", (int64_t)q->hs[i].local);
		jw_obj_end(o);
	}
	jw_arr_end(o);
}

/* Per-host key maps: presence always, spec masks for the Mamba rule. */
static bool alloc_maps(struct host_query *q)
{
	for (size_t i = 0; i < q->nh; i++) {
		struct host_state *h = &q->hs[i];

		h->has = calloc(q->n + 1, sizeof(bool));
		h->has_l2 = calloc(q->n + 1, sizeof(bool));
		if (!h->has || !h->has_l2)
			return false;
		if (!q->words)
			continue;
		h->all = calloc(q->n * q->words + 1, sizeof(uint64_t));
		h->l2 = calloc(q->n * q->words + 1, sizeof(uint64_t));
		if (!h->all || !h->l2)
			return false;
	}
	return true;
}

static void free_maps(struct host_query *q)
{
	for (size_t i = 0; q->hs && i < q->nh; i++) {
		free(q->hs[i].has);
		free(q->hs[i].has_l2);
		free(q->hs[i].all);
		free(q->hs[i].l2);
	}
	free(q->hs);
}

void api_get_host_cache_state(struct call *c)
{
	int64_t *keys = NULL;
	const char **mediums = NULL;
	size_t nm;
	int32_t p2p;
	int qt = query_type(c);
	struct host_query q = {0};
	struct mamba_groups mg = {0};
	struct sources *ss = NULL;
	bool ok;

	if (qt < 0)
		return;
	if (!key_reader_take(c, "block_cache_keys", &keys, &q.n))
		q.n = jd_i64s(&c->d, c->body, "block_cache_keys", &keys, c->k->conf.max_keys);
	q.keys = keys;
	nm = jd_strs(&c->d, c->body, "medium", &mediums, 64);
	p2p = jd_i32(&c->d, c->body, "p2p_host_count");
	if (call_decode_failed(c))
		goto out;
	q.eagle = use_eagle_pop(c->inst);
	q.words = qt == QT_PREFIX_MATCH_WITH_MAMBA ? c->inst->nspecs / 64 + 1 : 0;
	if (qt == QT_PREFIX_MATCH_WITH_MAMBA && !mamba_groups_build(c, c->inst, q.words, &mg))
		goto out;
	q.hs = calloc(HOSTS_MAX, sizeof(*q.hs));
	ss = calloc(1, sizeof(*ss));
	if (!q.hs || !ss)
		goto oom;
	q.nh = live_hosts(c, q.hs);
	if (!alloc_maps(&q))
		goto oom;
	mark_holders(c, &q, ss, mediums, nm);
	ok = q.words ? mamba_match(&q, &mg, p2p > 0 ? (size_t)p2p : 0) : prefix_match(&q, p2p > 0 ? (size_t)p2p : 0);
	if (!ok)
		goto oom;
	reply(c, &q, p2p > 0);
	goto out;
oom:
	call_fail(c, KC_INTERNAL_ERROR, "out of memory");
out:
	free(ss);
	free_maps(&q);
	mamba_groups_free(&mg);
	free(keys);
	free(mediums);
}

void api_get_host_cache_state_empty(struct jw *w)
{
	jw_key(w, "hosts");
	jw_arr(w);
	jw_arr_end(w);
}
