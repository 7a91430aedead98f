/*
 * The store's half of the hello (lib/proto/mmc.proto, Hello .. HelloReply): a fresh nonce in every Hello, and, when
 * the server challenges, the check of its proof and the store's own proof of the cluster secret
 * (ock.mmc.client.auth_token). A store that has a secret talks only to a server that proves it knows the same one.
 * The secret is never logged. Per connection attempt; called from the thread that runs the handshake.
 */
#ifndef MMC_META_AUTH_H
#define MMC_META_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mmc.pb.h"
#include "mmc/mmc.h"
#include "wire_limits.h"

/* What a store proves: a secret (the cluster's, or its tenant's when tenant is set). */
struct meta_credentials {
	char token[MMC_TOKEN_SIZE];           /* "": none configured */
	char tenant[MMC_TENANT_NAME_MAX + 1]; /* "" or "default": the default tenant */
};

struct meta_auth {
	const struct meta_credentials *token; /* NULL: none configured */
	uint8_t client_nonce[MMC_WIRE_NONCE];
	uint8_t server_nonce[MMC_WIRE_NONCE];
	bool challenged;
};

/* Fills h's nonce and version fields. Returns 0, or MMC_ERROR when no random bytes can be had. */
int meta_auth_hello(struct meta_auth *a, mmc_Hello *h);

/* The server's AuthChallenge (body bytes): checks its proof and writes this store's into out. Returns 0, or
 * MMC_NOT_AUTHORIZED (logged: no secret configured, or the server's proof is wrong), MMC_INTERNAL_ERROR. */
int meta_auth_answer(struct meta_auth *a, const uint8_t *data, size_t len, mmc_AuthProof *out);

/* The HelloReply: its result, or MMC_NOT_AUTHORIZED where this store has a secret and the server never asked for
 * it. Logs the reason of a refusal (a wrong secret, another major wire version). */
int meta_auth_reply(const struct meta_auth *a, const mmc_HelloReply *r);

#endif
