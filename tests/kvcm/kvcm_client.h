/*
 * A tiny blocking HTTP/1.1 client for the KVCM tests (keep-alive, Content-Length bodies), plus helpers that
 * start an mmc-metaserver with KVCM on free ports and a private file-storage root.
 */
#ifndef MMC_TEST_KVCM_CLIENT_H
#define MMC_TEST_KVCM_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"

struct hc {
	int fd;
	uint16_t port;
};

int hc_connect(struct hc *c, uint16_t port);
void hc_close(struct hc *c);
/* Sends method path with body (may be NULL) and reads the reply. Returns the HTTP status or -1; *out is the
 * malloc'd body (NUL-terminated). Reconnects once if the server closed a kept-alive connection. */
int hc_request(struct hc *c, const char *method, const char *path, const char *body, size_t len, char **out);

/* POST /api/<api> with a printf-formatted body; returns the parsed reply (NULL unless HTTP 200). */
json_t *hc_call(struct hc *c, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* header.status.code of a reply ("" when missing). */
const char *code_of(json_t *r);
const char *message_of(json_t *r);

/* A metaserver with KVCM on free ports, its nfs_01 root under a private directory. */
struct kvcm_srv {
	struct metaserver m;
	char root[256];
	struct hc meta, admin;
};

/* Starts one; extra are further --env KEY=VALUE entries (NULL-terminated, may be NULL). 0 on success. */
int kvcm_srv_start(struct kvcm_srv *s, const char *const *extra);
int kvcm_srv_restart(struct kvcm_srv *s, const char *const *extra);
void kvcm_srv_stop(struct kvcm_srv *s);

/* Registers instance id in group with one spec "tp0" of spec_size bytes (block_size 8); true when OK. */
bool register_simple(struct hc *c, const char *group, const char *id, long spec_size);
/* startWriteCache of keys (JSON array text) then finishWriteCache with all true; true when both are OK. */
bool write_keys(struct hc *c, const char *id, const char *keys_json);

#endif
