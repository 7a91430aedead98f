#include "conn.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "alloc_queue.h"
#include "auth.h"
#include "clock.h"
#include "key_codec.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "persist.h"
#include "quarantine.h"
#include "rpc.h"
#include "services.h"
#include "tier.h"
#include "tls.h"

enum {
	RCVLOWAT_MAX = 1 << 19,  /* the largest SO_RCVLOWAT set (the kernel grows the receive buffer to twice it) */
	READ_REST_MAX = 1 << 20, /* the most read_rest reads at once (what it reserves in the input before reading) */
	/* replies a client has not taken yet, held for their commits included: past it its requests wait unread until
	 * it has taken half (a client that pipelines requests and reads nothing grew the server by 2.5x what it sent)
	 */
	UNREAD_MAX = 4 << 20,
};

static int ratelimit_bucket, unadmitted_bucket;

/* Gives back c's share of the input budget. */
static void input_release(struct conn *c)
{
	c->m->rpc->input_reserved -= c->input_reserved;
	c->input_reserved = 0;
}

/*
 * Reserves bytes (a whole frame, announced by its length) of the input budget for c before buffering it, so that
 * all connections together never hold more partial input than ock.mmc.meta.max_buffered_input.
 */
static bool input_reserve(struct conn *c, uint64_t bytes)
{
	static int bucket;
	struct meta *m = c->m;
	uint64_t others = m->rpc->input_reserved - c->input_reserved;

	if (others + bytes > m->conf.max_buffered_input) {
		log_ratelimited(&bucket, LOG_WARN,
		                "op=read session=%llu peer=%s err=input_budget_exceeded frame_bytes=%llu buffered=%llu "
		                "budget=%llu key=ock.mmc.meta.max_buffered_input",
		                (unsigned long long)c->session.id, c->peer, (unsigned long long)bytes,
		                (unsigned long long)others, (unsigned long long)m->conf.max_buffered_input);
		return false;
	}
	m->rpc->input_reserved = others + bytes;
	c->input_reserved = bytes;
	return true;
}

void conn_admitted(struct conn *c)
{
	if (c->hello_link.next) {
		list_del(&c->hello_link);
		c->hello_link.next = c->hello_link.prev = NULL;
	}
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void free_conn(struct conn *c)
{
	for (int i = 0; i < 2; i++)
		if (c->held[i])
			evbuffer_free(c->held[i]);
	if (c->turn_out)
		evbuffer_free(c->turn_out);
	free(c);
}

/* Appends f with its length prefix. Returns 0, or -1 when out of memory. */
static int send_frame(struct evbuffer *out, const Mmc__Frame *f)
{
	size_t n = mmc__frame__get_packed_size(f);
	unsigned char hdr[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
	                        (unsigned char)(n >> 24)};
	struct evbuffer_iovec v;

	if (evbuffer_add(out, hdr, 4) || evbuffer_reserve_space(out, (ev_ssize_t)n, &v, 1) != 1)
		return MMC_ERROR;
	mmc__frame__pack(f, v.iov_base);
	v.iov_len = n;
	evbuffer_commit_space(out, &v, 1);
	return 0;
}

/* Fills e as the failure of held reply f with MMC_META_BACKUP_ERROR, in f's own shape (a Register's ServiceInfo too:
 * a store that registers while Redis is down learns why at once, not after its heartbeat timeout). false: f's
 * shape carries no result. e points into *b. */
struct failure_body {
	Mmc__Reply r;
	Mmc__KeyBatchReply k;
	Mmc__ServiceInfo si;
	Mmc__ExtentGrant g;
};

static bool failure_of(const Mmc__Frame *f, Mmc__Frame *e, struct failure_body *b)
{
	e->body_case = f->body_case;
	switch (f->body_case) {
	case MMC__FRAME__BODY_REPLY:
		mmc__reply__init(&b->r);
		b->r.result = MMC_META_BACKUP_ERROR;
		e->reply = &b->r;
		return true;
	case MMC__FRAME__BODY_KEY_REPLY:
		mmc__key_batch_reply__init(&b->k);
		b->k.result = MMC_META_BACKUP_ERROR;
		e->key_reply = &b->k;
		return true;
	case MMC__FRAME__BODY_SERVICE_INFO:
		mmc__service_info__init(&b->si);
		b->si.result = MMC_META_BACKUP_ERROR;
		e->service_info = &b->si;
		return true;
	case MMC__FRAME__BODY_EXTENT_GRANT:
		mmc__extent_grant__init(&b->g);
		b->g.result = MMC_META_BACKUP_ERROR;
		e->extent_grant = &b->g;
		return true;
	default:
		return false;
	}
}

/* Rewrites each held reply as its call's failure with MMC_META_BACKUP_ERROR: the change it acknowledged is in
 * memory but not on disk, and a success would promise what a restart would take back. */
static void fail_slot(struct conn *c, int i)
{
	static int bucket;
	struct evbuffer *in = c->held[i], *out = bufferevent_get_output(c->bev);
	unsigned char hdr[4];
	unsigned dropped = 0;

	while (evbuffer_copyout(in, hdr, 4) == 4) {
		uint32_t len = get_le32(hdr);
		unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)len + 4);
		Mmc__Frame *f = p ? mmc__frame__unpack(NULL, len, p + 4) : NULL;
		Mmc__Frame e = MMC__FRAME__INIT;
		struct failure_body body;

		e.id = f ? f->id : 0;
		if (f && failure_of(f, &e, &body))
			dropped += send_frame(out, &e) != 0;
		else
			dropped++; /* no error shape: that call times out at the client */
		if (f)
			mmc__frame__free_unpacked(f, NULL);
		evbuffer_drain(in, (size_t)len + 4);
	}
	evbuffer_drain(in, evbuffer_get_length(in));
	log_ratelimited(&bucket, LOG_ERROR, "op=reply_failed peer=%s reason=commit_failed code=%d dropped=%u", c->peer,
	                MMC_META_BACKUP_ERROR, dropped);
}

static size_t unread(const struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev)) +
	       (c->turn_out ? evbuffer_get_length(c->turn_out) : 0) + evbuffer_get_length(c->held[0]) +
	       evbuffer_get_length(c->held[1]);
}

static void read_cb(struct bufferevent *bev, void *arg);
static void event_cb(struct bufferevent *bev, short what, void *arg);

/* The client took its replies down to half of UNREAD_MAX: its requests are read again, those waiting first. */
static void taken_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (!c->throttled)
		return;
	c->last_seen_ms = clock_ms(); /* it takes replies: alive, though its requests wait unread */
	if (unread(c) > UNREAD_MAX / 2)
		return;
	c->throttled = false;
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	bufferevent_setcb(bev, read_cb, NULL, event_cb, c);
	bufferevent_enable(bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(bev)))
		bufferevent_trigger(bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* Stops reading c's requests while it leaves more than UNREAD_MAX of replies untaken; conns_sweep closes it if it
 * takes nothing for the heartbeat timeout. */
static void throttle(struct conn *c)
{
	if (c->throttled || c->closed || c->closing || unread(c) <= UNREAD_MAX)
		return;
	c->throttled = true;
	input_release(c); /* a frame it has begun reserves again when its requests are read again */
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_setwatermark(c->bev, EV_WRITE, UNREAD_MAX, 0); /* taken_cb at each write below it: progress */
	bufferevent_setcb(c->bev, read_cb, taken_cb, event_cb, c);
}

/* The replies of this read: to the socket at once when nothing is queued before them, the rest (what the socket did
 * not take) behind through the bufferevent. */
static void flush_turn(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	c->in_turn = false;
	if (!c->turn_out || !evbuffer_get_length(c->turn_out)) /* none over TLS: its bufferevent encrypts the replies */
		return;
	if (!evbuffer_get_length(out))
		evbuffer_write(c->turn_out, bufferevent_getfd(c->bev));
	if (evbuffer_get_length(c->turn_out))
		evbuffer_add_buffer(out, c->turn_out);
}

/* Sends a slot's replies once their batches are durable; if one of those commits failed, their calls fail. */
static void release_slot(struct conn *c, int i)
{
	if (persist_failed_seq(c->m->persist) > c->held_since[i])
		fail_slot(c, i);
	else if (c->turn_out) /* plain TCP: to the socket at once, as a read's replies go (flush_turn) */
		evbuffer_add_buffer(c->turn_out, c->held[i]);
	else
		bufferevent_write_buffer(c->bev, c->held[i]);
}

static void release_held(void *arg)
{
	struct conn *c = arg;
	uint64_t durable = persist_durable_seq(c->m->persist);
	bool more = false;

	c->commit_waits--;
	if (c->closed) {
		if (!c->commit_waits)
			free_conn(c);
		return;
	}
	for (int i = 0; i < 2; i++) {
		if (!c->held_seq[i])
			continue;
		if (c->held_seq[i] <= durable) {
			release_slot(c, i);
			c->held_seq[i] = 0;
		} else {
			more = true;
		}
	}
	if (!c->in_turn) { /* else the read that committed sends them with its own replies */
		flush_turn(c);
		taken_cb(c->bev, c);
	}
	/* a callback registered now fires after the newest batch, which covers every slot still held */
	if (more && !c->commit_waits && persist_after_commit(c->m->persist, release_held, c) == 0)
		c->commit_waits++;
}

/* The held buffer for replies that wait for batch seq, or NULL (out of memory). */
static struct evbuffer *held_for(struct conn *c, uint64_t seq)
{
	int slot = c->held_seq[0] == seq   ? 0
	           : c->held_seq[1] == seq ? 1
	           : !c->held_seq[0]       ? 0
	           : !c->held_seq[1]       ? 1
	                                   : -1;

	if (slot < 0) { /* not expected (two batches at most); waiting for the later one is still correct */
		slot = c->held_seq[0] > c->held_seq[1] ? 0 : 1;
		c->held_seq[slot] = seq;
		return c->held[slot];
	}
	if (c->held_seq[slot] == seq)
		return c->held[slot];
	if (persist_after_commit(c->m->persist, release_held, c))
		return NULL;
	c->commit_waits++;
	c->held_seq[slot] = seq;
	c->held_since[slot] = persist_durable_seq(c->m->persist);
	return c->held[slot];
}

/* Where a reply to c goes: held for the batch it acknowledges, else out now. NULL when c is closed. */
static struct evbuffer *out_for(struct conn *c, bool durable)
{
	uint64_t seq = durable ? persist_wait_seq(c->m->persist) : 0;
	struct evbuffer *out = NULL;

	if (c->closed)
		return NULL;
	if (seq && !(out = held_for(c, seq))) {
		/* the reply would acknowledge what is not durable yet: the client sees its connection lost instead */
		conn_close(c, "out_of_memory");
		return NULL;
	}
	if (!out)
		out = c->in_turn ? c->turn_out : bufferevent_get_output(c->bev);
	return out;
}

void conn_send(struct conn *c, const Mmc__Frame *f, bool durable)
{
	struct evbuffer *out = out_for(c, durable);

	if (out && send_frame(out, f))
		conn_close(c, "out_of_memory");
}

void conn_send_bytes(struct conn *c, const void *head, size_t hlen, const void *body, size_t blen, bool durable)
{
	struct evbuffer *out = out_for(c, durable);
	size_t n = hlen + blen;
	unsigned char len[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
	                        (unsigned char)(n >> 24)};

	if (out && (evbuffer_add(out, len, 4) || evbuffer_add(out, head, hlen) || evbuffer_add(out, body, blen)))
		conn_close(c, "out_of_memory");
}

void conn_close(struct conn *c, const char *why)
{
	struct meta *m = c->m;

	if (c->closed)
		return;
	auth_on_close(c, why);
	if (c->phase == CONN_READY)
		log_info("op=disconnect session=%llu peer=%s host=\"%s\" pid=%u reason=%s",
		         (unsigned long long)c->session.id, c->peer, c->session.host, c->session.pid, why);
	else /* peers that never got in cannot fill the log */
		log_ratelimited(&unadmitted_bucket, LOG_INFO,
		                "op=disconnect session=%llu peer=%s reason=%s admitted=false",
		                (unsigned long long)c->session.id, c->peer, why);
	conn_admitted(c);
	input_release(c);
	/* a standby has no state loaded (leader election): nothing of the session to forget */
	if (m->persist) {
		alloc_queue_session_closed(m, &c->session);
		tier_session_closed(m, &c->session);
	}
	/* at shutdown the services stay: they rejoin the restarted server with their objects. Each is detached from
	 * this session, which is freed below: a task the drain's last requests start (a demote) must not go to it */
	if (c->session.svc && !m->rpc->draining) {
		service_unmount(m, c->session.svc, why);
	} else if (c->session.svc) {
		c->session.svc->session = NULL;
		c->session.svc = NULL;
	}
	/* a walk of every unfinished put in the cluster: only for a session that had some (a client's connections
	 * opened and closed without one cost the loop that walk each) */
	if (!m->rpc->draining && m->persist && c->session.allocated)
		objects_session_closed(m, c->session.id);
	list_del(&c->link);
	m->nconns--;
	bufferevent_free(c->bev);
	c->bev = NULL;
	c->closed = true;
	if (!c->commit_waits && !c->reading)
		free_conn(c);
}

static int handle_frame(struct conn *c, const unsigned char *p, uint32_t len)
{
	struct meta *m = c->m;
	Mmc__Frame *f = key_frame_decode(&m->arena, p, len);
	struct key_frame_scan scan;
	int rc;

	if (!f) { /* any other body: protobuf-c's, unless refused as rpc_keys refuses a batch too large, or a key */
		key_frame_scan(p, len, &scan);
		if (scan.items > MMC_WIRE_KEYS_MAX || scan.nul_key) {
			arena_reset(&m->arena);
			rpc_reply_code(c, scan.id, MMC_INVALID_PARAM);
			return 0;
		}
		f = mmc__frame__unpack(&m->arena.pbc, len, p);
	}
	if (!f) {
		log_ratelimited(&ratelimit_bucket, LOG_WARN, "op=decode session=%llu peer=%s err=malformed_frame",
		                (unsigned long long)c->session.id, c->peer);
		arena_reset(&m->arena);
		return MMC_INVALID_PARAM;
	}
	rc = rpc_dispatch(c, f);
	arena_reset(&m->arena);
	return rc;
}

/*
 * Sets how many input bytes wake read_cb (low). Before its hello a connection also reads no more than one frame
 * of a hello's size: what a peer that proved nothing can make the server hold is bounded per connection, apart from
 * ock.mmc.meta.max_buffered_input, which admitted connections share.
 */
static void read_watermark(struct conn *c, size_t low)
{
	bufferevent_setwatermark(c->bev, EV_READ, low, c->phase == CONN_READY ? 0 : 4 + MMC_WIRE_HELLO_FRAME_MAX);
}

/*
 * Plain TCP: the socket reports readable only once the rest of a frame (missing bytes) is there, not at each segment
 * of it; read_rest then takes it in one read. Before, libevent 2.1 read 4 KiB a wake-up: a batch of 1024 keys
 * (about 80 KB) took some 20 wake-ups, each an epoll_wait, an ioctl and a readv, a third of the loop's time per key.
 * The kernel caps the mark at half the receive buffer, so a larger frame still takes a few wake-ups. Not over TLS:
 * bytes OpenSSL has read ahead are in neither the socket nor the input, and the mark would wait for them.
 */
static void socket_wait_for(struct conn *c, size_t missing)
{
	int mark = missing > RCVLOWAT_MAX ? RCVLOWAT_MAX : missing ? (int)missing : 1;

	if (mark != c->rcvlowat &&
	    setsockopt(bufferevent_getfd(c->bev), SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof(mark)) == 0)
		c->rcvlowat = mark;
}

/* Plain TCP: reads up to want bytes of the frame in progress straight into the input, as many as the socket has
 * (the bufferevent keeps the input's end frozen but while it reads). An error or the peer's close is left in the
 * socket for the bufferevent to find. Returns the bytes read. */
static size_t read_rest(struct conn *c, struct evbuffer *in, size_t want)
{
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	size_t left = want, got;
	ssize_t r = -1;
	int n;

	evbuffer_unfreeze(in, 0);
	n = evbuffer_reserve_space(in, (ev_ssize_t)left, v, 2);
	for (int i = 0; i < n; i++) {
		iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len < left ? v[i].iov_len : left};
		left -= iov[i].iov_len;
	}
	if (n > 0)
		r = readv(bufferevent_getfd(c->bev), iov, n);
	got = left = r > 0 ? (size_t)r : 0;
	for (int i = 0; i < n; i++) {
		v[i].iov_len = iov[i].iov_len < left ? iov[i].iov_len : left;
		left -= v[i].iov_len;
	}
	if (n > 0)
		evbuffer_commit_space(in, v, n);
	evbuffer_freeze(in, 0);
	return got;
}

/* Plain TCP: reads what the socket has of a frame of size bytes; true when it is all in the input, else the socket
 * is told to wake the loop when the rest is there. */
static bool frame_rest(struct conn *c, struct evbuffer *in, size_t size)
{
	size_t missing = size - evbuffer_get_length(in), want, got;

	do {
		want = missing < READ_REST_MAX ? missing : READ_REST_MAX;
		got = read_rest(c, in, want);
		missing -= got;
	} while (missing && got == want);
	if (missing)
		socket_wait_for(c, missing);
	return !missing;
}

/* A frame announced before the hello that no hello needs: refused without reading it, so that unauthenticated
 * peers cannot take the input budget from admitted ones. */
static void refuse_early_frame(struct conn *c, uint32_t len)
{
	static int bucket;

	log_ratelimited(&bucket, LOG_WARN,
	                "op=read session=%llu peer=%s err=frame_too_large_before_hello frame_bytes=%u limit=%u",
	                (unsigned long long)c->session.id, c->peer, len, MMC_WIRE_HELLO_FRAME_MAX);
	c->m->stats.rpc_refused[RPC_REFUSED_EARLY_FRAME]++;
	conn_close(c, "frame_too_large_before_hello");
}

/* Handles the whole frames read so far. Returns false when it closed c (c may be freed). */
static bool read_frames(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	unsigned char hdr[4];
	int rc;

	c->last_seen_ms = clock_ms();
	while (!c->closed && !c->closing && !c->throttled && evbuffer_get_length(in) >= 4) {
		uint32_t len;
		unsigned char *p;

		evbuffer_copyout(in, hdr, 4);
		len = get_le32(hdr);
		if (len == 0 || len > MMC_FRAME_MAX) {
			conn_close(c, "bad_frame_length");
			return false;
		}
		if (c->phase != CONN_READY && len > MMC_WIRE_HELLO_FRAME_MAX) {
			refuse_early_frame(c, len);
			return false;
		}
		if (evbuffer_get_length(in) < 4 + (size_t)len) {
			/* before its hello a connection holds no share of the budget: its frame is as small as a
			 * hello's, and how much it may buffer is bounded (read_watermark) */
			if (c->phase == CONN_READY && !input_reserve(c, 4 + (uint64_t)len)) {
				c->m->stats.rpc_refused[RPC_REFUSED_INPUT_BUDGET]++;
				conn_close(c, "input_budget_exceeded");
				return false;
			}
			if (!c->turn_out)
				read_watermark(c, 4 + (size_t)len); /* wake only when the whole frame is here */
			else if (frame_rest(c, in, 4 + (size_t)len))
				continue;
			return true;
		}
		read_watermark(c, 0);
		if (c->turn_out)
			socket_wait_for(c, 0);
		p = evbuffer_pullup(in, 4 + (ev_ssize_t)len);
		if (!p) {
			conn_close(c, "out_of_memory");
			return false;
		}
		rc = handle_frame(c, p + 4, len);
		if (rc < 0) {
			c->m->stats.rpc_refused[RPC_REFUSED_CREDENTIALS] += rc == MMC_NOT_AUTHORIZED;
			conn_close(c, rc == MMC_NOT_AUTHORIZED ? "not_authenticated" : "protocol_error");
			return false;
		}
		if (!c->closed)
			evbuffer_drain(in, 4 + (size_t)len);
		throttle(c);
	}
	/* the frame it waited for is here: its reservation goes (a partial next one reserved again above) */
	if (!c->closed && evbuffer_get_length(in) < 4)
		input_release(c);
	return !c->closed;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	bool open;

	c->m->rpc->reads++;
	c->in_turn = c->turn_out != NULL;
	c->reading = true;
	open = read_frames(c);
	c->reading = false;
	if (open) {
		flush_turn(c);
		taken_cb(bev, c); /* the socket may have taken them all at once: no write event will come */
	} else if (c->closed && !c->commit_waits) /* closed by a frame's handler (out of memory, a refusal) */
		free_conn(c);
}

static void flushed_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_close(c, c->closing);
}

void conn_close_flushed(struct conn *c, const char *why)
{
	if (c->closed || c->closing)
		return;
	c->closing = why;
	if (c->in_turn)
		flush_turn(c); /* the refusal's reply is in what flushed_cb waits for */
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_setcb(c->bev, NULL, flushed_cb, event_cb, c);
	/* called from a handler, so the close itself must wait for the loop: deferred, as if a write had completed */
	bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_EOF)
		conn_close(c, "eof");
	else if (what & BEV_EVENT_ERROR) /* TLS: the handshake's failure, with OpenSSL's reason */
		conn_close(c, rpc_tls_error_reason(c->m, bev, c->peer));
}

void conn_displace_oldest(struct meta *m)
{
	m->stats.rpc_refused[RPC_REFUSED_DISPLACED]++;
	conn_close(list_entry(m->rpc->hello_waits.next, struct conn, hello_link), "displaced_before_hello");
}

int conn_accept(struct meta *m, evutil_socket_t fd, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!c || !(c->held[0] = evbuffer_new()) || !(c->held[1] = evbuffer_new())) {
		if (c)
			free_conn(c);
		evutil_closesocket(fd);
		return MMC_MALLOC_FAILED;
	}
	if (!(c->bev = rpc_tls_bufferevent(m, fd))) { /* it closed fd */
		free_conn(c);
		return MMC_MALLOC_FAILED;
	}
	if (!m->rpc->tls && !(c->turn_out = evbuffer_new())) {
		bufferevent_free(c->bev);
		free_conn(c);
		return MMC_MALLOC_FAILED;
	}
	c->m = m;
	c->session.id = ++m->rpc->next_session;
	c->session.conn = c;
	c->last_seen_ms = c->accepted_ms = clock_ms();
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	list_add_tail(&m->rpc->conns, &c->link);
	list_add_tail(&m->rpc->hello_waits, &c->hello_link);
	m->nconns++;
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	c->rcvlowat = 1;
	read_watermark(c, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	return 0;
}

void conns_sweep(struct meta *m, uint64_t now_ms)
{
	struct list *it, *next;

	/* oldest first: the first one still in time ends the scan (no list before rpc_listen) */
	while (m->rpc->hello_waits.next && !list_empty(&m->rpc->hello_waits)) {
		struct conn *c = list_entry(m->rpc->hello_waits.next, struct conn, hello_link);

		if (now_ms - c->accepted_ms <= m->conf.hello_timeout_ms)
			break;
		m->stats.rpc_refused[RPC_REFUSED_HELLO_TIMEOUT]++;
		conn_close(c, "hello_timeout");
	}

	for (it = m->rpc->conns.next; it != &m->rpc->conns; it = next) {
		struct conn *c = list_entry(it, struct conn, link);

		next = it->next;
		if (now_ms - c->last_seen_ms > m->conf.heartbeat_timeout_ms &&
		    !(c->throttled && !evbuffer_get_length(bufferevent_get_output(c->bev)))) /* held for our commit */
			conn_close(c, "heartbeat_timeout");
		else if (c->session.svc && !list_empty(&c->session.svc->quarantine))
			quarantine_seen(m, c->session.svc, c->last_seen_ms); /* a frame from the owner: it runs */
	}
}

void conns_close_removed_tenants(struct meta *m)
{
	struct list *it, *next;

	for (it = m->rpc->conns.next; m->tenants.n && it != &m->rpc->conns; it = next) {
		struct conn *c = list_entry(it, struct conn, link);

		next = it->next;
		if ((c->phase == CONN_READY && m->tenants.t[c->session.tenant].removed) ||
		    (c->phase == CONN_CHALLENGED && c->claim && c->claim != TENANT_NONE &&
		     m->tenants.t[c->claim].removed))
			conn_close(c, "tenant_removed");
	}
}

void conns_close_all(struct meta *m)
{
	while (!list_empty(&m->rpc->conns))
		conn_close(list_entry(m->rpc->conns.next, struct conn, link), "shutdown");
}
