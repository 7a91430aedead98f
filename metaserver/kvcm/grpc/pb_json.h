/*
 * The proto3 JSON mapping between protobuf-c messages and jansson values, driven by the messages' descriptors:
 * how the gRPC layer hands a request to the same handlers as HTTP (they read JSON) and turns their JSON reply into
 * the response message. Field names are the .proto names (snake_case), as the HTTP API prints them.
 */
#ifndef MMC_KVCM_PB_JSON_H
#define MMC_KVCM_PB_JSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/*
 * The request as the JSON an HTTP client would send: fields at their proto3 default (0, "", false, empty) are
 * left out, as absent ones are; a oneof member and a sub-message are written when set. NULL when a string is not
 * UTF-8 (the request is malformed) or memory ran out.
 */
json_t *pbj_to_json(const ProtobufCMessage *m);

/*
 * A message of descriptor d built from a reply in the HTTP API's JSON (64-bit integers as numbers or strings,
 * enums as names or numbers). Members the message does not have are counted in *dropped (may be NULL) and
 * skipped. NULL on a value of the wrong type or no memory; free with protobuf_c_message_free_unpacked(m, NULL).
 */
ProtobufCMessage *pbj_from_json(const ProtobufCMessageDescriptor *d, json_t *obj, unsigned *dropped);

#endif
