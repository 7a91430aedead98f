/*
 * The proto3 JSON mapping between protobuf-c messages and the JSON text of the HTTP API, driven by the messages'
 * descriptors: how the gRPC layer hands a request to the same route handlers as HTTP (they read JSON text, with
 * the same fast readers) and turns their JSON reply into the response message. Field names are the .proto names
 * (snake_case), as the HTTP API prints them.
 */
#ifndef MMC_KVCM_PB_JSON_H
#define MMC_KVCM_PB_JSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

#include "json_out.h"
#include "pb_build.h"

/*
 * pb_request.c: the request as the JSON an HTTP client would send, written to w: fields at their proto3 default
 * (0, "", false, empty) are left out, as absent ones are; a oneof member and a sub-message are written when set;
 * 64-bit integers as numbers, enums as names. Strings are copied as they are (the HTTP readers refuse what is not
 * UTF-8). false when a field type has no JSON form here (bytes: no API has one), or when a float or double is NaN
 * or infinite (JSON has no such number): then nonfinite (len bytes) gets that field's dotted path from m, e.g.
 * "instance_group.cache_config.reclaim_strategy.trigger_strategy.used_percentage"; else it is "".
 */
bool pb_request_json(const ProtobufCMessage *m, struct jw *w, char *nonfinite, size_t len);
/*
 * Whether the JSON pb_request_json would write for m is read back as m's own values: every string UTF-8 (up to a
 * NUL, where the mapping ends it), no map repeating a key (JSON members repeated), no NaN nor infinity, no bytes.
 * The typed calls (typed_call.c) read such a request straight; any other takes the JSON way, which answers it as
 * it always has.
 */
bool pb_request_plain(const ProtobufCMessage *m);
/* Whether s is UTF-8 as jansson reads it (RFC 3629). */
bool pb_utf8(const char *s);

/*
 * A response message of descriptor d built in a from a reply in the HTTP API's JSON (64-bit integers as numbers
 * or strings, enums as names or numbers). Members the message does not have are counted in *dropped and skipped.
 * pb_reply_text.c reads the text straight, for the strict subset json_lex.h reads (compact ASCII, short escapes,
 * no null); NULL outside it or on a value of the wrong type. pb_reply_tree.c reads a jansson tree: any JSON.
 */
ProtobufCMessage *pb_reply_text(struct pb_arena *a, const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                                unsigned *dropped);
ProtobufCMessage *pb_reply_tree(struct pb_arena *a, const ProtobufCMessageDescriptor *d, json_t *obj,
                                unsigned *dropped);

#endif
