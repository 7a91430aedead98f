/*
 * HTTP Basic authentication (RFC 7617) of the KVCM ports against the accounts of model/account.c. The MetaService
 * port is open while no account exists, the admin port while no ROLE_ADMIN account exists; then every request
 * needs `Authorization: Basic base64(user:password)`: ROLE_USER may call the MetaService port, ROLE_ADMIN both
 * ports. GET /metrics and GET /api/healthy stay open to loopback peers.
 */
#ifndef MMC_KVCM_HTTP_AUTH_H
#define MMC_KVCM_HTTP_AUTH_H

#include <stdbool.h>

struct kvcm;
struct evhttp_request;

/* 200 when req may go on; else the HTTP status to answer: 401 (no or wrong credentials) or 403 (wrong role). */
int auth_check(struct kvcm *k, struct evhttp_request *req, bool admin_port, int *log_bucket);
/* The same check of an Authorization value (NULL: none), for other transports (the gRPC `authorization` metadata);
 * what names the request in the log. */
int auth_check_value(struct kvcm *k, const char *authorization, bool admin_port, const char *what, int *log_bucket);
/* The same judgement, neither logged nor counted: for a look at a request before it is whole (http_head.h), whose
 * verdict the request's own check reuses (auth_report) rather than derive a refused password twice. */
int auth_status(struct kvcm *k, const char *authorization, bool admin_port);
/* Logs and counts a refusal (status 401 or 403) of the request with this Authorization value; returns status. */
int auth_report(struct kvcm *k, int status, const char *authorization, const char *what, int *log_bucket);

#endif
