/*
 * The gRPC side of KVCM: HTTP/2 (nghttp2) connections on the loop's event_base, gRPC's framing (a 5-byte prefix
 * per message, grpc-status / grpc-message trailers, grpc-timeout deadlines, RST_STREAM cancellation, a largest
 * message) and unary calls of the services a port serves. A call is decoded with protobuf-c, mapped to the JSON
 * the HTTP API reads (pb_json.h) and run by the same route handler through call_run(), so both transports share
 * one decode and one reply path; the JSON reply is mapped back into the method's response message.
 */
#ifndef MMC_KVCM_GRPC_SERVER_H
#define MMC_KVCM_GRPC_SERVER_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kvcm;
struct route;
struct grpc_server;
struct meta_err;

/* One service on a port: its methods are the routes named as the methods in lowerCamel (RegisterInstance:
 * "registerInstance"); a method without a route answers UNIMPLEMENTED. */
struct grpc_service {
	const ProtobufCServiceDescriptor *desc;
	const struct route *routes;
	bool debug; /* only with kvcm.service.enable_debug_service */
	bool admin; /* an admin-port service: a ROLE_USER account is refused PERMISSION_DENIED */
};

/* Listens on bind:port (0: any free port) for the services (a table ending in {NULL}). admin names the listener in
 * errors, and is the account check of a service the port does not serve. A failure fills *e as http_server_start()
 * does. */
int grpc_server_start(struct grpc_server **out, struct kvcm *k, const char *bind, uint16_t port,
                      const struct grpc_service *services, bool admin, uint16_t *bound, struct meta_err *e);
void grpc_server_stop(struct grpc_server *s);

#endif
