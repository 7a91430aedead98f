/*
 * One unary gRPC call on an HTTP/2 stream: the method named by :path, the 5-byte length prefix, the protobuf-c
 * request, the call, and the status in grpc-status / grpc-message trailers. The hot calls run typed
 * (typed_call.h): the request read into the handler's input, the reply encoded from its result. The others are
 * mapped to the HTTP API's JSON and run by the route's handler through call_run(), their JSON reply mapped into
 * the response message.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_auth.h"
#include "grpc_stream.h"
#include "http.h"
#include "kvcm_state.h"
#include "log.h"
#include "metrics.h"
#include "pb_json.h"
#include "typed_call.h"
#include "typed_reply.h"

/* gRPC status codes (grpc/status.h) */
enum {
	GS_OK = 0,
	GS_DEADLINE_EXCEEDED = 4,
	GS_RESOURCE_EXHAUSTED = 8,
	GS_UNIMPLEMENTED = 12,
	GS_INTERNAL = 13,
	GS_INVALID_ARGUMENT = 3,
};

/* What a request message may take in memory once decoded: protobuf-c notes each field it meets (40 bytes) before it
 * builds the message, so a list of one-letter strings takes 19 times its bytes, of empty strings 28; empty
 * sub-messages take 50 times theirs and more. */
#define UNPACK_PER_BYTE 32
#define UNPACK_SLACK    (64u << 10)

#define NV(n, v)                                                                                                       \
	{                                                                                                              \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE                         \
	}

/* grpc-message is percent-encoded: everything outside printable ASCII, and '%' itself. */
static void percent_encode(char *out, size_t cap, const char *in)
{
	size_t o = 0;

	for (; *in && o + 4 < cap; in++) {
		unsigned char ch = (unsigned char)*in;

		if (ch < 0x20 || ch > 0x7e || ch == '%')
			o += (size_t)snprintf(out + o, cap - o, "%%%02X", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
}

static void set_trailers(struct h2_stream *st, int status, const char *message)
{
	st->status = status;
	snprintf(st->status_text, sizeof(st->status_text), "%d", status);
	percent_encode(st->message, sizeof(st->message), message);
	st->trailers[0] = (nghttp2_nv)NV("grpc-status", st->status_text);
	st->trailers[1] = (nghttp2_nv)NV("grpc-message", st->message);
}

void grpc_call_fail(struct h2_stream *st, int status, const char *message)
{
	nghttp2_nv hdrs[4] = {NV(":status", "200"), NV("content-type", "application/grpc")};

	if (st->answered || !st->conn)
		return;
	st->answered = true;
	set_trailers(st, status, message);
	hdrs[2] = st->trailers[0];
	hdrs[3] = st->trailers[1];
	/* trailers-only: one HEADERS frame ending the stream */
	nghttp2_submit_response(st->conn->ng, st->id, hdrs, 4, NULL);
}

void grpc_call_refuse(struct h2_stream *st, int status, const char *why)
{
	h2_stream_drained(st);
	grpc_call_fail(st, status, why);
	st->rst_after = NGHTTP2_NO_ERROR + 1; /* the rest of the message is not wanted */
}

void grpc_call_too_large(struct h2_stream *st, const char *why, uint64_t limit)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s (%llu bytes)", why, (unsigned long long)limit);
	grpc_call_refuse(st, GS_RESOURCE_EXHAUSTED, msg);
}

void grpc_call_arrival_due(int fd, short what, void *arg)
{
	struct h2_stream *st = arg;

	(void)fd;
	(void)what;
	if (!st->conn || st->answered || st->call_pending)
		return;
	grpc_call_refuse(st, GS_DEADLINE_EXCEEDED,
	                 "the request did not arrive whole within kvcm.service.request_timeout_ms");
	h2_flush(st->conn);
}

void grpc_call_deadline(int fd, short what, void *arg)
{
	struct h2_stream *st = arg;
	struct h2_conn *c = st->conn;

	(void)fd;
	(void)what;
	if (!c || st->answered)
		return;
	grpc_call_fail(st, GS_DEADLINE_EXCEEDED, "deadline exceeded");
	st->rst_after = NGHTTP2_NO_ERROR + 1; /* RFC 9113 8.1: a complete response, the rest of the request unwanted */
	h2_flush(c);
}

static ssize_t body_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *arg)
{
	struct h2_stream *st = src->ptr;
	size_t n = st->out_len - st->out_off;

	(void)arg;
	if (n > len)
		n = len;
	memcpy(buf, st->out + st->out_off, n);
	st->out_off += n;
	h2_held_sub(st->conn, n, true);
	if (st->out_off == st->out_len) {
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(ng, id, st->trailers, 2))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

/* Room for the response message of n bytes after its 5-byte prefix, in st->out; NULL when the stream has been
 * answered instead (too large, out of memory). */
static uint8_t *message_space(struct h2_stream *st, size_t n)
{
	if (n > st->conn->s->k->conf.grpc_max_message_bytes) {
		grpc_call_fail(st, GS_RESOURCE_EXHAUSTED,
		               "response message larger than kvcm.service.grpc_max_message_size");
		return NULL;
	}
	if (st->conn->held + n + 5 > h2_held_max(st->conn)) { /* flow control holds this connection's replies back */
		grpc_call_fail(st, GS_RESOURCE_EXHAUSTED,
		               "this connection's earlier responses are not read yet: it may hold 4 x "
		               "kvcm.service.grpc_max_message_size of them");
		return NULL;
	}
	if (!(st->out = malloc(n + 5))) {
		grpc_call_fail(st, GS_INTERNAL, "out of memory");
		return NULL;
	}
	h2_held_add(st->conn, n + 5);
	st->out[0] = 0;
	st->out[1] = (uint8_t)(n >> 24);
	st->out[2] = (uint8_t)(n >> 16);
	st->out[3] = (uint8_t)(n >> 8);
	st->out[4] = (uint8_t)n;
	st->out_len = n + 5;
	return st->out + 5;
}

/* The response in st->out goes, status OK. */
static void send_out(struct h2_stream *st)
{
	nghttp2_nv hdrs[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
	nghttp2_data_provider prd = {{.ptr = st}, body_read};

	st->answered = true;
	set_trailers(st, GS_OK, "");
	nghttp2_submit_response(st->conn->ng, st->id, hdrs, 2, &prd);
}

static void send_message(struct h2_stream *st, const ProtobufCMessage *m)
{
	uint8_t *p = message_space(st, protobuf_c_message_get_packed_size(m));

	if (!p)
		return;
	protobuf_c_message_pack(m, p);
	send_out(st);
}

/* The handler's JSON reply as the method's response message: read straight from the text, or by jansson. */
static void reply_json(struct h2_stream *st, const char *json, size_t len)
{
	struct grpc_server *s = st->conn->s;
	struct pb_arena a = {0};
	unsigned dropped = 0;
	ProtobufCMessage *m = pb_reply_text(&a, st->method->output, json, len, &dropped);
	json_t *j;

	if (!m) {
		pb_arena_free(&a);
		a = (struct pb_arena){0};
		dropped = 0;
		j = json_loadb(json, len, 0, NULL);
		m = j ? pb_reply_tree(&a, st->method->output, j, &dropped) : NULL;
		json_decref(j);
	}
	if (!m) {
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_reply_unmappable api=%s", st->route->name);
		grpc_call_fail(st, GS_INTERNAL, "the reply does not map to the response message");
	} else {
		if (dropped)
			log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_reply_fields_dropped api=%s fields=%u",
			                st->route->name, dropped);
		send_message(st, m);
	}
	pb_arena_free(&a);
}

/* A reply whose HTTP status is not 200 answered as its gRPC status; false for 200. */
static bool failed(struct h2_stream *st, int http_status)
{
	if (http_status == 400)
		grpc_call_fail(st, GS_INVALID_ARGUMENT, "malformed request (HTTP would answer 400)");
	else if (http_status == 413)
		grpc_call_fail(st, GS_RESOURCE_EXHAUSTED, "request larger than kvcm.service.max_json_body_size");
	else if (http_status != 200)
		grpc_call_fail(st, GS_INTERNAL, "internal error");
	return http_status != 200;
}

/* The call is over: false when its stream went meanwhile (cancelled, or its connection closed), and is freed. */
static bool still_wanted(struct h2_stream *st)
{
	st->call_pending = false;
	if (st->conn)
		return true;
	h2_stream_free(st);
	return false;
}

static void on_reply(void *arg, int http_status, int code, char *json, size_t len)
{
	struct h2_stream *st = arg;

	(void)code;
	if (still_wanted(st)) {
		if (!st->answered && !failed(st, http_status))
			reply_json(st, json, len);
		h2_flush(st->conn);
	}
	free(json);
}

/* A typed call's reply: its header in front of the fields its run encoded (none on an error). The JSON way checks
 * every reply string is UTF-8 when reading it back; only these two can be otherwise (a cut at 256 bytes). */
static void reply_typed(struct h2_stream *st, const struct call_header *h, const struct pbw *fields)
{
	struct pbw head;
	size_t nf = h->fields ? fields->len : 0;
	uint8_t *p;

	if (!pb_utf8(h->message) || !pb_utf8(h->request_id)) {
		log_ratelimited(&st->conn->s->log_bucket, LOG_WARN, "op=grpc_reply_unmappable api=%s", st->route->name);
		grpc_call_fail(st, GS_INTERNAL, "the reply does not map to the response message");
		return;
	}
	pbw_init(&head);
	pb_header(&head, h);
	if (head.oom || (h->fields && fields->oom))
		grpc_call_fail(st, GS_INTERNAL, "internal error");
	else if ((p = message_space(st, head.len + nf))) {
		memcpy(p, head.buf, head.len);
		if (nf)
			memcpy(p + head.len, fields->buf, nf);
		send_out(st);
	}
	pbw_free(&head);
}

static void on_reply_typed(void *arg, int http_status, const struct call_header *h)
{
	struct typed_call *t = arg;
	struct h2_stream *st = t->st;

	if (still_wanted(st)) {
		if (!st->answered && !failed(st, http_status))
			reply_typed(st, h, &t->out);
		h2_flush(st->conn);
	}
	pbw_free(&t->out);
	pb_arena_free(&t->arena);
	free(t);
}

/* ":path" is /<package>.<Service>/<Method>; the route is the method's name in lowerCamel. */
static bool resolve(struct h2_stream *st, const char **why)
{
	const struct grpc_server *s = st->conn->s;
	const char *slash = st->path[0] == '/' ? strchr(st->path + 1, '/') : NULL;
	char service[192], route[128];
	size_t n;

	*why = "unknown service";
	if (!slash || (n = (size_t)(slash - st->path - 1)) >= sizeof(service))
		return false;
	memcpy(service, st->path + 1, n);
	service[n] = '\0';
	for (const struct grpc_service *g = s->services; g->desc; g++) {
		if (strcmp(g->desc->name, service) != 0 || (g->debug && !s->k->conf.debug_service))
			continue;
		*why = "unknown method";
		st->method = protobuf_c_service_descriptor_get_method_by_name(g->desc, slash + 1);
		if (!st->method || strlen(slash + 1) >= sizeof(route))
			return false;
		snprintf(route, sizeof(route), "%c%s", slash[1] + ('a' - 'A') * (slash[1] >= 'A' && slash[1] <= 'Z'),
		         slash + 2);
		*why = "method not implemented by mmc";
		for (const struct route *r = g->routes; r->name; r++)
			if (strcmp(r->name, route) == 0 && (!(r->flags & ROUTE_DEBUG) || s->k->conf.debug_service)) {
				st->route = r;
				return true;
			}
		return false;
	}
	return false;
}

/* The one length-prefixed, uncompressed message of a unary request, in arena a; NULL (status set) when
 * malformed. */
static ProtobufCMessage *read_request(struct h2_stream *st, struct pb_arena *a, int *status, const char **why)
{
	size_t len = evbuffer_get_length(st->in);
	const uint8_t *b = evbuffer_pullup(st->in, -1);
	ProtobufCAllocator al = pb_arena_allocator(a);
	ProtobufCMessage *m;
	uint32_t n;

	*status = GS_INTERNAL;
	*why = "malformed gRPC frame";
	if (len < 5 || (b[0] & ~1u))
		return NULL;
	n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if (b[0] & 1) {
		*why = "compressed messages are not supported (no grpc-encoding is accepted)";
		return NULL;
	}
	if ((size_t)n + 5 != len)
		return NULL;
	/* a message of small sub-messages decodes to 50 times its bytes and more (each a struct): bounded, so that a
	 * 4 MiB request cannot take gigabytes and seconds of the loop every client shares */
	a->budget = (size_t)n * UNPACK_PER_BYTE + UNPACK_SLACK;
	m = protobuf_c_message_unpack(st->method->input, &al, n, b + 5);
	a->budget = 0;
	if (!m && a->over) {
		*status = GS_RESOURCE_EXHAUSTED;
		*why = "the request message decodes to too many fields (more than 32 bytes of memory per byte)";
	} else if (!m) {
		*why = "the request message does not decode";
	}
	return m;
}

static bool headers_ok(struct h2_stream *st)
{
	nghttp2_nv hdrs[] = {NV(":status", "415")};

	if (strncmp(st->content_type, "application/grpc", 16) == 0 &&
	    (st->content_type[16] == '\0' || st->content_type[16] == '+' || st->content_type[16] == ';'))
		return true;
	st->answered = true;
	nghttp2_submit_response(st->conn->ng, st->id, hdrs, 1, NULL);
	return false;
}

/* Whether a call on path needs an admin account: that of its service (a port may serve both kinds), or for a
 * service the port does not serve, the port's own (so nothing is learnt before the credentials are checked). */
static bool needs_admin(const struct grpc_server *s, const char *path)
{
	const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
	size_t n = slash ? (size_t)(slash - path - 1) : 0;

	for (const struct grpc_service *g = s->services; slash && g->desc; g++)
		if (strlen(g->desc->name) == n && strncmp(g->desc->name, path + 1, n) == 0)
			return g->admin;
	return s->admin;
}

bool grpc_call_authorize(struct h2_stream *st)
{
	struct grpc_server *s = st->conn->s;
	int refused;

	if (st->authorized)
		return true;
	refused = grpc_auth_check(s->k, needs_admin(s, st->path), st->authorization, st->path, &s->log_bucket);
	if (refused) /* RST_STREAM after the answer while the peer still sends: the stream's slot goes at once */
		grpc_call_refuse(st, refused, refused == GRPC_UNAUTHENTICATED ? "credentials refused" : "forbidden");
	st->authorized = !refused;
	return !refused;
}

/* The checks before the message is read; false when the stream has been answered. */
static bool admit(struct h2_stream *st)
{
	const char *why;

	if (!headers_ok(st))
		return false;
	if (st->bad_header)
		grpc_call_fail(st, GS_INTERNAL, "malformed request headers");
	else if (!grpc_call_authorize(st))
		return false;
	else if (!resolve(st, &why))
		grpc_call_fail(st, GS_UNIMPLEMENTED, why);
	return !st->answered;
}

/* A request pb_request_json could not write: a NaN or infinite number is the caller's mistake, anything else ours. */
static void refuse_unmapped(struct h2_stream *st, const char *field)
{
	char why[320];

	if (!field[0]) {
		grpc_call_fail(st, GS_INTERNAL, "the request does not map to JSON");
		return;
	}
	snprintf(why, sizeof(why), "%s: NaN and infinity are not valid numbers here", field);
	log_ratelimited(&st->conn->s->log_bucket, LOG_WARN, "op=grpc_bad_request api=%s why=\"%s\"", st->route->name,
	                why);
	grpc_call_fail(st, GS_INVALID_ARGUMENT, why);
}

/* A string member of m (trace_id, instance_id), "" when m has none. */
static const char *str_member(const ProtobufCMessage *m, const char *name)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);

	return f && f->type == PROTOBUF_C_TYPE_STRING && f->label != PROTOBUF_C_LABEL_REPEATED
	           ? *(char *const *)((const char *)m + f->offset)
	           : "";
}

/* Runs the call typed when its method has a typed form and m reads straight; then the call owns m and its arena
 * a. */
static bool start_typed(struct h2_stream *st, ProtobufCMessage *m, struct pb_arena *a)
{
	struct grpc_server *s = st->conn->s;
	typed_run_fn *run = typed_run(st->method);
	struct call_sink sink = {on_reply, NULL, -1, &s->log_bucket, on_reply_typed};
	struct typed_call *t;

	if (!run || !pb_request_plain(m) || !(t = calloc(1, sizeof(*t))))
		return false;
	t->st = st;
	t->req = m;
	t->arena = *a;
	pbw_init(&t->out);
	sink.arg = t;
	sink.metric_slot = metrics_slot(s->k->metrics, st->route->name);
	h2_stream_drained(st);
	st->call_pending = true;
	call_run_typed(s->k, st->route,
	               &(struct call_typed){run, t, str_member(m, "instance_id"), str_member(m, "trace_id")}, &sink);
	return true;
}

void grpc_call_start(struct h2_stream *st)
{
	struct grpc_server *s = st->conn->s;
	struct call_sink sink = {on_reply, st, -1, &s->log_bucket, NULL};
	struct pb_arena a = {0};
	char field[256];
	ProtobufCMessage *m;
	const char *why;
	struct jw body;
	int status;
	bool ok;

	if (!admit(st))
		return;
	if (!(m = read_request(st, &a, &status, &why))) {
		pb_arena_free(&a);
		log_ratelimited(&s->log_bucket, LOG_WARN, "op=grpc_bad_request api=%s why=\"%s\"", st->route->name,
		                why);
		grpc_call_fail(st, status, why);
		return;
	}
	if (start_typed(st, m, &a))
		return;
	jw_init(&body);
	ok = pb_request_json(m, &body, field, sizeof(field));
	pb_arena_free(&a);
	h2_stream_drained(st);
	if (!ok) {
		jw_free(&body);
		refuse_unmapped(st, field);
		return;
	}
	sink.metric_slot = metrics_slot(s->k->metrics, st->route->name);
	st->call_pending = true;
	call_run(s->k, st->route, body.buf, body.len, &sink);
	jw_free(&body);
}
