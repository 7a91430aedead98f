/*
 * libFuzzer target: what a gRPC peer's bytes reach before a handler runs. The input goes through the idle
 * RST_STREAM filter in front of nghttp2 (grpc/h2_idle_rst.c), which may only drop bytes; then its first two bytes
 * choose a service and a method and the rest is decoded as that method's request by protobuf-c and written as the
 * JSON the handlers read (grpc/pb_request.c). That JSON must be what jd_parse reads exactly when pb_request_plain
 * says the message reads straight (every string UTF-8, no map repeating a key): the server answers the others the
 * JSON way (INVALID_ARGUMENT, as HTTP answers 400). A NaN or an infinity has no JSON form: the mapping refuses it
 * (the server answers INVALID_ARGUMENT naming the field). For the hot calls, a plain message read straight into
 * the handler's input (grpc/typed_request.c) must give what the HTTP reader gives from that JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin_service.pb-c.h"
#include "debug_service.pb-c.h"
#include "h2_idle_rst.h"
#include "json_in.h"
#include "kvcm_state.h"
#include "meta_service.pb-c.h"
#include "pb_json.h"
#include "typed_request.h"

#define MAX_KEYS 8 /* kvcm.service.max_keys_per_request: small, so that inputs go over it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCServiceDescriptor *const services[] = {
    &kv_cache_manager__proto__meta__meta_service__descriptor,
    &kv_cache_manager__proto__admin__admin_service__descriptor,
    &kv_cache_manager__proto__debug__debug_service__descriptor,
};

static long count(void *arg, const uint8_t *d, size_t n)
{
	(void)d;
	*(size_t *)arg += n;
	return 0;
}

#define CHECK(x)                                                                                                       \
	do {                                                                                                           \
		if (!(x))                                                                                              \
			abort();                                                                                       \
	} while (0)

static void same_str(const char *a, const char *b)
{
	CHECK(!a == !b && (!a || strcmp(a, b) == 0));
}

static void same_strs(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	CHECK(na == nb);
	for (size_t i = 0; i < na; i++)
		same_str(a[i], b[i]);
}

static void same_jd(const struct jd *a, const struct jd *b)
{
	CHECK(a->bad == b->bad && a->too_many == b->too_many);
}

static void same_i64s(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
	CHECK(na == nb && (!na || memcmp(a, b, na * sizeof(*a)) == 0));
}

static void same_keys(const struct key_input *a, const struct key_input *b)
{
	same_jd(&a->d, &b->d);
	same_i64s(a->block_keys, a->nblock, b->block_keys, b->nblock);
	same_i64s(a->tokens, a->ntokens, b->tokens, b->ntokens);
}

static void same_mask(const struct mask *a, const struct mask *b)
{
	CHECK(a->kind == b->kind && a->nvalues == b->nvalues);
	if (a->kind == MASK_OFFSET)
		CHECK(a->offset == b->offset);
	for (size_t i = 0; a->kind == MASK_BOOLS && i < a->nvalues; i++)
		CHECK(a->values[i] == b->values[i]);
}

static void same_block(const struct er_block *a, const struct er_block *b, bool uris)
{
	CHECK(a->key == b->key && a->nspecs == b->nspecs);
	same_str(a->medium, b->medium);
	for (size_t i = 0; i < a->nspecs; i++) {
		same_str(a->specs[i].name, b->specs[i].name);
		if (uris)
			same_str(a->specs[i].uri, b->specs[i].uri);
	}
}

static void same_event(const struct er_event *a, const struct er_event *b)
{
	CHECK(a->declared == b->declared && a->type == b->type);
	if (a->type == EV_ADD || a->type == EV_DELETE)
		same_block(&a->b, &b->b, a->type == EV_ADD);
	if (a->type == EV_REGISTER || a->type == EV_HEARTBEAT)
		CHECK(a->b.nspecs == b->b.nspecs);
	for (size_t i = 0; a->type == EV_REGISTER && i < a->b.nspecs; i++)
		same_str(a->b.specs[i].name, b->b.specs[i].name);
	if (a->type == EV_SNAPSHOT) {
		CHECK(a->nblocks == b->nblocks);
		for (size_t i = 0; i < a->nblocks; i++)
			same_block(&a->blocks[i], &b->blocks[i], true);
	}
}

static void location_query(struct call *c, const ProtobufCMessage *m)
{
	struct location_query p = {0}, j = {0};

	location_query_pb(c, (const pb_location_request *)m, &p);
	location_query_json(c, &j, true);
	CHECK(p.query_type == j.query_type && p.sw_size == j.sw_size);
	same_jd(&p.head, &j.head);
	same_jd(&p.in_mask, &j.in_mask);
	same_strs(p.filter.names, p.filter.n, j.filter.names, j.filter.n);
	same_mask(&p.mask, &j.mask);
	same_keys(&p.in_keys, &j.in_keys);
	location_query_free(c, &p);
	location_query_free(c, &j);
}

static void write_request(struct call *c, const ProtobufCMessage *m)
{
	struct write_request p, j;

	write_request_pb(c, (const pb_write_request *)m, &p);
	write_request_json(c, &j);
	CHECK(p.timeout_s == j.timeout_s && p.min_replicas == j.min_replicas && p.is_replication == j.is_replication);
	same_str(p.target_node, j.target_node);
	same_jd(&p.head, &j.head);
	same_jd(&p.in_groups, &j.in_groups);
	same_keys(&p.keys, &j.keys);
	same_strs(p.groups, p.ngroups, j.groups, j.ngroups);
	write_request_free(&p);
	write_request_free(&j);
}

static void finish_request(struct call *c, const ProtobufCMessage *m)
{
	struct finish_request p, j;

	finish_request_pb(c, (const pb_finish_request *)m, &p);
	finish_request_json(c, &j);
	same_str(p.session_id, j.session_id);
	CHECK(p.has_success_blocks == j.has_success_blocks);
	same_jd(&p.d, &j.d);
	same_mask(&p.mask, &j.mask);
	mask_free(&p.mask);
	mask_free(&j.mask);
}

static void report_request(struct call *c, const ProtobufCMessage *m)
{
	struct report_request p, j;

	report_request_pb(c, (const pb_report_request *)m, &p);
	report_request_json(c, &j);
	same_str(p.host, j.host);
	CHECK(p.storage_type == j.storage_type && p.n == j.n && !p.events == !j.events);
	same_jd(&p.d, &j.d);
	for (size_t i = 0; p.events && i < p.events->n; i++)
		same_event(&p.events->ev[i], &j.events->ev[i]);
	report_request_free(&p);
	report_request_free(&j);
}

/* A hot call's request read straight and read from its JSON (body): the same input. */
static void typed_matches_json(const ProtobufCMessage *m, json_t *body)
{
	static struct kvcm k;
	struct call c = {.k = &k, .body = body};
	const ProtobufCMessageDescriptor *d = m->descriptor;

	k.conf.max_keys = MAX_KEYS;
	if (d == &kv_cache_manager__proto__meta__get_cache_location_request__descriptor)
		location_query(&c, m);
	else if (d == &kv_cache_manager__proto__meta__start_write_cache_request__descriptor)
		write_request(&c, m);
	else if (d == &kv_cache_manager__proto__meta__finish_write_cache_request__descriptor)
		finish_request(&c, m);
	else if (d == &kv_cache_manager__proto__meta__report_event_request__descriptor)
		report_request(&c, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCServiceDescriptor *svc;
	const ProtobufCMethodDescriptor *m;
	struct h2_idle_rst f;
	ProtobufCMessage *msg;
	size_t passed = 0;
	char field[256];
	struct jw w;

	h2_idle_rst_init(&f);
	if (h2_idle_rst_pass(&f, data, size, count, &passed) != 0 || passed > size)
		abort();
	if (size < 2)
		return 0;
	svc = services[data[0] % 3];
	m = &svc->methods[data[1] % svc->n_methods];
	msg = protobuf_c_message_unpack(m->input, NULL, size - 2, data + 2);
	if (!msg)
		return 0;
	jw_init(&w);
	if (pb_request_json(msg, &w, field, sizeof(field))) {
		json_t *j = jd_parse(w.buf, w.len);

		if (!j != !pb_request_plain(msg))
			abort(); /* the JSON the handlers read is not the message's own values, or plain is wrong */
		if (j)
			typed_matches_json(msg, j);
		json_decref(j);
	}
	jw_free(&w);
	protobuf_c_message_free_unpacked(msg, NULL);
	return 0;
}
