#include "meta_auth.h"

#include <pb_decode.h>
#include <stdio.h>
#include <string.h>

#include "auth_proof.h"
#include "lg.h"
#include "mmc/mmc.h"

static bool has_token(const struct meta_auth *a)
{
	return a->token && a->token->token[0];
}

/* The tenant this store claims; NULL for the default tenant. */
static const char *tenant(const struct meta_auth *a)
{
	return a->token && a->token->tenant[0] && strcmp(a->token->tenant, "default") != 0 ? a->token->tenant : NULL;
}

int meta_auth_hello(struct meta_auth *a, mmc_Hello *h)
{
	if (auth_random(a->client_nonce, MMC_WIRE_NONCE))
		return MMC_ERROR;
	memcpy(h->client_nonce.bytes, a->client_nonce, MMC_WIRE_NONCE);
	h->client_nonce.size = MMC_WIRE_NONCE;
	h->version = MMC_WIRE_VERSION;
	h->minor = MMC_WIRE_MINOR;
	if (tenant(a))
		snprintf(h->tenant, sizeof(h->tenant), "%s", tenant(a));
	a->challenged = false;
	return 0;
}

int meta_auth_answer(struct meta_auth *a, const uint8_t *data, size_t len, mmc_AuthProof *out)
{
	mmc_AuthChallenge ch = mmc_AuthChallenge_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);
	uint8_t expected[MMC_WIRE_MAC];
	char label[64];
	const char *token;
	size_t tlen;

	if (!pb_decode(&s, mmc_AuthChallenge_fields, &ch) || ch.server_nonce.size != MMC_WIRE_NONCE)
		return MMC_INTERNAL_ERROR;
	if (!has_token(a)) {
		lg_error("the meta server requires the cluster secret: set ock.mmc.client.auth_token_file (or "
		         "ock.mmc.client.auth_token) in the store's config file");
		return MMC_NOT_AUTHORIZED;
	}
	token = a->token->token;
	tlen = strlen(token);
	memcpy(a->server_nonce, ch.server_nonce.bytes, MMC_WIRE_NONCE);
	if (auth_mac(token, tlen, auth_tenant_label(label, sizeof(label), AUTH_LABEL_SERVER, tenant(a)),
	             a->client_nonce, MMC_WIRE_NONCE, a->server_nonce, MMC_WIRE_NONCE, expected) ||
	    !auth_mac_equal(ch.server_proof.bytes, ch.server_proof.size, expected)) {
		if (tenant(a))
			lg_error(
			    "the meta server did not prove tenant %s's secret (ock.mmc.client.auth_token): it has "
			    "no such tenant, the secrets differ, or it is not the cluster's server; refusing to talk "
			    "to it",
			    tenant(a));
		else
			lg_error("the meta server proved another cluster secret than this store's "
			         "(ock.mmc.client.auth_token): the secrets differ, or it is not the cluster's server; "
			         "refusing to talk to it");
		return MMC_NOT_AUTHORIZED;
	}
	if (auth_mac(token, tlen, auth_tenant_label(label, sizeof(label), AUTH_LABEL_CLIENT, tenant(a)),
	             a->server_nonce, MMC_WIRE_NONCE, a->client_nonce, MMC_WIRE_NONCE, out->client_proof.bytes))
		return MMC_ERROR;
	out->client_proof.size = MMC_WIRE_MAC;
	a->challenged = true;
	return 0;
}

int meta_auth_reply(const struct meta_auth *a, const mmc_HelloReply *r)
{
	if (r->result == MMC_NOT_AUTHORIZED) {
		lg_error("the meta server refused this store's cluster secret: check ock.mmc.client.auth_token");
		return r->result;
	}
	if (r->result && r->version && r->version != MMC_WIRE_VERSION) {
		lg_error("the meta server speaks wire version %u, this library %u: upgrade the older side",
		         (unsigned)r->version, (unsigned)MMC_WIRE_VERSION);
		return r->result;
	}
	if (r->result == 0 && has_token(a) && !a->challenged) {
		lg_error("the meta server did not ask for the cluster secret (ock.mmc.client.auth_token): it is not "
		         "the cluster's server, or it runs without ock.mmc.meta.auth_token; refusing to talk to it");
		return MMC_NOT_AUTHORIZED;
	}
	return r->result;
}
