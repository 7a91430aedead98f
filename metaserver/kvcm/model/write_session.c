#include "write_session.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "block_record.h"
#include "clock.h"
#include "deleter.h"
#include "hash.h"
#include "instance.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"

struct sessions {
	struct hmap ids;          /* id -> session */
	struct due_heap expiries; /* the same sessions by expiry time */
	struct event *sweep;
	uint64_t expired;
};

static uint64_t sid_hash(const char *id)
{
	return hash_bytes(id, SESSION_ID_LEN);
}

static uint64_t link_hash(const struct hmap_node *l)
{
	return sid_hash(hmap_entry(l, struct wsession, hlink)->id);
}

/* The session expiring first, or NULL. */
static struct wsession *first(const struct sessions *s)
{
	struct due_node *top = due_heap_top(&s->expiries);

	return top ? due_entry(top, struct wsession, expiry) : NULL;
}

static void unlink_session(struct sessions *s, struct wsession *w)
{
	hmap_remove(&s->ids, &w->hlink, sid_hash(w->id));
	due_heap_remove(&s->expiries, &w->expiry);
}

struct wsession *session_create(struct kvcm *k, struct instance *inst, uint32_t n, uint64_t timeout_ms)
{
	struct sessions *s = k->sessions;
	struct wsession *w;

	/* per instance too: one leaking or hostile instance must not take every session for half an hour */
	if (s->ids.n >= k->conf.max_sessions || inst->open_sessions >= k->conf.max_sessions_per_instance)
		return NULL;
	w = calloc(1, sizeof(*w) + n * sizeof(struct ws_item));
	if (!w)
		return NULL;
	do
		kvcm_random_id(k, w->id, SESSION_ID_LEN);
	while (session_find(k, w->id));
	w->inst = inst;
	w->n = n;
	w->expiry.due_ms = clock_ms() + timeout_ms;
	if (due_heap_push(&s->expiries, &w->expiry)) {
		free(w);
		return NULL;
	}
	if (hmap_insert(&s->ids, &w->hlink, sid_hash(w->id))) {
		due_heap_remove(&s->expiries, &w->expiry);
		free(w);
		return NULL;
	}
	instance_hold(inst);
	inst->open_sessions++;
	return w;
}

struct wsession *session_find(struct kvcm *k, const char *id)
{
	struct sessions *s = k->sessions;

	if (strlen(id) != SESSION_ID_LEN)
		return NULL;
	hmap_foreach_hash(&s->ids, sid_hash(id), l)
	{
		struct wsession *w = hmap_entry(l, struct wsession, hlink);

		if (memcmp(w->id, id, SESSION_ID_LEN) == 0)
			return w;
	}
	return NULL;
}

static void finish_item(struct kvcm *k, struct instance *inst, const struct ws_item *it, bool ok, uint64_t now)
{
	struct block *b = block_find(inst, it->key);
	struct location *l = b ? location_find(b, it->loc) : NULL;

	if (!l || l->status != CLS_WRITING || l->pending)
		return; /* removed or trimmed while it was being written */
	if (ok) {
		l->status = CLS_SERVING;
		block_touch(inst, b, now);
	} else {
		deleter_submit(k, inst, b, l, 0);
	}
	block_record_put(k, inst, b);
}

void session_finish(struct kvcm *k, struct wsession *w, const bool *ok)
{
	uint64_t now = kvcm_now_us();

	unlink_session(k->sessions, w);
	for (uint32_t i = 0; i < w->n; i++)
		finish_item(k, w->inst, &w->items[i], ok && ok[i], now);
	w->inst->open_sessions--;
	instance_release(k, w->inst);
	free(w);
}

void sessions_sweep(struct kvcm *k)
{
	struct sessions *s = k->sessions;
	uint64_t now = clock_ms();

	for (struct wsession *w; (w = first(s)) && w->expiry.due_ms <= now;) {
		log_info("op=kvcm_session_expired session=%s instance=\"%s\" locations=%u", w->id, w->inst->id, w->n);
		s->expired++;
		session_finish(k, w, NULL);
	}
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	sessions_sweep(arg);
}

int sessions_start(struct kvcm *k)
{
	struct sessions *s = calloc(1, sizeof(*s));
	struct timeval tv = {k->conf.sweep_interval_ms / 1000, (k->conf.sweep_interval_ms % 1000) * 1000};

	if (!s)
		return -1;
	k->sessions = s;
	hmap_init(&s->ids, link_hash, 1024);
	s->sweep = event_new(k->base, -1, EV_PERSIST, sweep_cb, k);
	return s->sweep && event_add(s->sweep, &tv) == 0 ? 0 : MMC_ERROR;
}

void sessions_stop(struct kvcm *k)
{
	struct sessions *s = k->sessions;

	if (!s)
		return;
	for (struct wsession *w; (w = first(s));) {
		unlink_session(s, w);
		w->inst->open_sessions--;
		instance_release(k, w->inst);
		free(w);
	}
	if (s->sweep)
		event_free(s->sweep);
	hmap_free(&s->ids);
	due_heap_free(&s->expiries);
	free(s);
	k->sessions = NULL;
}

uint64_t sessions_count(const struct kvcm *k)
{
	return k->sessions ? k->sessions->ids.n : 0;
}

uint64_t sessions_expired(const struct kvcm *k)
{
	return k->sessions ? k->sessions->expired : 0;
}
