/*
 * The credential check of gRPC calls: the `authorization` metadata of a call judged by the HTTP ports' own check
 * (http/http_auth.c, HTTP Basic against the accounts), so both transports accept exactly the same credentials.
 */
#ifndef MMC_KVCM_GRPC_AUTH_H
#define MMC_KVCM_GRPC_AUTH_H

#include <stdbool.h>

struct kvcm;

/* gRPC codes of a refused call */
enum { GRPC_PERMISSION_DENIED = 7, GRPC_UNAUTHENTICATED = 16 };

/* 0 when a call on the admin or the meta port with this authorization value ("" when absent) may run, else the
 * gRPC status to answer: UNAUTHENTICATED (no or wrong credentials) or PERMISSION_DENIED (ROLE_USER on the admin
 * port). path names the call in the log. */
int grpc_auth_check(struct kvcm *k, bool admin, const char *authorization, const char *path, int *log_bucket);

#endif
