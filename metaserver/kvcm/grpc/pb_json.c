#include "pb_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MEMBER(m, off) ((char *)(m) + (off))

/* protobuf-c writes map<K,V> as a repeated XxxEntry{key = 1, value = 2}; JSON writes it as an object. */
static bool is_map(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	size_t n;

	if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED || d->n_fields != 2)
		return false;
	n = strlen(d->name);
	return n > 5 && strcmp(d->name + n - 5, "Entry") == 0 && strcmp(d->fields[0].name, "key") == 0;
}

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 8;
	}
}

/* ---- protobuf -> JSON ---- */

static json_t *scalar_to_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	const ProtobufCEnumValue *ev;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_integer(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: {
		uint64_t u = *(const uint64_t *)p;
		char s[24];

		if (u <= INT64_MAX)
			return json_integer((json_int_t)u);
		snprintf(s, sizeof(s), "%" PRIu64, u);
		return json_string(s);
	}
	case PROTOBUF_C_TYPE_FLOAT:
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	case PROTOBUF_C_TYPE_STRING:
		return json_string(*(char *const *)p ? *(char *const *)p : ""); /* NULL unless UTF-8 */
	case PROTOBUF_C_TYPE_MESSAGE:
		return pbj_to_json(*(ProtobufCMessage *const *)p);
	default:
		return NULL; /* bytes: no API carries them */
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
		return elem_size(f) == 4 ? !*(const uint32_t *)p : !*(const uint64_t *)p;
	}
}

static json_t *repeated_to_json(const ProtobufCFieldDescriptor *f, const char *arr, size_t n)
{
	bool map = is_map(f);
	json_t *out = map ? json_object() : json_array();
	size_t es = elem_size(f);

	for (size_t i = 0; out && i < n; i++) {
		const ProtobufCMessage *e = *(ProtobufCMessage *const *)(arr + i * es);
		const ProtobufCMessageDescriptor *d = f->descriptor;
		json_t *v;

		if (map) {
			v = scalar_to_json(&d->fields[1], MEMBER(e, d->fields[1].offset));
			if (!v || json_object_set_new(out, *(char *const *)MEMBER(e, d->fields[0].offset), v)) {
				json_decref(out);
				return NULL;
			}
		} else if (!(v = scalar_to_json(f, arr + i * es)) || json_array_append_new(out, v)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

json_t *pbj_to_json(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object();

	for (unsigned i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *p = MEMBER(m, f->offset);
		json_t *v;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)MEMBER(m, f->quantifier_offset) != f->id)
				continue;
			v = scalar_to_json(f, p);
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)MEMBER(m, f->quantifier_offset);

			if (!n)
				continue;
			v = repeated_to_json(f, *(char *const *)p, n);
		} else {
			if (is_default(f, p))
				continue;
			v = scalar_to_json(f, p);
		}
		if (!v || json_object_set_new(o, f->name, v)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* ---- JSON -> protobuf ---- */

static bool json_to_i64(json_t *v, int64_t *out)
{
	const char *s;
	char *end;
	double x;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		x = json_real_value(v);
		*out = (int64_t)x;
		return (double)*out == x;
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	errno = 0;
	if (*s == '-')
		*out = strtoll(s, &end, 10);
	else
		*out = (int64_t)strtoull(s, &end, 10); /* a uint64 above INT64_MAX keeps its bits */
	return *s && !*end && !errno;
}

static bool json_to_enum(const ProtobufCFieldDescriptor *f, json_t *v, int *out)
{
	const ProtobufCEnumValue *ev;
	int64_t n;

	if (json_is_string(v) &&
	    (ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(v)))) {
		*out = ev->value;
		return true;
	}
	if (!json_to_i64(v, &n))
		return json_is_string(v); /* an unknown name leaves the default, as everywhere in this API */
	*out = (int)n;
	return true;
}

static bool scalar_from_json(const ProtobufCFieldDescriptor *f, json_t *v, void *p, unsigned *dropped);

static bool message_fill(ProtobufCMessage *m, json_t *obj, unsigned *dropped);

static bool number_from_json(const ProtobufCFieldDescriptor *f, json_t *v, void *p)
{
	int64_t n;

	if (f->type == PROTOBUF_C_TYPE_DOUBLE || f->type == PROTOBUF_C_TYPE_FLOAT) {
		double x = json_is_number(v)   ? json_number_value(v)
		           : json_is_string(v) ? atof(json_string_value(v))
		                               : 0;

		if (!json_is_number(v) && !json_is_string(v))
			return false;
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)x;
		else
			*(double *)p = x;
		return true;
	}
	if (!json_to_i64(v, &n))
		return false;
	if (elem_size(f) == 4)
		*(int32_t *)p = (int32_t)n;
	else
		*(int64_t *)p = n;
	return true;
}

static bool scalar_from_json(const ProtobufCFieldDescriptor *f, json_t *v, void *p, unsigned *dropped)
{
	ProtobufCMessage *sub;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return false;
		*(protobuf_c_boolean *)p = json_is_true(v);
		return true;
	case PROTOBUF_C_TYPE_ENUM:
		return json_to_enum(f, v, (int *)p);
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(v) || !(*(char **)p = strdup(json_string_value(v))))
			return false;
		return true;
	case PROTOBUF_C_TYPE_MESSAGE:
		sub = calloc(1, ((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message);
		if (!sub)
			return false;
		protobuf_c_message_init(f->descriptor, sub);
		*(ProtobufCMessage **)p = sub; /* owned by the parent from here, even when half filled */
		return json_is_object(v) && message_fill(sub, v, dropped);
	case PROTOBUF_C_TYPE_BYTES:
		return false;
	default:
		return number_from_json(f, v, p);
	}
}

/* A map's JSON object as the repeated entry messages protobuf-c keeps. */
static bool map_from_json(const ProtobufCFieldDescriptor *f, json_t *v, char *arr, size_t *n, unsigned *dropped)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	const char *key;
	json_t *val;

	json_object_foreach(v, key, val)
	{
		ProtobufCMessage *e = calloc(1, d->sizeof_message);

		if (!e)
			return false;
		protobuf_c_message_init(d, e);
		((ProtobufCMessage **)arr)[(*n)++] = e;
		if (!(*(char **)MEMBER(e, d->fields[0].offset) = strdup(key)) ||
		    !scalar_from_json(&d->fields[1], val, MEMBER(e, d->fields[1].offset), dropped))
			return false;
	}
	return true;
}

static bool repeated_from_json(const ProtobufCFieldDescriptor *f, json_t *v, ProtobufCMessage *m, unsigned *dropped)
{
	size_t cap = is_map(f) ? json_object_size(v) : json_array_size(v);
	size_t *n = (size_t *)MEMBER(m, f->quantifier_offset);
	char *arr;

	if (is_map(f) ? !json_is_object(v) : !json_is_array(v))
		return false;
	if (!cap)
		return true;
	if (!(arr = calloc(cap, elem_size(f))))
		return false;
	*(char **)MEMBER(m, f->offset) = arr;
	if (is_map(f))
		return map_from_json(f, v, arr, n, dropped);
	for (size_t i = 0; i < cap; i++) {
		/* counted before it is filled: a half-built element is freed with the message */
		(*n)++;
		if (!scalar_from_json(f, json_array_get(v, i), arr + i * elem_size(f), dropped))
			return false;
	}
	return true;
}

static bool message_fill(ProtobufCMessage *m, json_t *obj, unsigned *dropped)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);

		if (!f) {
			if (dropped)
				(*dropped)++;
			continue;
		}
		if (json_is_null(v))
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (!repeated_from_json(f, v, m, dropped))
				return false;
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
			*(uint32_t *)MEMBER(m, f->quantifier_offset) = f->id;
		if (!scalar_from_json(f, v, MEMBER(m, f->offset), dropped))
			return false;
	}
	return true;
}

ProtobufCMessage *pbj_from_json(const ProtobufCMessageDescriptor *d, json_t *obj, unsigned *dropped)
{
	ProtobufCMessage *m;

	if (!json_is_object(obj) || !(m = calloc(1, d->sizeof_message)))
		return NULL;
	protobuf_c_message_init(d, m);
	if (!message_fill(m, obj, dropped)) {
		protobuf_c_message_free_unpacked(m, NULL);
		return NULL;
	}
	return m;
}
