/*
 * The cluster secret (ock.mmc.meta.auth_token, ock.mmc.client.auth_token) as both ends use it: a challenge-response
 * over two fresh nonces, so the secret itself never crosses the wire, and a proof seen once is worth nothing later.
 * The labels keep the client's and the server's proofs (and the service secrets, which use the same MAC) apart.
 */
#ifndef MMC_AUTH_PROOF_H
#define MMC_AUTH_PROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_limits.h"

#define AUTH_LABEL_CLIENT "mmc-rpc-auth-1 client"
#define AUTH_LABEL_SERVER "mmc-rpc-auth-1 server"

/* The label of a proof made for tenant ("" or NULL: the default tenant, label itself) into buf (cap bytes): a
 * tenant's name is bound into its proofs, so a proof for one tenant is never one for another. Returns buf. */
const char *auth_tenant_label(char *buf, size_t cap, const char *label, const char *tenant);

/* HMAC-SHA256(key, label || a || b) into out[MMC_WIRE_MAC]. Returns 0, or MMC_ERROR when libcrypto fails. */
int auth_mac(const void *key, size_t keylen, const char *label, const void *a, size_t alen, const void *b, size_t blen,
             uint8_t out[MMC_WIRE_MAC]);

/* Whether a (len bytes) equals expected[MMC_WIRE_MAC], in time that does not depend on where they differ. */
bool auth_mac_equal(const void *a, size_t len, const uint8_t expected[MMC_WIRE_MAC]);

/* Fills out with len bytes from the kernel's CSPRNG. Returns 0 or MMC_ERROR. */
int auth_random(void *out, size_t len);

#endif
