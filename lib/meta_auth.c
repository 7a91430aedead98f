#include "meta_auth.h"

#include <pb_decode.h>
#include <string.h>

#include "auth_proof.h"
#include "lg.h"
#include "mmc/mmc.h"

static bool has_token(const struct meta_auth *a)
{
	return a->token && a->token[0];
}

int meta_auth_hello(struct meta_auth *a, mmc_Hello *h)
{
	if (auth_random(a->client_nonce, MMC_WIRE_NONCE))
		return MMC_ERROR;
	memcpy(h->client_nonce.bytes, a->client_nonce, MMC_WIRE_NONCE);
	h->client_nonce.size = MMC_WIRE_NONCE;
	h->version = MMC_WIRE_VERSION;
	h->minor = MMC_WIRE_MINOR;
	a->challenged = false;
	return 0;
}

int meta_auth_answer(struct meta_auth *a, const uint8_t *data, size_t len, mmc_AuthProof *out)
{
	mmc_AuthChallenge ch = mmc_AuthChallenge_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);
	uint8_t expected[MMC_WIRE_MAC];
	size_t tlen;

	if (!pb_decode(&s, mmc_AuthChallenge_fields, &ch) || ch.server_nonce.size != MMC_WIRE_NONCE)
		return MMC_INTERNAL_ERROR;
	if (!has_token(a)) {
		lg_error("the meta server requires the cluster secret: set ock.mmc.client.auth_token_file (or "
		         "ock.mmc.client.auth_token) in the store's config file");
		return MMC_NOT_AUTHORIZED;
	}
	tlen = strlen(a->token);
	memcpy(a->server_nonce, ch.server_nonce.bytes, MMC_WIRE_NONCE);
	if (auth_mac(a->token, tlen, AUTH_LABEL_SERVER, a->client_nonce, MMC_WIRE_NONCE, a->server_nonce,
	             MMC_WIRE_NONCE, expected) ||
	    !auth_mac_equal(ch.server_proof.bytes, ch.server_proof.size, expected)) {
		lg_error("the meta server proved another cluster secret than this store's (ock.mmc.client.auth_token): "
		         "the secrets differ, or it is not the cluster's server; refusing to talk to it");
		return MMC_NOT_AUTHORIZED;
	}
	if (auth_mac(a->token, tlen, AUTH_LABEL_CLIENT, a->server_nonce, MMC_WIRE_NONCE, a->client_nonce,
	             MMC_WIRE_NONCE, out->client_proof.bytes))
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
