#include "grpc_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "grpc_stream.h"
#include "http_tls.h"
#include "kvcm_state.h"
#include "log.h"
#include "meta_err.h"
#include "mmc/mmc.h"

#define MAX_STREAMS           100
#define WINDOW_BYTES          (1u << 20)
#define MAX_HEADER_LIST_BYTES (64u << 10) /* as the HTTP ports' request headers */
/* Replies a connection's peer has not read yet, at most (one frame more): past this the session sends nothing and
 * the connection reads nothing until they drain, so a client that asks and never reads holds no more than this */
#define OUT_MAX_BYTES   (1u << 20)
#define ACCEPT_PAUSE_MS 100 /* as the HTTP listeners pause */

static void conn_free(struct h2_conn *c)
{
	c->closing = true;
	while (!list_empty(&c->streams)) {
		struct h2_stream *st = list_entry(c->streams.next, struct h2_stream, link);

		list_del(&st->link);
		if (st->call_pending)
			st->conn = NULL;
		else
			h2_stream_free(st);
	}
	nghttp2_session_del(c->ng);
	if (c->held_ev)
		event_free(c->held_ev);
	if (c->first_ev)
		event_free(c->first_ev);
	bufferevent_free(c->bev);
	list_del(&c->link);
	c->s->nconns--;
	c->s->k->grpc_connections--;
	free(c);
}

uint64_t h2_held_max(const struct h2_conn *c)
{
	return 4 * c->s->k->conf.grpc_max_message_bytes;
}

/* held bytes that did not move for the idle timeout: a peer that asks and never reads */
static void held_due(evutil_socket_t fd, short what, void *arg)
{
	struct h2_conn *c = arg;

	(void)fd;
	(void)what;
	log_ratelimited(&c->s->log_bucket, LOG_WARN,
	                "op=grpc_close reason=replies_unread held=%llu key=kvcm.service.idle_timeout_seconds",
	                (unsigned long long)c->held);
	conn_free(c);
}

static void held_clock(struct h2_conn *c)
{
	struct timeval tv = {(time_t)c->s->k->conf.idle_timeout_s, 0};

	if (!c->held_ev && !(c->held_ev = evtimer_new(c->s->k->base, held_due, c)))
		return;
	if (c->held)
		evtimer_add(c->held_ev, &tv);
	else
		evtimer_del(c->held_ev);
}

void h2_held_add(struct h2_conn *c, uint64_t n)
{
	bool was = c->held != 0;

	c->held += n;
	if (!was && c->held)
		held_clock(c);
}

void h2_held_sub(struct h2_conn *c, uint64_t n, bool progress)
{
	c->held -= n < c->held ? n : c->held;
	if (progress || !c->held)
		held_clock(c);
}

void h2_stream_drained(struct h2_stream *st)
{
	if (st->in)
		evbuffer_drain(st->in, evbuffer_get_length(st->in));
	st->srv->buffered -= st->counted;
	st->counted = 0;
}

void h2_stream_free(struct h2_stream *st)
{
	h2_stream_drained(st);
	if (st->conn && st->out)
		h2_held_sub(st->conn, st->out_len - st->out_off, false);
	if (st->in)
		evbuffer_free(st->in);
	if (st->deadline)
		event_free(st->deadline);
	if (st->arrival)
		event_free(st->arrival);
	free(st->out);
	free(st);
}

static void read_cb(struct bufferevent *bev, void *arg);

/*
 * Sends what the session has. A TLS bufferevent writes inside bufferevent_write, and may call back from there
 * (drained, failed, data read): nghttp2 must not be entered again, nor c freed, from within its own send callback, so
 * those callbacks only note what happened (in_send) and it is acted on here, once nghttp2_session_send returned.
 */
void h2_flush(struct h2_conn *c)
{
	int rc;

	if (!c || c->in_recv || c->in_send)
		return;
	c->in_send = true;
	rc = nghttp2_session_send(c->ng);
	c->in_send = false;
	if (c->failed) {
		conn_free(c);
		return;
	}
	if (c->read_later) {
		c->read_later = false;
		read_cb(c->bev, c); /* it flushes again */
		return;
	}
	if (rc != 0) {
		log_ratelimited(&c->s->log_bucket, LOG_WARN, "op=grpc_send_failed why=\"%s\"", nghttp2_strerror(rc));
		conn_free(c);
		return;
	}
	if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng) &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_free(c);
}

static ssize_t send_cb(nghttp2_session *ng, const uint8_t *data, size_t len, int flags, void *arg)
{
	struct h2_conn *c = arg;

	(void)ng;
	(void)flags;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) >= OUT_MAX_BYTES) { /* write_cb resumes it */
		c->stalled = true;
		bufferevent_disable(c->bev, EV_READ);
		return NGHTTP2_ERR_WOULDBLOCK;
	}
	return bufferevent_write(c->bev, data, len) ? NGHTTP2_ERR_CALLBACK_FAILURE : (ssize_t)len;
}

static int begin_headers_cb(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2_conn *c = arg;
	struct h2_stream *st;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->in = evbuffer_new())) {
		free(st);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset, the connection lives */
	}
	st->conn = c;
	st->srv = c->s;
	st->id = f->hd.stream_id;
	list_add_tail(&c->streams, &st->link);
	nghttp2_session_set_stream_user_data(ng, st->id, st);
	return 0;
}

/* grpc-timeout: at most 8 digits and a unit (H M S m u n), in microseconds (at least 1). */
static bool parse_timeout(const uint8_t *v, size_t len, uint64_t *us)
{
	static const struct {
		char unit;
		double to_us;
	} units[] = {{'H', 3.6e9}, {'M', 6e7}, {'S', 1e6}, {'m', 1e3}, {'u', 1}, {'n', 1e-3}};
	uint64_t n = 0;

	if (len < 2 || len > 9)
		return false;
	for (size_t i = 0; i + 1 < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		n = n * 10 + (v[i] - '0');
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (v[len - 1] == units[i].unit) {
			*us = (uint64_t)((double)n * units[i].to_us);
			if (!*us)
				*us = 1;
			return true;
		}
	return false;
}

static void keep(struct h2_stream *st, char *dst, size_t cap, const uint8_t *v, size_t len)
{
	if (len >= cap) {
		st->bad_header = true;
		return;
	}
	memcpy(dst, v, len);
	dst[len] = '\0';
}

static int header_cb(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);

	(void)flags;
	(void)arg;
	if (!st || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	/* what the SETTINGS advertise, enforced, for the request's headers and its trailers together: nghttp2 does not,
	 * and HPACK references to one large table entry decode 64 MB of headers out of a 16 KB frame (26 ms of the
	 * loop each, before any credential) */
	st->header_bytes += namelen + valuelen + 32;
	if (st->header_bytes > MAX_HEADER_LIST_BYTES)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
#define IS(n) (namelen == sizeof(n) - 1 && memcmp(name, n, namelen) == 0)
	if (IS(":path"))
		keep(st, st->path, sizeof(st->path), value, valuelen);
	else if (IS("content-type"))
		keep(st, st->content_type, sizeof(st->content_type), value, valuelen);
	else if (IS("authorization"))
		keep(st, st->authorization, sizeof(st->authorization), value, valuelen);
	else if (IS("grpc-timeout") && !parse_timeout(value, valuelen, &st->timeout_us))
		st->bad_header = true;
#undef IS
	return 0;
}

static int data_cb(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	struct h2_conn *c = arg;

	(void)flags;
	if (!st || st->answered || st->call_pending)
		return 0;
	if (evbuffer_add(st->in, data, len))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->counted += len;
	c->s->buffered += len;
	if (evbuffer_get_length(st->in) > c->s->k->conf.grpc_max_message_bytes + 5)
		grpc_call_too_large(st, "request message larger than kvcm.service.grpc_max_message_size",
		                    c->s->k->conf.grpc_max_message_bytes);
	else if (c->s->buffered > c->s->k->conf.max_buffered_bytes)
		grpc_call_too_large(st, "the port holds more request bytes than kvcm.service.max_buffered_size",
		                    c->s->k->conf.max_buffered_bytes);
	return 0;
}

static void arm_arrival(struct h2_conn *c, struct h2_stream *st)
{
	uint32_t ms = c->s->k->conf.request_timeout_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	st->arrival = evtimer_new(c->s->k->base, grpc_call_arrival_due, st);
	if (st->arrival)
		evtimer_add(st->arrival, &tv);
}

static void arm_deadline(struct h2_conn *c, struct h2_stream *st)
{
	struct timeval tv = {(time_t)(st->timeout_us / 1000000), (suseconds_t)(st->timeout_us % 1000000)};

	st->deadline = evtimer_new(c->s->k->base, grpc_call_deadline, st);
	if (st->deadline)
		evtimer_add(st->deadline, &tv);
}

/* At most cap - 1 bytes of p as a C string, for the log: it reads every string argument up to its NUL (the URI
 * masking looks at all of it), so a "%.*s" of bytes without one would read past them. */
static const char *log_text(char *buf, size_t cap, const void *p, size_t n)
{
	n = n < cap - 1 ? n : cap - 1;
	if (n)
		memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* c has made a request it may make: it keeps its slot while it has calls open, and has no first deadline. */
static void served(struct h2_conn *c)
{
	c->served = true;
	if (c->first_ev) {
		event_free(c->first_ev);
		c->first_ev = NULL;
	}
}

static int frame_cb(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	char why[201];

	if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR)
		log_ratelimited(&((struct h2_conn *)arg)->s->log_bucket, LOG_WARN,
		                "op=grpc_peer_goaway code=%u why=\"%s\"", f->goaway.error_code,
		                log_text(why, sizeof(why), f->goaway.opaque_data, f->goaway.opaque_data_len));
	if (!st)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
		if (!grpc_call_authorize(st))
			return 0; /* answered: no timer, and its DATA is dropped */
		served((struct h2_conn *)arg);
		if (st->timeout_us)
			arm_deadline(arg, st);
		if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
			arm_arrival(arg, st);
	}
	if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
		if (st->arrival)
			evtimer_del(st->arrival); /* whole in time */
		if (!st->answered && !st->call_pending)
			grpc_call_start(st);
	}
	return 0;
}

/* After a response that ended the stream while the peer was still sending: RST_STREAM (sent before the
 * response, it would discard it). */
static int sent_cb(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	char why[201];

	if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR) /* why this end gives up */
		log_ratelimited(&((struct h2_conn *)arg)->s->log_bucket, LOG_WARN, "op=grpc_goaway code=%u why=\"%s\"",
		                f->goaway.error_code,
		                log_text(why, sizeof(why), f->goaway.opaque_data, f->goaway.opaque_data_len));
	if (st && st->rst_after && f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
	    !nghttp2_session_get_stream_remote_close(ng, st->id))
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, (uint32_t)(st->rst_after - 1));
	return 0;
}

/* Why nghttp2 gives up on a peer (it then sends GOAWAY): for the log. */
static int error_cb(nghttp2_session *ng, int code, const char *msg, size_t len, void *arg)
{
	struct h2_conn *c = arg;
	char why[201];

	(void)ng;
	log_ratelimited(&c->s->log_bucket, LOG_WARN, "op=grpc_protocol_error code=%d why=\"%s\"", code,
	                log_text(why, sizeof(why), msg, len));
	return 0;
}

static int close_cb(nghttp2_session *ng, int32_t id, uint32_t error, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	struct h2_conn *c = arg;

	(void)error;
	if (!st || c->closing)
		return 0;
	list_del(&st->link);
	if (st->deadline) {
		event_free(st->deadline);
		st->deadline = NULL;
	}
	if (st->arrival) {
		event_free(st->arrival);
		st->arrival = NULL;
	}
	if (st->call_pending)
		st->conn = NULL; /* a cancelled call: its reply frees the stream */
	else
		h2_stream_free(st);
	return 0;
}

static long feed(void *arg, const uint8_t *data, size_t len)
{
	return (long)nghttp2_session_mem_recv(((struct h2_conn *)arg)->ng, data, len);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct h2_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	uint64_t dropped = c->filter.dropped;
	long rv;

	if (c->in_send) { /* h2_flush reads it once the send returned */
		c->read_later = true;
		return;
	}
	c->in_recv = true;
	rv = h2_idle_rst_pass(&c->filter, evbuffer_pullup(in, -1), len, feed, c);
	c->in_recv = false;
	if (c->filter.dropped != dropped)
		log_ratelimited(&c->s->log_bucket, LOG_INFO, "op=grpc_idle_rst_dropped total=%llu",
		                (unsigned long long)c->filter.dropped);
	if (rv < 0) {
		log_ratelimited(&c->s->log_bucket, LOG_WARN, "op=grpc_bad_connection why=\"%s\"",
		                nghttp2_strerror((int)rv));
		conn_free(c);
		return;
	}
	evbuffer_drain(in, len);
	h2_flush(c);
}

/* The output drained: a stalled session sends on and the connection reads again; a finished one ends. */
static void write_cb(struct bufferevent *bev, void *arg)
{
	struct h2_conn *c = arg;

	if (c->stalled) {
		c->stalled = false;
		bufferevent_enable(bev, EV_READ);
		h2_flush(c); /* nothing while in_send: that send goes on by itself */
	} else if (!c->in_send && !nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
		conn_free(c);
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct h2_conn *c = arg;

	(void)bev;
	if (what == BEV_EVENT_CONNECTED) /* the TLS handshake is done */
		return;
	if (c->in_send) /* h2_flush frees it once the send returned */
		c->failed = true;
	else
		conn_free(c); /* EOF, an error (a failed handshake too) or the idle timeout: the connection is over */
}

static int session_new(struct h2_conn *c)
{
	nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
	                               {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW_BYTES},
	                               {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST_BYTES}};
	nghttp2_session_callbacks *cb;
	int rc;

	if (nghttp2_session_callbacks_new(&cb))
		return MMC_ERROR;
	nghttp2_session_callbacks_set_send_callback(cb, send_cb);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, begin_headers_cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_cb);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frame_cb);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, close_cb);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, sent_cb);
	nghttp2_session_callbacks_set_error_callback2(cb, error_cb);
	rc = nghttp2_session_server_new(&c->ng, cb, c);
	nghttp2_session_callbacks_del(cb);
	if (rc)
		return MMC_ERROR;
	if (nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) ||
	    nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, 16 * WINDOW_BYTES))
		return MMC_ERROR;
	return 0;
}

/* A connection that never sent a request it may make, past kvcm.service.request_timeout_ms: a socket held open
 * with a preface and pings would keep its slot for good (any byte resets the idle timeout). */
static void first_due(evutil_socket_t fd, short what, void *arg)
{
	struct h2_conn *c = arg;

	(void)fd;
	(void)what;
	log_ratelimited(&c->s->log_bucket, LOG_WARN, "op=grpc_close reason=no_request_in_time timeout_ms=%u",
	                c->s->k->conf.request_timeout_ms);
	conn_free(c);
}

static void arm_first(struct h2_conn *c)
{
	uint32_t ms = c->s->k->conf.request_timeout_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	c->first_ev = evtimer_new(c->s->k->base, first_due, c);
	if (c->first_ev)
		evtimer_add(c->first_ev, &tv);
}

/* At max_connections, a new connection takes the slot of the oldest that never made a request, else of the oldest
 * with no call open (its client reconnects for its next call), as the HTTP ports displace an idle one: idle sockets
 * must not lock every client out. False when every connection has a call open. */
static bool displace(struct grpc_server *s)
{
	struct h2_conn *idle = NULL;

	for (struct list *l = s->conns.next; l != &s->conns; l = l->next) { /* oldest first */
		struct h2_conn *c = list_entry(l, struct h2_conn, link);

		if (!c->served) {
			idle = c;
			break;
		}
		if (!idle && list_empty(&c->streams))
			idle = c;
	}
	if (!idle)
		return false;
	log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_close reason=displaced_by_newer_connection served=%d",
	                idle->served);
	conn_free(idle);
	return true;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct grpc_server *s = arg;
	struct timeval idle = {(time_t)s->k->conf.idle_timeout_s, 0};
	struct h2_conn *c;
	SSL *ssl;
	int one = 1;

	(void)l;
	(void)sa;
	(void)salen;
	if ((s->nconns >= s->k->conf.max_connections && !displace(s)) || !(c = calloc(1, sizeof(*c)))) {
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_reject reason=max_connections limit=%u",
		                s->k->conf.max_connections);
		evutil_closesocket(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	h2_idle_rst_init(&c->filter);
	list_init(&c->streams);
	list_add_tail(&s->conns, &c->link);
	s->nconns++;
	s->k->grpc_connections++;
	ssl = s->tls ? SSL_new(s->tls) : NULL; /* NULL with a context: out of memory */
	if (ssl)
		c->bev = bufferevent_openssl_socket_new(s->k->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
		                                        BEV_OPT_CLOSE_ON_FREE);
	else if (!s->tls)
		c->bev = bufferevent_socket_new(s->k->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		if (ssl)
			SSL_free(ssl);
		evutil_closesocket(fd);
		list_del(&c->link);
		s->nconns--;
		s->k->grpc_connections--;
		free(c);
		return;
	}
	if (session_new(c)) {
		conn_free(c);
		return;
	}
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_set_timeouts(c->bev, &idle, &idle); /* idle, or its peer reads nothing of what waits for it */
	arm_first(c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	h2_flush(c);
}

/* Out of descriptors (or memory) for a new connection: the listener pauses ACCEPT_PAUSE_MS, where libevent would
 * otherwise wake again at once for the connection still waiting, and spin. */
static void accept_error(struct evconnlistener *lev, void *arg)
{
	struct grpc_server *s = arg;
	struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};

	log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_accept err=\"%s\" connections=%u paused_ms=%d",
	                strerror(EVUTIL_SOCKET_ERROR()), s->nconns, ACCEPT_PAUSE_MS);
	evconnlistener_disable(lev);
	evtimer_add(s->resume_ev, &tv);
}

static void resume_accept(evutil_socket_t fd, short what, void *arg)
{
	struct grpc_server *s = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(s->lev);
}

/* bind: an address or a host name, resolved as the HTTP listeners resolve theirs (the first address). */
static int listen_on(struct grpc_server *s, const char *bind, uint16_t port, uint16_t *bound)
{
	struct evutil_addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = EVUTIL_AI_PASSIVE};
	struct evutil_addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char service[8];

	snprintf(service, sizeof(service), "%u", port);
	if (evutil_getaddrinfo(bind, service, &hints, &ai) || !ai)
		return MMC_ERROR;
	s->lev = evconnlistener_new_bind(s->k->base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
	                                 ai->ai_addr, (int)ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (!s->lev || !(s->resume_ev = evtimer_new(s->k->base, resume_accept, s)))
		return MMC_ERROR;
	evconnlistener_set_error_cb(s->lev, accept_error);
	if (getsockname(evconnlistener_get_fd(s->lev), (struct sockaddr *)&ss, &sl) == 0)
		*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                        : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

/* gRPC over TLS is HTTP/2 chosen by ALPN ("h2"); a client offering only http/1.1 fails the handshake. */
static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                   unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	return nghttp2_select_next_protocol((unsigned char **)out, outlen, in, inlen) == 1 ? SSL_TLSEXT_ERR_OK
	                                                                                   : SSL_TLSEXT_ERR_ALERT_FATAL;
}

int grpc_server_start(struct grpc_server **out, struct kvcm *k, const char *bind, uint16_t port,
                      const struct grpc_service *services, bool admin, uint16_t *bound, struct meta_err *e)
{
	struct grpc_server *s = calloc(1, sizeof(*s));

	if (!s) {
		meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the %s gRPC server", admin ? "admin" : "KVCM");
		return MMC_MALLOC_FAILED;
	}
	s->k = k;
	s->services = services;
	s->admin = admin;
	list_init(&s->conns);
	if (http_tls_ctx(&k->conf, &s->tls, e->message, sizeof(e->message))) {
		meta_err_fail(e, EXIT_CONFIG, NULL);
		grpc_server_stop(s);
		return MMC_ERROR;
	}
	if (s->tls)
		SSL_CTX_set_alpn_select_cb(s->tls, alpn_cb, NULL);
	if (listen_on(s, bind, port, bound)) {
		meta_err_set(e, EXIT_LISTEN, NULL, "cannot listen on %s:%u for %s gRPC: %s", bind, port,
		             admin ? "admin" : "KVCM", strerror(errno));
		grpc_server_stop(s);
		return MMC_ERROR;
	}
	*out = s;
	return 0;
}

void grpc_server_stop(struct grpc_server *s)
{
	if (!s)
		return;
	while (!list_empty(&s->conns))
		conn_free(list_entry(s->conns.next, struct h2_conn, link));
	if (s->lev)
		evconnlistener_free(s->lev);
	if (s->resume_ev)
		event_free(s->resume_ev);
	SSL_CTX_free(s->tls);
	free(s);
}
