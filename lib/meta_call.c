#include "meta_conn_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "clock.h"
#include "lg.h"
#include "mmc/mmc.h"

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	wbuf_free(p);
	free(p);
}

static void tls_init(void)
{
	pthread_key_create(&tls_key, tls_free);
}

/* Each calling thread encodes into its own buffer, kept between calls. */
static struct wbuf *tls_wbuf(void)
{
	struct wbuf *b;

	pthread_once(&tls_once, tls_init);
	b = pthread_getspecific(tls_key);
	if (!b && (b = calloc(1, sizeof(*b))))
		pthread_setspecific(tls_key, b);
	return b;
}

/* ---- the pending calls, by id (lock held) ---- */

/* Ids are this connection's own counter, not a client's choice: the id is its own hash. */
uint64_t mc_pending_hash(const struct hmap_node *n)
{
	return hmap_entry(n, struct mcall, link)->id;
}

static int pending_add(struct meta_conn *mc, struct mcall *c)
{
	return hmap_insert(&mc->pending, &c->link, c->id);
}

struct mcall *mc_pending_take(struct meta_conn *mc, uint64_t id)
{
	hmap_foreach_hash(&mc->pending, id, n)
	{
		struct mcall *c = hmap_entry(n, struct mcall, link);

		if (c->id == id) {
			hmap_remove(&mc->pending, n, id);
			return c;
		}
	}
	return NULL;
}

void mc_fail_all(struct meta_conn *mc, int status)
{
	hmap_foreach(&mc->pending, n)
	{
		struct mcall *c = hmap_entry(n, struct mcall, link);

		hmap_remove(&mc->pending, n, c->id);
		c->status = status;
		c->done = true;
		pthread_cond_signal(&c->cond);
	}
}

/* ---- sending ---- */

/* flags: for send(2) (MSG_MORE); TLS ignores them. */
static int write_full(int fd, struct meta_tls *t, const void *buf, size_t len, int flags)
{
	const char *p = buf;

	if (t)
		return meta_tls_write(t, buf, len);
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | flags);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR) {
			return MMC_ERROR;
		}
	}
	return 0;
}

static struct link link_of(struct meta_conn *mc)
{
	return (struct link){mc->fd, mc->tls, atomic_load(&mc->gen)};
}

static int send_frame(struct meta_conn *mc, struct link l, const struct wbuf *b, int flags)
{
	int rc = -1;

	pthread_mutex_lock(&mc->send_lock);
	if (atomic_load(&mc->gen) == l.gen) {
		rc = write_full(l.fd, l.tls, b->data + b->start, b->len - b->start, flags);
		if (rc)
			shutdown(l.fd, SHUT_RDWR); /* the reader sees it and fails everything pending */
	}
	pthread_mutex_unlock(&mc->send_lock);
	return rc ? MMC_NOT_CONNECTED_META : 0;
}

/* ---- calls ---- */

static int wait_ready(struct meta_conn *mc, const struct mcall *c)
{
	struct timespec dl;
	uint64_t now, end;

	/* a handshake call goes out before the connection is ready, but not once its reader has exited: nothing would
	 * read its reply or fail it, and it would wait out timeout_ms */
	if (c->bypass)
		return mc->stop || mc->state == MC_DOWN ? MMC_NOT_CONNECTED_META : 0;
	if (mc->state == MC_READY)
		return mc->stop ? MMC_NOT_CONNECTED_META : 0;
	if (!mc->conf->c.retry_ms || mc->stop || mc->closing)
		return MMC_NOT_CONNECTED_META;
	now = clock_ms();
	end = c->deadline_ms ? c->deadline_ms : now + mc->conf->c.retry_ms;
	if (end <= now)
		return MMC_NOT_CONNECTED_META;
	dl = clock_deadline(end - now);
	while (mc->state != MC_READY && !mc->stop && !mc->closing)
		if (pthread_cond_timedwait(&mc->state_cond, &mc->lock, &dl) == ETIMEDOUT)
			break;
	return mc->state == MC_READY && !mc->stop ? 0 : MMC_NOT_CONNECTED_META;
}

/* How long the caller waits for its reply: timeout_ms, or less when its own deadline comes sooner. */
static uint64_t reply_wait_ms(const struct meta_conn *mc, const struct mcall *c)
{
	uint64_t now = clock_ms(), wait = mc->conf->c.timeout_ms;

	if (c->reply_by_ms)
		wait = c->reply_by_ms <= now ? 0 : c->reply_by_ms - now < wait ? c->reply_by_ms - now : wait;
	return wait;
}

int meta_call(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg, struct mcall *c)
{
	struct wbuf *b = tls_wbuf();
	struct timespec dl;
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	/* the body is encoded before the lock (a batch of 10^3 keys takes a while), numbered under it */
	if ((rc = wire_encode_body(b, body, fields, msg)))
		return rc;
	clock_cond_init(&c->cond);
	c->done = false;
	c->status = 0;
	pthread_mutex_lock(&mc->lock);
	rc = wait_ready(mc, c);
	if (!rc && c->pinned && atomic_load(&mc->losses) != c->on_conn)
		rc = MMC_NOT_CONNECTED_META;
	if (rc)
		goto out_unlock;
	c->id = ++mc->next_id;
	c->sent_ns = clock_ns();
	c->losses = atomic_load(&mc->losses); /* stable under the lock while the connection is ready */
	wire_frame_head(b, c->id);
	rc = pending_add(mc, c);
	if (rc)
		goto out_unlock;
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);

	/* a failed send completes the call through the reader; a send to a dropped link, with a timeout */
	send_frame(mc, l, b, 0);

	pthread_mutex_lock(&mc->lock);
	dl = clock_deadline(reply_wait_ms(mc, c));
	while (!c->done) {
		bool late = mc_may_read(mc, l) ? mc_read_own(mc, c, l, &dl)
		                               : pthread_cond_timedwait(&c->cond, &mc->lock, &dl) == ETIMEDOUT;

		if (late && !c->done && mc_pending_take(mc, c->id)) {
			c->status = MMC_TIMEOUT;
			break;
		}
	}
	rc = c->status;
	if (rc == MMC_NOT_LEADER && !c->bypass) {
		/* the server stopped leading before it ran the call: drop it and follow the leader, and let the caller
		 * see a lost connection (it retries what is safe to repeat, within retry_ms) */
		if (mc->fd == l.fd && atomic_load(&mc->gen) == l.gen)
			shutdown(l.fd, SHUT_RDWR);
		rc = MMC_NOT_CONNECTED_META;
	}
out_unlock:
	pthread_mutex_unlock(&mc->lock);
	pthread_cond_destroy(&c->cond);
	return rc;
}

/* pinned: only on the connection whose meta_conn_losses() is on_conn (mcall.pinned) */
static int send_oneway(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg, int flags,
                       bool pinned, uint64_t on_conn)
{
	struct wbuf *b = tls_wbuf();
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_mutex_lock(&mc->lock);
	rc = mc->state == MC_READY && (!pinned || atomic_load(&mc->losses) == on_conn) ? 0 : MMC_NOT_CONNECTED_META;
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc || (rc = wire_encode(b, 0, body, fields, msg)))
		return rc;
	return send_frame(mc, l, b, flags);
}

int meta_send_on(struct meta_conn *mc, uint64_t conn, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	return send_oneway(mc, body, fields, msg, 0, true, conn);
}

int meta_send(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	return send_oneway(mc, body, fields, msg, 0, false, 0);
}

int meta_ping(struct meta_conn *mc)
{
	struct wbuf *b = tls_wbuf();
	mmc_Ping ping = mmc_Ping_init_zero;
	struct link l;
	uint64_t id;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_mutex_lock(&mc->lock);
	rc = mc->state == MC_READY ? 0 : MMC_NOT_CONNECTED_META;
	id = ++mc->next_id; /* answered, and the answer dropped: no call waits for this id */
	mc->ping_id = id;
	mc->ping_sent_ms = clock_ns() / 1000000u; /* the clock of a call's sent_ns */
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc || (rc = wire_encode(b, id, WB_PING, mmc_Ping_fields, &ping)))
		return rc;
	return send_frame(mc, l, b, 0);
}

int meta_send_deferred(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	return send_oneway(mc, body, fields, msg, MSG_MORE, false, 0);
}

void meta_conn_on_task(struct meta_conn *mc, meta_task_fn fn, void *owner)
{
	pthread_mutex_lock(&mc->lock);
	mc->task_owner = owner;
	mc->on_task = fn;
	pthread_mutex_unlock(&mc->lock);
}

int meta_reply(struct meta_conn *mc, uint64_t conn, uint64_t id, int result)
{
	struct wbuf *b = tls_wbuf();
	mmc_Reply r = {.result = result};
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_mutex_lock(&mc->lock);
	/* losses moves under the lock, as the connection goes down: a connection still handshaking has its own count */
	rc = (mc->state == MC_READY || mc->state == MC_CONNECTING) && atomic_load(&mc->losses) == conn
	         ? 0
	         : MMC_NOT_CONNECTED_META;
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc || (rc = wire_encode(b, id, WB_REPLY, mmc_Reply_fields, &r)))
		return rc;
	return send_frame(mc, l, b, 0);
}

int meta_decode_reply(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	mmc_Reply r = mmc_Reply_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);

	if (body != WB_REPLY || !pb_decode(&s, mmc_Reply_fields, &r))
		return MMC_INTERNAL_ERROR;
	return r.result;
}
