#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pb_json.h"

#define MEMBER(m, off) ((const char *)(m) + (off))

/* A mapping that failed on a NaN or an infinity: the path to it, built from the field up as the calls return. */
struct nonfinite {
	char *path;
	size_t len;
	bool seen;
};

static bool request(const ProtobufCMessage *m, struct jw *w, struct nonfinite *bad);

/* JSON has no NaN nor infinity (printf would write "nan", which no reader takes): the request is refused. */
static bool real(struct jw *w, double v, struct nonfinite *bad)
{
	if (!isfinite(v)) {
		bad->seen = true;
		return false;
	}
	jw_double(w, v);
	return true;
}

/* Puts name (and a dot, when the path has more) in front of the path. */
static void path_prepend(struct nonfinite *bad, const char *name)
{
	size_t n = strlen(name), have = strlen(bad->path), dot = have ? 1 : 0;

	if (n + dot + have >= bad->len)
		return;
	memmove(bad->path + n + dot, bad->path, have + 1);
	memcpy(bad->path, name, n);
	if (dot)
		bad->path[n] = '.';
}

static bool value(struct jw *w, const ProtobufCFieldDescriptor *f, const void *p, struct nonfinite *bad)
{
	const ProtobufCEnumValue *ev;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		jw_int(w, *(const int32_t *)p);
		return true;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		jw_int(w, *(const uint32_t *)p);
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		jw_int(w, *(const int64_t *)p);
		return true;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (*(const uint64_t *)p <= INT64_MAX)
			jw_int(w, (long long)*(const uint64_t *)p);
		else
			jw_u64s(w, *(const uint64_t *)p);
		return true;
	case PROTOBUF_C_TYPE_FLOAT:
		return real(w, *(const float *)p, bad);
	case PROTOBUF_C_TYPE_DOUBLE:
		return real(w, *(const double *)p, bad);
	case PROTOBUF_C_TYPE_BOOL:
		jw_bool(w, *(const protobuf_c_boolean *)p);
		return true;
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		if (ev)
			jw_str(w, ev->name);
		else
			jw_int(w, *(const int *)p);
		return true;
	case PROTOBUF_C_TYPE_STRING:
		jw_str(w, *(char *const *)p);
		return true;
	case PROTOBUF_C_TYPE_MESSAGE:
		return request(*(ProtobufCMessage *const *)p, w, bad);
	default:
		return false;
	}
}

static bool is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return !*(char *const *)p || !**(char *const *)p;
	case PROTOBUF_C_TYPE_MESSAGE:
		return !*(void *const *)p;
	case PROTOBUF_C_TYPE_BOOL:
		return !*(const protobuf_c_boolean *)p;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0;
	default:
		return pb_elem_size(f) == 4 ? !*(const uint32_t *)p : !*(const uint64_t *)p;
	}
}

static bool repeated(struct jw *w, const ProtobufCFieldDescriptor *f, const char *arr, size_t n, struct nonfinite *bad)
{
	size_t es = pb_elem_size(f);
	bool map = pb_is_map(f), ok = true;

	if (map)
		jw_obj(w);
	else
		jw_arr(w);
	for (size_t i = 0; ok && i < n; i++) {
		if (map) {
			const ProtobufCMessage *e = *(ProtobufCMessage *const *)(arr + i * es);
			const ProtobufCMessageDescriptor *d = f->descriptor;

			jw_key(w, *(char *const *)MEMBER(e, d->fields[0].offset));
			ok = value(w, &d->fields[1], MEMBER(e, d->fields[1].offset), bad);
		} else {
			ok = value(w, f, arr + i * es, bad);
		}
	}
	if (map)
		jw_obj_end(w);
	else
		jw_arr_end(w);
	return ok;
}

static bool request(const ProtobufCMessage *m, struct jw *w, struct nonfinite *bad)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	bool ok = true;

	jw_obj(w);
	for (unsigned i = 0; ok && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *p = MEMBER(m, f->offset);
		size_t n = f->label == PROTOBUF_C_LABEL_REPEATED ? *(const size_t *)MEMBER(m, f->quantifier_offset) : 0;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)MEMBER(m, f->quantifier_offset) != f->id)
				continue;
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED ? !n : is_default(f, p)) {
			continue;
		}
		jw_key(w, f->name);
		ok = f->label == PROTOBUF_C_LABEL_REPEATED ? repeated(w, f, *(char *const *)p, n, bad)
		                                           : value(w, f, p, bad);
		if (!ok && bad->seen)
			path_prepend(bad, f->name);
	}
	jw_obj_end(w);
	return ok && !w->oom;
}

bool pb_request_json(const ProtobufCMessage *m, struct jw *w, char *nonfinite, size_t len)
{
	struct nonfinite bad = {nonfinite, len, false};

	if (len)
		nonfinite[0] = '\0';
	return request(m, w, &bad);
}
