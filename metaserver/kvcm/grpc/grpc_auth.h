/*
 * The credential check of gRPC calls: the one place where the `authorization` metadata of a call is judged.
 * HTTP and gRPC must accept the same credentials; when accounts (Basic auth) or admin tokens land in the HTTP
 * layer, this calls the same check.
 */
#ifndef MMC_KVCM_GRPC_AUTH_H
#define MMC_KVCM_GRPC_AUTH_H

#include <stdbool.h>

struct kvcm;

/* true when a call with this authorization value ("" when absent) may run on the admin or the meta port. */
bool grpc_auth_check(struct kvcm *k, bool admin, const char *authorization);

#endif
