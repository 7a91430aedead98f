#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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
	const ProtobufCFieldDescriptor *inner;
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
		if ((inner = pb_wrapper_value(f)))
			return value(w, inner, MEMBER(*(ProtobufCMessage *const *)p, inner->offset), bad);
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

/* The length of the UTF-8 sequence a byte starts (RFC 3629); 0 when none starts with it. */
static size_t seq_len(unsigned char u)
{
	if (u < 0x80)
		return 1;
	if (u >= 0xc2 && u <= 0xdf)
		return 2;
	if (u >= 0xe0 && u <= 0xef)
		return 3;
	return u >= 0xf0 && u <= 0xf4 ? 4 : 0;
}

/* UTF-8 as jansson reads it: no overlong form, no surrogate, nothing above U+10FFFF. */
static bool utf8(const unsigned char *s)
{
	static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};

	for (size_t n; *s; s += n) {
		uint32_t v;

		if (!(n = seq_len(*s)))
			return false;
		v = *s & (0xffu >> (n + 1)); /* the lead byte's value bits */
		for (size_t i = 1; i < n; i++) {
			if (s[i] < 0x80 || s[i] > 0xbf)
				return false;
			v = v << 6 | (s[i] & 0x3fu);
		}
		if (n > 1 && (v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)))
			return false;
	}
	return true;
}

static bool plain(const ProtobufCMessage *m);

static bool plain_value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_FLOAT:
		return isfinite(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return isfinite(*(const double *)p);
	case PROTOBUF_C_TYPE_STRING:
		return !*(char *const *)p || utf8(*(const unsigned char *const *)p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return !*(ProtobufCMessage *const *)p || plain(*(ProtobufCMessage *const *)p);
	case PROTOBUF_C_TYPE_BYTES:
		return !((const ProtobufCBinaryData *)p)->len; /* no JSON form here: set, it is refused */
	default:
		return true;
	}
}

static int by_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of a map's n entries, as the JSON object's members they become: no two alike. */
static bool unique_keys(const ProtobufCFieldDescriptor *f, ProtobufCMessage *const *e, size_t n)
{
	size_t off = ((const ProtobufCMessageDescriptor *)f->descriptor)->fields[0].offset;
	const char **keys = malloc((n + 1) * sizeof(*keys));
	bool ok = keys != NULL;

	for (size_t i = 0; ok && i < n; i++)
		keys[i] = *(char *const *)MEMBER(e[i], off);
	if (ok)
		qsort(keys, n, sizeof(*keys), by_key);
	for (size_t i = 1; ok && i < n; i++)
		ok = strcmp(keys[i - 1], keys[i]) != 0;
	free(keys);
	return ok;
}

static bool plain(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *p = MEMBER(m, f->offset);
		size_t n, es;

		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)MEMBER(m, f->quantifier_offset) != f->id)
			continue; /* the union holds another member */
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			if (!plain_value(f, p))
				return false;
			continue;
		}
		n = *(const size_t *)MEMBER(m, f->quantifier_offset);
		es = pb_elem_size(f);
		for (size_t j = 0; j < n; j++)
			if (!plain_value(f, *(char *const *)p + j * es))
				return false;
		if (n > 1 && pb_is_map(f) && !unique_keys(f, *(ProtobufCMessage *const *const *)p, n))
			return false;
	}
	return true;
}

bool pb_request_plain(const ProtobufCMessage *m)
{
	return plain(m);
}

bool pb_utf8(const char *s)
{
	return utf8((const unsigned char *)s);
}
