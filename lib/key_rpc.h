/*
 * The KeyBatch round trip every key call makes (store_data.c, store_meta.c, store_gva.c, extent_put.c): one request
 * of many keys, one result per key, sent again after a lost connection only when sending twice is harmless. Beside
 * it, the deadline and argument checks those calls share.
 */
#ifndef MMC_KEY_RPC_H
#define MMC_KEY_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mmc/mmc.h"
#include "wire.h"

struct mmc_store;

/* A KeyBatch round trip: items from `items`, one decoded result per item handed to on_result. */
struct key_rpc {
	uint32_t body;    /* WB_* */
	mmc_KeyBatch req; /* header fields; items are bound by key_rpc_call */
	struct wire_items items;
	bool (*on_result)(void *arg, size_t i, const mmc_KeyResult *r);
	void *arg;
	uint64_t deadline_ms; /* the public call's: see mcall.deadline_ms (0: retry_ms from key_rpc_call's start) */
	uint64_t reply_by_ms; /* see mcall.reply_by_ms (0: timeout_ms) */
	bool pinned;          /* see mcall.pinned: sent only on the connection of meta_conn_losses() on_conn */
	uint64_t on_conn;
	bool retried;    /* set by key_rpc_call: the call went again after the connection was lost */
	uint64_t losses; /* set by key_rpc_call and key_rpc_send: meta_conn_losses() when the last try went out */
};

/* Returns the whole-call result (0, a server code, or a transport error). Lookups and removes that the lost
 * connection failed are sent again once it is back, until k->deadline_ms (ock.mmc.client.retry_milliseconds from
 * the start of the public call). */
int key_rpc_call(struct mmc_store *s, struct key_rpc *k);

/* A request of another shape (fields, msg: as meta_call's) answered by a KeyBatchReply of k->items.n results for
 * k->on_result; sent once, never again on a new connection. Returns as key_rpc_call. */
int key_rpc_send(struct mmc_store *s, struct key_rpc *k, const pb_msgdesc_t *fields, const void *msg);

/* A KeyBatch whose replies are one code per key (remove, exist, write_finish, remove_lease, ...). values may be
 * NULL. On a whole-call error every results[i] gets it and it is returned. */
int key_batch_codes(struct mmc_store *s, uint32_t body, const char *const *keys, const int32_t *values, size_t n,
                    uint64_t lease_ttl_ms, int *results);
/* The same as one step of a public call that began earlier: within its deadline_ms (key_rpc.deadline_ms). */
int key_batch_codes_until(struct mmc_store *s, uint32_t body, const char *const *keys, const int32_t *values, size_t n,
                          uint64_t lease_ttl_ms, uint64_t deadline_ms, int *results);

/* The deadline of a public call starting now: retry_ms from now (see mcall.deadline_ms). */
uint64_t call_deadline(const struct mmc_store *s);

/* Direction checks: puts go to global memory, gets come from it. */
bool direct_is_put(int32_t direct);
bool direct_is_get(int32_t direct);

/* Sets results[0..n) to code (none when n is past MMC_BATCH_MAX: the bad argument itself) and returns it. */
int fail_all(int *results, size_t n, int code);

#endif
