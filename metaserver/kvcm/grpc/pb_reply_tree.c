/* A reply's JSON, as a jansson tree, into the response message: any JSON the HTTP API may print. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pb_json.h"

static bool tree_i64(json_t *v, int64_t *out)
{
	const char *s;
	char *end;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		*out = (int64_t)json_real_value(v);
		return (double)*out == json_real_value(v);
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	errno = 0;
	*out = *s == '-' ? strtoll(s, &end, 10) : (int64_t)strtoull(s, &end, 10); /* a uint64 keeps its bits */
	return *s && !*end && !errno;
}

static bool fill(struct pb_arena *a, ProtobufCMessage *m, json_t *obj, unsigned *dropped);

static bool scalar(struct pb_arena *a, const ProtobufCFieldDescriptor *f, json_t *v, void *p, unsigned *dropped)
{
	const ProtobufCFieldDescriptor *inner;
	ProtobufCMessage *sub;
	int64_t n;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = json_is_true(v);
		return json_is_boolean(v);
	case PROTOBUF_C_TYPE_STRING:
		return json_is_string(v) && (*(char **)p = pb_strndup(a, json_string_value(v), json_string_length(v)));
	case PROTOBUF_C_TYPE_MESSAGE:
		sub = pb_message(a, f->descriptor);
		*(ProtobufCMessage **)p = sub;
		if (sub && (inner = pb_wrapper_value(f)) && !json_is_object(v))
			return scalar(a, inner, v, (char *)sub + inner->offset, dropped);
		return sub && json_is_object(v) && fill(a, sub, v, dropped);
	case PROTOBUF_C_TYPE_ENUM:
		if (json_is_string(v) && !tree_i64(v, &n)) {
			pb_set_enum_name(f, p, json_string_value(v));
			return true;
		}
		return tree_i64(v, &n) && pb_set_int(f, p, n);
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_is_number(v) ? pb_set_double(f, p, json_number_value(v))
		                         : json_is_string(v) && pb_set_double(f, p, strtod(json_string_value(v), NULL));
	default:
		return tree_i64(v, &n) && pb_set_int(f, p, n);
	}
}

static bool map_entries(struct pb_arena *a, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, json_t *v,
                        unsigned *dropped)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	const char *key;
	json_t *val;

	json_object_foreach(v, key, val)
	{
		ProtobufCMessage **slot = pb_push(a, m, f), *e = pb_message(a, d);

		if (!slot || !e || !(*(char **)((char *)e + d->fields[0].offset) = pb_strndup(a, key, strlen(key))) ||
		    !scalar(a, &d->fields[1], val, (char *)e + d->fields[1].offset, dropped))
			return false;
		*slot = e;
	}
	return true;
}

static bool repeated(struct pb_arena *a, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, json_t *v,
                     unsigned *dropped)
{
	size_t i;
	json_t *e;

	if (pb_is_map(f))
		return json_is_object(v) && map_entries(a, m, f, v, dropped);
	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, e)
	{
		void *slot = pb_push(a, m, f);

		if (!slot || !scalar(a, f, e, slot, dropped))
			return false;
	}
	return true;
}

static bool fill(struct pb_arena *a, ProtobufCMessage *m, json_t *obj, unsigned *dropped)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, key);

		if (!f) {
			++*dropped;
			continue;
		}
		if (json_is_null(v))
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED ? !repeated(a, m, f, v, dropped)
		                                          : !scalar(a, f, v, pb_slot(m, f), dropped))
			return false;
	}
	return true;
}

ProtobufCMessage *pb_reply_tree(struct pb_arena *a, const ProtobufCMessageDescriptor *d, json_t *obj, unsigned *dropped)
{
	ProtobufCMessage *m = json_is_object(obj) ? pb_message(a, d) : NULL;

	return m && fill(a, m, obj, dropped) ? m : NULL;
}
