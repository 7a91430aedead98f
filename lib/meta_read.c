#include "meta_conn_int.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "lg.h"
#include "mmc/mmc.h"

#define READ_CHUNK 65536u

/* ---- frames in ---- */

/* An answer to a frame sent at sent_ms: the server heard this store then (meta_conn_held_until). Lock held. */
static void heard_at(struct meta_conn *mc, uint64_t sent_ms)
{
	if (sent_ms > atomic_load_explicit(&mc->answered_sent_ms, memory_order_relaxed))
		atomic_store_explicit(&mc->answered_sent_ms, sent_ms, memory_order_relaxed);
}

static void dispatch(struct meta_conn *mc, const uint8_t *frame, size_t len)
{
	uint64_t id;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	struct mcall *c;
	int status;

	if (wire_split(frame, len, &id, &body, &data, &dlen) || !id)
		return;
	if (body == WB_TASK) { /* a request from the server, not a reply */
		meta_task_fn fn;
		void *owner;
		uint64_t conn;

		pthread_mutex_lock(&mc->lock);
		fn = mc->authed ? mc->on_task : NULL; /* a peer that has not said its hello sends no work */
		owner = mc->task_owner;
		conn = atomic_load(&mc->losses); /* moves only once this connection's reading has ended */
		pthread_mutex_unlock(&mc->lock);
		if (fn)
			fn(owner, conn, id, data, dlen);
		return;
	}
	pthread_mutex_lock(&mc->lock);
	c = mc_pending_take(mc, id);
	mc->rd_active_ms = clock_ms(); /* a reader thread that read this reply parks now, not after one more */
	if (c)
		mc->last_rtt_ns = clock_ns() - c->sent_ns;
	heard_at(mc, c ? c->sent_ns / 1000000u : id == mc->ping_id ? mc->ping_sent_ms : 0);
	pthread_mutex_unlock(&mc->lock);
	if (!c)
		return; /* the caller timed out */
	status = c->decode ? c->decode(c, body, data, dlen) : 0;
	pthread_mutex_lock(&mc->lock);
	c->status = status;
	c->done = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&mc->lock);
}

/* Grows the read buffer to hold at least n bytes. */
static int rd_reserve(struct wbuf *b, size_t n)
{
	uint8_t *d;

	if (n <= b->cap)
		return 0;
	n = n < 2 * b->cap ? 2 * b->cap : n;
	if (!(d = realloc(b->data, n)))
		return MMC_ERROR;
	b->data = d;
	b->cap = n;
	return 0;
}

/* Dispatches every whole frame in the read buffer and keeps the rest. Returns 0, or -1 for a bad frame. */
static int rd_dispatch(struct meta_conn *mc)
{
	struct wbuf *b = &mc->rd;
	size_t off = 0;
	int rc = 0;

	while (b->len - off >= 4) {
		const uint8_t *h = b->data + off;
		uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;

		if (len == 0 || len > MMC_FRAME_MAX) {
			lg_error("meta connection: bad frame length %u", len);
			rc = -1;
			break;
		}
		if (b->len - off - 4 < len) {
			rc = rd_reserve(b, 4 + (size_t)len);
			break;
		}
		dispatch(mc, h + 4, len);
		off += 4 + (size_t)len;
	}
	memmove(b->data, b->data + off, b->len - off);
	b->len -= off;
	return rc;
}

/* Reads what the connection has (blocking until something comes) and dispatches the whole frames. Only the owner of
 * the read side calls it. Returns 0, or -1: the connection is gone or sent a bad frame. */
static int read_frames(struct meta_conn *mc, int fd, struct meta_tls *tls)
{
	struct wbuf *b = &mc->rd;
	ssize_t n;

	if (rd_reserve(b, b->len + READ_CHUNK))
		return MMC_ERROR;
	n = tls ? meta_tls_read(tls, b->data + b->len, b->cap - b->len) : read(fd, b->data + b->len, b->cap - b->len);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0)
		return MMC_ERROR;
	b->len += (size_t)n;
	atomic_store(&mc->heard_ms, clock_ms());
	return rd_dispatch(mc);
}

/* Plain TCP: waits up to ms (-1: without end) for the socket, then read_frames. Returns 1 (read), 0 (nothing yet)
 * or -1. */
static int read_some(struct meta_conn *mc, int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r = poll(&pfd, 1, ms);

	if (r <= 0)
		return r < 0 && errno != EINTR ? -1 : 0;
	return read_frames(mc, fd, NULL) ? -1 : 1;
}

/* The reader thread keeps off while a caller reads, and while calls have just been flowing (the next caller reads
 * its own reply); it reads when nobody waits (tasks, a closed connection) or a waiting caller cannot. Lock held. */
static bool reader_parks(const struct meta_conn *mc)
{
	if (mc->rd_owner == RD_CALLER)
		return true;
	return mc->pending.n == 0 && clock_ms() < mc->rd_active_ms + READ_PARK_MS;
}

/* Plain TCP: reads only while no caller does. Returns when the connection is gone or must end. */
static void read_plain(struct meta_conn *mc, int fd)
{
	for (;;) {
		int rc;

		pthread_mutex_lock(&mc->lock);
		while (!mc->rd_failed && !atomic_load(&mc->stop) && reader_parks(mc)) {
			struct timespec dl = clock_deadline(READ_PARK_MS);

			pthread_cond_timedwait(&mc->rd_cond, &mc->lock, &dl);
		}
		if (mc->rd_failed || atomic_load(&mc->stop)) {
			pthread_mutex_unlock(&mc->lock);
			return;
		}
		mc->rd_owner = RD_THREAD;
		pthread_mutex_unlock(&mc->lock);
		rc = read_some(mc, fd, -1);
		pthread_mutex_lock(&mc->lock);
		mc->rd_owner = RD_NONE;
		pthread_mutex_unlock(&mc->lock);
		if (rc < 0)
			return;
	}
}

void *mc_reader_main(void *arg)
{
	struct meta_conn *mc = arg;
	bool was_ready;
	int fd;

	pthread_mutex_lock(&mc->lock);
	fd = mc->fd;
	pthread_mutex_unlock(&mc->lock);
	if (mc->tls) /* under TLS the reader thread reads everything, blocking */
		while (read_frames(mc, fd, mc->tls) == 0)
			;
	else
		read_plain(mc, fd);
	pthread_mutex_lock(&mc->lock);
	was_ready = mc->state == MC_READY; /* not a handshake that failed (a standby's answer, say) */
	mc->state = MC_DOWN;
	atomic_fetch_add(&mc->losses, 1); /* before the callers learn of it: their transfers check it next */
	mc_fail_all(mc, MMC_NOT_CONNECTED_META);
	pthread_cond_broadcast(&mc->state_cond);
	pthread_mutex_unlock(&mc->lock);
	if (!atomic_load(&mc->stop) && was_ready)
		lg_warn("lost the meta server connection; reconnecting");
	return NULL;
}

void mc_reader_end(struct meta_conn *mc)
{
	mc->rd_failed = true;
	pthread_cond_broadcast(&mc->rd_cond);
}

/* ---- a caller reads its own reply ---- */

/* Milliseconds (rounded up) until a clock_deadline() deadline; 0 or less once it has passed. */
static int64_t ms_until(const struct timespec *dl)
{
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (int64_t)(dl->tv_sec - now.tv_sec) * 1000000000 + (dl->tv_nsec - now.tv_nsec);
	return ns <= 0 ? 0 : (ns + 999999) / 1000000;
}

bool mc_may_read(const struct meta_conn *mc, struct link l)
{
	return !l.tls && mc->rd_owner == RD_NONE && !mc->rd_failed && mc->state != MC_DOWN && mc->fd == l.fd &&
	       atomic_load(&mc->gen) == l.gen;
}

/*
 * A reply that arrives while its caller is asleep in poll() costs the sender a wake-up of it: a third of the meta
 * server loop's CPU per small call (measured: the reply's writev waking the client, docs/performance.md), and the
 * caller the wake-up's latency, tens of microseconds in a VM. So a caller alone on the connection first polls
 * without sleeping, for twice the last round trip and at most SPIN_NS, yielding its core at each try, then sleeps as
 * before. With other calls in flight it sleeps at once: their replies keep the socket busy, and one more thread
 * polling would only take CPU from them. After a reply slower than SPIN_NS (a large batch, a commit with fsync) a
 * caller polls again only once SPIN_PROBE_NS have passed: a round trip slowed by the wake-ups themselves is found
 * out, and long calls cost SPIN_NS of polling per SPIN_PROBE_NS at most.
 */
#define SPIN_NS       200000u
#define SPIN_PROBE_NS 100000000u

static int spin_for_reply(struct meta_conn *mc, struct mcall *c, int fd)
{
	uint64_t t0 = clock_ns(), budget = 2 * mc->last_rtt_ns < SPIN_NS ? 2 * mc->last_rtt_ns : SPIN_NS;
	int rc = 0;

	if (c->done || mc->pending.n > 1 || !budget)
		return 0;
	if (mc->last_rtt_ns > SPIN_NS) {
		if (t0 - mc->spin_probe_ns < SPIN_PROBE_NS)
			return 0;
		mc->spin_probe_ns = t0;
	}
	pthread_mutex_unlock(&mc->lock);
	/* until something is read (its reply, or another call's: the caller's loop sorts that out) */
	while (rc == 0 && clock_ns() - t0 < budget)
		if ((rc = read_some(mc, fd, 0)) == 0)
			sched_yield();
	pthread_mutex_lock(&mc->lock);
	return rc < 0 ? rc : 0;
}

bool mc_read_own(struct meta_conn *mc, struct mcall *c, struct link l, const struct timespec *dl)
{
	bool late = false;
	int rc = 0;

	mc->rd_owner = RD_CALLER;
	rc = spin_for_reply(mc, c, l.fd);
	while (!c->done && rc >= 0 && !late) {
		int64_t ms = ms_until(dl);

		late = ms <= 0;
		if (late)
			break;
		pthread_mutex_unlock(&mc->lock);
		rc = read_some(mc, l.fd, ms > INT32_MAX ? INT32_MAX : (int)ms);
		pthread_mutex_lock(&mc->lock);
	}
	mc->rd_owner = RD_NONE;
	if (rc < 0) {
		shutdown(l.fd, SHUT_RDWR); /* a bad frame: the server must see the end too */
		mc_reader_end(mc);         /* which fails every call still waiting, this one included */
	} else if (mc->pending.n) {
		pthread_cond_broadcast(&mc->rd_cond); /* the reader thread reads for the callers still waiting */
	}
	return late;
}
