/*
 * TLS on the store's meta connection (ock.mmc.tls.*): the server's certificate is checked against the configured CA
 * and against the host name or address of ock.mmc.meta_service_url; with a certificate and key configured, the store
 * presents them (the server asks for one when it has a CA). The reader thread and the senders share one session:
 * OpenSSL allows no two calls on it at once, so each call takes its lock and never blocks inside it (the socket is
 * non-blocking; the waiting is done in poll, outside the lock). Thread-safe.
 */
#ifndef MMC_META_TLS_H
#define MMC_META_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct client_conf;
struct meta_tls_ctx;
struct meta_tls;

/* The context for conf's TLS keys, or NULL (error logged) when a file cannot be loaded. */
struct meta_tls_ctx *meta_tls_ctx_new(const struct client_conf *conf);
void meta_tls_ctx_free(struct meta_tls_ctx *ctx);

/* Runs the handshake on connected socket fd (made non-blocking) within timeout_ms. Returns the session, or NULL
 * (the reason logged; *rc MMC_NOT_AUTHORIZED for a server certificate that does not verify, or a server that turned
 * this store's certificate down, else MMC_NOT_CONNECTED_META). */
struct meta_tls *meta_tls_connect(struct meta_tls_ctx *ctx, int fd, const char *host, int timeout_ms, int *rc);
/* Reads up to len bytes: > 0 bytes read, 0 at the end of the stream, -1 on an error (also after shutdown(fd)). */
ssize_t meta_tls_read(struct meta_tls *t, void *buf, size_t len);
/*
 * Whether the server turned this store's certificate down (a missing one, or one its CA did not sign): an alert
 * that under TLS 1.3 comes after the client's side of the handshake is done, so the first read meets it (logged
 * there, with OpenSSL's text). Call once the reading thread is done with t.
 */
bool meta_tls_refused(const struct meta_tls *t);
/* Writes all len bytes. Returns 0 or MMC_ERROR. */
int meta_tls_write(struct meta_tls *t, const void *buf, size_t len);
/* Frees the session (the socket stays the caller's). NULL is ignored. */
void meta_tls_free(struct meta_tls *t);

#endif
