/*
 * TLS on both HTTP ports (kvcm.service.tls.*), with a CA, a server certificate and a client certificate made by the
 * openssl command for this test: curl talks HTTPS to the server verifying it against the CA, a plain HTTP request
 * on a TLS port gets no answer, and with kvcm.service.tls.ca_file a client must present a certificate the CA signed.
 */
#include "kvcm_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(tls, .timeout = 60);

static char dir[64];
static char cert_kv[200], key_kv[200], ca_kv[200];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA, in dir. */
static void make_pki(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmc-kvcm-tls-XXXXXX");
	cr_assert(mkdtemp(dir));
	sh("cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
	   "-subj /CN=mmc-test-ca -keyout ca.key -out ca.pem 2>/dev/null",
	   dir);
	sh("cd '%s' && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
	   "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 "
	   "-keyout srv.key -out srv.csr 2>/dev/null && "
	   "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext "
	   "-out srv.pem 2>/dev/null",
	   dir);
	sh("cd '%s' && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=client "
	   "-keyout cli.key -out cli.csr 2>/dev/null && "
	   "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out cli.pem 2>/dev/null",
	   dir);
	snprintf(cert_kv, sizeof(cert_kv), "kvcm.service.tls.cert_file=%s/srv.pem", dir);
	snprintf(key_kv, sizeof(key_kv), "kvcm.service.tls.key_file=%s/srv.key", dir);
	snprintf(ca_kv, sizeof(ca_kv), "kvcm.service.tls.ca_file=%s/ca.pem", dir);
}

static void rm_pki(void)
{
	if (dir[0])
		sh("rm -rf '%s'", dir);
	dir[0] = '\0';
}

/* Runs after a test, failed or not. */
static void down(void)
{
	srv_down();
	rm_pki();
}

/* curl's output for an HTTPS request (extra: curl options), "" when it failed. */
static char *curl(const char *extra, uint16_t port, const char *method, const char *path, char *out, size_t len)
{
	char cmd[2048];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
	         "curl -sS --max-time 10 --cacert '%s/ca.pem' %s -X %s https://127.0.0.1:%u%s "
	         "-H 'Content-Type: application/json' %s 2>/dev/null",
	         dir, extra, method, port, path, strcmp(method, "POST") == 0 ? "-d '{}'" : "");
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

Test(tls, round_trip_on_both_ports_and_no_plain_http, .fini = down)
{
	const char *env[] = {cert_kv, key_kv, NULL};
	char out[65536], *body = NULL;
	json_t *r;

	make_pki();
	srv_up(env);
	r = json_loads(curl("", srv.m.http_port, "POST", "/api/getClusterInfo", out, sizeof(out)), 0, NULL);
	cr_expect_str_eq(code_of(r), "OK", "getClusterInfo over TLS: %s", out);
	json_decref(r);
	r = json_loads(curl("", srv.m.admin_port, "POST", "/api/listStorage", out, sizeof(out)), 0, NULL);
	cr_expect_str_eq(code_of(r), "OK", "listStorage over TLS: %s", out);
	json_decref(r);
	cr_expect(strstr(curl("", srv.m.admin_port, "GET", "/metrics", out, sizeof(out)), "mmc_kvcm_instances"),
	          "GET /metrics over TLS: %s", out);
	/* the plain protocol on a TLS port: no HTTP answer */
	cr_expect_lt(hc_request(&srv.meta, "POST", "/api/getClusterInfo", "{}", 2, &body), 0,
	             "a plain HTTP request was answered on a TLS port");
	free(body);
	/* a client that does not trust the server's CA refuses it */
	cr_expect_str_eq(curl("--cacert /dev/null", srv.m.http_port, "POST", "/api/getClusterInfo", out, sizeof(out)),
	                 "");
}

Test(tls, client_certificates_with_a_ca_file, .fini = down)
{
	const char *env[] = {cert_kv, key_kv, ca_kv, NULL};
	char out[65536], opts[400];
	json_t *r;

	make_pki();
	srv_up(env);
	cr_expect_str_eq(curl("", srv.m.http_port, "POST", "/api/getClusterInfo", out, sizeof(out)), "",
	                 "a client without a certificate was served");
	snprintf(opts, sizeof(opts), "--cert '%s/cli.pem' --key '%s/cli.key'", dir, dir);
	r = json_loads(curl(opts, srv.m.http_port, "POST", "/api/getClusterInfo", out, sizeof(out)), 0, NULL);
	cr_expect_str_eq(code_of(r), "OK", "with a client certificate: %s", out);
	json_decref(r);
}

Test(tls, bad_files_stop_the_start)
{
	static const char *const env[] = {"kvcm.service.tls.cert_file=/nonexistent.pem",
	                                  "kvcm.service.tls.key_file=/nonexistent.key", NULL};
	static const char *const half[] = {"kvcm.service.tls.cert_file=/nonexistent.pem", NULL};
	struct kvcm_srv s;

	cr_expect_neq(kvcm_srv_start(&s, env), 0, "a missing certificate must stop the start");
	kvcm_srv_stop(&s);
	cr_expect_neq(kvcm_srv_start(&s, half), 0, "a certificate without a key must stop the start");
	kvcm_srv_stop(&s);
}
