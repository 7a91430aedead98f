/*
 * Who may use the RPC port: the cluster secret (ock.mmc.meta.auth_token) checked in the hello before any request,
 * the wire version, the loopback default, host names and IPv6 in the URL, and the services' rejoin secrets (an
 * attacker who learnt a service's rank and incarnation cannot take it over: issue 17, D1).
 */
#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc.h"
#include "raw_rpc.h"
#include "store_conf.h"

#define TOKEN "s3cret-cluster-token-0123456789"

static struct metaserver meta;

static void fini(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(rpc_auth, .fini = fini, .timeout = 120);

/* Whether the admin port's /metrics has a line `name N` with N > 0. */
static bool metrics_count_positive(const char *name)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
	         "curl -sf http://127.0.0.1:%u/metrics | grep -qF '%s ' && "
	         "curl -sf http://127.0.0.1:%u/metrics | grep -F '%s ' | grep -qv ' 0$'",
	         meta.admin_port, name, meta.admin_port, name);
	return system(cmd) == 0;
}

static void start_with_token(void)
{
	static char file[64], env[128];
	const char *extra[] = {env, NULL};

	conf_write_file(file, TOKEN "\n");
	snprintf(env, sizeof(env), "ock.mmc.meta.auth_token_file=%s", file);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
}

static void put_get(mmc_store *s, const char *key)
{
	char in[4096], out[4096];

	memset(in, 'k', sizeof(in));
	cr_assert_eq(mmc_put_from(s, key, in, sizeof(in), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into(s, key, out, sizeof(out), MMC_COPY_G2H), 0);
	cr_assert_eq(memcmp(in, out, sizeof(in)), 0);
}

Test(rpc_auth, mmc_init_needs_the_cluster_secret)
{
	mmc_store *s;
	char file[64], lines[128];

	start_with_token();
	cr_assert_eq(store_open(meta.url, NULL, true, &s), MMC_NOT_AUTHORIZED, "no secret");
	mmc_destroy(s);
	cr_assert_eq(store_open(meta.url, "ock.mmc.client.auth_token = not-the-cluster-token\n", true, &s),
	             MMC_NOT_AUTHORIZED, "a wrong secret");
	mmc_destroy(s);
	conf_write_file(file, TOKEN "\n");
	snprintf(lines, sizeof(lines), "ock.mmc.client.auth_token_file = %s\n", file);
	cr_assert_eq(store_open(meta.url, lines, true, &s), 0, "the right secret, from a file");
	put_get(s, "authorized");
	cr_assert_eq(mmc_remove(s, "authorized"), 0);
	mmc_destroy(s);
	unlink(file);
	cr_assert(!metaserver_log_has(&meta, TOKEN), "the secret is in the server's log");
}

/* Lines of the server's log holding needle. */
static int log_count(const char *needle)
{
	FILE *f = fopen(meta.log, "r");
	char line[4096];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Polls until the log holds n lines with needle (the server reads the store's close after mmc_init returned). */
static bool log_reaches(const char *needle, int n)
{
	for (int i = 0; i < 1000; i++, usleep(10000))
		if (log_count(needle) >= n)
			return true;
	return false;
}

/* A store without the secret, or with another one, hangs up after the challenge (libmmc checks the server's proof
 * first): the server must still say so and count it, not log a bare eof. */
Test(rpc_auth, a_refused_secret_is_logged_and_counted_by_the_server)
{
	mmc_store *s;

	start_with_token();
	cr_assert_eq(store_open(meta.url, NULL, true, &s), MMC_NOT_AUTHORIZED, "no secret");
	mmc_destroy(s);
	cr_assert(log_reaches("err=no_proof", 1), "no line for a store without the secret");
	cr_assert(metrics_count_positive("mmc_rpc_refused_total{reason=\"credentials\"}"));
	cr_assert_eq(store_open(meta.url, "ock.mmc.client.auth_token = not-the-cluster-token\n", true, &s),
	             MMC_NOT_AUTHORIZED, "a wrong secret");
	mmc_destroy(s);
	cr_assert(log_reaches("err=no_proof", 2), "no line for a store with a wrong secret");
}

Test(rpc_auth, a_store_with_a_secret_refuses_a_server_without_one)
{
	mmc_store *s;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	cr_assert_eq(store_open(meta.url, "ock.mmc.client.auth_token = " TOKEN "\n", false, &s), MMC_NOT_AUTHORIZED);
	mmc_destroy(s);
}

/* One request of each kind the port serves, on key (or pattern); bodies live in static storage. */
static const Mmc__Frame__BodyCase requests[] = {
    MMC__FRAME__BODY_REGISTER,     MMC__FRAME__BODY_UNREGISTER, MMC__FRAME__BODY_PING,
    MMC__FRAME__BODY_SERVICE,      MMC__FRAME__BODY_ALLOC,      MMC__FRAME__BODY_COMMIT,
    MMC__FRAME__BODY_GET,          MMC__FRAME__BODY_RELEASE,    MMC__FRAME__BODY_REMOVE,
    MMC__FRAME__BODY_EXIST,        MMC__FRAME__BODY_QUERY,      MMC__FRAME__BODY_ADD_LEASE,
    MMC__FRAME__BODY_REMOVE_LEASE, MMC__FRAME__BODY_MALLOC,     MMC__FRAME__BODY_WRITE_FINISH,
    MMC__FRAME__BODY_EVICT,        MMC__FRAME__BODY_PREFETCH,   MMC__FRAME__BODY_REMOVE_MATCHING,
};
#define NREQ (sizeof(requests) / sizeof(requests[0]))

static void *body_for(Mmc__Frame__BodyCase bc, const char *key)
{
	static Mmc__Register reg;
	static Mmc__Unregister unreg;
	static Mmc__Ping ping;
	static Mmc__ServiceQuery sq;
	static Mmc__RemoveMatching rm;
	static Mmc__KeyBatch kb;
	static Mmc__KeyItem item, *items[1];

	mmc__register__init(&reg);
	mmc__unregister__init(&unreg);
	mmc__ping__init(&ping);
	mmc__service_query__init(&sq);
	mmc__remove_matching__init(&rm);
	mmc__key_batch__init(&kb);
	mmc__key_item__init(&item);
	item.key = (char *)key;
	item.size = 4096;
	items[0] = &item;
	kb.items = items;
	kb.n_items = 1;
	kb.replica_num = 1;
	rm.pattern = (char *)key;
	switch (bc) {
	case MMC__FRAME__BODY_REGISTER:
		return &reg;
	case MMC__FRAME__BODY_UNREGISTER:
		return &unreg;
	case MMC__FRAME__BODY_PING:
		return &ping;
	case MMC__FRAME__BODY_SERVICE:
		return &sq;
	case MMC__FRAME__BODY_REMOVE_MATCHING:
		return &rm;
	default:
		return &kb;
	}
}

/* With the secret set, a peer that has not proved it gets nothing served: every request closes its connection,
 * before the hello, after a hello without the proof, and after a wrong proof; the right proof gets replies. */
Test(rpc_auth, every_entry_point_refuses_an_unauthenticated_caller)
{
	mmc_store *s;
	int fd;

	start_with_token();
	cr_assert_eq(store_open(meta.url, "ock.mmc.client.auth_token = " TOKEN "\n", true, &s), 0);
	put_get(s, "precious");
	for (size_t i = 0; i < NREQ; i++) {
		const char *key = requests[i] == MMC__FRAME__BODY_REMOVE_MATCHING ? "" : "precious";

		fd = raw_dial(meta.rpc_port);
		cr_assert_eq(raw_send_body(fd, 9, requests[i], body_for(requests[i], key)), 0);
		cr_assert(raw_closed(fd, 5000), "request %d before the hello was not refused", requests[i]);
		close(fd);
		fd = raw_dial(meta.rpc_port);
		cr_assert_eq(raw_hello(fd, 0, NULL, false), 1, "the server challenges");
		cr_assert_eq(raw_send_body(fd, 9, requests[i], body_for(requests[i], key)), 0);
		cr_assert(raw_closed(fd, 5000), "request %d instead of the proof was not refused", requests[i]);
		close(fd);
	}
	fd = raw_dial(meta.rpc_port);
	cr_assert_eq(raw_hello(fd, 0, NULL, true), MMC_NOT_AUTHORIZED, "a wrong proof");
	cr_assert(raw_closed(fd, 5000));
	close(fd);
	cr_assert(metaserver_log_has(&meta, "err=bad_credentials"), "a wrong proof is not logged");
	cr_assert(metrics_count_positive("mmc_rpc_refused_total{reason=\"credentials\"}"), "not counted in /metrics");
	cr_assert_eq(mmc_is_exist(s, "precious"), 1, "an unauthenticated request changed the store");

	fd = raw_dial(meta.rpc_port);
	cr_assert_eq(raw_hello(fd, 0, TOKEN, true), 0, "the right proof");
	for (size_t i = 0; i < NREQ; i++) {
		Mmc__Frame *r;

		cr_assert_eq(raw_send_body(fd, 100 + i, requests[i], body_for(requests[i], "^no-such-key$")), 0);
		r = raw_recv(fd);
		cr_assert_not_null(r, "request %d of an authenticated peer got no reply", requests[i]);
		cr_assert_eq(r->id, 100 + i);
		mmc__frame__free_unpacked(r, NULL);
	}
	close(fd);
	cr_assert_eq(mmc_is_exist(s, "precious"), 1);
	mmc_destroy(s);
}

Test(rpc_auth, another_major_wire_version_gets_a_clear_refusal)
{
	Mmc__Hello h = MMC__HELLO__INIT;
	Mmc__Frame *r;
	int fd;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	fd = raw_dial(meta.rpc_port);
	h.version = 2;
	cr_assert_eq(raw_send_body(fd, 1, MMC__FRAME__BODY_HELLO, &h), 0);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_HELLO_REPLY);
	cr_assert_eq(r->hello_reply->result, MMC_INVALID_PARAM);
	cr_assert_eq(r->hello_reply->version, 1, "the reply names the server's version");
	mmc__frame__free_unpacked(r, NULL);
	cr_assert(raw_closed(fd, 5000), "the connection stays open");
	close(fd);
	cr_assert(metaserver_log_has(&meta, "err=wire_version_mismatch client_version=2 server_version=1"));
}

Test(rpc_auth, a_reachable_address_needs_credentials)
{
	const char *open_bind[] = {"ock.mmc.meta_service_url=tcp://0.0.0.0:0", NULL};
	const char *with_token[] = {"ock.mmc.meta_service_url=tcp://0.0.0.0:0", "ock.mmc.meta.auth_token=" TOKEN, NULL};
	const char *insecure[] = {"ock.mmc.meta_service_url=tcp://0.0.0.0:0", "ock.mmc.meta.allow_insecure_bind=true",
	                          NULL};

	cr_assert_neq(metaserver_start(&meta, open_bind), 0, "0.0.0.0 without credentials started");
	cr_assert(metaserver_log_has(&meta, "set ock.mmc.meta.auth_token"), "the refusal names the key");
	metaserver_cleanup(&meta);
	cr_assert_eq(metaserver_start(&meta, with_token), 0);
	cr_assert(strstr(meta.ready, "rpc=tcp://0.0.0.0:"), "%s", meta.ready);
	metaserver_cleanup(&meta);
	cr_assert_eq(metaserver_start(&meta, insecure), 0);
	cr_assert(metaserver_log_has(&meta, "ock.mmc.meta.allow_insecure_bind=true"),
	          "the insecure bind is warned about");
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* issue 20: the server took only IPv4 literals (tcp://localhost:0 exited with not_an_ipv4_address) */
Test(rpc_auth, host_names_and_ipv6_on_both_ends)
{
	const char *by_name[] = {"ock.mmc.meta_service_url=tcp://localhost:0", NULL};
	const char *v6[] = {"ock.mmc.meta_service_url=tcp://[::1]:0", NULL};
	char url[96];
	mmc_store *s;

	cr_assert_eq(metaserver_start(&meta, by_name), 0, "tcp://localhost:0");
	snprintf(url, sizeof(url), "tcp://localhost:%u", meta.rpc_port);
	cr_assert_eq(store_open(url, NULL, true, &s), 0, "%s", url);
	put_get(s, "by-name");
	mmc_destroy(s);
	metaserver_cleanup(&meta);
	if (!have_ipv6_loopback())
		cr_skip_test("no IPv6 loopback here");
	cr_assert_eq(metaserver_start(&meta, v6), 0, "tcp://[::1]:0");
	cr_assert(strstr(meta.ready, "rpc=tcp://[::1]:"), "the ready line names the address bound: %s", meta.ready);
	snprintf(url, sizeof(url), "tcp://[::1]:%u", meta.rpc_port);
	cr_assert_eq(store_open(url, NULL, true, &s), 0, "%s", url);
	put_get(s, "over-ipv6");
	mmc_destroy(s);
}
