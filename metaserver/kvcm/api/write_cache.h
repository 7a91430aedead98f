/*
 * startWriteCache and finishWriteCache in steps that do not depend on the transport: the request read into
 * struct write_request / struct finish_request (by HTTP from JSON here, by gRPC from the protobuf message), the
 * handler, and startWriteCache's reply fields (struct write_reply) handed to the transport's encoder.
 */
#ifndef MMC_KVCM_WRITE_CACHE_H
#define MMC_KVCM_WRITE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "model.h"
#include "request_keys.h"

/* startWriteCache's request; how reading went is in head (the scalars) and in_groups. */
struct write_request {
	int32_t timeout_s;    /* write_timeout_seconds */
	int32_t min_replicas; /* min_replica_count */
	bool is_replication;
	const char *target_node; /* replication_target_node_id, "" when absent */
	struct key_input keys;
	const char **groups; /* location_spec_group_names */
	size_t ngroups;
	const char **groups_mem; /* the array when the reader allocated it */
	struct jd head, in_groups;
};

/* The reply's own fields, valid while the encoder runs. */
struct write_reply {
	const char *session_id;
	struct mask mask;             /* block_mask: the keys that exist (an offset when they are a clean prefix) */
	struct location *const *locs; /* the new WRITING locations, one per key to write */
	size_t nlocs;
};

/* Writes r's fields after the success header, into out. */
typedef void write_reply_enc(void *out, const struct write_reply *r);

/* Reads c's JSON body into in: every field ahead of the checks, how each part went kept for them. */
void write_request_json(struct call *c, struct write_request *in);
/* Answers startWriteCache: on success the header, then enc(out, reply). */
void write_cache_start(struct call *c, struct write_request *in, write_reply_enc *enc, void *out);
void write_request_free(struct write_request *in);

/* finishWriteCache's request, and how reading it went. */
struct finish_request {
	const char *session_id;  /* "" when absent */
	bool has_success_blocks; /* success_blocks was given (even empty) */
	struct mask mask;
	struct jd d;
};

/* Reads c's JSON body into in. */
void finish_request_json(struct call *c, struct finish_request *in);
/* Answers finishWriteCache (its reply has no fields of its own), and frees in's mask. */
void write_cache_finish(struct call *c, struct finish_request *in);

#endif
