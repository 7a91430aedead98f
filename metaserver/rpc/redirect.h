/* The answer of a standby meta server to any libmmc request (redirect.c). Loop thread only. */
#ifndef MMC_RPC_REDIRECT_H
#define MMC_RPC_REDIRECT_H

#include "mmc.pb-c.h"

struct conn;

/* Answers f with MMC_NOT_LEADER and the leader's address (nothing when f wants no reply). */
void rpc_redirect(struct conn *c, const Mmc__Frame *f);

#endif
