/*
 * The HTTP ports' security (docs/operations.md, "Security"): loopback by default, a public bind refused without
 * credentials, HTTP Basic authentication of every route against persisted accounts, and addStorage roots confined
 * to kvcm.storage.allowed_roots.
 */
#include "kvcm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(security, .timeout = 60);

static const char *const meta_apis[] = {"registerInstance",
                                        "getInstanceInfo",
                                        "getCacheLocation",
                                        "getCacheLocationLen",
                                        "startWriteCache",
                                        "finishWriteCache",
                                        "removeCache",
                                        "trimCache",
                                        "getCacheMeta",
                                        "getCacheMetaDetail",
                                        "getClusterInfo",
                                        "reportEvent",
                                        "getHostCacheState",
                                        "getCacheLocationsByBackend",
                                        NULL};
static const char *const admin_apis[] = {"addStorage",          "listStorage",         "enableStorage",
                                         "disableStorage",      "removeStorage",       "createInstanceGroup",
                                         "getInstanceGroup",    "updateInstanceGroup", "listInstanceGroup",
                                         "removeInstanceGroup", "registerInstance",    "getInstanceInfo",
                                         "listInstanceInfo",    "removeInstance",      "getCacheMeta",
                                         "removeCache",         "checkHealth",         "addAccount",
                                         "deleteAccount",       "listAccount",         NULL};

static char secret_dir[64];
static char pwfile_kv[200];

/* A password file holding pw; returns the --env entry naming it. */
static const char *password_file(const char *pw)
{
	char path[128];
	FILE *f;

	snprintf(secret_dir, sizeof(secret_dir), "/tmp/mmc-kvcm-secret-XXXXXX");
	cr_assert(mkdtemp(secret_dir));
	snprintf(path, sizeof(path), "%s/admin.pw", secret_dir);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "%s\n", pw);
	fclose(f);
	cr_assert(chmod(path, 0600) == 0); /* a secret open to every user is refused */
	snprintf(pwfile_kv, sizeof(pwfile_kv), "kvcm.service.admin_password_file=%s", path);
	return pwfile_kv;
}

static void rm_secret(void)
{
	char cmd[128];

	if (secret_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", secret_dir);
		cr_expect_eq(system(cmd), 0);
	}
	secret_dir[0] = '\0';
}

/* Runs after a test, failed or not. */
static void down(void)
{
	srv_down();
	rm_secret();
}

/* HTTP status of POST /api/api on c with body "{}" under the current credentials. */
static int post_status(struct hc *c, const char *api)
{
	char path[128], *out = NULL;
	int status;

	snprintf(path, sizeof(path), "/api/%s", api);
	status = hc_request(c, "POST", path, "{}", 2, &out);
	free(out);
	return status;
}

static void expect_all(struct hc *c, const char *const *apis, int want, const char *who)
{
	for (int i = 0; apis[i]; i++) {
		int got = post_status(c, apis[i]);

		cr_expect_eq(got, want, "%s on port %u: %s answered HTTP %d, expected %d", who, c->port, apis[i], got,
		             want);
		if (want == 401)
			cr_expect(strstr(hc_last_head(), "WWW-Authenticate: Basic realm=\"mmc\""),
			          "401 without WWW-Authenticate: %s", hc_last_head());
	}
}

/* The local address of the TCP socket listening on port, from /proc/net/tcp (hex, as the kernel prints it). */
static bool listen_addr(uint16_t port, char out[16])
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512], local[16], state[8];
	unsigned p;
	bool found = false;

	cr_assert(f);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: %15[0-9A-F]:%x %*s %7s", local, &p, state) == 3 && p == port &&
		    strcmp(state, "0A") == 0) {
			snprintf(out, 16, "%s", local);
			found = true;
		}
	fclose(f);
	return found;
}

/* A server with only the ports chosen: no bind given (tests/support/proc.c always gives one). */
Test(security, default_bind_is_loopback)
{
	char dir[] = "/tmp/mmc-kvcm-bind-XXXXXX", dd[64], ready[256], addr[16], help[2048];
	const char *exe = getenv("MMC_METASERVER");
	int to, from, status;
	uint16_t http = 0, admin = 0, rpc = 0, admin_rpc = 0;
	FILE *f;
	pid_t pid;
	size_t n;

	cr_assert(exe && mkdtemp(dir));
	snprintf(dd, sizeof(dd), "%s/data", dir);
	{
		char *const argv[] = {(char *)exe,
		                      "--data-dir",
		                      dd,
		                      "--env",
		                      "ock.mmc.meta_service_url=tcp://127.0.0.1:0",
		                      "--env",
		                      "kvcm.service.http_port=0",
		                      "--env",
		                      "kvcm.service.admin_http_port=0",
		                      "--env",
		                      "kvcm.service.rpc_port=0",
		                      "--env",
		                      "kvcm.service.admin_rpc_port=0",
		                      NULL};
		extern char **environ;

		pid = proc_spawn_piped(exe, argv, environ, &to, &from);
	}
	cr_assert(pid > 0);
	f = fdopen(from, "r");
	cr_assert(f && fgets(ready, sizeof(ready), f), "no ready line");
	cr_assert(sscanf(strstr(ready, "http="), "http=%hu admin=%hu", &http, &admin) == 2, "%s", ready);
	cr_expect(listen_addr(http, addr) && strcmp(addr, "0100007F") == 0, "KVCM port bound to %s, not 127.0.0.1",
	          addr);
	cr_expect(listen_addr(admin, addr) && strcmp(addr, "0100007F") == 0, "admin port bound to %s, not 127.0.0.1",
	          addr);
	cr_assert(sscanf(strstr(ready, "meta_rpc_port="), "meta_rpc_port=%hu admin_rpc_port=%hu", &rpc, &admin_rpc) ==
	              2,
	          "%s", ready);
	cr_expect(listen_addr(rpc, addr) && strcmp(addr, "0100007F") == 0, "gRPC port bound to %s", addr);
	cr_expect(listen_addr(admin_rpc, addr) && strcmp(addr, "0100007F") == 0, "admin gRPC port bound to %s", addr);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	fclose(f);
	close(to);
	snprintf(help, sizeof(help), "rm -rf '%s'", dir);
	cr_expect_eq(system(help), 0);
	/* --help says so */
	snprintf(help, sizeof(help), "'%s' --help", exe);
	f = popen(help, "r");
	n = fread(help, 1, sizeof(help) - 1, f);
	help[n] = '\0';
	pclose(f);
	cr_expect(strstr(help, "127.0.0.1:6382") && strstr(help, "127.0.0.1:6492"), "--help: %s", help);
}

static bool log_has(const struct metaserver *m, const char *what)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "grep -q -- '%s' '%s'", what, m->log);
	return system(cmd) == 0;
}

Test(security, public_bind_needs_credentials, .fini = rm_secret)
{
	struct metaserver m;
	static const char *const open_bind[] = {"kvcm.service.bind=0.0.0.0", NULL};
	static const char *const insecure[] = {"kvcm.service.bind=0.0.0.0", "kvcm.service.allow_insecure_bind=true",
	                                       NULL};
	const char *with_admin[] = {"kvcm.service.bind=0.0.0.0", "kvcm.service.admin_user=root", NULL, NULL};
	char cmd[200];

	cr_expect_neq(metaserver_start(&m, open_bind), 0, "0.0.0.0 without credentials must not start");
	cr_expect(log_has(&m, "kvcm.service.allow_insecure_bind=true"), "the refusal names the key to set");
	cr_expect(log_has(&m, "kvcm.service.admin_user"), "the refusal names the credential keys");
	metaserver_cleanup(&m);

	cr_expect_eq(metaserver_start(&m, insecure), 0, "allow_insecure_bind starts it");
	cr_expect(log_has(&m, "serves without authentication"), "and warns");
	metaserver_cleanup(&m);

	with_admin[2] = password_file("bootstrap-pw");
	cr_expect_eq(metaserver_start(&m, with_admin), 0, "a bootstrap admin starts it");
	metaserver_cleanup(&m);

	snprintf(cmd, sizeof(cmd), "chmod 644 '%s/admin.pw'", secret_dir);
	cr_assert_eq(system(cmd), 0);
	cr_expect_neq(metaserver_start(&m, with_admin), 0, "a password file every user may read is refused");
	cr_expect(log_has(&m, "chmod o-rwx"), "the refusal says how to mend it");
	cr_expect(!log_has(&m, "bootstrap-pw"), "and never shows the password");
	metaserver_cleanup(&m);
	rm_secret();
}

Test(security, every_route_needs_credentials, .fini = down)
{
	const char *env[] = {"kvcm.service.admin_user=root", NULL, NULL};
	char *out = NULL;
	json_t *r;

	env[1] = password_file("root-pw");
	srv_up(env);
	expect_all(&srv.meta, meta_apis, 401, "no credentials");
	expect_all(&srv.admin, admin_apis, 401, "no credentials");
	hc_set_auth("root:wrong");
	expect_all(&srv.meta, meta_apis, 401, "a wrong password");
	hc_set_auth("nobody:root-pw");
	expect_all(&srv.admin, admin_apis, 401, "an unknown user");
	hc_set_auth("root");
	expect_all(&srv.admin, admin_apis, 401, "no colon");

	sleep(1); /* past the second whose PBKDF2 budget the wrong password spent */
	hc_set_auth("root:root-pw");
	expect_all(&srv.meta, meta_apis, 200, "ROLE_ADMIN");
	expect_all(&srv.admin, admin_apis, 200, "ROLE_ADMIN");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"eve\",\"password\":\"eve-pw\",\"role\":\"ROLE_USER\"}"),
	            "OK");

	hc_set_auth("eve:eve-pw");
	expect_all(&srv.meta, meta_apis, 200, "ROLE_USER");
	expect_all(&srv.admin, admin_apis, 403, "ROLE_USER");
	/* the reference's seed flow works with a user's credentials */
	cr_expect(register_simple(&srv.meta, "default", "i1", 64));
	cr_expect(write_keys(&srv.meta, "i1", "[1,2,3]"));

	/* /metrics and /api/healthy stay open on loopback; other GETs do not */
	hc_set_auth(NULL);
	cr_expect_eq(hc_request(&srv.admin, "GET", "/metrics", NULL, 0, &out), 200);
	free(out);
	cr_expect_eq(hc_request(&srv.admin, "GET", "/api/healthy", NULL, 0, &out), 200);
	free(out);
	cr_expect_eq(hc_request(&srv.admin, "GET", "/api/listStorage", NULL, 0, &out), 401);
	free(out);
	/* a flood of wrong passwords is throttled, not derived one by one on the event loop */
	for (int i = 0; i < 200; i++) {
		char guess[64];

		snprintf(guess, sizeof(guess), "root:guess-%d", i);
		hc_set_auth(guess);
		cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 401);
	}
	cr_expect(log_has(&srv.m, "result=throttled"), "200 wrong passwords were all derived");
	hc_set_auth("root:root-pw");
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 200, "a verified password is not throttled");
	r = ADMIN("deleteAccount", "{\"user_name\":\"root\"}");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "the bootstrap admin cannot be deleted: %s", message_of(r));
	json_decref(r);
	hc_set_auth(NULL);
}

/* Every refused credential is counted, HTTP or not, and said in the log (rate-limited): a wrong password or an
 * unknown user is reason="credentials", a ROLE_USER on the admin port reason="role". */
Test(security, refused_credentials_are_counted, .fini = down)
{
	const char *env[] = {"kvcm.service.admin_user=root", NULL, NULL};

	env[1] = password_file("root-pw");
	srv_up(env);
	cr_expect_eq(srv_metric("mmc_kvcm_auth_refused_total{reason=\"credentials\"}"), 0, "served from the start");
	cr_expect_eq(srv_metric("mmc_kvcm_auth_refused_total{reason=\"role\"}"), 0);
	hc_set_auth("root:wrong");
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 401);
	hc_set_auth("nobody:root-pw");
	cr_expect_eq(post_status(&srv.admin, "listStorage"), 401);
	sleep(1); /* past the second whose PBKDF2 budget the wrong passwords spent */
	hc_set_auth("root:root-pw");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"eve\",\"password\":\"eve-pw\",\"role\":\"ROLE_USER\"}"),
	            "OK");
	hc_set_auth("eve:eve-pw");
	cr_expect_eq(post_status(&srv.admin, "listStorage"), 403);
	hc_set_auth(NULL);
	cr_expect_eq(srv_metric("mmc_kvcm_auth_refused_total{reason=\"credentials\"}"), 2);
	cr_expect_eq(srv_metric("mmc_kvcm_auth_refused_total{reason=\"role\"}"), 1);
	cr_expect(log_has(&srv.m, "op=kvcm_auth result=denied user=\"nobody\""));
	cr_expect(log_has(&srv.m, "op=kvcm_auth result=forbidden user=\"eve\""));
}

/* The account list as "name:ROLE,..." */
static void account_list(char *out, size_t len, char **raw)
{
	json_t *r = ADMIN("listAccount", "{}"), *a;
	size_t i, o = 0;

	cr_assert(r, "listAccount: no reply");
	cr_assert_str_eq(code_of(r), "OK");
	out[0] = '\0';
	json_array_foreach(json_object_get(r, "accounts"), i, a)
	{
		o += (size_t)snprintf(out + o, len - o, "%s%s:%s", i ? "," : "",
		                      json_string_value(json_object_get(a, "user_name")),
		                      json_string_value(json_object_get(a, "role")));
		cr_expect_eq(json_object_size(a), 2, "an account lists its name and role only");
	}
	*raw = json_dumps(r, 0);
	json_decref(r);
}

static bool file_contains(const char *path, const char *what)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "grep -rqa -- '%s' '%s'", what, path);
	return system(cmd) == 0;
}

Test(security, accounts_persist_and_passwords_never_show, .init = NULL, .fini = srv_down)
{
	char list[256], *raw, data[300];
	json_t *r;

	srv_up(NULL);
	/* no account: open. The first may be a ROLE_USER, as in the reference: it closes the MetaService port, and the
	 * admin port stays open until an admin exists */
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"bob\",\"password\":\"bob-secret-1\",\"role\":\"ROLE_USER\"}"),
	            "OK");
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 401, "an account turns authentication on");
	cr_expect_eq(post_status(&srv.admin, "listAccount"), 200, "the admin port is open while no admin exists");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"alice\",\"password\":\"alice-secret-1\",\"role\":1}"), "OK");
	cr_expect_eq(post_status(&srv.admin, "listAccount"), 401, "an admin account closes the admin port");
	hc_set_auth("alice:alice-secret-1");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"bob\",\"password\":\"other\",\"role\":\"ROLE_USER\"}"),
	            "DUPLICATE_ENTITY");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"a:b\",\"password\":\"x\",\"role\":\"ROLE_USER\"}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"carl\",\"password\":\"\",\"role\":\"ROLE_USER\"}"),
	            "INVALID_ARGUMENT");
	account_list(list, sizeof(list), &raw);
	cr_expect_str_eq(list, "alice:ROLE_ADMIN,bob:ROLE_USER");
	cr_expect(!strstr(raw, "secret") && !strstr(raw, "pbkdf2"), "listAccount shows no password or hash: %s", raw);
	free(raw);
	r = ADMIN("deleteAccount", "{\"user_name\":\"alice\"}");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "the last admin stays while others exist: %s", message_of(r));
	json_decref(r);

	/* a restart keeps them, hashed */
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	hc_set_auth(NULL);
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 401, "still enforced after a restart");
	hc_set_auth("bob:bob-secret-1");
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 200);
	cr_expect_eq(post_status(&srv.admin, "listAccount"), 403);
	hc_set_auth("alice:alice-secret-1");
	account_list(list, sizeof(list), &raw);
	free(raw);
	cr_expect_str_eq(list, "alice:ROLE_ADMIN,bob:ROLE_USER");
	EXPECT_CODE(ADMIN("deleteAccount", "{\"user_name\":\"bob\"}"), "OK");
	EXPECT_CODE(ADMIN("deleteAccount", "{\"user_name\":\"bob\"}"), "INVALID_ARGUMENT");
	hc_set_auth("bob:bob-secret-1");
	cr_expect_eq(post_status(&srv.meta, "getClusterInfo"), 401, "a deleted account is refused");
	hc_set_auth(NULL);
	snprintf(data, sizeof(data), "%s", srv.m.dir);
	cr_expect(!file_contains(data, "alice-secret-1") && !file_contains(data, "bob-secret-1"),
	          "a password is in the data directory or the log (%s)", data);
}

/* api (addStorage or updateStorage) of an nfs storage named name at srv.root + under (or at root when under is
 * NULL); its code. */
static void expect_storage(const char *api, const char *name, const char *root, const char *under, const char *want)
{
	char body[1024];

	if (under)
		snprintf(body, sizeof(body),
		         "{\"storage\":{\"global_unique_name\":\"%s\",\"nfs\":{\"root_path\":\"%s%s\"}}}", name,
		         srv.root, under);
	else
		snprintf(body, sizeof(body),
		         "{\"storage\":{\"global_unique_name\":\"%s\",\"nfs\":{\"root_path\":\"%s\"}}}", name, root);
	EXPECT_CODE(ADMIN(api, "%s", body), want);
}

static void expect_add(const char *name, const char *root, const char *under, const char *want)
{
	expect_storage("addStorage", name, root, under, want);
}

Test(security, add_storage_roots_are_confined, .fini = srv_down)
{
	static const char *const env[] = {"kvcm.storage.allowed_roots=/var/empty/a, /var/empty/b", NULL};
	char link[300];

	srv_up(NULL);
	snprintf(link, sizeof(link), "%s/to-etc", srv.root);
	cr_assert_eq(symlink("/etc", link), 0);
	expect_add("etc", "/etc/mmc/", NULL, "INVALID_ARGUMENT");
	expect_add("dotdot", NULL, "/../../etc/", "INVALID_ARGUMENT");
	expect_add("symlink", NULL, "/to-etc/x/", "INVALID_ARGUMENT");
	expect_add("ok", NULL, "/ok/", "OK");
	/* an update may not move a storage's root where an add may not put it */
	expect_storage("updateStorage", "ok", "/etc/mmc/", NULL, "INVALID_ARGUMENT");
	expect_storage("updateStorage", "ok", NULL, "/../../etc/", "INVALID_ARGUMENT");
	expect_storage("updateStorage", "ok", NULL, "/ok2/", "OK");
	/* a snapshot's password hash that would hold the loop for seconds at each wrong password is refused */
	EXPECT_CODE(ADMIN("loadConfigSnapshot",
	                  "{\"config_snapshot\":\"{\\\"accounts\\\":[{\\\"user_name\\\":\\\"slow\\\",\\\"role\\\":"
	                  "\\\"ROLE_USER\\\",\\\"password_hash\\\":\\\"pbkdf2-sha256$10000000$"
	                  "00112233445566778899aabbccddeeff$"
	                  "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\\\"}]}\"}"),
	            "INVALID_ARGUMENT");
	/* nor may a config snapshot: nothing of it is applied */
	EXPECT_CODE(ADMIN("loadConfigSnapshot",
	                  "{\"config_snapshot\":\"{\\\"storage_config\\\":[{\\\"global_unique_name\\\":\\\"snap\\\","
	                  "\\\"nfs\\\":{\\\"root_path\\\":\\\"/etc/mmc/\\\"}}]}\"}"),
	            "INVALID_ARGUMENT");
	{
		json_t *r = ADMIN("listStorage", "{}");
		char *t = json_dumps(r, 0);

		cr_expect(t && !strstr(t, "\"snap\""), "the refused snapshot's storage was added: %s", t ? t : "");
		free(t);
		json_decref(r);
	}
	srv_down();

	/* kvcm.storage.allowed_roots replaces the default (the directory of the default storage's root) */
	srv_up(env);
	expect_add("ok", NULL, "/ok/", "INVALID_ARGUMENT");
	expect_add("b", "/var/empty/b/kv/", NULL, "OK");
}

/* kvcm.service.first_account_admin keeps mmc's former rule: no ROLE_USER account while no admin exists. */
Test(security, first_account_admin_option, .init = NULL, .fini = srv_down)
{
	static const char *const env[] = {"kvcm.service.first_account_admin=true", NULL};
	json_t *r;

	srv_up(env);
	r = ADMIN("addAccount", "{\"user_name\":\"bob\",\"password\":\"bob-secret-1\",\"role\":\"ROLE_USER\"}");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "%s", message_of(r));
	cr_expect(strstr(message_of(r), "kvcm.service.first_account_admin"), "the message names the key");
	json_decref(r);
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"alice\",\"password\":\"alice-secret-1\",\"role\":1}"), "OK");
}

/* A public bind needs an admin's credentials: ROLE_USER accounts alone leave the admin port open. */
Test(security, user_accounts_alone_keep_a_public_bind_refused, .init = NULL, .fini = srv_down)
{
	static const char *const open_bind[] = {"kvcm.service.bind=0.0.0.0", NULL};

	srv_up(NULL);
	EXPECT_CODE(ADMIN("addAccount", "{\"user_name\":\"bob\",\"password\":\"bob-secret-1\",\"role\":\"ROLE_USER\"}"),
	            "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_expect_neq(kvcm_srv_restart(&srv, open_bind), 0, "0.0.0.0 with only a ROLE_USER account must not start");
	cr_expect(log_has(&srv.m, "ROLE_ADMIN account"), "the refusal says an admin is needed");
}

/* A blocking TCP connection to port on loopback. */
static int tcp_to(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "connect: %s", strerror(errno));
	return fd;
}

/* Sends what the peer takes of n bytes within a second (a server that stops reading takes no more). */
static void send_some(int fd, const char *p, size_t n)
{
	struct timeval tv = {1, 0};

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* The Content-Length of the response head in buf (up to end), 0 when it has none. */
static size_t response_body(const char *buf, const char *end)
{
	const char *cl = strcasestr(buf, "\r\nContent-Length:");

	return cl && cl < end ? (size_t)strtoull(cl + 17, NULL, 10) : 0;
}

/*
 * The status of the next response on fd, consuming that response alone (head and body): a response pipelined
 * behind it stays for the next call. 0 when the connection ends first, -1 when nothing comes within ms. A read of
 * whatever had arrived took the next response with it when both came at once (a busy machine), and the next call
 * then found the connection closed.
 */
static int next_status(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[4096], *end = NULL;
	size_t want;
	int status = -1;

	for (int waited = 0; !end; waited++) {
		ssize_t n;

		if (waited > ms || poll(&p, 1, ms - waited) != 1)
			return -1;
		n = recv(fd, buf, sizeof(buf) - 1, MSG_PEEK);
		if (n <= 0)
			return 0;
		buf[n] = '\0';
		if (!(end = strstr(buf, "\r\n\r\n"))) {
			if ((size_t)n == sizeof(buf) - 1)
				return -1;
			usleep(1000); /* the rest of the head is on its way */
		}
	}
	sscanf(buf, "HTTP/1.%*d %d", &status);
	want = (size_t)(end + 4 - buf) + response_body(buf, end);
	while (want > 0 && poll(&p, 1, ms) == 1) {
		ssize_t n = recv(fd, buf, want < sizeof(buf) ? want : sizeof(buf), 0);

		if (n <= 0)
			break;
		want -= (size_t)n;
	}
	return status;
}

#define ROOT_BASIC "cm9vdDpyb290LXB3" /* base64 of root:root-pw */

/* The head of a getClusterInfo with root's credentials and a body of len bytes. */
static void authed_head(char *out, size_t cap, int len)
{
	snprintf(
	    out, cap,
	    "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\nAuthorization: Basic " ROOT_BASIC
	    "\r\n\r\n",
	    len);
}

/*
 * Once accounts exist, a request's credentials are judged from its header block, before its body is read: one that
 * will be refused may send 64 KiB of body; past that it is answered 413 and closed at once, so a client without
 * credentials cannot hold the request bytes that authenticated clients share (kvcm.service.max_buffered_size).
 */
Test(security, a_refused_request_s_body_is_not_read, .fini = down)
{
	const char *env[] = {"kvcm.service.admin_user=root", NULL, NULL};
	static const char huge[] = "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Length: 60000000\r\n\r\n";
	static const char wrong[] =
	    "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nAuthorization: Basic cm9vdDpubw==\r\n"
	    "Content-Length: 60000000\r\n\r\n";
	static const char small[] = "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
	static const char authed_small[] =
	    "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nAuthorization: Basic " ROOT_BASIC
	    "\r\nContent-Length: 2\r\n\r\n{}";
	enum { BODY = 1 << 20, BIG = 200 << 10 };
	char *body = malloc(BODY), head[256];
	int fd;

	cr_assert(body);
	memset(body, ' ', BODY);
	env[1] = password_file("root-pw");
	srv_up(env);
	/* no credentials, then wrong ones: answered 413 after the head, the rest of the 60 MB never read */
	for (int i = 0; i < 2; i++) {
		fd = tcp_to(srv.m.http_port);
		send_some(fd, i ? wrong : huge, strlen(i ? wrong : huge));
		send_some(fd, body, BODY);
		cr_expect_eq(next_status(fd, 3000), 413, "%s credentials: the body was read on", i ? "wrong" : "no");
		close(fd);
	}
	cr_expect(log_has(&srv.m, "reason=unauthenticated_body"), "the refusal is not logged");
	body[0] = '{';
	body[BIG - 1] = '}';
	authed_head(head, sizeof(head), BIG);
	/* a small body still gets its 401, and the connection goes on with the whole limit for credentials */
	fd = tcp_to(srv.m.http_port);
	send_some(fd, small, strlen(small));
	cr_expect_eq(next_status(fd, 3000), 401);
	send_some(fd, head, strlen(head));
	send_some(fd, body, BIG);
	cr_expect_eq(next_status(fd, 5000), 200, "the same connection, with credentials and a 200 KiB body");
	close(fd);
	/* pipelined behind an authenticated request, one without credentials is judged on its own head */
	fd = tcp_to(srv.m.http_port);
	send_some(fd, authed_small, strlen(authed_small));
	cr_expect_eq(next_status(fd, 3000), 200);
	send_some(fd, authed_small, strlen(authed_small));
	send_some(fd, huge, strlen(huge));
	cr_expect_eq(next_status(fd, 3000), 200);
	send_some(fd, body, BODY);
	cr_expect_eq(next_status(fd, 3000), 413, "a pipelined request without credentials was read on");
	close(fd);
	/* credentials whose head arrives in pieces (split inside the Authorization line) keep the whole limit */
	fd = tcp_to(srv.m.http_port);
	for (size_t off = 0, step = 7; off < strlen(head); off += step) {
		send_some(fd, head + off, strlen(head) - off < step ? strlen(head) - off : step);
		usleep(2000);
	}
	send_some(fd, body, BIG);
	cr_expect_eq(next_status(fd, 5000), 200, "an authenticated 200 KiB body was refused");
	close(fd);
	free(body);
}

/* Past kvcm.service.max_buffered_size the connection closed is the unauthenticated one holding most, not the
 * authenticated request whose bytes crossed the budget: bodies without credentials (each under the 64 KiB a refused
 * request may send) held open cannot lock authenticated clients out. */
Test(security, unauthenticated_bytes_go_first_past_the_budget, .fini = down)
{
	const char *env[] = {"kvcm.service.admin_user=root", NULL, "kvcm.service.max_buffered_size=1MB", NULL};
	static const char held[] = "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Length: 64000\r\n\r\n";
	enum { N = 20, PART = 63000, BIG = 200 << 10 };
	char *body = malloc(BIG), head[256];
	int fds[N], fd, closed = 0;

	cr_assert(body);
	memset(body, ' ', BIG);
	body[0] = '{';
	body[BIG - 1] = '}';
	env[1] = password_file("root-pw");
	srv_up(env);
	for (int i = 0; i < N; i++) { /* 20 x 63 KB, none whole: over the 1 MiB budget */
		fds[i] = tcp_to(srv.m.http_port);
		send_some(fds[i], held, strlen(held));
		send_some(fds[i], body + 1, PART);
	}
	authed_head(head, sizeof(head), BIG);
	fd = tcp_to(srv.m.http_port);
	send_some(fd, head, strlen(head));
	send_some(fd, body, BIG);
	cr_expect_eq(next_status(fd, 5000), 200, "the authenticated request was closed for the budget");
	close(fd);
	for (int i = 0; i < N; i++) {
		closed += next_status(fds[i], 10) == 0;
		close(fds[i]);
	}
	cr_expect_geq(closed, 1, "no connection without credentials was closed");
	cr_expect(log_has(&srv.m, "reason=max_buffered_size"));
	free(body);
}
