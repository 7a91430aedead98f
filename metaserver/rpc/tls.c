#include "tls.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "meta_rpc.h"
#include "mmc/mmc.h"
#include "tls_files.h"

struct rpc_tls {
	SSL_CTX *ctx;
	bool verify_clients;
};

/* The RPC port's TLS context as c names it, in t (t->ctx set, also on failure: the caller frees it). */
static int tls_load(const struct meta_conf *c, struct rpc_tls *t, char *err, size_t errlen)
{
	int rc;

	if (!(t->ctx = SSL_CTX_new(TLS_server_method()))) {
		snprintf(err, errlen, "cannot create a TLS context");
		return MMC_MALLOC_FAILED;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	/* a peer that closes the socket without close_notify (libmmc tearing down, a killed process) ends the stream as
	 * a plain socket would, not as a protocol error: our frames carry their length, so a cut is seen anyway */
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	if ((rc = tls_files_load(t->ctx, &c->tls, err, errlen)))
		return rc;
	if (c->tls.ca[0]) { /* a CA to check clients against: mutual TLS */
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
		t->verify_clients = true;
	}
	return 0;
}

int rpc_tls_open(struct meta *m, char *err, size_t errlen)
{
	struct rpc_tls *t;

	if (!m->conf.tls.enable)
		return 0;
	if (!(t = calloc(1, sizeof(*t)))) {
		snprintf(err, errlen, "cannot create a TLS context");
		return MMC_MALLOC_FAILED;
	}
	m->rpc->tls = t; /* rpc_tls_close frees it, also after a failure */
	return tls_load(&m->conf, t, err, errlen);
}

int rpc_tls_check(const struct meta_conf *c, char *err, size_t errlen)
{
	struct rpc_tls t = {NULL, false};
	int rc = c->tls.enable ? tls_load(c, &t, err, errlen) : 0;

	SSL_CTX_free(t.ctx);
	return rc;
}

bool rpc_tls_verifies_clients(const struct meta *m)
{
	return m->rpc->tls && m->rpc->tls->verify_clients;
}

struct bufferevent *rpc_tls_bufferevent(struct meta *m, evutil_socket_t fd)
{
	struct bufferevent *bev;
	SSL *ssl;

	if (!m->rpc->tls) {
		bev = bufferevent_socket_new(m->base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (!bev)
			evutil_closesocket(fd);
		return bev;
	}
	ssl = SSL_new(m->rpc->tls->ctx);
	if (!ssl) {
		evutil_closesocket(fd);
		return NULL;
	}
	/* frees ssl with the bufferevent, and with it (BEV_OPT_CLOSE_ON_FREE) the socket */
	bev = bufferevent_openssl_socket_new(m->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		SSL_free(ssl);
		evutil_closesocket(fd);
		return NULL;
	}
	/* a peer that vanishes gets no close_notify from us: nothing waits for it */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/* The newest OpenSSL error the bufferevent kept (it also keeps SSL_get_error() codes, which name no reason). */
static unsigned long last_error(struct bufferevent *bev)
{
	unsigned long e;

	while ((e = bufferevent_get_openssl_error(bev)))
		if (ERR_GET_LIB(e))
			return e;
	return 0;
}

const char *rpc_tls_error_reason(struct meta *m, struct bufferevent *bev, const char *peer)
{
	static int bucket;
	SSL *ssl = m->rpc->tls ? bufferevent_openssl_get_ssl(bev) : NULL;
	unsigned long e = ssl ? last_error(bev) : 0;
	const char *why = e ? ERR_reason_error_string(e) : NULL;
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	bool handshake = ssl && !SSL_is_init_finished(ssl);
	const char *reason = handshake ? "tls_handshake" : "tls_error";

	if (!e)
		return "socket_error";
	m->stats.rpc_refused[RPC_REFUSED_TLS] += handshake;
	/* peers that never got in cannot fill the log */
	log_ratelimited(&bucket, LOG_WARN, "op=%s peer=%s err=\"%s%s%s\"", reason, peer, why ? why : "unknown",
	                v != X509_V_OK ? ": " : "", v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
	return reason;
}

bool rpc_tls_peer_name(struct meta *m, struct bufferevent *bev, char *cn, size_t cap)
{
	SSL *ssl = rpc_tls_verifies_clients(m) ? bufferevent_openssl_get_ssl(bev) : NULL;
	X509 *cert = ssl && SSL_get_verify_result(ssl) == X509_V_OK ? SSL_get1_peer_certificate(ssl) : NULL;
	int n = cert ? X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, (int)cap) : -1;

	X509_free(cert);
	if (n <= 0 || (size_t)n >= cap - 1) {
		cn[0] = '\0';
		return false;
	}
	return true;
}

void rpc_tls_close(struct meta *m)
{
	if (!m->rpc->tls)
		return;
	SSL_CTX_free(m->rpc->tls->ctx);
	free(m->rpc->tls);
	m->rpc->tls = NULL;
}
