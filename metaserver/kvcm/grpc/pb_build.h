/*
 * Building protobuf-c messages field by field in an arena: what both readers of a JSON reply (pb_text.c straight
 * from the text, pb_json.c from a jansson tree) fill a response message with. Everything a message holds (its
 * sub-messages, arrays and strings) comes from the arena, so the message is freed with the arena, never with
 * protobuf_c_message_free_unpacked().
 */
#ifndef MMC_KVCM_PB_BUILD_H
#define MMC_KVCM_PB_BUILD_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pb_chunk;

struct pb_arena {
	struct pb_chunk *head;
	bool oom;
	bool over;     /* an allocation would have passed budget (oom is set too) */
	size_t budget; /* bytes the arena may hand out in all, 0: no bound */
	size_t used;
};

void pb_arena_free(struct pb_arena *a);
/* n zeroed bytes, 8-aligned; NULL (a->oom) when memory ran out. */
void *pb_alloc(struct pb_arena *a, size_t n);
/* The same, not zeroed. */
void *pb_alloc_raw(struct pb_arena *a, size_t n);
/* protobuf-c's allocator on arena a, for protobuf_c_message_unpack: what it unpacks is freed with the arena (its
 * free is a no-op), in one go rather than piece by piece. */
ProtobufCAllocator pb_arena_allocator(struct pb_arena *a);
char *pb_strndup(struct pb_arena *a, const char *s, size_t n);

ProtobufCMessage *pb_message(struct pb_arena *a, const ProtobufCMessageDescriptor *d);
/* The address of a new, zeroed last element of the repeated field f of m; NULL when memory ran out. */
void *pb_push(struct pb_arena *a, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
/* Where the value of a singular field goes, after marking it the set member of its oneof. */
void *pb_slot(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);

/* An integer into a numeric field of any width; false for a field that is not an integer one. */
bool pb_set_int(const ProtobufCFieldDescriptor *f, void *p, int64_t v);
bool pb_set_double(const ProtobufCFieldDescriptor *f, void *p, double v);
/* An enum by name; an unknown name leaves the default (0), as the HTTP API reads enums. */
void pb_set_enum_name(const ProtobufCFieldDescriptor *f, void *p, const char *name);
/* protobuf-c writes map<K,V> as a repeated XxxEntry{key = 1, value = 2}; JSON writes it as an object. */
bool pb_is_map(const ProtobufCFieldDescriptor *f);
/* The value field of a google.protobuf-style wrapper (a singular XxxValue message whose one field is "value"),
 * which the proto3 JSON mapping writes as that bare value; NULL for any other field. */
const ProtobufCFieldDescriptor *pb_wrapper_value(const ProtobufCFieldDescriptor *f);
size_t pb_elem_size(const ProtobufCFieldDescriptor *f);

#endif
