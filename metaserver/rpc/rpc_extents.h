/* The allocation extent bodies (ExtentRequest, PutBatch, ExtentReturn): one round trip for small puts. Loop thread
 * only. */
#ifndef MMC_RPC_EXTENTS_H
#define MMC_RPC_EXTENTS_H

#include <stdbool.h>

#include "mmc.pb-c.h"

struct conn;

/* Handles f when it is one of the extent bodies; false for any other body. */
bool rpc_extents(struct conn *c, const Mmc__Frame *f);

#endif
