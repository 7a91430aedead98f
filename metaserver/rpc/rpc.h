/* Request dispatch: one handler per Frame body; handlers reply through conn_send(). Loop thread only. */
#ifndef MMC_RPC_H
#define MMC_RPC_H

#include "mmc.pb-c.h"

struct conn;
struct policy_ops;

/* How the policy layer sends tasks and deferred replies: given to policy_init at start-up (rpc_ops.c). */
extern const struct policy_ops rpc_ops;

/* Handles one decoded frame. Returns 0, or a negative code to close the connection (MMC_NOT_AUTHORIZED: a frame
 * the connection may not send before its hello is done). */
int rpc_dispatch(struct conn *c, const Mmc__Frame *f);

/* The key operations (KeyBatch bodies); rpc_keys.c. */
void rpc_keys(struct conn *c, const Mmc__Frame *f, const Mmc__KeyBatch *req);

/* Sends Reply{result} for request id (nothing when id is 0). */
void rpc_reply_code(struct conn *c, uint64_t id, int result);
/* The same, for a reply that acknowledges a durable change. */
void rpc_reply_durable(struct conn *c, uint64_t id, int result);

#endif
