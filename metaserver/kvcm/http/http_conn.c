#include "http_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "clock.h"
#include "hash.h"
#include "hmap.h"
#include "http.h"
#include "http_auth.h"
#include "http_head.h"
#include "account.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"

#define RESERVED_FDS    64
#define ACCEPT_PAUSE_MS 100
#define ACCEPT_FREE_FDS 8 /* waiting connections closed per accept error */
/* The body a request that will be refused 401 or 403 may send: its answer needs none of it. */
#define REFUSED_BODY_MAX (64u << 10)
/* The most bytes a header block evhttp accepts can take: its limit counts lines without their CRLF, and a line can
 * be as short as "a:" */
#define HEAD_LIMIT        (2 * HTTP_MAX_HEADERS_BYTES + 8)
#define AUTHORIZATION_MAX 4096
/* Past the budget, the connection closed is the one not (yet) authenticated that holds most, if one holds more
 * than this (a request's head, typically a few hundred bytes), rather than the one whose bytes crossed it */
#define UNTRUSTED_HOG (4u << 10)

struct hconn {
	struct conn_pool *p;
	struct bufferevent *bev;
	struct evhttp_connection *evcon; /* NULL until accepted() ran */
	struct hconn *prev, *next;
	struct hmap_node node;  /* in p->conns, by evcon: once accepted() ran */
	struct event *ev;       /* accepted(), then a close the budget asked for */
	struct event *deadline; /* pending while a request is being read */
	struct event *drain;    /* pending while a reply is being written: it must be read whole in the idle timeout */
	struct evbuffer_cb_entry *counter;
	uint64_t buffered;     /* bytes received and not yet answered */
	uint64_t req_bytes;    /* of them, the request being answered */
	struct call *call;     /* answering now */
	struct http_head head; /* the next request's header block, while the port asks for credentials */
	uint64_t verdict_key;  /* hash_bytes of the Authorization value the verdict is for */
	uint64_t answer_key;   /* the same, for the request being answered */
	int verdict;           /* auth_status of the request being read, 0 when none was judged */
	int answer_verdict;    /* of the request being answered (conn_head_verdict) */
	bool trusted;          /* the request being read may send a whole body: its credentials passed */
	bool authorized;       /* so did those of the last request answered (or none were needed) */
	bool doomed, local;
	bool refused; /* over max_connections: its request gets 503 and the connection closes */
};

/* Bytes of requests not yet answered, over every connection of both ports (one loop thread). */
static uint64_t buffered_total;
/* The pools by listener: libevent hands an accept-error callback evhttp's argument, not ours. */
#define MAX_POOLS 8
static struct conn_pool *listening[MAX_POOLS];

static uint64_t evcon_hash(const struct evhttp_connection *c)
{
	return hash_bytes(&c, sizeof(c));
}

static uint64_t node_hash(const struct hmap_node *n)
{
	return evcon_hash(hmap_entry(n, struct hconn, node)->evcon);
}

static struct hconn *map_find(const struct conn_pool *p, const struct evhttp_connection *c)
{
	if (!c)
		return NULL;
	hmap_foreach_hash(&p->conns, evcon_hash(c), n)
	{
		struct hconn *h = hmap_entry(n, struct hconn, node);

		if (h->evcon == c)
			return h;
	}
	return NULL;
}

static void arm_deadline(struct hconn *h)
{
	uint32_t ms = h->p->k->conf.request_timeout_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(h->deadline, &tv);
}

static bool waiting_for_request(const struct hconn *h)
{
	return h->evcon && !h->call && evtimer_pending(h->deadline, NULL);
}

static void unlink_conn(struct hconn *h)
{
	struct conn_pool *p = h->p;

	if (h->prev)
		h->prev->next = h->next;
	else
		p->oldest = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		p->newest = h->prev;
	p->count--;
}

static void closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *h = arg;

	evhttp_connection_set_closecb(evcon, NULL, NULL);
	hmap_remove(&h->p->conns, &h->node, evcon_hash(h->evcon));
	unlink_conn(h);
	buffered_total -= h->buffered;
	if (h->call)
		h->call->conn = NULL;
	evbuffer_remove_cb_entry(bufferevent_get_input(h->bev), h->counter);
	http_head_free(&h->head);
	event_free(h->ev);
	event_free(h->deadline);
	event_free(h->drain);
	free(h);
}

/* Closes h, which has no request being answered (evhttp frees the one it is reading). */
static void close_now(struct hconn *h, const char *reason)
{
	log_ratelimited(&h->p->log_bucket, LOG_WARN, "op=kvcm_close port=%s reason=%s buffered=%llu", h->p->name,
	                reason, (unsigned long long)h->buffered);
	evhttp_connection_free(h->evcon);
}

/* A kept-alive connection between requests whose last one failed its credentials: nothing it does is served. */
static bool idle_unauthorized(const struct hconn *h)
{
	return h->evcon && !h->call && !h->buffered && !evtimer_pending(h->deadline, NULL) && !h->authorized;
}

/*
 * Closes the oldest connection still waiting for a request, else the oldest kept alive after a 401 or 403 (sockets
 * without credentials sending a request now and then must not lock every client out; one whose credentials passed
 * keeps its slot, as a client would not know to send its POST again), other than keep, logging reason; false when
 * none.
 */
static bool displace(struct conn_pool *p, const struct hconn *keep, const char *reason)
{
	for (int pass = 0; pass < 2; pass++) {
		for (struct hconn *h = p->oldest; h; h = h->next) {
			if (h != keep && (pass ? idle_unauthorized(h) : waiting_for_request(h))) {
				close_now(h, reason);
				return true;
			}
		}
	}
	return false;
}

static bool peer_is_local(evutil_socket_t fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len))
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	return ss.ss_family == AF_INET6 && (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
	                                    (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && s6->sin6_addr.s6_addr[12] == 127));
}

/* Whether the head announces a body: a request without one is not judged here (a scrape of /metrics with stale
 * credentials would pay a PBKDF2 for nothing); gen_cb judges it. evhttp 2.1.12 reads a body after any method. */
static bool announces_body(const struct http_head *head)
{
	char v[32];

	return http_head_field(head, "Transfer-Encoding", v, sizeof(v)) ||
	       (http_head_field(head, "Content-Length", v, sizeof(v)) && strtoull(v, NULL, 10) > 0);
}

/* A body evhttp will refuse 413 for want of credentials: counted and logged as the refusal it is, since the request
 * never reaches gen_cb. */
static void report_refused_body(struct hconn *h, const char *authorization)
{
	char length[32], encoding[16];
	unsigned long long announced = 0;
	bool chunked = http_head_field(&h->head, "Transfer-Encoding", encoding, sizeof(encoding));

	if (http_head_field(&h->head, "Content-Length", length, sizeof(length)))
		announced = strtoull(length, NULL, 10);
	if (announced <= REFUSED_BODY_MAX && !chunked)
		return; /* it gets its 401 or 403 from gen_cb, which reports it */
	log_ratelimited(&h->p->log_bucket, LOG_WARN,
	                "op=kvcm_reject port=%s reason=unauthenticated_body content_length=%llu chunked=%d "
	                "max_unauthenticated=%u",
	                h->p->name, announced, chunked, REFUSED_BODY_MAX);
	if (announced > REFUSED_BODY_MAX)
		auth_report(h->p->k, h->verdict, authorization, "(body not read)", &h->p->log_bucket);
}

/* Judges the request whose header block h holds (rc: http_head_feed's): only credentials that pass raise the body
 * it may send from REFUSED_BODY_MAX to the port's limit, so that a client without them cannot hold the
 * request-byte budget authenticated clients share. evhttp answers a longer body 413 and closes; one within it gets
 * its 401 or 403 from gen_cb, which takes this verdict (conn_head_verdict) rather than derive a password twice. */
static void judge_head(struct hconn *h, int rc)
{
	struct kvcm *k = h->p->k;
	char authorization[AUTHORIZATION_MAX];
	const char *a = "";

	if (rc == 0)
		return;
	if (rc > 0 && announces_body(&h->head)) {
		if (http_head_field(&h->head, "Authorization", authorization, sizeof(authorization)))
			a = authorization;
		h->verdict = auth_status(k, a[0] ? a : NULL, h->p->admin);
		h->verdict_key = hash_bytes(a, strlen(a));
		h->trusted = h->verdict == 200;
		if (h->trusted)
			evhttp_connection_set_max_body_size(h->evcon, (ev_ssize_t)k->conf.max_body_bytes);
		else
			report_refused_body(h, a);
	}
	http_head_free(&h->head);
}

/* The next request begins with what h's input holds now (the bytes after the last request's body). */
static void head_begin(struct hconn *h)
{
	struct conn_pool *p = h->p;

	h->verdict = 0;
	h->trusted = !(p->admin ? accounts_admin_enforced(p->k) : accounts_enforced(p->k));
	/* fails closed: until its credentials pass (a head that never parses here keeps the small limit) */
	evhttp_connection_set_max_body_size(h->evcon,
	                                    (ev_ssize_t)(h->trusted ? p->k->conf.max_body_bytes : REFUSED_BODY_MAX));
	if (!h->trusted)
		judge_head(h, http_head_begin(&h->head, bufferevent_get_input(h->bev), HEAD_LIMIT));
}

/* Runs right after the accept (a higher priority than any socket event): evhttp has made its connection. */
static void accepted(struct hconn *h)
{
	void *evcon = NULL;
	evutil_socket_t fd = bufferevent_getfd(h->bev);
	int one = 1;

	bufferevent_getcb(h->bev, NULL, NULL, NULL, &evcon);
	if (!evcon) { /* evhttp could not make its connection (out of memory): the socket is closed, the bev ours */
		unlink_conn(h);
		evbuffer_remove_cb_entry(bufferevent_get_input(h->bev), h->counter);
		bufferevent_free(h->bev);
		event_free(h->deadline);
		event_free(h->drain);
		event_free(h->ev);
		free(h);
		return;
	}
	h->evcon = evcon;
	evhttp_connection_set_closecb(h->evcon, closed_cb, h);
	/* out of memory: unmapped, its requests are served without the per-connection limits */
	(void)hmap_insert(&h->p->conns, &h->node, evcon_hash(h->evcon));
	/* replies go out in more than one segment: without this, Nagle waits for the client's delayed ACK */
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	h->local = peer_is_local(fd);
	head_begin(h);
	/* a refused connection still gets its answer (503), and is the first displaced by the next one */
	if (h->p->count > h->p->max && !displace(h->p, h, "displaced_by_newer_connection"))
		h->refused = true;
}

static void conn_ev(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *h = arg;

	if (!h->evcon)
		accepted(h);
	else if (h->doomed && !h->call)
		close_now(h, "max_buffered_size");
	else if (h->doomed)
		bufferevent_disable(h->bev, EV_READ); /* its reply carries Connection: close */
}

static void deadline_ev(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *h = arg;

	if (!h->call)
		close_now(h, "request_timeout");
}

/* evhttp's write timeout restarts with every byte the peer takes: a peer that reads a little now and then would hold
 * a reply (up to the size of the largest answer) as long as it liked */
static void drain_ev(evutil_socket_t fd, short what, void *arg)
{
	close_now(arg, "reply_unread");
}

static void reply_written(struct evhttp_request *req, void *arg)
{
	struct hconn *h = arg;

	evtimer_del(h->drain);
}

static void doom(struct hconn *h)
{
	h->doomed = true;
	event_active(h->ev, 0, 0);
}

/* The connection of either port, not answering a request, whose request is not authenticated (not yet, or
 * refused) and holds the most bytes past UNTRUSTED_HOG; NULL when none. */
static struct hconn *untrusted_hog(void)
{
	struct hconn *hog = NULL;

	for (int i = 0; i < MAX_POOLS; i++)
		for (struct hconn *h = listening[i] ? listening[i]->oldest : NULL; h; h = h->next)
			if (!h->trusted && !h->call && !h->doomed && h->buffered > UNTRUSTED_HOG &&
			    (!hog || h->buffered > hog->buffered))
				hog = h;
	return hog;
}

static void count_input(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct hconn *h = arg;

	if (!info->n_added)
		return;
	if (h->head.active)
		judge_head(h, http_head_feed(&h->head, b, info->n_added));
	h->buffered += info->n_added;
	buffered_total += info->n_added;
	if (h->evcon && !h->call && !evtimer_pending(h->deadline, NULL))
		arm_deadline(h);
	if (buffered_total > h->p->k->conf.max_buffered_bytes && !h->doomed) {
		struct hconn *hog = untrusted_hog();

		doom(hog ? hog : h);
	}
}

struct bufferevent *conn_bev_new(struct event_base *base, void *arg)
{
	struct conn_pool *p = arg;
	struct hconn *h = calloc(1, sizeof(*h));
	SSL *ssl = NULL;

	if (!h)
		return NULL;
	if (p->tls && !(ssl = SSL_new(p->tls)))
		goto fail;
	h->bev = ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)
	             : bufferevent_socket_new(base, -1, 0);
	h->ev = event_new(base, -1, 0, conn_ev, h);
	h->deadline = evtimer_new(base, deadline_ev, h);
	h->drain = evtimer_new(base, drain_ev, h);
	if (!h->bev || !h->ev || !h->deadline || !h->drain)
		goto fail;
	h->counter = evbuffer_add_cb(bufferevent_get_input(h->bev), count_input, h);
	event_priority_set(h->ev, 0);
	h->p = p;
	h->prev = p->newest;
	if (p->newest)
		p->newest->next = h;
	else
		p->oldest = h;
	p->newest = h;
	p->count++;
	arm_deadline(h);
	event_active(h->ev, 0, 0);
	return h->bev;
fail:
	if (h->bev)
		bufferevent_free(h->bev); /* frees ssl too */
	else if (ssl)
		SSL_free(ssl);
	if (h->ev)
		event_free(h->ev);
	if (h->deadline)
		event_free(h->deadline);
	if (h->drain)
		event_free(h->drain);
	free(h);
	return NULL;
}

struct hconn *conn_begin(struct conn_pool *p, struct evhttp_request *req)
{
	struct hconn *h = map_find(p, evhttp_request_get_connection(req));
	uint64_t pipelined;

	if (!h)
		return NULL;
	evtimer_del(h->deadline);
	pipelined = evbuffer_get_length(bufferevent_get_input(h->bev));
	h->answer_verdict = h->verdict;
	h->answer_key = h->verdict_key;
	h->authorized = h->trusted;
	head_begin(h);
	h->req_bytes = h->buffered > pipelined ? h->buffered - pipelined : h->buffered;
	return h;
}

void conn_attach(struct hconn *h, struct call *c)
{
	c->conn = h;
	if (h)
		h->call = c;
}

void conn_end(struct hconn *h, struct evhttp_request *req)
{
	struct timeval tv;

	if (!h)
		return;
	tv = (struct timeval){(time_t)h->p->k->conf.idle_timeout_s, 0};
	evhttp_request_set_on_complete_cb(req, reply_written, h);
	evtimer_add(h->drain, &tv);
	buffered_total -= h->req_bytes;
	h->buffered -= h->req_bytes;
	h->req_bytes = 0;
	h->call = NULL;
	if (h->buffered)
		arm_deadline(h); /* a pipelined request has begun */
}

bool conn_closing(const struct hconn *h)
{
	return h && h->doomed;
}

bool conn_refused(const struct hconn *h)
{
	return h && h->refused;
}

int conn_head_verdict(const struct hconn *h, const char *authorization)
{
	const char *a = authorization ? authorization : "";

	return h && h->answer_verdict && h->answer_key == hash_bytes(a, strlen(a)) ? h->answer_verdict : 0;
}

bool conn_is_local(const struct hconn *h)
{
	return h && h->local;
}

static void resume_ev(evutil_socket_t fd, short what, void *arg)
{
	struct conn_pool *p = arg;

	for (int i = 0; i < p->nlev; i++)
		evconnlistener_enable(p->lev[i]);
}

/* EMFILE and friends: accept would fail again at once (libevent retries in a busy loop). Close a few connections
 * that are only waiting for their request to free descriptors; when there are none, stop accepting a moment. */
static void accept_error(struct evconnlistener *lev, void *arg)
{
	struct conn_pool *p = NULL;
	int e = EVUTIL_SOCKET_ERROR(), freed = 0;
	uint64_t now = clock_ns() / 1000000u;
	struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
	bool out_of_fds = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;

	for (int i = 0; i < MAX_POOLS && !p; i++)
		for (int j = 0; listening[i] && j < listening[i]->nlev && !p; j++)
			p = listening[i]->lev[j] == lev ? listening[i] : NULL;
	if (!p)
		return;
	while (out_of_fds && freed < ACCEPT_FREE_FDS && displace(p, NULL, "out_of_descriptors"))
		freed++;
	if (out_of_fds && !freed) {
		for (int i = 0; i < p->nlev; i++)
			evconnlistener_disable(p->lev[i]);
		evtimer_add(p->resume_ev, &tv);
	}
	if (now - p->emfile_logged_ms >= 1000) {
		log_warn("op=kvcm_accept port=%s err=\"%s\" connections=%u closed_waiting=%d paused_ms=%d", p->name,
		         strerror(e), p->count, freed, out_of_fds && !freed ? ACCEPT_PAUSE_MS : 0);
		p->emfile_logged_ms = now;
	}
}

int conn_pool_init(struct conn_pool *p, struct kvcm *k, SSL_CTX *tls, bool admin, uint32_t max)
{
	memset(p, 0, sizeof(*p));
	p->k = k;
	p->admin = admin;
	p->name = admin ? "admin" : "kvcm";
	p->base = k->base;
	p->tls = tls;
	p->max = max;
	hmap_init(&p->conns, node_hash, 64);
	p->resume_ev = evtimer_new(k->base, resume_ev, p);
	return p->resume_ev ? 0 : -1;
}

void conn_pool_listen(struct conn_pool *p, struct evconnlistener *lev)
{
	if (p->nlev == CONN_POOL_LISTENERS)
		return;
	p->lev[p->nlev++] = lev;
	evconnlistener_set_error_cb(lev, accept_error);
	if (p->nlev > 1) /* listed with its first listener */
		return;
	for (int i = 0; i < MAX_POOLS; i++) {
		if (!listening[i]) {
			listening[i] = p;
			return;
		}
	}
}

void conn_pool_fini(struct conn_pool *p)
{
	for (int i = 0; i < MAX_POOLS; i++)
		if (listening[i] == p)
			listening[i] = NULL;
	if (p->resume_ev)
		event_free(p->resume_ev);
	hmap_free(&p->conns);
}

uint32_t conn_fit_limit(uint32_t want, const char *key)
{
	struct rlimit rl;
	uint64_t need = 4 * (uint64_t)want + RESERVED_FDS, fit;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return want;
	if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur >= need)
		return want;
	fit = rl.rlim_cur > RESERVED_FDS + 4 ? (rl.rlim_cur - RESERVED_FDS) / 4 : 1;
	log_warn("op=kvcm_start warning=\"RLIMIT_NOFILE is %llu: %s lowered from %u to %llu per port (the HTTP ports "
	         "take at most half of the descriptors)\"",
	         (unsigned long long)rl.rlim_cur, key, want, (unsigned long long)fit);
	return (uint32_t)fit;
}
