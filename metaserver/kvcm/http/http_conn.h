/*
 * The connections of one KVCM HTTP port, from accept to close, and the limits on them (docs/operations.md,
 * "Security"): kvcm.service.max_connections counts accepted sockets; at the limit a new connection displaces the
 * oldest one that has not sent a whole request yet, else its request is answered 503 and it is closed. A request must
 * arrive whole within kvcm.service.request_timeout_ms of its first byte (of the accept, for the first), or the
 * connection is closed: half-open connections cannot pile up. Bytes of requests not yet answered count against
 * kvcm.service.max_buffered_size across every connection of both ports; the connection whose bytes would exceed it
 * is closed with a logged reason. While a port asks for credentials, each request's are judged from its header block
 * before its body is read (http_head.h): a refused request may send 64 KiB of body, else it is answered 413 and
 * closed; past the budget the connection closed is the unauthenticated one that holds most (more than a head's
 * few kilobytes), not the authenticated one whose bytes crossed it. Accept errors (EMFILE, ENFILE) pause
 * accepting for a moment, logged once a second at most. evhttp knows nothing of this: it gets each connection's
 * bufferevent from conn_bev_new(). Loop thread only.
 */
#ifndef MMC_KVCM_HTTP_CONN_H
#define MMC_KVCM_HTTP_CONN_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"

struct kvcm;
struct call;
struct event_base;
struct evconnlistener;
struct evhttp_request;
struct hconn;

#define CONN_POOL_LISTENERS    2
#define HTTP_MAX_HEADERS_BYTES (64u << 10) /* of a request's header block, request line included */

struct conn_pool {
	struct kvcm *k;
	struct event_base *base;
	SSL_CTX *tls;     /* NULL: plain HTTP */
	const char *name; /* "kvcm" or "admin", for the log */
	bool admin;       /* the admin port: its credentials are an admin's */
	uint32_t max;
	uint32_t count;
	struct hconn *oldest, *newest;                   /* every connection, in accept order */
	struct hmap conns;                               /* by evhttp connection */
	struct evconnlistener *lev[CONN_POOL_LISTENERS]; /* the bind's, and the admin port's loopback one */
	int nlev;
	struct event *resume_ev;
	uint64_t emfile_logged_ms;
	int log_bucket;
};

/* Sets up p for the admin or the MetaService port (max is the connection limit after conn_fit_limit). 0 or -1. */
int conn_pool_init(struct conn_pool *p, struct kvcm *k, SSL_CTX *tls, bool admin, uint32_t max);
/* Installs the accept-error handler on lev (a listener evhttp accepts on: at most CONN_POOL_LISTENERS). */
void conn_pool_listen(struct conn_pool *p, struct evconnlistener *lev);
/* Frees what the pool holds; evhttp_free() must have closed its connections first. */
void conn_pool_fini(struct conn_pool *p);

/* evhttp_set_bevcb's callback (arg: the pool): a bufferevent (TLS when the pool has a context) for a new socket. */
struct bufferevent *conn_bev_new(struct event_base *base, void *arg);

/* The connection of a request evhttp has read whole (NULL when unknown): its deadline stops until conn_end(). */
struct hconn *conn_begin(struct conn_pool *p, struct evhttp_request *req);
/* c answers on h now (h->call), so a close of h while c waits for a commit clears c->conn. */
void conn_attach(struct hconn *h, struct call *c);
/* The request of h is answered now with req's reply: its bytes leave the budget, and the reply must be read whole
 * within kvcm.service.idle_timeout_seconds, else h is closed. h may be NULL. */
void conn_end(struct hconn *h, struct evhttp_request *req);
/* True when h must close after this reply (it broke the buffered-bytes budget): send Connection: close. */
bool conn_closing(const struct hconn *h);
/* True when h came over max_connections: answer its request 503 and close. */
bool conn_refused(const struct hconn *h);
/* The verdict (200, 401, 403) its header block gave the request being answered on h, if it was judged with this
 * Authorization value (NULL: none); else 0, and the request is judged again. */
int conn_head_verdict(const struct hconn *h, const char *authorization);
/* True when h's peer is on this host (loopback). */
bool conn_is_local(const struct hconn *h);

/*
 * The connection limit of one port, checked against RLIMIT_NOFILE: the soft limit is raised to the hard one when
 * needed, and if both HTTP ports could still not get half of it (64 descriptors kept for the rest), want is lowered
 * with a warning naming key. Returns the limit to use.
 */
uint32_t conn_fit_limit(uint32_t want, const char *key);

#endif
