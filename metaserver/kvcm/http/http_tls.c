#include "http_tls.h"

#include <openssl/err.h>
#include <stdio.h>

#include "kvcm_conf.h"
#include "mmc/mmc.h"

static int fail(SSL_CTX *ctx, const char *what, const char *path, char *err, size_t errlen)
{
	char why[256];

	ERR_error_string_n(ERR_get_error(), why, sizeof(why));
	snprintf(err, errlen, "%s \"%s\": %s", what, path, why);
	SSL_CTX_free(ctx);
	return MMC_ERROR;
}

int http_tls_ctx(const struct kvcm_conf *c, SSL_CTX **out, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	*out = NULL;
	if (!c->tls_cert[0] && !c->tls_key[0] && !c->tls_ca[0])
		return 0;
	if (!c->tls_cert[0] || !c->tls_key[0]) {
		snprintf(err, errlen, "kvcm.service.tls.cert_file and kvcm.service.tls.key_file go together");
		return MMC_ERROR;
	}
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		snprintf(err, errlen, "cannot create a TLS context");
		return MMC_ERROR;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, c->tls_cert) != 1)
		return fail(ctx, "kvcm.service.tls.cert_file", c->tls_cert, err, errlen);
	if (SSL_CTX_use_PrivateKey_file(ctx, c->tls_key, SSL_FILETYPE_PEM) != 1)
		return fail(ctx, "kvcm.service.tls.key_file", c->tls_key, err, errlen);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return fail(ctx, "kvcm.service.tls.key_file does not match", c->tls_cert, err, errlen);
	if (c->tls_ca[0]) {
		if (SSL_CTX_load_verify_locations(ctx, c->tls_ca, NULL) != 1)
			return fail(ctx, "kvcm.service.tls.ca_file", c->tls_ca, err, errlen);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	*out = ctx;
	return 0;
}
