#include "http.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/bufferevent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "elector.h"
#include "http_auth.h"
#include "http_conn.h"
#include "http_tls.h"
#include "instance.h"
#include "json_in.h"
#include "kvcm_state.h"
#include "meta_err.h"
#include "log.h"
#include "metrics.h"
#include "mmc/mmc.h"
#include "persist.h"
#include "tcp_url.h"

/* The largest JSON reply: past it the call is answered HTTP 500 ("{}"). A request of repeated keys and a long spec
 * filter could otherwise have the loop build gigabytes (the biggest real reply, 65536 keys of a few specs, is tens
 * of MiB). */
#define REPLY_MAX ((size_t)512 << 20)

/* Objects and arrays a request body may hold: an event of a report is an object holding an object with a list of
 * spec objects, five or more for each of max_keys_per_request events (whose own limit then answers the request as
 * the gRPC way does). A body of 8 MiB of empty ones took 2 GB and 3 s of the loop to parse; this bounds it at a
 * fifth of that by default, less for servers of fewer keys a request. */
#define CONTAINERS_PER_KEY 8
#define CONTAINERS_SLACK   4096

struct http_server {
	struct kvcm *k;
	struct evhttp *http;
	const struct route *routes;
	const struct text_route *text_routes; /* NULL: none */
	int *metric_slots;
	size_t nroutes;
	bool admin;
	struct conn_pool pool;
	SSL_CTX *tls;
	int log_bucket;
};

uint32_t http_server_connections(const struct http_server *s)
{
	return s ? s->pool.count : 0;
}

static void free_buf(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

static const char *reason_of(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 413:
		return "Payload Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

/* Answers req on conn (which may be NULL) with a body that is not the usual reply; close ends the connection. */
static void send_raw(struct hconn *conn, struct evhttp_request *req, int status, const char *body, bool close)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	close |= conn_closing(conn);
	conn_end(conn, req);
	evhttp_add_header(h, "Content-Type", "application/json");
	if (close)
		evhttp_add_header(h, "Connection", "close");
	if (status == 401)
		evhttp_add_header(h, "WWW-Authenticate", "Basic realm=\"mmc\", charset=\"UTF-8\"");
	evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
	evhttp_send_reply(req, status, reason_of(status), NULL);
}

const char *call_trace_id(struct call *c)
{
	json_t *v;

	if (c->typed.run)
		return c->typed.trace_id;
	v = c->body ? jd_get(c->body, "trace_id") : NULL;
	return json_is_string(v) ? json_string_value(v) : "";
}

static void header(struct call *c, int code, const char *message, bool with_request_id)
{
	struct jw *w = &c->out;
	char rid[320];

	c->code = code;
	snprintf(rid, sizeof(rid), "%.256s_%" PRIu64, call_trace_id(c), kvcm_now_us());
	if (c->typed.run) { /* the transport encodes it */
		c->hdr.code = code;
		c->hdr.fields = true;
		snprintf(c->hdr.message, sizeof(c->hdr.message), "%s", message);
		snprintf(c->hdr.request_id, sizeof(c->hdr.request_id), "%s", with_request_id ? rid : "");
		return;
	}
	jw_obj(w);
	jw_key(w, "header");
	jw_obj(w);
	jw_key(w, "status");
	jw_obj(w);
	jw_kstr(w, "code", code_name(code));
	jw_kstr(w, "message", message);
	jw_obj_end(w);
	jw_kstr(w, "request_id", with_request_id ? rid : "");
	if (!(c->route->flags & ROUTE_ADMIN))
		jw_kstr(w, "tracer_result", "");
	jw_obj_end(w);
}

void call_ok(struct call *c, const char *message)
{
	header(c, KC_OK, message, true);
}

void call_status(struct call *c, int code, const char *message)
{
	jw_reset(&c->out);
	header(c, code, message, true);
}

__attribute__((format(printf, 4, 0))) static void call_failv(struct call *c, int code, bool with_request_id,
                                                             const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	jw_reset(&c->out);
	header(c, code, msg, with_request_id);
	c->hdr.fields = false;
	if (c->route->empty && !c->typed.run)
		c->route->empty(&c->out);
}

void call_fail(struct call *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	call_failv(c, code, true, fmt, ap);
	va_end(ap);
}

void call_bad_request(struct call *c)
{
	jw_reset(&c->out);
	c->http_status = 400;
	c->code = KC_INVALID_ARGUMENT;
}

bool call_decode_failed(struct call *c)
{
	if (c->d.bad) {
		log_ratelimited(c->srv ? &c->srv->log_bucket : c->sink.log_bucket, LOG_WARN,
		                "op=kvcm_bad_request api=%s why=\"%s\"", c->route->name, c->d.why);
		call_bad_request(c);
		return true;
	}
	if (c->d.too_many) {
		call_fail(c, KC_INVALID_ARGUMENT, "too many elements in one request (limit %u)", c->k->conf.max_keys);
		return true;
	}
	return false;
}

bool call_input_failed(struct call *c, const struct jd *d)
{
	c->d = *d;
	return call_decode_failed(c);
}

static void call_free(struct call *c)
{
	jw_free(&c->out);
	if (c->body)
		json_decref(c->body);
	if (c->parsed)
		c->route->reader->release(c->parsed);
	free(c);
}

/* The reply of a call another transport runs (call_run): its JSON text goes to the sink. */
static void finish_sink(struct call *c)
{
	char *data = NULL;
	size_t len = 0;

	if (c->http_status == 200 && !c->typed.run) {
		jw_obj_end(&c->out);
		data = jw_take(&c->out, &len);
	}
	metrics_request(c->k->metrics, c->sink.metric_slot, c->code, c->http_status, clock_ns() - c->t0_ns);
	if (c->typed.run)
		c->sink.reply_typed(c->sink.arg, c->http_status, &c->hdr);
	else
		c->sink.reply(c->sink.arg, c->http_status, c->code, data, len);
	call_free(c);
}

static void finish_call(void *arg)
{
	struct call *c = arg;
	struct evbuffer *buf;
	char *data;
	size_t len;

	if (c->http_status == 200 && c->out.oom)
		c->http_status = 500;
	if (!c->req) {
		finish_sink(c);
		return;
	}
	if (c->http_status != 200) {
		send_raw(c->conn, c->req, c->http_status, "{}", false);
	} else {
		if (conn_closing(c->conn))
			evhttp_add_header(evhttp_request_get_output_headers(c->req), "Connection", "close");
		conn_end(c->conn, c->req);
		jw_obj_end(&c->out);
		data = jw_take(&c->out, &len);
		buf = evhttp_request_get_output_buffer(c->req);
		evhttp_add_header(evhttp_request_get_output_headers(c->req), "Content-Type", "application/json");
		if (evbuffer_add_reference(buf, data, len, free_buf, NULL))
			free(data);
		evhttp_send_reply(c->req, 200, "OK", NULL);
	}
	metrics_request(c->k->metrics, c->srv->metric_slots[c->route - c->srv->routes], c->code, c->http_status,
	                clock_ns() - c->t0_ns);
	call_free(c);
}

/* A call that waited for a commit: if a commit since its start failed, its change is not durable. */
static void finish_after_commit(void *arg)
{
	struct call *c = arg;

	if (persist_failed_seq(c->k->persist) > c->durable0 && c->http_status == 200)
		call_fail(c, KC_INTERNAL_ERROR, "the metadata commit failed: the change is not durable");
	finish_call(c);
}

static const struct route *find_route(struct http_server *s, const char *path)
{
	if (strncmp(path, "/api/", 5) != 0)
		return NULL;
	for (size_t i = 0; i < s->nroutes; i++)
		if (strcmp(s->routes[i].name, path + 5) == 0)
			return (s->routes[i].flags & ROUTE_DEBUG) && !s->k->conf.debug_service ? NULL : &s->routes[i];
	return NULL;
}

/* §1.6: instance-scoped APIs answer an unknown or empty instance_id before any validation. */
static bool precheck_instance(struct call *c)
{
	json_t *v = c->typed.run ? NULL : jd_get(c->body, "instance_id");
	const char *id = c->typed.run ? c->typed.instance_id : json_is_string(v) ? json_string_value(v) : "";

	c->inst = instance_find(c->k, id);
	if (c->inst)
		return true;
	if (id[0])
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance \"%.256s\" does not exist", id);
	else
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance_id is empty");
	return false;
}

/* The body read by the route's streaming reader, else by jansson when it is small enough to build a tree of; the
 * same for every transport. */
static void read_text(struct call *c, const char *body, size_t len)
{
	const struct route *r = c->route;

	if (body && r->reader && r->reader->read(c, body, len)) {
		metrics_fast_read(c->k->metrics);
	} else if (len > c->k->conf.max_json_body_bytes ||
	           jd_containers_over(body, len, CONTAINERS_PER_KEY * (size_t)c->k->conf.max_keys + CONTAINERS_SLACK)) {
		/* jansson takes about 15 bytes of memory per byte of a key list, and hundreds per object or array: a
		 * body that would take more is refused, not built */
		c->http_status = 413;
		return;
	} else {
		c->body = jd_parse(body, len);
	}
	if (!c->body || (jd_get(c->body, "trace_id") && !json_is_string(jd_get(c->body, "trace_id"))))
		call_bad_request(c);
}

static void read_body(struct call *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in);

	if (!c->route->reader && len > c->k->conf.max_json_body_bytes) {
		c->http_status = 413; /* not even pulled up */
		return;
	}
	read_text(c, (const char *)evbuffer_pullup(in, (ev_ssize_t)len), len);
}

static struct call *call_new(struct kvcm *k, const struct route *r)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->k = k;
	c->route = r;
	c->http_status = 200;
	c->t0_ns = clock_ns();
	c->writes0 = k->store.writes;
	c->durable0 = k->persist ? persist_durable_seq(k->persist) : 0; /* NULL: a standby (leader election) */
	jw_init(&c->out);
	c->out.max = REPLY_MAX;
	return c;
}

/* A standby (or a leader still loading, or one whose lease just ended) answers every leader-only call
 * SERVER_NOT_LEADER "Server is not leader", as the reference does (HTTP 200), and, over HTTP, names the leader's URL
 * on the same kind of port in X-MMC-Leader. */
static bool standby_refuse(struct call *c)
{
	struct ha_holder l;
	char url[512];

	if (c->route->flags & ROUTE_ANY_NODE)
		return false;
	if (!c->k->ha) { /* one server: refusing only while a leaderDemote keeps it out; its debug service goes on */
		if (!kvcm_demoted(c->k) || (c->route->flags & ROUTE_DEBUG))
			return false;
		call_fail(c, KC_SERVER_NOT_LEADER, "Server is not leader");
		return true;
	}
	if (ha_serving(c->k->ha))
		return false;
	ha_leader(c->k->ha, &l);
	if (c->req && l.node_id[0] && l.host[0] && strcmp(l.node_id, ha_self(c->k->ha)->node_id) != 0) {
		bool v6 = strchr(l.host, ':') != NULL; /* an IPv6 literal: bracketed, as in any URL */

		snprintf(url, sizeof(url), "http://%s%s%s:%u", v6 ? "[" : "", l.host, v6 ? "]" : "",
		         (c->srv && c->srv->admin) ? l.admin_port : l.http_port);
		evhttp_add_header(evhttp_request_get_output_headers(c->req), "X-MMC-Leader", url);
	}
	call_fail(c, KC_SERVER_NOT_LEADER, "Server is not leader");
	return true;
}

/* A reply that acknowledges a change waits for the commit holding it: the call's own writes, or, for a call that may
 * change state but found it done already (a retried registerInstance), the writes still pending. */
static void call_complete(struct call *c)
{
	struct kvcm *k = c->k;

	if (k->persist &&
	    (k->store.writes != c->writes0 || (!(c->route->flags & ROUTE_READ) && persist_dirty(k->persist))) &&
	    persist_after_commit(k->persist, finish_after_commit, c) == 0)
		return;
	finish_call(c);
}

/* The part of a call after its body is read, whatever the transport. */
static void call_exec(struct call *c)
{
	const struct route *r = c->route;

	if (c->http_status == 200 && standby_refuse(c))
		;
	else if (c->http_status == 200 && (!(r->flags & ROUTE_INSTANCE) || precheck_instance(c))) {
		c->running = true;
		(c->typed.run ? c->typed.run : r->fn)(c);
		c->running = false;
	}
	if (!c->deferred)
		call_complete(c);
}

void call_defer(struct call *c)
{
	c->deferred = true;
}

void call_resume(struct call *c)
{
	c->deferred = false;
	if (!c->running)
		call_complete(c);
}

void call_run(struct kvcm *k, const struct route *r, const char *body, size_t len, const struct call_sink *sink)
{
	struct call *c = call_new(k, r);

	if (!c) {
		sink->reply(sink->arg, 500, KC_INTERNAL_ERROR, NULL, 0);
		return;
	}
	c->sink = *sink;
	read_text(c, body, len);
	call_exec(c);
}

void call_run_typed(struct kvcm *k, const struct route *r, const struct call_typed *t, const struct call_sink *sink)
{
	struct call *c = call_new(k, r);

	if (!c) {
		sink->reply_typed(sink->arg, 500, NULL);
		return;
	}
	c->sink = *sink;
	c->typed = *t;
	call_exec(c);
}

static void run_call(struct http_server *s, struct hconn *conn, struct evhttp_request *req, const struct route *r)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct call *c = call_new(s->k, r);

	if (!c) {
		send_raw(conn, req, 500, "{}", true);
		return;
	}
	conn_attach(conn, c);
	c->req = req;
	c->srv = s;
	read_body(c, in);
	if (c->http_status == 413)
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=kvcm_reject api=%s reason=max_json_body_size bytes=%zu",
		                r->name, evbuffer_get_length(in));
	call_exec(c);
}

/* RFC 9112 §6.3: a second Content-Length, or one beside Transfer-Encoding, makes the framing ambiguous (request
 * smuggling behind a proxy that reads it the other way). */
static bool framing_ok(struct evhttp_request *req)
{
	struct evkeyval *kv;
	int lengths = 0, encodings = 0;

	for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
		lengths += strcasecmp(kv->key, "Content-Length") == 0;
		encodings += strcasecmp(kv->key, "Transfer-Encoding") == 0;
	}
	return lengths <= 1 && !(lengths && encodings);
}

void http_server_text_routes(struct http_server *s, const struct text_route *routes)
{
	s->text_routes = routes;
}

static const struct text_route *find_text_route(const struct http_server *s, const char *path)
{
	for (const struct text_route *t = s->text_routes; t && t->path; t++)
		if (strcmp(t->path, path) == 0)
			return t;
	return NULL;
}

/* A text page: true when path is one (answered), false to go on. */
static bool serve_text(struct http_server *s, struct evhttp_request *req, const char *path)
{
	const struct text_route *t = find_text_route(s, path);
	struct evbuffer *b;
	int status;

	if (!t || !(b = evbuffer_new()))
		return false;
	status = t->fn(s->k, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, status, reason_of(status), b);
	evbuffer_free(b);
	return true;
}

/* GET /metrics, /api/healthy and the text pages on the admin port answer loopback peers without credentials. */
static bool open_path(struct http_server *s, struct hconn *conn, enum evhttp_cmd_type cmd, const char *path)
{
	return s->admin && cmd == EVHTTP_REQ_GET && conn_is_local(conn) &&
	       (strcmp(path, "/metrics") == 0 || strcmp(path, "/api/healthy") == 0 || find_text_route(s, path));
}

/* The request's credentials: the verdict its header block got as it arrived (http_conn.c), else judged now. */
static int check_credentials(struct http_server *s, struct hconn *conn, struct evhttp_request *req)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	int status = conn_head_verdict(conn, a);

	return status ? auth_report(s->k, status, a, evhttp_request_get_uri(req), &s->log_bucket)
	              : auth_check(s->k, req, s->admin, &s->log_bucket);
}

static void gen_cb(struct evhttp_request *req, void *arg)
{
	struct http_server *s = arg;
	struct hconn *conn = conn_begin(&s->pool, req);
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const struct route *r;
	int status;

	if (conn_refused(conn)) {
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=kvcm_reject reason=max_connections limit=%u",
		                s->pool.max);
		metrics_rejected(s->k->metrics);
		send_raw(conn, req, 503, "{}", true);
		return;
	}
	if (!framing_ok(req)) {
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=kvcm_bad_request reason=ambiguous_content_length");
		send_raw(conn, req, 400, "{}", true);
		return;
	}
	if (!path)
		path = "";
	if (!open_path(s, conn, cmd, path) && (status = check_credentials(s, conn, req)) != 200) {
		send_raw(conn, req, status,
		         status == 401 ? "{\"error\":\"unauthorized\"}" : "{\"error\":\"forbidden\"}", false);
		return;
	}
	if (s->admin && cmd == EVHTTP_REQ_GET) {
		conn_end(conn, req);
		if (metrics_serve_get(s->k, req, path) || serve_text(s, req, path))
			return;
		conn = NULL;
	}
	r = find_route(s, path);
	if (!r || cmd != EVHTTP_REQ_POST) {
		send_raw(conn, req, 404, "{}", false);
		return;
	}
	run_call(s, conn, req, r);
}

int http_server_start(struct http_server **out, struct kvcm *k, const char *bind, uint16_t port,
                      const struct route *routes, bool admin, uint16_t *bound, struct meta_err *e)
{
	struct http_server *s = calloc(1, sizeof(*s));
	const char *what = admin ? "admin" : "KVCM";
	struct evhttp_bound_socket *bs;
	struct sockaddr_storage ss;
	ev_socklen_t sl = sizeof(ss);

	if (!s) {
		meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the %s HTTP server", what);
		return MMC_MALLOC_FAILED;
	}
	s->k = k;
	s->admin = admin;
	s->routes = routes;
	if (http_tls_ctx(&k->conf, &s->tls, e->message, sizeof(e->message))) {
		meta_err_fail(e, EXIT_CONFIG, NULL);
		http_server_stop(s);
		return MMC_ERROR;
	}
	if (conn_pool_init(&s->pool, k, s->tls, admin,
	                   conn_fit_limit(k->conf.max_connections, "kvcm.service.max_connections"))) {
		meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the %s HTTP connections", what);
		http_server_stop(s);
		return MMC_ERROR;
	}
	while (routes[s->nroutes].name)
		s->nroutes++;
	s->metric_slots = calloc(s->nroutes + 1, sizeof(int));
	s->http = evhttp_new(k->base);
	if (!s->metric_slots || !s->http) {
		meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the %s HTTP server", what);
		goto fail;
	}
	for (size_t i = 0; i < s->nroutes; i++)
		s->metric_slots[i] = metrics_slot(k->metrics, routes[i].name);
	evhttp_set_max_body_size(s->http, (ev_ssize_t)k->conf.max_body_bytes);
	evhttp_set_max_headers_size(s->http, HTTP_MAX_HEADERS_BYTES);
	evhttp_set_timeout(s->http, (int)k->conf.idle_timeout_s);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	                                        EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(s->http, gen_cb, s);
	evhttp_set_bevcb(s->http, conn_bev_new, &s->pool);
	bs = evhttp_bind_socket_with_handle(s->http, bind, port);
	if (!bs) {
		meta_err_set(e, EXIT_LISTEN, NULL, "cannot listen on %s:%u for %s HTTP: %s", bind, port, what,
		             strerror(errno));
		goto fail;
	}
	conn_pool_listen(&s->pool, evhttp_bound_socket_get_listener(bs));
	if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
		*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                        : ((struct sockaddr_in *)&ss)->sin_port);
	*out = s;
	return 0;
fail:
	http_server_stop(s);
	return MMC_ERROR;
}

/* A bind other hosts reach, on one address: loopback peers (a local Prometheus agent, health probes) reach the
 * port only through a listener of their own. "0.0.0.0" and "::" take them already. */
static bool bind_misses_loopback(const char *bind)
{
	return bind[0] && strcmp(bind, "0.0.0.0") != 0 && strcmp(bind, "::") != 0 && !tcp_host_is_loopback(bind);
}

int http_server_listen_loopback(struct http_server *s, const char *bind, uint16_t port)
{
	const char *lo = strchr(bind, ':') ? "::1" : "127.0.0.1";
	struct evhttp_bound_socket *bs;

	if (!bind_misses_loopback(bind))
		return 0;
	bs = evhttp_bind_socket_with_handle(s->http, lo, port);
	if (!bs) {
		log_warn("op=kvcm_start warning=loopback_listener addr=%s port=%u err=\"%s\" note=\"local agents must "
		         "reach the admin port at %s, with credentials\"",
		         lo, port, strerror(errno), bind);
		return MMC_ERROR;
	}
	conn_pool_listen(&s->pool, evhttp_bound_socket_get_listener(bs));
	log_info("op=kvcm_start loopback_listener=%s port=%u note=\"GET /metrics and /api/healthy for local agents\"",
	         lo, port);
	return 0;
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	if (s->http)
		evhttp_free(s->http);
	conn_pool_fini(&s->pool);
	SSL_CTX_free(s->tls);
	free(s->metric_slots);
	free(s);
}
