/*
 * libFuzzer target: what a gRPC peer's bytes reach before a handler runs. The input goes through the idle
 * RST_STREAM filter in front of nghttp2 (grpc/h2_idle_rst.c), which may only drop bytes; then its first two bytes
 * choose a service and a method and the rest is decoded as that method's request by protobuf-c and written as the
 * JSON the handlers read (grpc/pb_request.c), which must be JSON that jd_parse reads, unless a string in it is not
 * UTF-8 or a map repeats a key (the server answers those INVALID_ARGUMENT, as HTTP answers 400). A NaN or an
 * infinity has no JSON form: the mapping refuses it (the server answers INVALID_ARGUMENT naming the field).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin_service.pb-c.h"
#include "debug_service.pb-c.h"
#include "h2_idle_rst.h"
#include "json_in.h"
#include "meta_service.pb-c.h"
#include "pb_json.h"

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

/* Whether jansson refuses the text for one of the two reasons the request itself carries. */
static bool refused_for_its_content(const char *json, size_t len)
{
	json_error_t e;
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &e);

	json_decref(j);
	return !j && (strstr(e.text, "UTF-8") || strstr(e.text, "decode byte") || strstr(e.text, "duplicate"));
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

		if (!j && !refused_for_its_content(w.buf, w.len))
			abort(); /* the mapping wrote JSON the handlers' reader refuses */
		json_decref(j);
	}
	jw_free(&w);
	protobuf_c_message_free_unpacked(msg, NULL);
	return 0;
}
