#include "write_session.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "block_index.h"
#include "block_record.h"
#include "clock.h"
#include "deleter.h"
#include "hash.h"
#include "instance.h"
#include "kvcm_state.h"
#include "log.h"

struct sessions {
	struct chain_table ids; /* id -> session */
	struct wsession **heap; /* min-heap on expire_ms, of ids.n sessions */
	size_t cap;
	struct event *sweep;
	uint64_t expired;
};

static uint64_t sid_hash(const char *id)
{
	return hash_bytes(id, SESSION_ID_LEN);
}

static uint64_t link_hash(const struct chain_link *l)
{
	return sid_hash(chain_entry(l, struct wsession, hlink)->id);
}

static void hswap(struct sessions *s, size_t a, size_t b)
{
	struct wsession *t = s->heap[a];

	s->heap[a] = s->heap[b];
	s->heap[b] = t;
	s->heap[a]->heap_idx = a;
	s->heap[b]->heap_idx = b;
}

static void sift_up(struct sessions *s, size_t i)
{
	while (i && s->heap[(i - 1) / 2]->expire_ms > s->heap[i]->expire_ms) {
		hswap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void sift_down(struct sessions *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->ids.n && s->heap[l]->expire_ms < s->heap[m]->expire_ms)
			m = l;
		if (r < s->ids.n && s->heap[r]->expire_ms < s->heap[m]->expire_ms)
			m = r;
		if (m == i)
			return;
		hswap(s, i, m);
		i = m;
	}
}

static void unlink_session(struct sessions *s, struct wsession *w)
{
	size_t i = w->heap_idx;

	chain_remove(&s->ids, &w->hlink, sid_hash(w->id));
	if (i != s->ids.n) {
		hswap(s, i, s->ids.n);
		sift_down(s, i);
		sift_up(s, i);
	}
}

struct wsession *session_create(struct kvcm *k, struct instance *inst, uint32_t n, uint64_t timeout_ms)
{
	struct sessions *s = k->sessions;
	struct wsession *w, **heap;

	if (s->ids.n >= k->conf.max_sessions)
		return NULL;
	if (!(heap = array_grow(s->heap, &s->cap, s->ids.n + 1, sizeof(*heap), 1024)))
		return NULL;
	s->heap = heap;
	w = calloc(1, sizeof(*w) + n * sizeof(struct ws_item));
	if (!w)
		return NULL;
	do
		kvcm_random_id(k, w->id, SESSION_ID_LEN);
	while (session_find(k, w->id));
	if (chain_insert(&s->ids, &w->hlink, sid_hash(w->id), 1024, link_hash)) {
		free(w);
		return NULL;
	}
	w->inst = inst;
	w->n = n;
	w->expire_ms = clock_ms() + timeout_ms;
	w->heap_idx = s->ids.n - 1;
	s->heap[w->heap_idx] = w;
	sift_up(s, w->heap_idx);
	instance_hold(inst);
	return w;
}

struct wsession *session_find(struct kvcm *k, const char *id)
{
	struct sessions *s = k->sessions;

	if (strlen(id) != SESSION_ID_LEN)
		return NULL;
	for (struct chain_link *l = chain_first(&s->ids, sid_hash(id)); l; l = l->next) {
		struct wsession *w = chain_entry(l, struct wsession, hlink);

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
	instance_release(k, w->inst);
	free(w);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct kvcm *k = arg;
	struct sessions *s = k->sessions;
	uint64_t now = clock_ms();

	while (s->ids.n && s->heap[0]->expire_ms <= now) {
		struct wsession *w = s->heap[0];

		log_info("op=kvcm_session_expired session=%s instance=\"%s\" locations=%u", w->id, w->inst->id, w->n);
		s->expired++;
		session_finish(k, w, NULL);
	}
}

int sessions_start(struct kvcm *k)
{
	struct sessions *s = calloc(1, sizeof(*s));
	struct timeval tv = {k->conf.sweep_interval_ms / 1000, (k->conf.sweep_interval_ms % 1000) * 1000};

	if (!s)
		return -1;
	k->sessions = s;
	s->sweep = event_new(k->base, -1, EV_PERSIST, sweep_cb, k);
	return s->sweep && event_add(s->sweep, &tv) == 0 ? 0 : -1;
}

void sessions_stop(struct kvcm *k)
{
	struct sessions *s = k->sessions;

	if (!s)
		return;
	while (s->ids.n) {
		struct wsession *w = s->heap[s->ids.n - 1];

		unlink_session(s, w);
		instance_release(k, w->inst);
		free(w);
	}
	if (s->sweep)
		event_free(s->sweep);
	chain_free(&s->ids);
	free(s->heap);
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
