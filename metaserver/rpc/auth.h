/*
 * The hello of every RPC connection: the wire version check, then, with ock.mmc.meta.auth_token set, the cluster
 * secret's challenge-response (Hello{client_nonce} -> AuthChallenge{server_nonce, server_proof} -> AuthProof ->
 * HelloReply; lib/proto/mmc.proto). Until a connection is through it, it may send nothing else: every other frame
 * closes it, so no request of an unauthenticated peer is ever served. Loop thread only.
 */
#ifndef MMC_RPC_AUTH_H
#define MMC_RPC_AUTH_H

#include <stdbool.h>

#include "mmc.pb-c.h"

struct conn;

/* Handles a Hello: admits c, challenges it, or refuses it (another major wire version; no nonce to challenge). */
void auth_on_hello(struct conn *c, const Mmc__Frame *f);
/* Handles an AuthProof: admits c, or refuses it with MMC_NOT_AUTHORIZED and closes it. */
void auth_on_proof(struct conn *c, const Mmc__Frame *f);
/* Called as c closes for why: a peer that leaves between the challenge and its proof is counted and logged as a
 * refused credential (mmc_rpc_refused_total{reason="credentials"}, op=hello err=no_proof). */
void auth_on_close(struct conn *c, const char *why);
/* Whether c may send f now. false: the caller closes c. */
bool auth_admits(const struct conn *c, const Mmc__Frame *f);

#endif
