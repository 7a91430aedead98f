#include "gva_tracker.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hash.h"

struct gva_tracker *gva_tracker_new(void)
{
	struct gva_tracker *t = calloc(1, sizeof(*t));
	pthread_rwlockattr_t a;

	if (!t)
		return NULL;
	pthread_rwlock_init(&t->lock, NULL);
	/* a remove waits for the adds in flight; adds asked after it wait for it, not it for every later add */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->leases, &a);
	pthread_rwlockattr_destroy(&a);
	return t;
}

void gva_tracker_free(struct gva_tracker *t)
{
	if (!t)
		return;
	pthread_rwlock_destroy(&t->lock);
	pthread_rwlock_destroy(&t->leases);
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

/* Keeps the entries for which keep(t->v[r], arg) holds, in order. */
static void keep_only(struct gva_tracker *t, bool (*keep)(const struct gva_entry *e, const void *arg), const void *arg)
{
	size_t w = 0;

	for (size_t r = 0; r < t->n; r++)
		if (keep(&t->v[r], arg))
			t->v[w++] = t->v[r];
	t->n = w;
}

/* A read grant that ran out answers only for the copy's error code (MMC_LEASE_EXPIRED, not "not a range of this
 * store"): it stays that long, then goes, or a reader that lets its leases run out instead of releasing them would
 * grow the table for good. */
#define READ_GRANT_GRACE_MS 60000u

/* arg: now, by clock_ms(). */
static bool not_gone(const struct gva_entry *e, const void *arg)
{
	return !(e->kind == GVA_READ && (e->retired || e->expiry_ms + READ_GRANT_GRACE_MS <= *(const uint64_t *)arg));
}

/* A retired read grant is of no use to anyone and goes, as does one that ran out by now_ms; a write grant stays for
 * its thread's finish. Sorted entries; one pass: of the live entries of a kind only the last can overlap the next
 * (the others end before the last starts, so before the next does). */
static void retire_overlapped(struct gva_tracker *t, uint64_t now_ms)
{
	struct gva_entry *last[GVA_READ + 1] = {NULL};

	for (size_t r = 0; r < t->n; r++) {
		struct gva_entry *e = &t->v[r], **l = &last[e->kind];

		if (e->retired)
			continue;
		if (*l && (*l)->end > e->start) {
			if ((*l)->seq > e->seq) {
				e->retired = true;
				continue;
			}
			(*l)->retired = true;
		}
		*l = e;
	}
	keep_only(t, not_gone, &now_ms);
}

int gva_tracker_add(struct gva_tracker *t, const struct gva_entry *v, size_t n, uint64_t now_ms)
{
	struct gva_entry *grown = n ? array_grow(t->v, &t->cap, t->n + n, sizeof(*grown), 64) : t->v;

	if (n && !grown)
		return MMC_MALLOC_FAILED;
	t->v = grown;
	for (size_t i = 0; i < n; i++) {
		struct gva_entry *e = &t->v[t->n++];

		*e = v[i];
		e->seq = ++t->seq;
		e->hash = hash_bytes(e->key, strlen(e->key));
	}
	/* an empty table has no array to hand qsort (NULL is undefined there even for no elements) */
	if (t->n > 1) {
		qsort(t->v, t->n, sizeof(*t->v), cmp_start);
		retire_overlapped(t, now_ms);
	}
	return 0;
}

const struct gva_entry *gva_tracker_find(const struct gva_tracker *t, uint64_t gva, uint64_t len, enum gva_kind kind)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) { /* first entry with start > gva */
		size_t mid = (lo + hi) / 2;

		if (t->v[mid].start <= gva)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0; i--) { /* the last live one of the kind, the only one that can hold gva */
		const struct gva_entry *e = &t->v[i - 1];

		if (e->kind != kind || e->retired)
			continue;
		return gva + len <= e->end && gva + len >= gva ? e : NULL;
	}
	return NULL;
}

/* ---- a call's keys ---- */

struct gva_key_slot {
	struct hmap_node node;
	uint64_t hash;
	size_t place; /* the last place of this key in the call */
};

static uint64_t slot_hash(const struct hmap_node *n)
{
	return hmap_entry(n, struct gva_key_slot, node)->hash;
}

/* The last place of the key hashed h, or SIZE_MAX. */
static size_t lookup(const struct gva_keys *k, const char *key, uint64_t h)
{
	hmap_foreach_hash(&k->map, h, n)
	{
		const struct gva_key_slot *s = hmap_entry(n, struct gva_key_slot, node);
		size_t i = (size_t)(s - k->slot);

		if (s->hash == h && strcmp(k->keys[i], key) == 0)
			return i; /* the newest inserted first: the last place */
	}
	return SIZE_MAX;
}

int gva_keys_init(struct gva_keys *k, const char *const *keys, size_t n)
{
	hmap_init(&k->map, slot_hash, 2 * n);
	k->keys = keys;
	k->n = n;
	if (!(k->slot = malloc(n * sizeof(*k->slot))))
		return MMC_MALLOC_FAILED;
	for (size_t i = 0; i < n; i++) {
		k->slot[i].hash = hash_bytes(keys[i], strlen(keys[i]));
		if (hmap_insert(&k->map, &k->slot[i].node, k->slot[i].hash)) {
			gva_keys_fini(k);
			return MMC_MALLOC_FAILED;
		}
	}
	for (size_t i = 0; i < n; i++)
		k->slot[i].place = lookup(k, keys[i], k->slot[i].hash);
	return 0;
}

void gva_keys_fini(struct gva_keys *k)
{
	hmap_free(&k->map);
	free(k->slot);
	k->slot = NULL;
}

size_t gva_keys_place(const struct gva_keys *k, size_t i)
{
	return k->slot[i].place;
}

/* ---- passes over the grants of a call's keys ---- */

/* The later of two entry indexes + 1 (0 = none) by seq. */
static uint64_t later(const struct gva_tracker *t, uint64_t cur, size_t r)
{
	return cur && t->v[cur - 1].seq > t->v[r].seq ? cur : r + 1;
}

void gva_tracker_finish_grants(const struct gva_tracker *t, const struct gva_keys *k, pthread_t self, uint64_t *tokens,
                               uint64_t *seqs, uint64_t *losses)
{
	uint64_t *own = seqs, *live = tokens; /* at each key's place, an entry index + 1, until the last loop */

	memset(own, 0, k->n * sizeof(*own));
	memset(live, 0, k->n * sizeof(*live));
	for (size_t r = 0; r < t->n; r++) {
		const struct gva_entry *e = &t->v[r];
		size_t i = e->kind == GVA_WRITE ? lookup(k, e->key, e->hash) : SIZE_MAX;

		if (i == SIZE_MAX)
			continue;
		if (pthread_equal(e->thread, self))
			own[i] = later(t, own[i], r);
		if (!e->retired)
			live[i] = later(t, live[i], r);
	}
	/* a place is its key's last, so going down fills it before the earlier places of the key copy it */
	for (size_t i = k->n; i-- > 0;) {
		size_t p = k->slot[i].place;
		uint64_t c = own[p] ? own[p] : live[p];

		if (p != i) {
			tokens[i] = tokens[p];
			seqs[i] = seqs[p];
			losses[i] = losses[p];
		} else if (c) {
			tokens[i] = t->v[c - 1].token;
			seqs[i] = t->v[c - 1].seq;
			losses[i] = t->v[c - 1].losses;
		} else {
			tokens[i] = seqs[i] = 0;
		}
	}
}

struct finished {
	const struct gva_keys *k;
	const uint64_t *seqs;
	pthread_t self;
};

static bool not_finished(const struct gva_entry *e, const void *arg)
{
	const struct finished *f = arg;
	size_t i = e->kind == GVA_WRITE ? lookup(f->k, e->key, e->hash) : SIZE_MAX;

	return i == SIZE_MAX || !(e->seq == f->seqs[i] || pthread_equal(e->thread, f->self));
}

void gva_tracker_drop_finished(struct gva_tracker *t, const struct gva_keys *k, const uint64_t *seqs, pthread_t self)
{
	struct finished f = {k, seqs, self};

	keep_only(t, not_finished, &f);
}

struct reads {
	const struct gva_keys *k;
	const int *results;
	uint64_t now_ms;
	bool *held;
};

static bool not_released(const struct gva_entry *e, const void *arg)
{
	const struct reads *d = arg;
	size_t i = e->kind == GVA_READ ? lookup(d->k, e->key, e->hash) : SIZE_MAX;

	if (i == SIZE_MAX || (d->results && d->results[i] != 0))
		return true;
	if (d->held && e->expiry_ms > d->now_ms)
		d->held[i] = true;
	return false;
}

void gva_tracker_drop_reads(struct gva_tracker *t, const struct gva_keys *k, const int *results, uint64_t now_ms,
                            bool *held)
{
	struct reads d = {k, results, now_ms, held};

	if (held)
		memset(held, 0, k->n * sizeof(*held));
	keep_only(t, not_released, &d);
}
