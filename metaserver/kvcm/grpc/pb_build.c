#include "pb_build.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK (64u << 10)

struct pb_chunk {
	struct pb_chunk *next;
	size_t used, cap;
	_Alignas(8) unsigned char data[];
};

void pb_arena_free(struct pb_arena *a)
{
	while (a->head) {
		struct pb_chunk *c = a->head;

		a->head = c->next;
		free(c);
	}
}

void *pb_alloc_raw(struct pb_arena *a, size_t n)
{
	struct pb_chunk *c = a->head;
	size_t need = (n + 7) & ~(size_t)7;
	void *p;

	if (a->budget && (need > a->budget || a->used > a->budget - need)) {
		a->oom = a->over = true;
		return NULL;
	}
	a->used += need;
	if (!c || c->cap - c->used < need) {
		size_t cap = need > CHUNK ? need : CHUNK;

		if (!(c = malloc(sizeof(*c) + cap))) {
			a->oom = true;
			return NULL;
		}
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += need;
	return p;
}

void *pb_alloc(struct pb_arena *a, size_t n)
{
	void *p = pb_alloc_raw(a, n);

	if (p)
		memset(p, 0, n);
	return p;
}

static void *arena_alloc(void *a, size_t n)
{
	return pb_alloc_raw(a, n);
}

static void arena_keep(void *a, void *p)
{
	(void)a;
	(void)p;
}

ProtobufCAllocator pb_arena_allocator(struct pb_arena *a)
{
	return (ProtobufCAllocator){arena_alloc, arena_keep, a};
}

char *pb_strndup(struct pb_arena *a, const char *s, size_t n)
{
	char *d = pb_alloc(a, n + 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

ProtobufCMessage *pb_message(struct pb_arena *a, const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = pb_alloc(a, d->sizeof_message);

	if (m)
		protobuf_c_message_init(d, m);
	return m;
}

bool pb_is_map(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	size_t n;

	if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED || d->n_fields != 2)
		return false;
	n = strlen(d->name);
	return n > 5 && strcmp(d->name + n - 5, "Entry") == 0 && strcmp(d->fields[0].name, "key") == 0;
}

const ProtobufCFieldDescriptor *pb_wrapper_value(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	size_t n;

	if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED || d->n_fields != 1)
		return NULL;
	n = strlen(d->short_name);
	return n > 5 && strcmp(d->short_name + n - 5, "Value") == 0 && strcmp(d->fields[0].name, "value") == 0
	           ? &d->fields[0]
	           : NULL;
}

size_t pb_elem_size(const ProtobufCFieldDescriptor *f)
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

/* The array doubles when its length reaches a power of two: no capacity to keep beside protobuf-c's count. */
void *pb_push(struct pb_arena *a, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	size_t *n = (size_t *)((char *)m + f->quantifier_offset), es = pb_elem_size(f);
	char **arr = (char **)((char *)m + f->offset);

	if ((*n & (*n - 1)) == 0) {
		char *bigger = pb_alloc(a, (*n ? *n * 2 : 1) * es);

		if (!bigger)
			return NULL;
		if (*n)
			memcpy(bigger, *arr, *n * es);
		*arr = bigger;
	}
	return *arr + (*n)++ * es;
}

void *pb_slot(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
	return (char *)m + f->offset;
}

bool pb_set_int(const ProtobufCFieldDescriptor *f, void *p, int64_t v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return pb_set_double(f, p, (double)v);
	case PROTOBUF_C_TYPE_ENUM:
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*(int32_t *)p = (int32_t)v;
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(int64_t *)p = v;
		return true;
	default:
		return false;
	}
}

bool pb_set_double(const ProtobufCFieldDescriptor *f, void *p, double v)
{
	if (f->type == PROTOBUF_C_TYPE_FLOAT)
		*(float *)p = (float)v;
	else if (f->type == PROTOBUF_C_TYPE_DOUBLE)
		*(double *)p = v;
	else
		return false;
	return true;
}

void pb_set_enum_name(const ProtobufCFieldDescriptor *f, void *p, const char *name)
{
	const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, name);

	if (ev)
		*(int *)p = ev->value;
}
