/* The allocation extent bodies (ExtentRequest, PutBatch, ExtentReturn): one round trip for small puts. Loop thread
 * only. */
#ifndef MMC_RPC_EXTENTS_H
#define MMC_RPC_EXTENTS_H

#include "mmc.pb-c.h"

struct conn;

/* ExtentRequest: grants extents, answered with an ExtentGrant. */
void rpc_extent_request(struct conn *c, const Mmc__Frame *f);
/* PutBatch: publishes keys written into granted extents, answered once durable. */
void rpc_put(struct conn *c, const Mmc__Frame *f);
/* ExtentReturn: gives extents back (or reports them failed). */
void rpc_extent_return(struct conn *c, const Mmc__Frame *f);

#endif
