/*
 * What grpc_server.c (the HTTP/2 connections) and grpc_call.c (one gRPC call on a stream) share: the server, a
 * connection and a stream. A stream whose call still runs when the peer resets it or the connection closes is
 * detached (conn NULL) and freed when the call's reply arrives, so a reply never reaches a freed stream.
 */
#ifndef MMC_KVCM_GRPC_STREAM_H
#define MMC_KVCM_GRPC_STREAM_H

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc_server.h"
#include "h2_idle_rst.h"
#include "list.h"

struct event;
struct evbuffer;
struct bufferevent;
struct evconnlistener;

struct grpc_server {
	struct kvcm *k;
	struct evconnlistener *lev;
	struct event *resume_ev; /* accepts again after an accept error paused the listener */
	SSL_CTX *tls;            /* kvcm.service.tls.*: the HTTP ports' context, ALPN h2; NULL: plain HTTP/2 */
	const struct grpc_service *services;
	bool admin;
	struct list conns; /* struct h2_conn.link */
	uint32_t nconns;
	uint64_t buffered; /* request bytes held by its streams, bounded by kvcm.service.max_buffered_size */
	int log_bucket;
};

struct h2_conn {
	struct grpc_server *s;
	struct bufferevent *bev;
	nghttp2_session *ng;
	struct list streams; /* struct h2_stream.link */
	struct list link;
	struct h2_idle_rst filter;
	bool in_recv;    /* inside nghttp2_session_mem_recv: sending waits until it returns */
	bool in_send;    /* inside nghttp2_session_send (h2_flush): the socket's callbacks only note what happened */
	bool failed;     /* noted in_send: the connection ended */
	bool read_later; /* noted in_send: data came in */
	bool stalled;    /* OUT_MAX_BYTES wait for the peer: nothing is sent or read until write_cb */
	bool closing;
	/* response bytes its streams hold that nghttp2 has not framed yet (HTTP/2 flow control holds them back until
	 * the peer reads): at most h2_held_max(), and none for kvcm.service.idle_timeout_seconds without progress */
	uint64_t held;
	struct event *held_ev; /* pending while held > 0: closes a connection whose held bytes do not move */
	/* a request with the credentials it needs has come: until then the connection goes at
	 * kvcm.service.request_timeout_ms, or first when the connections are all taken */
	bool served;
	struct event *first_ev;
};

struct h2_stream {
	struct h2_conn *conn; /* NULL: detached, freed by its call's reply */
	struct grpc_server *srv;
	uint64_t counted; /* bytes of in counted in srv->buffered */
	int32_t id;
	struct list link;
	char path[256];
	char content_type[64];
	char authorization[512];
	uint64_t timeout_us; /* grpc-timeout, 0: none */
	bool bad_header;     /* a header too long to keep, or a grpc-timeout that does not parse */
	size_t header_bytes; /* of its request headers, as HTTP/2 counts a header list (name + value + 32 each) */
	const ProtobufCMethodDescriptor *method;
	const struct route *route;
	struct evbuffer *in; /* the request's DATA */
	struct event *deadline;
	struct event *arrival; /* pending from the request's HEADERS until it is whole (END_STREAM) */
	bool call_pending;     /* call_run has the stream as its reply's destination */
	bool answered;         /* response headers submitted */
	bool authorized;       /* its credentials passed (grpc_call_headers) */
	int rst_after; /* > 0: RST_STREAM with this code + 1 once the response has gone (the peer still sends) */
	/* the response: one length-prefixed message, then trailers */
	uint8_t *out;
	size_t out_len, out_off;
	int status;
	char message[256];
	nghttp2_nv trailers[2];
	char status_text[8];
};

/* grpc_call.c: the request of a stream is complete (END_STREAM): decode it and run it. */
void grpc_call_start(struct h2_stream *st);
/* grpc_call.c: judges the credentials of a request whose headers are whole, once, before its message is read, so
 * that a caller without them holds none of the request-byte budget. False when refused: the stream is answered
 * (UNAUTHENTICATED or PERMISSION_DENIED) and its DATA dropped. */
bool grpc_call_authorize(struct h2_stream *st);
/* grpc_call.c: answers the stream with a status and no message (trailers only), once. */
void grpc_call_fail(struct h2_stream *st, int status, const char *message);
/* grpc_call.c: the request exceeds a limit (the largest message, the buffered bytes): answer RESOURCE_EXHAUSTED
 * with why and stop reading it. */
void grpc_call_too_large(struct h2_stream *st, const char *why, uint64_t limit);
/* grpc_call.c: the request breaks a rule: its bytes are dropped, the stream answered status with why, and the rest
 * of the request is not read (RST_STREAM once the answer has gone). */
void grpc_call_refuse(struct h2_stream *st, int status, const char *why);
/* grpc_server.c: response bytes a connection may hold (4 x kvcm.service.grpc_max_message_size). */
uint64_t h2_held_max(const struct h2_conn *c);
/* grpc_server.c: the connection's streams hold n more response bytes (a reply made), or n fewer (framed, or freed
 * unsent); progress: nghttp2 framed some, which restarts the no-progress clock. */
void h2_held_add(struct h2_conn *c, uint64_t n);
void h2_held_sub(struct h2_conn *c, uint64_t n, bool progress);
/* grpc_server.c: the stream's request bytes are gone (read or dropped): no longer counted. */
void h2_stream_drained(struct h2_stream *st);
/* grpc_call.c: kvcm.service.request_timeout_ms after its HEADERS, a request still not whole is refused, as the HTTP
 * ports refuse one: a client that sends slowly, or stops, holds neither the stream nor its share of the port's
 * buffered bytes. The arrival timer of a stream. */
void grpc_call_arrival_due(int fd, short what, void *arg);
/* grpc_call.c: the deadline timer of a stream. */
void grpc_call_deadline(int fd, short what, void *arg);
/* grpc_server.c: sends what nghttp2 has queued, closes the connection when it is done. */
void h2_flush(struct h2_conn *c);
void h2_stream_free(struct h2_stream *st);

#endif
