/*
 * getHostCacheState (reference kvcm.md §4.14): for each live reporter host of the instance, how many of the
 * given keys it holds as a prefix (both event-report types of a host together), and optionally how far one L2
 * peer would extend that prefix. Hosts holding not even the first key are left out; hosts come in name order.
 * QT_PREFIX_MATCH_WITH_MAMBA is answered with the plain prefix rule.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "kvcm_server.h"
#include "reporter.h"

#define HOSTS_MAX 4096

struct host_state {
	const char *host;
	bool *has;    /* per key: any of its reporters holds it */
	bool *has_l2; /* per key: its L2 reporter holds it (what a peer can serve) */
	uint64_t local, fetch, total;
};

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

/* One pass over each key's locations marks which hosts hold it. */
static void mark_holders(struct call *c, struct host_state *hs, size_t nh, const int64_t *keys, size_t n,
                         const char **mediums, size_t nm)
{
	char host[KVCM_NAME_MAX], medium[64];

	for (size_t j = 0; j < n; j++) {
		struct block *b = block_find(c->inst, keys[j]);

		for (struct location *l = b ? b->locs : NULL; l; l = l->next) {
			struct host_state *h;

			if (!l->er_key || !er_location_host(l, host, sizeof(host), medium, sizeof(medium)) ||
			    !medium_wanted(mediums, nm, medium) || !(h = host_of(hs, nh, host)) ||
			    !er_location_visible(c->k, c->inst, l))
				continue;
			h->has[j] = true;
			h->has_l2[j] = h->has_l2[j] || l->type == ST_EVENT_REPORT_L2;
		}
	}
}

/* The best single L2 peer for h: the one extending its prefix furthest (ties: the smaller name). */
static void with_peer(struct host_state *h, struct host_state *hs, size_t nh, size_t n)
{
	h->total = h->local;
	for (size_t p = 0; p < nh; p++) {
		uint64_t end = h->local, fetch = 0;

		if (&hs[p] == h)
			continue;
		while (end < n && (h->has[end] || hs[p].has_l2[end])) {
			fetch += !h->has[end];
			end++;
		}
		if (end > h->total) {
			h->total = end;
			h->fetch = fetch;
		}
	}
}

static bool query_type_ok(struct call *c)
{
	int qt = jd_enum(&c->d, c->body, "query_type", &enum_query_type);

	if (qt == QT_UNSPECIFIED)
		qt = c->inst->default_query_type ? c->inst->default_query_type : QT_PREFIX_MATCH;
	if (call_decode_failed(c))
		return false;
	if (qt != QT_PREFIX_MATCH && qt != QT_PREFIX_MATCH_WITH_MAMBA) {
		call_fail(c, KC_INVALID_ARGUMENT, "getHostCacheState supports QT_PREFIX_MATCH(_WITH_MAMBA) only");
		return false;
	}
	return true;
}

static void reply(struct call *c, struct host_state *hs, size_t nh)
{
	struct jw *o = &c->out;

	call_ok(c, "Host cache state retrieved successfully");
	jw_key(o, "hosts");
	jw_arr(o);
	for (size_t i = 0; i < nh; i++) {
		if (!hs[i].local)
			continue;
		jw_obj(o);
		jw_kstr(o, "host_ip_port", hs[i].host);
		jw_ki64s(o, "local", (int64_t)hs[i].local);
		jw_ki64s(o, "p2p_1_fetch", (int64_t)hs[i].fetch);
		jw_ki64s(o, "p2p_1_total_match", (int64_t)hs[i].total);
		jw_obj_end(o);
	}
	jw_arr_end(o);
}

void api_get_host_cache_state(struct call *c)
{
	int64_t *keys = NULL;
	const char **mediums = NULL;
	size_t n, nm, nh;
	int32_t p2p;
	struct host_state *hs = NULL;

	if (!query_type_ok(c))
		return;
	n = jd_i64s(&c->d, c->body, "block_cache_keys", &keys, c->k->conf.max_keys);
	nm = jd_strs(&c->d, c->body, "medium", &mediums, 64);
	p2p = jd_i32(&c->d, c->body, "p2p_host_count");
	if (call_decode_failed(c))
		goto out;
	hs = calloc(HOSTS_MAX, sizeof(*hs));
	if (!hs) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	nh = live_hosts(c, hs);
	for (size_t i = 0; i < nh; i++) {
		hs[i].has = calloc(n + 1, sizeof(bool));
		hs[i].has_l2 = calloc(n + 1, sizeof(bool));
		if (!hs[i].has || !hs[i].has_l2) {
			call_fail(c, KC_INTERNAL_ERROR, "out of memory");
			goto free_maps;
		}
	}
	mark_holders(c, hs, nh, keys, n, mediums, nm);
	for (size_t i = 0; i < nh; i++) {
		while (hs[i].local < n && hs[i].has[hs[i].local])
			hs[i].local++;
		hs[i].total = hs[i].local;
	}
	for (size_t i = 0; p2p > 0 && i < nh; i++)
		if (hs[i].local)
			with_peer(&hs[i], hs, nh, n);
	reply(c, hs, nh);
free_maps:
	for (size_t i = 0; i < nh; i++) {
		free(hs[i].has);
		free(hs[i].has_l2);
	}
out:
	free(hs);
	free(keys);
	free(mediums);
}

void api_get_host_cache_state_empty(struct jw *w)
{
	jw_key(w, "hosts");
	jw_arr(w);
	jw_arr_end(w);
}
