/*
 * What the policy layer needs from the RPC layer above it, as a table the RPC layer fills in (rpc_ops) and unit
 * tests replace: policy decides, it never builds a frame or touches a socket. Requests are named by the session
 * that sent them and their request id; a session whose connection closed is told to the policy layer first
 * (tier_session_closed, alloc_queue_session_closed), so these are never called for it. Loop thread only.
 */
#ifndef MMC_POLICY_OPS_H
#define MMC_POLICY_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key_result.h"

/* A copy a local service makes between its own pools (a BlobTask). */
struct blob_task {
	uint64_t id; /* the reply names it: tier_task_done(id) */
	uint32_t op; /* MMC_TASK_* */
	uint32_t src_media, dst_media;
	uint64_t src_offset, dst_offset, size;
};

/* A key batch as the policy layer sees it: who asked, under which request id, for which keys. */
struct key_call {
	struct session *session;
	uint64_t id;
	uint64_t lease_ttl_ms; /* gets: 0 is the server's default */
	const char *const *keys;
	const uint64_t *sizes; /* allocations: bytes per key */
	size_t n;
};

struct policy_ops {
	/* Sends t to svc, whose session is attached. */
	void (*send_task)(struct meta *m, struct service *svc, const struct blob_task *t);
	/* Answers request id of s with one result per key; durable: once every change made so far is committed. */
	void (*reply_keys)(struct meta *m, struct session *s, uint64_t id, const struct key_result *r, size_t n,
	                   bool durable);
	/* Answers request id of s with one code. */
	void (*reply_code)(struct meta *m, struct session *s, uint64_t id, int result);
};

#endif
