#include "tls_files.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <stdio.h>
#include <string.h>

#include "mmc/mmc.h"
#include "secret_file.h"

static int fail(char *err, size_t errlen, const char *what, const char *key, const char *path)
{
	char why[256];

	ERR_error_string_n(ERR_get_error(), why, sizeof(why));
	snprintf(err, errlen, "%s (%s = \"%s\"): %s", what, key, path, why);
	ERR_clear_error();
	return MMC_INVALID_PARAM;
}

static int key_pass_cb(char *buf, int size, int rwflag, void *arg)
{
	size_t n = arg ? strlen(arg) : 0;

	if (!n || n >= (size_t)size)
		return 0;
	memcpy(buf, arg, n);
	return (int)n;
}

static int load_ca(SSL_CTX *ctx, const struct tls_files *f, char *err, size_t errlen)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	X509_LOOKUP *lu;

	if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1)
		return fail(err, errlen, "cannot load the CA", "ock.mmc.tls.ca.path", f->ca);
	if (!f->crl[0])
		return 0;
	lu = X509_STORE_add_lookup(store, X509_LOOKUP_file());
	if (!lu || X509_load_crl_file(lu, f->crl, X509_FILETYPE_PEM) < 1)
		return fail(err, errlen, "cannot load the CRL", "ock.mmc.tls.ca.crl.path", f->crl);
	X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
	return 0;
}

/* The passphrase lives on this stack only while the key is decrypted. */
static int load_identity(SSL_CTX *ctx, const struct tls_files *f, char *err, size_t errlen)
{
	char pass[256] = "";
	int rc = 0;

	if (f->key_pass[0] &&
	    (rc = secret_file_read("ock.mmc.tls.key.pass.path", f->key_pass, pass, sizeof(pass), err, errlen)))
		return rc;
	SSL_CTX_set_default_passwd_cb(ctx, key_pass_cb);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, pass);
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1)
		rc = fail(err, errlen, "cannot load the certificate", "ock.mmc.tls.cert.path", f->cert);
	else if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		rc = fail(err, errlen, "cannot load the key, or it does not match the certificate",
		          "ock.mmc.tls.key.path", f->key);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
	OPENSSL_cleanse(pass, sizeof(pass));
	return rc;
}

int tls_files_load(SSL_CTX *ctx, const struct tls_files *f, char *err, size_t errlen)
{
	int rc;

	if (f->ca[0] && (rc = load_ca(ctx, f, err, errlen)))
		return rc;
	if (f->cert[0] && (rc = load_identity(ctx, f, err, errlen)))
		return rc;
	return 0;
}
