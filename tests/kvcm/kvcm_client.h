/*
 * Helpers of the KVCM tests: reply accessors, and an mmc-metaserver with KVCM on free ports and a private
 * file-storage root.
 */
#ifndef MMC_TEST_KVCM_CLIENT_H
#define MMC_TEST_KVCM_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_client.h"
#include "proc.h"

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
