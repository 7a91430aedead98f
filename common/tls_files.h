/*
 * The TLS files of the meta connection (ock.mmc.tls.*), as the server and the store both configure and load them:
 * the certificate and key this end presents (the key optionally encrypted, its passphrase in a file), the CA that
 * the other end's certificate must chain to, and a revocation list.
 */
#ifndef MMC_TLS_FILES_H
#define MMC_TLS_FILES_H

#include <stdbool.h>
#include <stddef.h>

struct tls_files {
	bool enable;        /* ock.mmc.tls.enable */
	char ca[256];       /* ock.mmc.tls.ca.path */
	char crl[256];      /* ock.mmc.tls.ca.crl.path */
	char cert[256];     /* ock.mmc.tls.cert.path */
	char key[256];      /* ock.mmc.tls.key.path */
	char key_pass[256]; /* ock.mmc.tls.key.pass.path */
};

/* The conf_key rows (conf_parse.h) of the ock.mmc.tls.* keys, for a struct with a struct tls_files named tls; F is
 * the table's offset-and-size macro. */
/* clang-format off */
#define TLS_FILES_KEYS(F) \
	{"ock.mmc.tls.enable", CONF_BOOL, F(tls.enable), 0, 0, NULL, NULL, 0}, \
	{"ock.mmc.tls.ca.path", CONF_STR, F(tls.ca), 0, 0, NULL, NULL, 0}, \
	{"ock.mmc.tls.ca.crl.path", CONF_STR, F(tls.crl), 0, 0, NULL, NULL, 0}, \
	{"ock.mmc.tls.cert.path", CONF_STR, F(tls.cert), 0, 0, NULL, NULL, 0}, \
	{"ock.mmc.tls.key.path", CONF_STR, F(tls.key), 0, 0, NULL, NULL, 0}, \
	{"ock.mmc.tls.key.pass.path", CONF_STR, F(tls.key_pass), 0, 0, NULL, NULL, 0}
/* clang-format on */

typedef struct ssl_ctx_st SSL_CTX;

/*
 * Loads into ctx what f names: the CA (and the CRL, then checked on every handshake) when set, the certificate and
 * key when set. Returns 0, or MMC_INVALID_PARAM with a message naming the key and OpenSSL's reason in err.
 */
int tls_files_load(SSL_CTX *ctx, const struct tls_files *f, char *err, size_t errlen);

#endif
