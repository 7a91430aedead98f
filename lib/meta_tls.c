#include "meta_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "lg.h"
#include "local_config.h"
#include "mmc/mmc.h"
#include "tls_files.h"

/* how long a call that OpenSSL says must wait for the other direction waits before it tries again: the other
 * thread may be the one that consumes what it waits for */
#define CROSS_WAIT_MS 50

struct meta_tls_ctx {
	SSL_CTX *ctx;
};

struct meta_tls {
	pthread_mutex_t lock;
	SSL *ssl;
	int fd;
	bool refused;   /* the server's alert turned our certificate down */
	char host[256]; /* the server's name, for the log */
};

/* ---- a socket BIO that never raises SIGPIPE: libmmc lives in the application's process, and OpenSSL's own socket
 * BIO write()s, which kills a process that did not ignore the signal when the server has closed ---- */

static int bio_write(BIO *b, const char *buf, size_t len, size_t *written)
{
	ssize_t n = send(BIO_get_fd(b, NULL), buf, len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			BIO_set_retry_write(b);
		return 0;
	}
	*written = (size_t)n;
	return 1;
}

static int bio_read(BIO *b, char *buf, size_t len, size_t *readbytes)
{
	ssize_t n = recv(BIO_get_fd(b, NULL), buf, len, 0);

	BIO_clear_retry_flags(b);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			BIO_set_retry_read(b);
		return 0;
	}
	*readbytes = (size_t)n;
	return 1;
}

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

/* The socket BIO's own methods (fd, close, ctrl), with reads and writes of our own. */
static void bio_method_init(void)
{
	const BIO_METHOD *sock = BIO_s_socket();
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "mmc-socket");

	if (!m)
		return;
	BIO_meth_set_write_ex(m, bio_write);
	BIO_meth_set_read_ex(m, bio_read);
	BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
	BIO_meth_set_create(m, BIO_meth_get_create(sock));
	BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
	bio_method = m;
}

/* Attaches fd (not owned) to ssl through the BIO above. */
static int attach_fd(SSL *ssl, int fd)
{
	BIO *b;

	pthread_once(&bio_once, bio_method_init);
	if (!bio_method || !(b = BIO_new(bio_method)))
		return -1;
	BIO_set_fd(b, fd, BIO_NOCLOSE);
	SSL_set_bio(ssl, b, b);
	return 0;
}

struct meta_tls_ctx *meta_tls_ctx_new(const struct client_conf *conf)
{
	struct meta_tls_ctx *t = calloc(1, sizeof(*t));
	char err[512];

	if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
		free(t);
		lg_error("TLS: cannot create a context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	if (tls_files_load(t->ctx, &conf->tls, err, sizeof(err))) {
		lg_error("TLS: %s", err);
		meta_tls_ctx_free(t);
		return NULL;
	}
	return t;
}

void meta_tls_ctx_free(struct meta_tls_ctx *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

/*
 * Waits (without the lock) for what OpenSSL asked for. Returns 0 to retry, -1 for a real error. A socket error or
 * hang-up is left for the retry to meet: bytes may be queued before it (a server's alert, then its reset), and the
 * next read or write reports the error itself.
 */
static int wait_for(struct meta_tls *t, int err, int ms)
{
	struct pollfd p = {.fd = t->fd, .events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};

	if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
		return MMC_ERROR;
	if (poll(&p, 1, ms) < 0 && errno != EINTR)
		return MMC_ERROR;
	return p.revents & POLLNVAL ? MMC_ERROR : 0;
}

/* Names the server must have: the URL's address, or its host name (also sent as SNI). */
static int expect_peer(SSL *ssl, const char *host)
{
	unsigned char ip[16];
	bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;

	if (literal)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : MMC_ERROR;
	return SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1 ? 0 : MMC_ERROR;
}

/* The alerts by which a server turns a client's certificate down, or asks for one that was not sent. */
static bool refusal(unsigned long e)
{
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return false;
	switch (ERR_GET_REASON(e)) {
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
		return true;
	default:
		return false;
	}
}

/* Takes this thread's OpenSSL errors: the refusal among them if there is one, else the first. */
static unsigned long take_error(void)
{
	unsigned long e, first = 0;

	while ((e = ERR_get_error())) {
		if (refusal(e)) {
			ERR_clear_error();
			return e;
		}
		first = first ? first : e;
	}
	return first;
}

static void log_refusal(const char *host, unsigned long e)
{
	const char *why = ERR_reason_error_string(e);

	lg_error("TLS: the meta server at %s refused this store's certificate: %s (check ock.mmc.tls.cert.path and "
	         "ock.mmc.tls.key.path, and that the server's ock.mmc.tls.ca.path signed it)",
	         host, why ? why : "unknown alert");
}

static int handshake(struct meta_tls *t, const char *host, int timeout_ms)
{
	uint64_t deadline = clock_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int n = SSL_connect(t->ssl), err = n == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, n);
		uint64_t now = clock_ms();

		if (n == 1)
			return 0;
		if (now >= deadline || wait_for(t, err, (int)(deadline - now))) {
			long v = SSL_get_verify_result(t->ssl);
			unsigned long e = take_error();
			char why[256];

			if (refusal(e)) { /* TLS 1.2: the server's alert ends the handshake itself */
				log_refusal(host, e);
				return MMC_NOT_AUTHORIZED;
			}
			ERR_error_string_n(e, why, sizeof(why));
			lg_error("TLS handshake with the meta server at %s failed: %s%s%s", host,
			         v != X509_V_OK ? X509_verify_cert_error_string(v) : why,
			         v != X509_V_OK ? " (check ock.mmc.tls.ca.path and the server's certificate names)"
			                        : "",
			         now >= deadline ? " (timed out)" : "");
			ERR_clear_error();
			return v != X509_V_OK ? MMC_NOT_AUTHORIZED : MMC_NOT_CONNECTED_META;
		}
	}
}

struct meta_tls *meta_tls_connect(struct meta_tls_ctx *ctx, int fd, const char *host, int timeout_ms, int *rc)
{
	struct meta_tls *t = calloc(1, sizeof(*t));

	*rc = MMC_NOT_CONNECTED_META;
	if (!t || !(t->ssl = SSL_new(ctx->ctx))) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->fd = fd;
	snprintf(t->host, sizeof(t->host), "%s", host);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (attach_fd(t->ssl, fd) || expect_peer(t->ssl, host) || (*rc = handshake(t, host, timeout_ms))) {
		meta_tls_free(t);
		return NULL;
	}
	*rc = 0;
	return t;
}

ssize_t meta_tls_read(struct meta_tls *t, void *buf, size_t len)
{
	for (;;) {
		unsigned long e = 0;
		int n, err;

		pthread_mutex_lock(&t->lock);
		n = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
		err = n > 0 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, n);
		if (err == SSL_ERROR_SSL)
			e = take_error(); /* this thread's queue: before another call on it adds to it */
		pthread_mutex_unlock(&t->lock);
		if (n > 0)
			return n;
		if (err == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (refusal(e)) {
			t->refused = true;
			log_refusal(t->host, e);
		}
		if (wait_for(t, err, err == SSL_ERROR_WANT_READ ? -1 : CROSS_WAIT_MS))
			return -1;
	}
}

/* Waits until the socket takes more bytes, for at most its send timeout (SO_SNDTIMEO, set once the server said
 * hello: a server that stopped reading is dropped, not waited for); false when it did not. */
static bool writable(struct meta_tls *t)
{
	struct timeval tv = {0, 0};
	socklen_t len = sizeof(tv);
	struct pollfd p = {.fd = t->fd, .events = POLLOUT};
	int ms = -1, rc;

	if (getsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) == 0 && (tv.tv_sec || tv.tv_usec))
		ms = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
	while ((rc = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return rc == 1 && !(p.revents & POLLNVAL);
}

int meta_tls_write(struct meta_tls *t, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		int n, err;

		pthread_mutex_lock(&t->lock);
		n = SSL_write(t->ssl, p, len > INT32_MAX ? INT32_MAX : (int)len);
		err = n > 0 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, n);
		pthread_mutex_unlock(&t->lock);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (err == SSL_ERROR_WANT_WRITE ? !writable(t) : wait_for(t, err, CROSS_WAIT_MS) != 0) {
			return MMC_ERROR;
		}
	}
	return 0;
}

bool meta_tls_refused(const struct meta_tls *t)
{
	return t && t->refused;
}

void meta_tls_free(struct meta_tls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
