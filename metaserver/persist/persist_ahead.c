/*
 * persist_scan_ahead: a load's scan on a thread of its own, a buffer ahead of the loop thread that consumes it. At
 * 10^7 records the store's own walk (LMDB's cursor, or Redis's HSCAN replies) and the key hashes took a third of
 * the loop's load time; now the two threads share the work. Records are copied into two buffers that the threads
 * trade: the reader fills one while the loop empties the other.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"
#include "persist_backend.h"
#include "quiet_thread.h"

#define BUF_BYTES (1u << 20)

/* In a buffer, per record: this header, the key, the value, padding to 8 bytes. */
struct rec_head {
	uint64_t prep;
	uint32_t klen, vlen;
};

struct buf {
	unsigned char *data;
	size_t len, cap;
	bool full; /* the loop's turn */
	bool last; /* nothing after it */
};

struct ahead {
	struct persist_backend *be;
	uint32_t table;
	persist_prep_fn prep;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct buf buf[2];
	int filling; /* the reader's buffer */
	bool stop;   /* under mu: the loop wants no more (fn failed) */
	int rc;      /* the reader's scan result, once the last buffer is full */
};

static size_t rec_bytes(size_t klen, size_t vlen)
{
	return (sizeof(struct rec_head) + klen + vlen + 7) & ~(size_t)7;
}

/* The reader hands its buffer over and waits for the other one to be empty. false: the loop stopped. */
static bool hand_over(struct ahead *a, bool last)
{
	bool go;

	pthread_mutex_lock(&a->mu);
	a->buf[a->filling].full = true;
	a->buf[a->filling].last = last;
	pthread_cond_broadcast(&a->cv);
	a->filling ^= 1;
	while (a->buf[a->filling].full && !a->stop)
		pthread_cond_wait(&a->cv, &a->mu);
	go = !a->stop;
	pthread_mutex_unlock(&a->mu);
	a->buf[a->filling].len = 0;
	return go;
}

static int collect(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct ahead *a = arg;
	struct buf *b = &a->buf[a->filling];
	size_t need = rec_bytes(klen, vlen);
	struct rec_head h = {a->prep(key, klen, val, vlen), (uint32_t)klen, (uint32_t)vlen};

	if (b->len + need > b->cap) {
		if (b->len && !hand_over(a, false))
			return MMC_ERROR;
		b = &a->buf[a->filling];
		if (need > b->cap) { /* a record larger than a buffer: grow this one */
			unsigned char *d = realloc(b->data, need);

			if (!d)
				return MMC_MALLOC_FAILED;
			b->data = d;
			b->cap = need;
		}
	}
	memcpy(b->data + b->len, &h, sizeof(h));
	memcpy(b->data + b->len + sizeof(h), key, klen);
	memcpy(b->data + b->len + sizeof(h) + klen, val, vlen);
	b->len += need;
	return 0;
}

static void *reader_main(void *arg)
{
	struct ahead *a = arg;
	const struct persist_backend_ops *ops = a->be->ops;
	int rc = (ops->scan_any ? ops->scan_any : ops->scan)(a->be, a->table, collect, a);

	pthread_mutex_lock(&a->mu);
	a->rc = rc;
	pthread_mutex_unlock(&a->mu);
	hand_over(a, true);
	return NULL;
}

/* The loop's side: each full buffer's records through fn, until the last. */
static int consume(struct ahead *a, persist_ahead_fn fn, void *arg)
{
	int rc = 0;

	for (int turn = 0;; turn ^= 1) {
		struct buf *b = &a->buf[turn];
		bool last;

		pthread_mutex_lock(&a->mu);
		while (!b->full)
			pthread_cond_wait(&a->cv, &a->mu);
		last = b->last;
		pthread_mutex_unlock(&a->mu);
		for (size_t off = 0; off < b->len && rc == 0;) {
			struct rec_head h;

			memcpy(&h, b->data + off, sizeof(h));
			rc = fn(arg, b->data + off + sizeof(h), h.klen, b->data + off + sizeof(h) + h.klen, h.vlen,
			        h.prep);
			off += rec_bytes(h.klen, h.vlen);
		}
		pthread_mutex_lock(&a->mu);
		b->full = false;
		a->stop |= rc != 0;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		if (last || rc)
			return rc;
	}
}

/* Without a reader thread: the same records through fn, each buffer consumed as soon as it is full. */
struct inline_scan {
	struct ahead *a;
	persist_ahead_fn fn;
	void *arg;
};

static int inline_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct inline_scan *s = arg;

	return s->fn(s->arg, key, klen, val, vlen, s->a->prep(key, klen, val, vlen));
}

static int inline_scan(struct ahead *a, persist_ahead_fn fn, void *arg)
{
	struct inline_scan s = {a, fn, arg};
	const struct persist_backend_ops *ops = a->be->ops;

	return (ops->scan_any ? ops->scan_any : ops->scan)(a->be, a->table, inline_one, &s);
}

int persist_scan_ahead_be(struct persist_backend *be, uint32_t table, persist_prep_fn prep, persist_ahead_fn fn,
                          void *arg)
{
	struct ahead a = {.be = be, .table = table, .prep = prep};
	pthread_t reader;
	int rc;

	for (int i = 0; i < 2; i++)
		if (!(a.buf[i].data = malloc(BUF_BYTES)))
			goto oom;
	a.buf[0].cap = a.buf[1].cap = BUF_BYTES;
	pthread_mutex_init(&a.mu, NULL);
	pthread_cond_init(&a.cv, NULL);
	rc = quiet_thread_create(&reader, reader_main, &a);
	if (rc == 0) {
		rc = consume(&a, fn, arg);
		pthread_join(reader, NULL);
		rc = rc ? rc : a.rc;
	} else { /* no thread: the reader's work on this one, a buffer at a time */
		a.filling = 0;
		a.buf[0].len = 0;
		rc = inline_scan(&a, fn, arg);
	}
	pthread_cond_destroy(&a.cv);
	pthread_mutex_destroy(&a.mu);
	free(a.buf[0].data);
	free(a.buf[1].data);
	return rc;
oom:
	free(a.buf[0].data);
	return MMC_MALLOC_FAILED;
}
