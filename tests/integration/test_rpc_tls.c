/*
 * TLS on the RPC port (ock.mmc.tls.*), with a CA, server and client certificates generated here by the openssl
 * command: mutual TLS works end to end; a store that does not trust the server, a store without a certificate and
 * a plain-TCP peer get nothing served. A refused certificate is MMC_NOT_AUTHORIZED with OpenSSL's reason on both
 * sides, and counted; a clean teardown is an end of stream, not an error. A certificate issued to a tenant (its
 * common name) connects as that tenant only.
 */
#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "raw_rpc.h"
#include "store_conf.h"

static struct metaserver meta;
static char dir[64];

static void make_certs(void)
{
	char cmd[4096];

	snprintf(dir, sizeof(dir), "/tmp/mmc-tls-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
	         "(cd %s && umask 077 && K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes' && "
	         "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=mmc-test-ca && "
	         "openssl req -x509 $K -keyout other.key -out other.pem -days 2 -subj /CN=another-ca && "
	         "openssl req $K -keyout server.key -out server.csr -subj /CN=mmc-meta && "
	         "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext && "
	         "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
	         "-extfile san.ext && "
	         "printf 'key passphrase\\n' > pass && "
	         "openssl pkey -in server.key -aes256 -passout file:pass -out server.enc.key && "
	         "openssl req $K -keyout client.key -out client.csr -subj /CN=mmc-store && "
	         "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2 && "
	         "openssl req $K -keyout alpha.key -out alpha.csr -subj /CN=alpha && "
	         "openssl x509 -req -in alpha.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out alpha.pem -days 2 && "
	         "printf 'alpha-secret-0123456789abcdef\\n' > alpha.token && "
	         "printf 'alpha alpha.token\\n' > tenants && chmod 600 tenants && "
	         "openssl req $K -keyout stranger.key -out stranger.csr -subj /CN=mmc-stranger && "
	         "openssl x509 -req -in stranger.csr -CA other.pem -CAkey other.key -CAcreateserial -out stranger.pem "
	         "-days 2"
	         ") >/dev/null 2>&1",
	         dir);
	cr_assert_eq(system(cmd), 0, "openssl could not make the test certificates");
}

static char env[6][320];

static void init(void)
{
	const char *extra[6];

	make_certs();
	snprintf(env[0], sizeof(env[0]), "ock.mmc.tls.enable=true");
	snprintf(env[1], sizeof(env[1]), "ock.mmc.tls.cert.path=%s/server.pem", dir);
	snprintf(env[2], sizeof(env[2]), "ock.mmc.tls.key.path=%s/server.enc.key", dir);
	snprintf(env[3], sizeof(env[3]), "ock.mmc.tls.key.pass.path=%s/pass", dir);
	snprintf(env[4], sizeof(env[4]), "ock.mmc.tls.ca.path=%s/ca.pem", dir);
	for (int i = 0; i < 5; i++)
		extra[i] = env[i];
	extra[5] = NULL;
	cr_assert_eq(metaserver_start(&meta, extra), 0, "a TLS server with an encrypted key");
}

static void fini(void)
{
	char cmd[128];

	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
	}
}

TestSuite(rpc_tls, .init = init, .fini = fini, .timeout = 120);

/* Config-file lines of a TLS store trusting ca and presenting cert (NULL: none). */
static const char *tls_lines(const char *ca, const char *cert)
{
	static char lines[1024];
	int n = snprintf(lines, sizeof(lines), "ock.mmc.tls.enable = true\nock.mmc.tls.ca.path = %s/%s.pem\n", dir, ca);

	if (cert)
		snprintf(lines + n, sizeof(lines) - (size_t)n,
		         "ock.mmc.tls.cert.path = %s/%s.pem\nock.mmc.tls.key.path = %s/%s.key\n", dir, cert, dir, cert);
	return lines;
}

static void serve_over_tls(const char *url)
{
	char in[8192], out[8192];
	mmc_store *s;

	cr_assert_eq(store_open(url, tls_lines("ca", "client"), true, &s), 0, "mutual TLS to %s", url);
	memset(in, 't', sizeof(in));
	cr_assert_eq(mmc_put_from(s, "over-tls", in, sizeof(in), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into(s, "over-tls", out, sizeof(out), MMC_COPY_G2H), 0);
	cr_assert_eq(memcmp(in, out, sizeof(in)), 0);
	cr_assert_eq(mmc_remove(s, "over-tls"), 0);
	mmc_destroy(s);
}

Test(rpc_tls, mutual_tls_serves_a_store)
{
	char url[96];

	serve_over_tls(meta.url);
	snprintf(url, sizeof(url), "tcp://localhost:%u", meta.rpc_port);
	serve_over_tls(url); /* checked against the certificate's DNS name this time */
}

Test(rpc_tls, peers_without_the_right_certificates_get_nothing)
{
	Mmc__Ping ping = MMC__PING__INIT;
	mmc_store *s;
	int fd;

	cr_assert_eq(store_open(meta.url, tls_lines("other", "client"), false, &s), MMC_NOT_AUTHORIZED,
	             "a store that does not trust the server's CA");
	mmc_destroy(s);
	cr_assert_neq(store_open(meta.url, tls_lines("ca", NULL), false, &s), 0, "a store without a certificate");
	mmc_destroy(s);
	cr_assert_neq(store_open(meta.url, NULL, false, &s), 0, "a plain-TCP store");
	mmc_destroy(s);
	fd = raw_dial(meta.rpc_port);
	cr_assert_eq(raw_send_body(fd, 1, MMC__FRAME__BODY_PING, &ping), 0);
	cr_assert(raw_closed(fd, 5000), "a plaintext frame on the TLS port");
	close(fd);
	serve_over_tls(meta.url);
}

/* What libmmc logged at error level, for the reasons it gives. */
static char client_log[8192];
static size_t client_log_len;
static pthread_mutex_t client_log_lock = PTHREAD_MUTEX_INITIALIZER;

static void keep_log(int level, const char *msg)
{
	pthread_mutex_lock(&client_log_lock);
	if (level >= MMC_LOG_ERROR && client_log_len + strlen(msg) + 2 < sizeof(client_log))
		client_log_len +=
		    (size_t)snprintf(client_log + client_log_len, sizeof(client_log) - client_log_len, "%s\n", msg);
	pthread_mutex_unlock(&client_log_lock);
}

static bool client_logged(const char *needle)
{
	bool found;

	pthread_mutex_lock(&client_log_lock);
	found = strstr(client_log, needle) != NULL;
	pthread_mutex_unlock(&client_log_lock);
	return found;
}

/* Polls the server's log for needle (its line may trail the client's error by a loop turn). */
static bool server_logs_soon(const char *needle)
{
	for (int i = 0; i < 100; i++, usleep(50000))
		if (metaserver_log_has(&meta, needle))
			return true;
	return false;
}

Test(rpc_tls, a_refused_certificate_is_not_authorized_with_the_reason)
{
	char cmd[256];
	mmc_store *s;

	mmc_set_log_handler(keep_log);
	cr_assert_eq(store_open(meta.url, tls_lines("ca", NULL), false, &s), MMC_NOT_AUTHORIZED,
	             "a store without a certificate, against a server that asks for one");
	mmc_destroy(s);
	cr_expect(client_logged("certificate required"), "libmmc does not say why: %s", client_log);
	cr_expect(server_logs_soon("reason=tls_handshake"), "the server does not log the refused handshake");
	cr_expect(server_logs_soon("op=tls_handshake peer=127.0.0.1:"), "the server does not log why it refused");
	cr_expect(metaserver_log_has(&meta, "err=\"peer did not return a certificate\""), "nor OpenSSL's reason");

	cr_assert_eq(store_open(meta.url, tls_lines("ca", "stranger"), false, &s), MMC_NOT_AUTHORIZED,
	             "a store whose certificate another CA signed");
	mmc_destroy(s);
	cr_expect(client_logged("unknown ca"), "libmmc does not say why: %s", client_log);
	cr_expect(server_logs_soon("err=\"certificate verify failed"), "the server does not log OpenSSL's reason");
	mmc_set_log_handler(NULL);

	snprintf(cmd, sizeof(cmd),
	         "curl -sf http://127.0.0.1:%u/metrics | grep -qx 'mmc_rpc_refused_total{reason=\"tls\"} 2'",
	         meta.admin_port);
	cr_expect_eq(system(cmd), 0, "the two refusals are not counted");
}

/* tls_lines() and, unless tenant is NULL, the tenant and its secret's file. */
static const char *tenant_lines(const char *cert, const char *tenant)
{
	static char lines[2048];

	int n = snprintf(lines, sizeof(lines), "%s", tls_lines("ca", cert));

	if (tenant)
		snprintf(lines + n, sizeof(lines) - (size_t)n,
		         "ock.mmc.client.tenant = %s\nock.mmc.client.auth_token_file = %s/alpha.token\n", tenant, dir);
	return lines;
}

/* The server again, with the tenant alpha (alpha.pem is its certificate), and the default tenant's pool. */
static void restart_with_tenants(mmc_store **pool)
{
	const char *extra[7];

	for (int i = 0; i < 5; i++)
		extra[i] = env[i];
	snprintf(env[5], sizeof(env[5]), "ock.mmc.meta.tenants_file=%s/tenants", dir);
	extra[5] = env[5];
	extra[6] = NULL;
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_eq(metaserver_restart(&meta, extra), 0, "a TLS server with tenants");
	cr_assert_eq(store_open(meta.url, tls_lines("ca", "client"), true, pool), 0, "the default tenant's pool");
}

Test(rpc_tls, a_tenants_certificate_connects_as_that_tenant_only)
{
	mmc_store *pool, *s;

	restart_with_tenants(&pool);
	cr_assert_eq(store_open(meta.url, tenant_lines("alpha", "alpha"), false, &s), 0,
	             "alpha's certificate as alpha");
	mmc_destroy(s);
	cr_assert_eq(store_open(meta.url, tenant_lines("client", "alpha"), false, &s), 0,
	             "a certificate of no tenant, with alpha's secret");
	mmc_destroy(s);
	cr_assert_eq(store_open(meta.url, tenant_lines("alpha", NULL), false, &s), MMC_NOT_AUTHORIZED,
	             "alpha's certificate as the default tenant");
	mmc_destroy(s);
	cr_expect(server_logs_soon("err=tenant_certificate"), "the refusal is not logged");
	mmc_destroy(pool);
}

/*
 * A raw TLS peer presenting cert that asks whether key exists without saying a hello: the reply's per-key result
 * (1 exists), or -1 when the server closed the connection instead.
 */
static int exist_without_hello(const char *cert, const char *key)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem it = MMC__KEY_ITEM__INIT, *pit = &it;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	char path[320];
	uint8_t *out, in[4096];
	size_t n, got = 0;
	int fd, rc = -1, k;
	SSL *ssl;

	cr_assert_not_null(ctx);
	snprintf(path, sizeof(path), "%s/%s.pem", dir, cert);
	cr_assert_eq(SSL_CTX_use_certificate_file(ctx, path, SSL_FILETYPE_PEM), 1);
	snprintf(path, sizeof(path), "%s/%s.key", dir, cert);
	cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, path, SSL_FILETYPE_PEM), 1);
	cr_assert((fd = raw_dial(meta.rpc_port)) >= 0);
	cr_assert_not_null(ssl = SSL_new(ctx));
	SSL_set_fd(ssl, fd);
	cr_assert_eq(SSL_connect(ssl), 1, "the TLS handshake");
	it.key = (char *)key;
	kb.n_items = 1;
	kb.items = &pit;
	f.id = 9;
	f.body_case = MMC__FRAME__BODY_EXIST;
	f.exist = &kb;
	cr_assert_not_null(out = raw_pack(&f, &n));
	cr_assert_eq(SSL_write(ssl, out, (int)n), (int)n);
	free(out);
	/* one reply frame: its 4-byte length, then the frame */
	while ((got < 4 || got < 4 + (in[0] | (size_t)in[1] << 8 | (size_t)in[2] << 16 | (size_t)in[3] << 24)) &&
	       (k = SSL_read(ssl, in + got, (int)(sizeof(in) - got))) > 0)
		got += (size_t)k;
	if (got > 4 && (r = mmc__frame__unpack(NULL, got - 4, in + 4))) {
		if (r->body_case == MMC__FRAME__BODY_KEY_REPLY && r->key_reply->n_items == 1)
			rc = r->key_reply->items[0]->result;
		mmc__frame__free_unpacked(r, NULL);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return rc;
}

/* Without a cluster secret a peer may skip its hello and is served as the default tenant; not one whose client
 * certificate names a tenant: it used to read (and could remove) the default tenant's keys that way, where a
 * hello claiming the default tenant is refused to it. */
Test(rpc_tls, a_tenants_certificate_says_its_hello_first)
{
	char buf[4096] = {0};
	mmc_store *pool;

	restart_with_tenants(&pool);
	cr_assert_eq(mmc_put_from(pool, "default-key", buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(exist_without_hello("client", "default-key"), 1, "a certificate of no tenant, as before");
	cr_assert_eq(exist_without_hello("alpha", "default-key"), -1, "alpha's certificate, served as the default");
	mmc_destroy(pool);
}

Test(rpc_tls, a_store_that_leaves_ends_the_stream_cleanly)
{
	serve_over_tls(meta.url);
	cr_expect(server_logs_soon("reason=eof"), "a store's teardown is not an end of stream");
	cr_expect(!metaserver_log_has(&meta, "reason=socket_error"), "a clean teardown logged as a socket error");
	cr_expect(!metaserver_log_has(&meta, "reason=tls_"), "a clean teardown logged as a TLS failure");
}
