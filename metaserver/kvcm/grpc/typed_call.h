/*
 * The hot MetaService calls (getCacheLocation, startWriteCache, finishWriteCache, reportEvent) without JSON: the
 * protobuf request read into the handler's input (typed_request.h), the handler's result encoded as protobuf
 * (typed_reply.h). They answer exactly what the JSON way (pb_request_json, the route's handler, pb_reply_text)
 * answers; grpc_call.c takes that way for the other calls and for requests pb_request_plain declines.
 */
#ifndef MMC_KVCM_TYPED_CALL_H
#define MMC_KVCM_TYPED_CALL_H

#include <protobuf-c/protobuf-c.h>

#include "http.h"
#include "pb_build.h"
#include "pb_wire.h"

struct h2_stream;

/* One typed call: what its run (struct call_typed) reads and writes. */
struct typed_call {
	struct h2_stream *st;
	ProtobufCMessage *req;
	struct pb_arena arena; /* what req was unpacked into */
	struct pbw out;        /* the reply's fields, after the header */
};

/* The typed form of a method (its struct call_typed.run), or NULL when it has none. */
typedef void typed_run_fn(struct call *c);
typed_run_fn *typed_run(const ProtobufCMethodDescriptor *method);

#endif
