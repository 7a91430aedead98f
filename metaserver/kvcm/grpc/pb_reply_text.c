/*
 * A reply's JSON text straight into the response message, without building a jansson tree: the strict subset
 * json_lex.h reads (what the handlers print for the hot replies: ASCII strings, integers, booleans), plus
 * fractions for double fields. Anything else declines (NULL), and the caller reads the text with jansson.
 */
#include <stdlib.h>
#include <string.h>

#include "json_lex.h"
#include "pb_json.h"

struct reader {
	struct pb_arena *a;
	char *scratch; /* strings with escapes, decoded, each NUL-terminated; never more than the text itself */
	size_t text_len;
	unsigned *dropped;
};

struct in_message {
	struct reader *r;
	ProtobufCMessage *m;
	unsigned next; /* the field after the last one read: the handlers print members in declaration order */
};

/* A string value in the arena: most have no escapes and are copied straight from the text. */
static const char *string(struct jlex *x, struct reader *r, size_t *len)
{
	const char *at = x->p, *s;

	if (jlex_plain(x, &s, len))
		return pb_strndup(r->a, s, *len);
	x->p = at; /* an escape: decode it */
	if (!r->scratch && !(r->scratch = pb_alloc(r->a, r->text_len + 1)))
		return NULL;
	s = jlex_str(x, &r->scratch, len);
	return s ? pb_strndup(r->a, s, *len) : NULL;
}

static bool skip_member(struct jlex *x, const char *name, size_t len, void *ctx);
static bool skip_elem(struct jlex *x, void *ctx);

/* A value nobody reads: a member the message does not have. */
static bool skip(struct jlex *x, struct reader *r)
{
	size_t len;
	int64_t i;
	bool b;

	switch (jlex_peek(x)) {
	case '{':
		return jlex_object(x, skip_member, r);
	case '[':
		return jlex_array(x, skip_elem, r);
	case '"':
		return string(x, r, &len) != NULL;
	case 't':
	case 'f':
		return jlex_bool(x, &b);
	default:
		return jlex_int64(x, &i);
	}
}

static bool skip_member(struct jlex *x, const char *name, size_t len, void *ctx)
{
	(void)name;
	(void)len;
	return skip(x, ctx);
}

static bool skip_elem(struct jlex *x, void *ctx)
{
	return skip(x, ctx);
}

/* An integer, or a quoted one (64-bit fields are printed as strings). */
static bool integer(struct jlex *x, struct reader *r, int64_t *v)
{
	const char *s;
	size_t len;
	char *end;

	if (jlex_peek(x) != '"')
		return jlex_int64(x, v);
	if (!(s = string(x, r, &len)) || !*s)
		return false;
	*v = *s == '-' ? strtoll(s, &end, 10) : (int64_t)strtoull(s, &end, 10);
	return !*end;
}

/* A number of a double field: the token as strtod reads it, within the text. */
static bool fraction(struct jlex *x, double *v)
{
	char buf[64], *end;
	size_t n = 0;

	jlex_ws(x);
	while (x->p + n < x->end && n + 1 < sizeof(buf) && strchr("+-.0123456789eE", x->p[n]))
		n++;
	if (!n)
		return false;
	memcpy(buf, x->p, n);
	buf[n] = '\0';
	*v = strtod(buf, &end);
	x->p += n;
	return *end == '\0';
}

static bool message_member(struct jlex *x, const char *name, size_t len, void *ctx);

static bool scalar(struct jlex *x, struct reader *r, const ProtobufCFieldDescriptor *f, void *p)
{
	struct in_message sub = {r, NULL, 0};
	const ProtobufCFieldDescriptor *inner;
	const char *s;
	size_t len;
	int64_t i;
	double d;
	bool b;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		if (!jlex_bool(x, &b))
			return false;
		*(protobuf_c_boolean *)p = b;
		return true;
	case PROTOBUF_C_TYPE_STRING:
		return (*(const char **)p = string(x, r, &len)) != NULL;
	case PROTOBUF_C_TYPE_MESSAGE:
		*(ProtobufCMessage **)p = sub.m = pb_message(r->a, f->descriptor);
		if (sub.m && (inner = pb_wrapper_value(f)) && jlex_peek(x) != '{')
			return scalar(x, r, inner, (char *)sub.m + inner->offset);
		return sub.m && jlex_object(x, message_member, &sub);
	case PROTOBUF_C_TYPE_ENUM:
		if (jlex_peek(x) != '"')
			return jlex_int64(x, &i) && pb_set_int(f, p, i);
		if (!(s = string(x, r, &len)))
			return false;
		pb_set_enum_name(f, p, s);
		return true;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return fraction(x, &d) && pb_set_double(f, p, d);
	default:
		return integer(x, r, &i) && pb_set_int(f, p, i);
	}
}

struct in_repeated {
	struct reader *r;
	ProtobufCMessage *m;
	const ProtobufCFieldDescriptor *f;
};

static bool element(struct jlex *x, void *ctx)
{
	struct in_repeated *e = ctx;
	void *slot = pb_push(e->r->a, e->m, e->f);

	return slot && scalar(x, e->r, e->f, slot);
}

/* One key of a map's object: an XxxEntry{key, value} element. */
static bool map_entry(struct jlex *x, const char *name, size_t len, void *ctx)
{
	struct in_repeated *e = ctx;
	const ProtobufCMessageDescriptor *d = e->f->descriptor;
	ProtobufCMessage **slot = pb_push(e->r->a, e->m, e->f), *entry = pb_message(e->r->a, d);

	if (!slot || !entry || !(*(char **)((char *)entry + d->fields[0].offset) = pb_strndup(e->r->a, name, len)))
		return false;
	*slot = entry;
	return scalar(x, e->r, &d->fields[1], (char *)entry + d->fields[1].offset);
}

/* The field called name (len bytes, not terminated): the one after the last is tried first. */
static const ProtobufCFieldDescriptor *field(struct in_message *in, const char *name, size_t len)
{
	const ProtobufCMessageDescriptor *d = in->m->descriptor;
	const ProtobufCFieldDescriptor *f;
	char key[128];

	if (in->next < d->n_fields && jlex_is(name, len, d->fields[in->next].name))
		return &d->fields[in->next++];
	if (len >= sizeof(key))
		return NULL;
	memcpy(key, name, len);
	key[len] = '\0';
	f = protobuf_c_message_descriptor_get_field_by_name(d, key);
	if (f)
		in->next = (unsigned)(f - d->fields) + 1;
	return f;
}

static bool message_member(struct jlex *x, const char *name, size_t len, void *ctx)
{
	struct in_message *in = ctx;
	const ProtobufCFieldDescriptor *f = field(in, name, len);

	if (!f) {
		++*in->r->dropped;
		return skip(x, in->r);
	}
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		struct in_repeated e = {in->r, in->m, f};

		return pb_is_map(f) ? jlex_object(x, map_entry, &e) : jlex_array(x, element, &e);
	}
	return scalar(x, in->r, f, pb_slot(in->m, f));
}

ProtobufCMessage *pb_reply_text(struct pb_arena *a, const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                                unsigned *dropped)
{
	struct reader r = {a, NULL, len, dropped};
	struct in_message in = {&r, pb_message(a, d), 0};
	struct jlex x;

	if (!in.m)
		return NULL;
	jlex_init(&x, text, len);
	return jlex_object(&x, message_member, &in) && jlex_done(&x) ? in.m : NULL;
}
