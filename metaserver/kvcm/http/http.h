/*
 * The HTTP side of KVCM: evhttp listeners on the loop's event_base, routing of POST /api/<name> to handlers,
 * the limits (body size, connections, idle time) and the reply rules of reference kvcm.md §1.2:
 * a body that is not a well-formed request gets HTTP 400 "{}", business errors are HTTP 200 with
 * header.status.code, and a reply to a request that changed durable state is sent only after its LMDB commit.
 */
#ifndef MMC_KVCM_HTTP_H
#define MMC_KVCM_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "json_in.h"
#include "json_out.h"

struct kvcm;
struct instance;
struct evhttp_request;
struct evbuffer;
struct call;
struct hconn;

enum route_flags {
	ROUTE_INSTANCE = 1, /* instance-scoped: unknown instance_id answered INSTANCE_NOT_EXIST first (§1.6) */
	ROUTE_ADMIN = 2,    /* admin header: no tracer_result */
	ROUTE_DEBUG = 4,    /* the debug service: absent (404) unless kvcm.service.enable_debug_service */
	ROUTE_READ = 8,     /* changes nothing: its reply never waits for a commit it did not cause */
	ROUTE_ANY_NODE =
	    16, /* answered by a standby too (health, cluster info, the elector); others: SERVER_NOT_LEADER */
};

struct route {
	const char *name;
	void (*fn)(struct call *c);
	void (*empty)(struct jw *w); /* the response's own fields at their defaults, for error replies */
	unsigned flags;
	const struct route_reader *reader; /* NULL: jansson reads every body */
};

/* A reader of the raw body for a route's usual requests, cheaper than a jansson tree. */
struct route_reader {
	/* true when it set c->body (and c->parsed); false leaves the body to jansson */
	bool (*read)(struct call *c, const char *body, size_t len);
	void (*release)(void *parsed); /* frees c->parsed */
};

/* The reply header of a typed call (struct call_typed), as call_ok, call_fail or call_status left it. */
struct call_header {
	int code;
	bool fields; /* the handler's own fields follow; false: an error reply, whose fields are at their defaults */
	char message[1024];
	char request_id[320];
};

/*
 * Where a call's reply goes when it did not come over HTTP (the gRPC layer): the transport-neutral seam. reply
 * gets the finished JSON reply (malloc'd, the sink frees it; NULL with http_status 400 or 500). A typed call's
 * reply goes to reply_typed instead: its header (NULL with http_status 500), the fields being the transport's.
 */
struct call_sink {
	void (*reply)(void *arg, int http_status, int code, char *json, size_t len);
	void *arg;
	int metric_slot;
	int *log_bucket;
	void (*reply_typed)(void *arg, int http_status, const struct call_header *h);
};

/*
 * A request another transport read into its handler's input itself, without JSON (the gRPC hot calls): run takes
 * the place of the route's handler and encodes the reply's fields itself; call_ok, call_fail and call_status only
 * record the header (c->hdr). The strings are borrowed until the reply has gone to the sink.
 */
struct call_typed {
	void (*run)(struct call *c);
	void *arg;               /* the transport's request, for run */
	const char *instance_id; /* what the instance check of ROUTE_INSTANCE reads */
	const char *trace_id;    /* what request_id and fault injection read */
};

/* One request being answered. Handlers read body, write the response's fields after call_ok(). */
struct call {
	struct kvcm *k;
	struct evhttp_request *req;
	const struct route *route;
	struct http_server *srv;
	struct hconn *conn; /* the connection it answers on; NULL once that closed (http_conn.c) */
	json_t *body;
	void *parsed;          /* what route->reader made of the body besides c->body */
	struct instance *inst; /* ROUTE_INSTANCE: the instance named by instance_id */
	struct jd d;
	struct jw out;
	int code;        /* wire status code, for metrics and the log */
	int http_status; /* 200, or 400 / 413 / 500 with body {} */
	uint64_t t0_ns;
	uint64_t writes0;
	uint64_t durable0;     /* persist_durable_seq at the start: a failed commit after it fails a call that waited */
	struct call_sink sink; /* req NULL: the reply goes here */
	struct call_typed typed; /* run NULL: the body is JSON */
	struct call_header hdr;  /* typed calls: the reply's header */
	bool running;            /* its handler is on the stack */
	bool deferred;           /* call_defer(): answered at call_resume() */
};

struct http_server;
struct meta_err;

/* Listens on bind:port (0: any free port) and serves routes (a table ending in {NULL}). A failure fills *e:
 * EXIT_LISTEN when the port cannot be bound, EXIT_CONFIG for the TLS settings, EXIT_INTERNAL for resources. */
int http_server_start(struct http_server **out, struct kvcm *k, const char *bind, uint16_t port,
                      const struct route *routes, bool admin, uint16_t *bound, struct meta_err *e);
/* When bind is one address other hosts reach (not loopback, not every interface), also listens on the loopback
 * address of its family at port, so that GET /metrics and /api/healthy stay open to loopback peers whatever the bind
 * (the admin port). 0, or MMC_ERROR with a warning logged when that port is taken on loopback. */
int http_server_listen_loopback(struct http_server *s, const char *bind, uint16_t port);
void http_server_stop(struct http_server *s);
/*
 * Runs route r on the JSON body of len bytes that another transport decoded its request into (the caller keeps
 * it; it is read before this returns), with the same reader, checks, handler, commit wait and metrics as an HTTP
 * request; the reply goes to sink, maybe before this returns.
 */
void call_run(struct kvcm *k, const struct route *r, const char *body, size_t len, const struct call_sink *sink);
/* Runs route r's typed form t (the same checks, commit wait and metrics); the reply goes to sink->reply_typed. */
void call_run_typed(struct kvcm *k, const struct route *r, const struct call_typed *t, const struct call_sink *sink);

/*
 * A plain-text page served to GET /<path> (no /api/ prefix) on the admin port, as read-only and open as /metrics:
 * fn appends the body to out and returns the HTTP status. The Mooncake master's pages engines poll
 * (api/master_compat.c).
 */
struct text_route {
	const char *path;
	int (*fn)(struct kvcm *k, struct evbuffer *out);
};

/* Serves routes (a table ending in {NULL}) as text pages of s, besides its JSON routes. */
void http_server_text_routes(struct http_server *s, const struct text_route *routes);

/* Open connections, for /metrics. */
uint32_t http_server_connections(const struct http_server *s);

/* The success header; the handler writes its fields next. */
void call_ok(struct call *c, const char *message);
/* A business error: header with code and message, then the route's default fields. */
void call_fail(struct call *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Just the header with code and message (the handler writes every field itself). */
void call_status(struct call *c, int code, const char *message);
/*
 * A handler that answers only once work it started over later loop turns has ended (trimCache's scan) calls
 * call_defer() before it returns, and call_resume() when that work is done, after call_ok() or call_fail(); the reply
 * then waits for the commit of what was written meanwhile, as every acknowledging reply does. c stays valid until
 * call_resume(), which may come before the handler returns. Its connection may close meanwhile: the reply then
 * goes nowhere. Loop thread.
 */
void call_defer(struct call *c);
void call_resume(struct call *c);
/* The request is not well-formed: HTTP 400 "{}". */
void call_bad_request(struct call *c);
/* Checks c->d after decoding: answers 400 on a type error, INVALID_ARGUMENT on too many elements. */
bool call_decode_failed(struct call *c);
/* The same for d, how one part of a request read ahead of its checks went. */
bool call_input_failed(struct call *c, const struct jd *d);
/* trace_id of the request ("" when absent). */
const char *call_trace_id(struct call *c);

#endif
