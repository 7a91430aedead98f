/*
 * TLS on the RPC port (ock.mmc.tls.*): one OpenSSL context for the server's life, and a bufferevent_openssl per
 * accepted socket, so framing and every handler above see plaintext as on a plain socket. With a CA configured,
 * clients must present a certificate it signed (mutual TLS). Loop thread only.
 */
#ifndef MMC_RPC_TLS_H
#define MMC_RPC_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/util.h>

struct meta;
struct meta_conf;
struct bufferevent;

/* Loads the certificate, key, CA and CRL named by m->conf into m->rpc->tls (nothing when ock.mmc.tls.enable is off).
 * Returns 0, or MMC_INVALID_PARAM with a message naming the key and OpenSSL's reason in err. */
int rpc_tls_open(struct meta *m, char *err, size_t errlen);
/* Loads what c names as rpc_tls_open would, and keeps nothing (--check-config, a reload). Returns as it does. */
int rpc_tls_check(const struct meta_conf *c, char *err, size_t errlen);
/* Whether clients must present a certificate (a CA is configured). */
bool rpc_tls_verifies_clients(const struct meta *m);
/* A bufferevent for the accepted fd: TLS (server side of the handshake) when enabled, else a plain socket. Owns fd
 * (closed on free, or here on failure). NULL on failure. */
struct bufferevent *rpc_tls_bufferevent(struct meta *m, evutil_socket_t fd);
/*
 * Why the connection of peer on bev failed (BEV_EVENT_ERROR), for its disconnect line: "socket_error", or, when
 * OpenSSL reported it, "tls_handshake" (a client certificate missing or not signed by the CA, a client that does
 * not trust ours, a peer that does not speak TLS; counted in mmc_rpc_refused_total{reason="tls"}) or "tls_error"
 * (after the handshake), with OpenSSL's reason logged first (op=tls_handshake or op=tls_error, err="...").
 */
const char *rpc_tls_error_reason(struct meta *m, struct bufferevent *bev, const char *peer);
/* The common name of the client certificate the peer on bev presented and the CA verified, into cn (cap bytes).
 * Returns true, or false with cn "" (no TLS, no certificate, no common name, or one that does not fit). */
bool rpc_tls_peer_name(struct meta *m, struct bufferevent *bev, char *cn, size_t cap);
void rpc_tls_close(struct meta *m);

#endif
