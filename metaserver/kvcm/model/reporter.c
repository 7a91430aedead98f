#include "reporter.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "block_record.h"
#include "block_scan.h"
#include "clock.h"
#include "instance.h"
#include "json_in.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "quota.h"
#include "wire_enums.h"

#define LIVENESS_TICK_MS 100

struct reporters {
	struct reporter *head;
	size_t n; /* at most REPORTERS_MAX: a reporter is never freed, and every visibility check looks it up */
	struct event *tick;
};

/* A storage's event_report parameter, or dflt (also for a reporter whose storage was removed: NULL). */
static uint64_t param(const struct storage *s, const char *name, uint32_t dflt)
{
	int64_t v = s ? jn_i64(json_object_get(s->cfg, "event_report"), name) : 0;

	return v > 0 ? (uint64_t)v : dflt;
}

void reporters_forget_storage(struct kvcm *k, const struct storage *s)
{
	for (struct reporter *r = k->reporters->head; r; r = r->next)
		if (r->storage == s)
			r->storage = NULL;
}

struct reporter *reporter_first(struct kvcm *k)
{
	return k->reporters->head;
}

struct reporter *reporter_find(struct kvcm *k, const struct instance *inst, int type, const char *host)
{
	for (struct reporter *r = k->reporters->head; r; r = r->next)
		if (r->inst == inst && r->type == type && strcmp(r->host, host) == 0)
			return r;
	return NULL;
}

struct reporter *reporter_get(struct kvcm *k, struct instance *inst, struct storage *s, int type, const char *host)
{
	struct reporter *r = reporter_find(k, inst, type, host);

	if (r) {
		if (!r->storage) /* its storage was removed since: the one it reports to now */
			r->storage = s;
		return r;
	}
	if (k->reporters->n >= REPORTERS_MAX) {
		log_warn(
		    "op=kvcm_reporter_refused instance=\"%s\" host=\"%s\" reporters=%zu (the most one server keeps)",
		    inst->id, host, k->reporters->n);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	k->reporters->n++;
	r->inst = inst;
	r->storage = s;
	r->type = type;
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->available = true;
	r->last_heartbeat_ms = clock_ms();
	instance_hold(inst);
	r->next = k->reporters->head;
	k->reporters->head = r;
	log_info("op=kvcm_reporter_new instance=\"%s\" type=%s host=\"%s\"", inst->id, storage_type_kind(type), host);
	return r;
}

void reporter_new_generation(struct kvcm *k, struct reporter *r)
{
	static const char hex[] = "0123456789abcdef";
	char id[GEN_LEN + 1];

	kvcm_random_id(k, id, GEN_LEN);
	for (int i = 0; i < GEN_LEN; i++)
		r->gen[i] = hex[(unsigned char)id[i] % 16];
	r->gen[GEN_LEN] = '\0';
}

bool reporter_merge_medium(struct reporter *r, const char *medium)
{
	char **m;

	for (size_t i = 0; i < r->nmediums; i++)
		if (strcmp(r->mediums[i], medium) == 0)
			return true;
	m = realloc(r->mediums, (r->nmediums + 1) * sizeof(*m));
	if (!m)
		return false;
	r->mediums = m;
	return (r->mediums[r->nmediums] = strdup(medium)) && ++r->nmediums;
}

int er_key(char *out, size_t cap, int type, const char *medium, const char *host)
{
	int n = snprintf(out, cap, "kvs#%s#%s#%s", storage_type_kind(type), medium, host);

	return n > 0 && (size_t)n < cap ? 0 : MMC_ERROR;
}

/* The '#' before the host in l's key (kvs#<type>#<medium>#<host>), *m the medium; NULL when the key is malformed. */
static const char *key_host(const struct location *l, const char **m)
{
	const char *k = l->er_key, *kind = storage_type_kind(l->type), *h;
	size_t kl = strlen(kind);

	if (!k || strncmp(k, "kvs#", 4) != 0 || strncmp(k + 4, kind, kl) != 0 || k[4 + kl] != '#')
		return NULL;
	*m = k + 5 + kl;
	h = strchr(*m, '#');
	if (!h || h == *m || !h[1] || strchr(h + 1, '#'))
		return NULL;
	return h;
}

bool er_location_host(const struct location *l, char *out, size_t cap, char *medium, size_t mcap)
{
	const char *m, *h = key_host(l, &m);

	if (!h)
		return false;
	snprintf(out, cap, "%s", h + 1);
	if (medium)
		snprintf(medium, mcap, "%.*s", (int)(h - m), m);
	return true;
}

bool er_uri_valid(const char *uri, const char **sver, int *nsver)
{
	const char *p = strstr(uri, "://"), *auth, *end, *colon, *q;

	*nsver = 0;
	*sver = NULL;
	if (!p || p == uri)
		return false;
	for (const char *s = uri; s < p; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '+' ||
		      *s == '-' || *s == '.' || *s == '_')) /* the reference's own scheme is event_report:// */
			return false;
	auth = p + 3;
	end = auth + strcspn(auth, "/?#");
	colon = memchr(auth, ':', (size_t)(end - auth));
	if (colon) {
		if (colon + 1 == end)
			return false;
		for (const char *s = colon + 1; s < end; s++)
			if (*s < '0' || *s > '9')
				return false;
	}
	q = strchr(uri, '?');
	for (const char *s = q; s; s = strchr(s + 1, '&')) {
		if (strncmp(s + 1, "s_version=", 10) == 0) {
			(*nsver)++;
			*sver = s + 11;
		}
	}
	return true;
}

/* One spec's s_version: 32 lowercase hex chars up to the next '&' or the end. */
static bool sver_ok(const char *v)
{
	size_t n = strcspn(v, "&#");

	if (n != GEN_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return false;
	return true;
}

bool er_location_visible_by(const struct reporter *r, const struct location *l)
{
	bool current = false;

	if (!r || r->tombstone || !r->available || l->status != CLS_SERVING || l->pending || !l->nspecs)
		return false;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		const char *sv;
		int nsv;

		if (!er_uri_valid(l->specs[j].uri, &sv, &nsv) || nsv > 1 || (nsv == 1 && !sver_ok(sv)))
			return false;
		current = current || (nsv == 1 && strncmp(sv, r->gen, GEN_LEN) == 0);
	}
	return !r->strict || current;
}

bool er_location_visible(struct kvcm *k, const struct instance *inst, const struct location *l)
{
	char host[KVCM_NAME_MAX];

	if (l->status != CLS_SERVING || l->pending || !l->nspecs || !er_location_host(l, host, sizeof(host), NULL, 0))
		return false;
	return er_location_visible_by(reporter_find(k, inst, l->type, host), l);
}

/*
 * What a cleanup scan removes: the reporter's locations without a spec of generation keep that were written
 * before the scan started. A scan spans loop turns; the newer writes it meets (a later snapshot's, or those of a
 * lifecycle begun by REGISTER after a tombstone) belong to another attempt and are never its to remove.
 */
struct cleanup {
	int type;
	char host[KVCM_NAME_MAX];
	char keep[GEN_LEN + 1];
	uint64_t since_us;
};

static bool holds_generation(const struct location *l, const char *gen)
{
	for (uint16_t j = 0; gen[0] && j < l->nspecs; j++) {
		const char *sv;
		int nsv;

		if (er_uri_valid(l->specs[j].uri, &sv, &nsv) && nsv == 1 && strncmp(sv, gen, GEN_LEN) == 0)
			return true;
	}
	return false;
}

/*
 * Whether l is a location of the scan's reporter. The host is compared in place, as er_location_host would copy it
 * (cut to KVCM_NAME_MAX - 1 bytes): a scan visits every location of the instance, and most belong to others.
 */
static bool cleanup_owns(const struct cleanup *c, const struct location *l)
{
	const char *m, *h;

	if (!l->er_key || l->type != c->type || l->pending || l->create_time_us >= c->since_us)
		return false;
	h = key_host(l, &m);
	return h && strncmp(h + 1, c->host, KVCM_NAME_MAX - 1) == 0;
}

static void cleanup_block(struct kvcm *k, struct instance *inst, struct block *b, void *arg)
{
	struct cleanup *c = arg;
	struct location **pp = &b->locs, *l;
	bool changed = false;

	while ((l = *pp)) {
		if (cleanup_owns(c, l) && !holds_generation(l, c->keep)) {
			*pp = l->next;
			usage_sub_location(inst, l);
			location_free(l);
			changed = true;
			continue;
		}
		pp = &l->next;
	}
	if (!changed)
		return;
	if (b->locs) {
		block_record_put(k, inst, b);
		return;
	}
	block_record_del(k, inst, b->key);
	block_remove(inst, b);
	usage_sub_key(inst);
}

int reporter_cleanup(struct kvcm *k, struct reporter *r, const char *keep)
{
	struct cleanup *c = calloc(1, sizeof(*c));

	if (!c)
		return MMC_ERROR;
	c->type = r->type;
	snprintf(c->host, sizeof(c->host), "%s", r->host);
	snprintf(c->keep, sizeof(c->keep), "%s", keep);
	c->since_us = kvcm_now_us() + 1; /* the writes of this very turn are the scan's to judge */
	return block_scan(k, r->inst, cleanup_block, c, "event_report_cleanup", NULL, NULL);
}

void reporter_tombstone(struct kvcm *k, struct reporter *r)
{
	if (r->tombstone)
		return; /* down already: its cleanup is under way, and nothing it reported since is visible */
	r->tombstone = true;
	r->available = false;
	r->strict = false;
	r->gen[0] = '\0';
	log_info("op=kvcm_reporter_down instance=\"%s\" type=%s host=\"%s\"", r->inst->id, storage_type_kind(r->type),
	         r->host);
	reporter_cleanup(k, r, "");
}

/* Heartbeat timeout hides a reporter; past the grace period it is unregistered. */
void reporters_sweep(struct kvcm *k)
{
	uint64_t now = clock_ms();

	for (struct reporter *r = k->reporters->head; r; r = r->next) {
		uint64_t timeout = param(r->storage, "heartbeat_timeout_ms", k->conf.er_heartbeat_timeout_ms);
		uint64_t grace = param(r->storage, "cleanup_grace_ms", k->conf.er_cleanup_grace_ms);

		if (r->tombstone || now - r->last_heartbeat_ms <= timeout)
			continue;
		if (r->available) {
			r->available = false;
			log_info("op=kvcm_reporter_unavailable instance=\"%s\" host=\"%s\"", r->inst->id, r->host);
		}
		if (now - r->last_heartbeat_ms > timeout + grace)
			reporter_tombstone(k, r);
	}
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	reporters_sweep(arg);
}

int reporters_start(struct kvcm *k)
{
	struct timeval tv = {0, LIVENESS_TICK_MS * 1000};

	k->reporters = calloc(1, sizeof(*k->reporters));
	if (!k->reporters)
		return -1;
	k->reporters->tick = event_new(k->base, -1, EV_PERSIST, tick, k);
	return k->reporters->tick && event_add(k->reporters->tick, &tv) == 0 ? 0 : MMC_ERROR;
}

static void reporter_free(struct kvcm *k, struct reporter *r)
{
	for (size_t i = 0; i < r->nmediums; i++)
		free(r->mediums[i]);
	free(r->mediums);
	instance_release(k, r->inst);
	free(r);
}

void reporters_forget(struct kvcm *k, const struct instance *inst)
{
	struct reporter **pp = &k->reporters->head, *r;

	while ((r = *pp)) {
		if (r->inst == inst) {
			*pp = r->next;
			reporter_free(k, r);
		} else {
			pp = &r->next;
		}
	}
}

void reporters_stop(struct kvcm *k)
{
	struct reporters *rs = k->reporters;

	if (!rs)
		return;
	while (rs->head) {
		struct reporter *r = rs->head;

		rs->head = r->next;
		reporter_free(k, r);
	}
	if (rs->tick)
		event_free(rs->tick);
	free(rs);
	k->reporters = NULL;
}
