/*
 * TLS on the KVCM HTTP ports (kvcm.service.tls.cert_file / key_file / ca_file), with the system OpenSSL through
 * libevent's bufferevent_openssl. Off unless a certificate is configured; then both ports speak only TLS (a plain
 * HTTP request fails the handshake and the connection is closed). With ca_file, clients must also present a
 * certificate that CA signed.
 */
#ifndef MMC_KVCM_HTTP_TLS_H
#define MMC_KVCM_HTTP_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>

struct kvcm_conf;

/* *out = the server context, or NULL when TLS is off. 0, or MMC_ERROR with a message naming the key in err. */
int http_tls_ctx(const struct kvcm_conf *c, SSL_CTX **out, char *err, size_t errlen);

#endif
