/*
 * High availability (docs/operations.md, "High availability"): mmc-metaserver processes sharing one data dir and
 * one lock elect exactly one leader; the others stand by, answer health and cluster info, and redirect the rest;
 * a standby takes over when the leader stops, demotes, dies or pauses, and no write the old leader acknowledged is
 * lost, nor one acknowledged after its lease. Shapes of the reference's admin leader-election tests (two servers,
 * file:// lock, 2000 ms lease), then failover under load, pause-and-resume fencing, redirects and the redis:// lock.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "ha_cluster.h"
#include "mmc.pb-c.h"
#include "pattern.h"
#include "redis_proc.h"
#include "store_conf.h"
#include "store_fixture.h"

static struct ha_cluster cl;
static struct redis_proc redis; /* the redis:// tests' lock store */

static void setup(void)
{
	ha_cluster_init(&cl);
}

static void teardown(void)
{
	ha_cluster_stop(&cl);
	if (redis.dir[0])
		redis_proc_cleanup(&redis);
}

TestSuite(ha, .init = setup, .fini = teardown, .timeout = 120);

/* Starts n servers (extra: more `k=v`, may be NULL) and returns the one that leads within 10 s. */
/* Polls (up to 3 s) until server i names lid as the leader: it has looked at the lock, which a standby does within
 * a loop interval or two. */
static bool names_leader(int i, const char *lid)
{
	char other[128] = "";

	for (uint64_t end = ha_now_ms() + 3000; ha_now_ms() < end; usleep(20000)) {
		ha_cluster_field(&cl, i, "leader_node_id", other, sizeof(other));
		if (strcmp(other, lid) == 0)
			return true;
	}
	return false;
}

/* Starts n servers and waits for a leader and for every standby to name it: a standby that has yet to look at the
 * lock (within a loop interval or two of its start) would answer a redirect without the leader's address. */
static int start_and_elect(int n, const char *const *extra)
{
	char lid[16];
	int leader;

	ha_cluster_start(&cl, n, extra);
	leader = ha_wait_leader(&cl, 10000);
	cr_assert_geq(leader, 0, "no leader within 10 s");
	snprintf(lid, sizeof(lid), "node%d", leader);
	for (int i = 0; i < n; i++)
		cr_assert(i == leader || names_leader(i, lid), "server %d does not name the leader %s", i, lid);
	return leader;
}

static void expect_cluster_info_agrees(int leader)
{
	char lid[128], self[128], exp[64];

	ha_cluster_field(&cl, leader, "leader_node_id", lid, sizeof(lid));
	ha_cluster_field(&cl, leader, "self_node_id", self, sizeof(self));
	ha_cluster_field(&cl, leader, "self_leader_expiration_time", exp, sizeof(exp));
	cr_expect_str_eq(lid, self, "the leader names itself");
	cr_expect_gt(atoll(exp), 0, "the leader's lease has an end");
	for (int i = 0; i < cl.n; i++) {
		if (i == leader)
			continue;
		cr_expect(names_leader(i, lid), "standby %d names the leader %s", i, lid);
		ha_cluster_field(&cl, i, "self_node_id", self, sizeof(self));
		cr_expect_str_neq(self, lid);
		cr_expect_eq(ha_is_leader(&cl, i), 0);
	}
}

Test(ha, file_lock_elects_exactly_one_leader)
{
	int leader;

	ha_cluster_start(&cl, 2, NULL);
	leader = ha_wait_leader(&cl, 10000);
	cr_assert_geq(leader, 0, "no leader within 10 s");
	expect_cluster_info_agrees(leader);
	usleep(3 * LEASE_MS * 1000); /* deliberate: three leases pass; it renews, still the same one leader */
	cr_expect_eq(ha_wait_leader(&cl, 1000), leader);
	for (int i = 0; i < 2; i++) { /* /metrics says who leads, on a standby too */
		struct hc h;
		char *body = NULL;

		cr_assert_eq(hc_connect(&h, cl.s[i].admin_port), 0);
		cr_expect_eq(hc_request(&h, "GET", "/metrics", NULL, 0, &body), 200);
		cr_expect(body && strstr(body, i == leader ? "\nmmc_leader 1\n" : "\nmmc_leader 0\n"), "%s", body);
		cr_expect(body && strstr(body, "mmc_leader_lease_valid"));
		if (i == leader)
			cr_expect(body && strstr(body, "mmc_store_last_commit_seconds"), "the store's commit latency");
		free(body);
		hc_close(&h);
	}
}

/* A demoted server answers as a standby (0); it may not answer (-1) only once its grace ended and it restarts its
 * process image, which its log says before the old image's ports close. */
static bool demoted_stands_by(int i)
{
	int v = ha_is_leader(&cl, i);

	return v == 0 || (v == -1 && metaserver_log_has(&cl.s[i], "op=ha_restart reason=demoted"));
}

/* Whether server i accepts connections on the port its first ready line named after key ("meta_rpc_port="). */
static bool listens_on_first_port(int i, const char *key)
{
	const char *at = strstr(cl.s[i].ready, key);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	cr_assert_not_null(at, "the ready line names %s: %s", key, cl.s[i].ready);
	sin.sin_port = htons((uint16_t)atoi(at + strlen(key)));
	ok = fd >= 0 && sin.sin_port && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

Test(ha, leader_demote_hands_over)
{
	int leader, other, now, says;
	json_t *r;

	leader = start_and_elect(2, NULL);
	other = 1 - leader;
	r = ha_admin(&cl, leader, "updateLeaderElectorConfig", "{\"campaign_delay_time_ms\":10000}");
	cr_assert_str_eq(ha_code(r), "OK");
	json_decref(r);
	r = ha_admin(&cl, leader, "getLeaderElectorConfig", "{}");
	cr_expect_str_eq(json_string_value(json_object_get(r, "campaign_delay_time_ms")), "10000");
	json_decref(r);
	r = ha_admin(&cl, leader, "leaderDemote", "{\"trace_id\":\"demote\"}");
	cr_assert_str_eq(ha_code(r), "OK");
	json_decref(r);
	cr_expect(demoted_stands_by(leader), "a demoted leader says so at once");
	now = ha_wait_leader(&cl, 10000);
	cr_assert_eq(now, other, "the standby leads after the demotion");
	/* the standby can lead before the demoted server's new image listens (it needs only the data dir, which the
	 * old image frees when it execs): what the demoted server says is asked once it answers again */
	says = ha_is_leader_once_up(&cl, leader, 10000);
	cr_assert_eq(says, 0, "the demoted server, restarted, stands by (is_leader %d; -1: it never answered)", says);
	expect_cluster_info_agrees(other);
	cr_expect(metaserver_log_has(&cl.s[leader], "op=ha_restart reason=demoted"), "it restarted as a standby");
	/* on the same ports, the gRPC ones chosen with :0 too (the admin port answered above) */
	cr_expect(listens_on_first_port(leader, "meta_rpc_port="), "its gRPC port moved: %s", cl.s[leader].ready);
	cr_expect(listens_on_first_port(leader, "admin_rpc_port="), "its gRPC port moved: %s", cl.s[leader].ready);
}

/* SIGTERM in the moments between a demotion and the demoted server's restart as a standby: it stops, as asked,
 * instead of restarting (and forgetting the signal until systemd's SIGKILL). */
Test(ha, a_stop_during_a_demotion_stops_the_server)
{
	int leader = start_and_elect(1, NULL), status = 0;
	pid_t pid = cl.s[leader].pid, got = 0;
	json_t *r = ha_admin(&cl, leader, "leaderDemote", "{}");

	cr_assert_str_eq(ha_code(r), "OK");
	json_decref(r);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	for (uint64_t end = ha_now_ms() + 5000; !got && ha_now_ms() < end; usleep(20000))
		got = waitpid(pid, &status, WNOHANG);
	cr_assert_eq(got, pid, "a SIGTERM during a demotion did not stop the server within 5 s");
	cl.s[leader].pid = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	cr_expect_not(metaserver_log_has(&cl.s[leader], "op=ha_restart"), "it restarted after the SIGTERM");
}

/* A standby opens its store only once it leads: a store password file it could not read then failed every takeover
 * and restarted the server a few times a second. It is refused at the start now, as without leader election. */
Test(ha, a_standby_whose_store_password_file_is_missing_does_not_start)
{
	char data[300], lock[400];
	const char *args[] = {data, lock, "kvcm.leader_elector.node_id=node0",
	                      "ock.mmc.meta.store_password_file=/nonexistent/mmc-store-password", NULL};

	snprintf(data, sizeof(data), "ock.mmc.meta.data_dir=%s/data", cl.dir);
	snprintf(lock, sizeof(lock), "kvcm.distributed_lock.uri=%s", cl.lock_uri);
	cl.n = 1;
	cr_assert_neq(metaserver_start(&cl.s[0], args), 0, "a standby that could never load its store went ready");
	cr_assert(metaserver_log_has(&cl.s[0], "exit_code=2"), "the refusal names the configuration");
}

/* The store's password file gone from under a standby (it passed the start's checks): its takeover is refused for
 * the configuration, and it stops with exit 2, the lease given back, instead of restarting a few times a second. */
Test(ha, a_takeover_refused_for_the_configuration_stops_the_server)
{
	char pw[300], arg[340];
	const char *extra[] = {arg, NULL};
	int leader, other, status = 0;
	pid_t got = 0;
	FILE *f;

	snprintf(pw, sizeof(pw), "%s/store-password", cl.dir);
	cr_assert_not_null(f = fopen(pw, "w"));
	fputs("not-used-by-lmdb\n", f);
	fclose(f);
	cr_assert_eq(chmod(pw, 0600), 0);
	snprintf(arg, sizeof(arg), "ock.mmc.meta.store_password_file=%s", pw);
	leader = start_and_elect(2, extra);
	other = 1 - leader;
	cr_assert_eq(unlink(pw), 0);
	cr_assert_eq(metaserver_stop(&cl.s[leader]), 0);
	for (uint64_t end = ha_now_ms() + 10000; !got && ha_now_ms() < end; usleep(20000))
		got = waitpid(cl.s[other].pid, &status, WNOHANG);
	cr_assert_eq(got, cl.s[other].pid, "the standby whose takeover cannot load did not stop");
	cl.s[other].pid = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d", status);
	cr_expect_not(metaserver_log_has(&cl.s[other], "op=ha_restart"), "it restarted instead");
	cr_expect(metaserver_log_has(&cl.s[other], "op=exit code=2"), "it did not end through its loop's shutdown");
}

Test(ha, takeover_after_the_leader_stops)
{
	int leader, other;
	char lid[128], self[128];

	leader = start_and_elect(2, NULL);
	other = 1 - leader;
	cr_assert_eq(metaserver_stop(&cl.s[leader]), 0, "SIGTERM: a clean exit");
	cr_assert_eq(ha_wait_leader(&cl, 10000), other, "the standby takes over");
	ha_start_server(&cl, leader, NULL);
	cr_expect(names_leader(leader, other ? "node1" : "node0"), "the restarted server looked at the lock");
	cr_expect_eq(ha_is_leader(&cl, leader), 0, "the restarted server stands by");
	ha_cluster_field(&cl, leader, "leader_node_id", lid, sizeof(lid));
	ha_cluster_field(&cl, leader, "self_node_id", self, sizeof(self));
	cr_expect_str_eq(lid, other ? "node1" : "node0");
	cr_expect_str_neq(self, lid);
	cr_expect_eq(ha_wait_leader(&cl, 1000), other, "still exactly one leader");
}

/* ---- a standby's answers ---- */

static int dial(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = {5, 0};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static Mmc__Frame *rpc_roundtrip(int fd, const Mmc__Frame *f)
{
	size_t n = mmc__frame__get_packed_size(f);
	uint8_t buf[4096], hdr[4];
	uint32_t len;

	cr_assert_lt(n + 4, sizeof(buf));
	memcpy(buf, (uint8_t[4]){(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)}, 4);
	mmc__frame__pack(f, buf + 4);
	cr_assert_eq(send(fd, buf, 4 + n, MSG_NOSIGNAL), (ssize_t)(4 + n));
	cr_assert_eq(recv(fd, hdr, 4, MSG_WAITALL), 4);
	len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	cr_assert_lt(len, sizeof(buf));
	cr_assert_eq(recv(fd, buf, len, MSG_WAITALL), (ssize_t)len);
	return mmc__frame__unpack(NULL, len, buf);
}

/* The raw HTTP reply of POST path on port: status line and headers included. */
static void http_raw(uint16_t port, const char *path, const char *body, char *out, size_t len)
{
	int fd = dial(port), n = 0;
	char req[1024];
	ssize_t r;

	snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
	         path, strlen(body), body);
	cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	while ((size_t)n + 1 < len && (r = recv(fd, out + n, len - 1 - (size_t)n, 0)) > 0)
		n += (int)r;
	out[n] = '\0';
	close(fd);
}

Test(ha, a_standby_redirects_rpc_and_http)
{
	Mmc__Frame f = MMC__FRAME__INIT, *rep;
	Mmc__Hello h = MMC__HELLO__INIT;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	char want[128], raw[4096], header[128];
	int leader, standby, fd;
	mmc_store *st;

	leader = start_and_elect(2, NULL);
	standby = 1 - leader;
	snprintf(want, sizeof(want), "tcp://127.0.0.1:%u", cl.s[leader].rpc_port);

	/* RPC: hello, then a key batch, on the standby */
	fd = dial(cl.s[standby].rpc_port);
	h.host = "test";
	h.version = 1;
	f.id = 1;
	f.body_case = MMC__FRAME__BODY_HELLO;
	f.hello = &h;
	rep = rpc_roundtrip(fd, &f);
	cr_assert_not_null(rep);
	cr_assert_eq(rep->body_case, MMC__FRAME__BODY_HELLO_REPLY);
	cr_expect_eq(rep->hello_reply->result, MMC_NOT_LEADER);
	cr_expect(rep->hello_reply->standby);
	cr_expect_str_eq(rep->hello_reply->leader_address, want);
	cr_expect_str_eq(rep->hello_reply->leader_node_id, leader ? "node1" : "node0");
	mmc__frame__free_unpacked(rep, NULL);
	f.id = 2;
	f.body_case = MMC__FRAME__BODY_EXIST;
	f.exist = &kb;
	rep = rpc_roundtrip(fd, &f);
	cr_assert_eq(rep->body_case, MMC__FRAME__BODY_KEY_REPLY);
	cr_expect_eq(rep->key_reply->result, MMC_NOT_LEADER);
	mmc__frame__free_unpacked(rep, NULL);
	close(fd);

	/* HTTP: the reference's answer of a follower, and the leader's URL in a header */
	http_raw(cl.s[standby].http_port, "/api/getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":[1]}", raw,
	         sizeof(raw));
	cr_expect(strstr(raw, "HTTP/1.1 200") == raw, "%s", raw);
	cr_expect(strstr(raw, "\"SERVER_NOT_LEADER\"") && strstr(raw, "Server is not leader"), "%s", raw);
	snprintf(header, sizeof(header), "X-MMC-Leader: http://127.0.0.1:%u", cl.s[leader].http_port);
	cr_expect(strstr(raw, header), "no %s in %s", header, raw);
	http_raw(cl.s[standby].admin_port, "/api/listStorage", "{}", raw, sizeof(raw));
	cr_expect(strstr(raw, "\"SERVER_NOT_LEADER\""), "%s", raw);
	snprintf(header, sizeof(header), "X-MMC-Leader: http://127.0.0.1:%u", cl.s[leader].admin_port);
	cr_expect(strstr(raw, header), "no %s in %s", header, raw);

	/* libmmc given only the standby's address follows the redirect to the leader */
	st = fixture_store(cl.s[standby].url, true, 16u << 20);
	fixture_put(st, "ha/redirected", 4096, 7);
	cr_expect_eq(fixture_get(st, "ha/redirected", 4096, 7), 0);
	mmc_destroy(st);
}

/* ---- kill -9 of the leader while writers put and readers get ---- */

#define WRITERS 2
#define READERS 2
#define POOL    (256u << 20)
#define VALUE   (16u << 10)
#define PUTS    6000 /* per writer: all of them fill 75% of the pool, below eviction's 90%, so none is evicted */

static mmc_store *wst, *rst;
static atomic_bool stop_load;
static atomic_int acked[WRITERS];      /* keys 0..acked-1 of writer t... */
static atomic_uchar ok[WRITERS][PUTS]; /* ...each one acknowledged (1) or failed (2) */
static atomic_int reads_ok, reads_bad, puts_failed;
static _Atomic uint64_t killed_at,
    first_put_after; /* ms: the kill, and the first put begun and acknowledged after it */

static void load_key(char *buf, size_t len, int t, int i)
{
	snprintf(buf, len, "ha/load/%d/%d", t, i);
}

static void *writer(void *arg)
{
	static _Thread_local unsigned char buf[VALUE];
	int t = (int)(intptr_t)arg;
	char key[64];

	for (int i = 0; i < PUTS && !atomic_load(&stop_load); i++) {
		int rc;

		load_key(key, sizeof(key), t, i);
		pattern_fill(buf, VALUE, (uint64_t)(t * PUTS + i));
		uint64_t started = ha_now_ms();

		rc = mmc_put_from(wst, key, buf, VALUE, MMC_COPY_H2G, NULL);
		atomic_store(&ok[t][i], rc == 0 ? 1 : 2);
		if (rc)
			atomic_fetch_add(&puts_failed, 1);
		else if (atomic_load(&killed_at) && started > atomic_load(&killed_at) && !atomic_load(&first_put_after))
			atomic_store(&first_put_after, ha_now_ms()); /* a put made after the kill, not one made again */
		atomic_store(&acked[t], i + 1);
	}
	return NULL;
}

static void *reader(void *arg)
{
	static _Thread_local unsigned char buf[VALUE];
	unsigned seed = (unsigned)(uintptr_t)arg;
	char key[64];

	while (!atomic_load(&stop_load)) {
		int t = (int)(rand_r(&seed) % WRITERS), n = atomic_load(&acked[t]), i, rc;

		if (!n) {
			usleep(1000);
			continue;
		}
		i = (int)(rand_r(&seed) % (unsigned)n);
		if (atomic_load(&ok[t][i]) != 1)
			continue;
		load_key(key, sizeof(key), t, i);
		rc = mmc_get_into(rst, key, buf, VALUE, MMC_COPY_G2H);
		if (rc == 0 && pattern_check(buf, VALUE, (uint64_t)(t * PUTS + i)) != VALUE)
			atomic_fetch_add(&reads_bad, 1); /* MMC_OK with wrong bytes: never */
		else if (rc == 0)
			atomic_fetch_add(&reads_ok, 1);
	}
	return NULL;
}

static mmc_store *ha_store_retrying(bool lend, uint32_t retry_ms)
{
	mmc_local_config c = fixture_config(cl.urls, POOL);
	mmc_store *s = mmc_create();

	c.retry_ms = retry_ms;
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, lend), 0);
	return s;
}

static mmc_store *ha_store(bool lend)
{
	return ha_store_retrying(lend, 15000); /* longer than a failover: calls in flight go again on the new leader */
}

Test(ha, failover_under_load_keeps_every_acknowledged_put)
{
	pthread_t w[WRITERS], r[READERS];
	int leader, now, before[WRITERS], lost = 0, after = 0;
	uint64_t t0, took;

	leader = start_and_elect(3, NULL);
	wst = ha_store(true);
	rst = ha_store(false);
	for (int t = 0; t < WRITERS; t++)
		pthread_create(&w[t], NULL, writer, (void *)(intptr_t)t);
	for (int t = 0; t < READERS; t++)
		pthread_create(&r[t], NULL, reader, (void *)(uintptr_t)(t + 1));
	usleep(1000000); /* deliberate: a second of load on the first leader before its kill */
	for (int t = 0; t < WRITERS; t++)
		before[t] = atomic_load(&acked[t]);
	metaserver_kill(&cl.s[leader]);
	t0 = ha_now_ms();
	atomic_store(&killed_at, t0);
	now = ha_wait_leader(&cl, LEASE_MS + 8000);
	took = ha_now_ms() - t0;
	cr_assert_geq(now, 0, "no standby took over");
	cr_expect_neq(now, leader);
	cr_expect_leq(took, LEASE_MS + 2000, "a standby led %llu ms after the kill", (unsigned long long)took);
	cr_log_info("failover: node%d leads %llu ms after kill -9 of node%d", now, (unsigned long long)took, leader);
	/* the writers and readers carry on against the new leader: wait for its first put (a slow machine may take a
	 * while), then a second more of load on it */
	for (uint64_t end = ha_now_ms() + 20000; !atomic_load(&first_put_after) && ha_now_ms() < end;)
		usleep(20000);
	usleep(1000000);
	atomic_store(&stop_load, true);
	for (int t = 0; t < WRITERS; t++)
		pthread_join(w[t], NULL);
	for (int t = 0; t < READERS; t++)
		pthread_join(r[t], NULL);

	/* every put acknowledged, before the kill or after it, reads back byte for byte from the new leader */
	for (int t = 0; t < WRITERS; t++) {
		int n = atomic_load(&acked[t]);

		for (int i = 0; i < n; i++) {
			char key[64];

			if (atomic_load(&ok[t][i]) != 1)
				continue;
			load_key(key, sizeof(key), t, i);
			if (fixture_get(rst, key, VALUE, (uint64_t)(t * PUTS + i)) != 0 && lost++ < 5)
				cr_log_error("acknowledged put %s is lost", key);
			after += i >= before[t];
		}
	}
	cr_log_info("first put acknowledged %lld ms after the kill",
	            atomic_load(&first_put_after) ? (long long)(atomic_load(&first_put_after) - t0) : -1LL);
	cr_log_info("puts acknowledged: %d before the kill, %d after; %d failed; reads ok %d", before[0] + before[1],
	            after, atomic_load(&puts_failed), atomic_load(&reads_ok));
	cr_expect_eq(lost, 0, "%d acknowledged puts lost", lost);
	cr_expect_eq(atomic_load(&reads_bad), 0, "reads returned wrong bytes as MMC_OK");
	cr_expect_eq(atomic_load(&puts_failed), 0, "puts in flight at the kill go again on the new leader");
	cr_expect_neq(atomic_load(&first_put_after), 0, "no put succeeded against the new leader in 20 s");
	cr_expect_gt(after, 0, "no put succeeded against the new leader");
	cr_expect_gt(before[0] + before[1], 0);
	/* renewals stayed quick under the load: the new leader kept its lease (a stalled one demotes and restarts) */
	cr_expect(!metaserver_log_has(&cl.s[now], "reason=lease_lapsed"), "the new leader lost its lease under load");
	mmc_destroy(rst);
	mmc_destroy(wst);
}

/* ---- puts across several kill -9 of the leader: a pause, never a failure ---- */

#define KILLS 4

static atomic_int churn_ok, churn_failed;
static _Atomic uint64_t churn_last_ok; /* ms: the newest acknowledged put */

/* Puts new keys one after another until stop_load, counting what each answered. */
static void *churn_writer(void *arg)
{
	static _Thread_local unsigned char buf[VALUE];
	mmc_store *s = arg;
	char key[64];

	for (int i = 0; !atomic_load(&stop_load); i++) {
		int rc;

		snprintf(key, sizeof(key), "ha/churn/%p/%d", (void *)s, i);
		pattern_fill(buf, VALUE, (uint64_t)i);
		rc = mmc_put_from(s, key, buf, VALUE, MMC_COPY_H2G, NULL);
		if (rc == 0) {
			atomic_fetch_add(&churn_ok, 1);
			atomic_store(&churn_last_ok, ha_now_ms());
		} else if (atomic_fetch_add(&churn_failed, 1) < 5) {
			cr_log_error("put %s: %s", key, mmc_strerror(rc));
		}
	}
	return NULL;
}

/*
 * docs/operations.md, "Clients": with retry_ms at least lease_ms + 3 s the engine sees only a pause. A writer on
 * the store that lends the pool and one on a store that lends nothing (its puts can reach the new leader before
 * the pool has rejoined it) put without a break while the leader is killed again and again; no put may fail.
 */
Test(ha, puts_across_repeated_failovers_never_fail)
{
	pthread_t w[2];
	mmc_store *lender, *client;
	int leader;

	leader = start_and_elect(3, NULL);
	/* the least operations.md asks for */
	lender = ha_store_retrying(true, LEASE_MS + 3000);
	client = ha_store_retrying(false, LEASE_MS + 3000);
	pthread_create(&w[0], NULL, churn_writer, lender);
	pthread_create(&w[1], NULL, churn_writer, client);
	for (int k = 0; k < KILLS; k++) {
		uint64_t t0;
		int now, base = atomic_load(&churn_ok);

		/* some puts on this leader first */
		for (uint64_t end = ha_now_ms() + 20000; atomic_load(&churn_ok) < base + 20 && ha_now_ms() < end;)
			usleep(10000);
		metaserver_kill(&cl.s[leader]);
		t0 = ha_now_ms();
		now = ha_wait_leader(&cl, LEASE_MS + 8000);
		cr_assert_geq(now, 0, "kill %d: no standby took over", k);
		ha_start_server(&cl, leader, NULL); /* back as a standby, for a later kill */
		for (uint64_t end = ha_now_ms() + 20000; atomic_load(&churn_last_ok) <= t0 && ha_now_ms() < end;)
			usleep(10000);
		cr_log_info("kill %d: node%d leads, a put acknowledged %lld ms after the kill", k, now,
		            (long long)(atomic_load(&churn_last_ok) - t0));
		leader = now;
	}
	atomic_store(&stop_load, true);
	for (int t = 0; t < 2; t++)
		pthread_join(w[t], NULL);
	cr_log_info("puts: %d acknowledged, %d failed over %d failovers", atomic_load(&churn_ok),
	            atomic_load(&churn_failed), KILLS);
	cr_expect_eq(atomic_load(&churn_failed), 0, "puts failed during a failover");
	cr_expect_gt(atomic_load(&churn_ok), KILLS * 20);
	mmc_destroy(client);
	mmc_destroy(lender);
}

/* ---- SIGSTOP longer than the lease, then SIGCONT ---- */

struct late_put {
	mmc_store *st;
	int rc;
};

static void *put_one(void *arg)
{
	struct late_put *p = arg;
	unsigned char buf[4096];

	pattern_fill(buf, sizeof(buf), 42);
	p->rc = mmc_put_from(p->st, "ha/late", buf, sizeof(buf), MMC_COPY_H2G, NULL);
	return NULL;
}

/*
 * Every commit of the leader waits 2.5 s (MMC_TEST_COMMIT_DELAY_MS), so that a put's commit is with the writer when
 * the process is stopped: it resumes after its lease ended and another server holds the lock. The commit must fail
 * (the fence, checked against the monotonic clock, not the elector's news), the put must not be acknowledged, and
 * the new leader must not know the key; what was acknowledged before stays readable.
 */
/* With LMDB the standby cannot load while the paused leader holds the data dir; with the Redis store it leads
 * during the pause, which is where the fence matters most. */
static void paused_leader(const char *const *extra, bool standby_leads_meanwhile)
{
	struct late_put p = {0};
	pthread_t th;
	int leader, now;
	mmc_store *st;

	setenv("MMC_TEST_COMMIT_DELAY_MS", "2500", 1);
	ha_cluster_start(&cl, 2, extra);
	unsetenv("MMC_TEST_COMMIT_DELAY_MS");
	leader = ha_wait_leader(&cl, 15000);
	cr_assert_geq(leader, 0);
	st = ha_store(true);
	fixture_put(st, "ha/early", 4096, 41);
	p.st = st;
	pthread_create(&th, NULL, put_one, &p);
	/* until the put is published in memory: its commit then waits in the writer for 2.5 s */
	for (uint64_t end = ha_now_ms() + 10000; mmc_is_exist(st, "ha/late") != 1 && ha_now_ms() < end;)
		usleep(10000);
	cr_assert_eq(kill(cl.s[leader].pid, SIGSTOP), 0);
	/* deliberate: the paused leader's lease runs out */
	usleep((LEASE_MS + 1500) * 1000);
	if (standby_leads_meanwhile) { /* asked alone: the paused one would never answer */
		uint64_t end = ha_now_ms() + 10000;

		while (ha_is_leader(&cl, 1 - leader) != 1 && ha_now_ms() < end)
			usleep(50000);
		cr_expect_eq(ha_is_leader(&cl, 1 - leader), 1, "the standby leads while the old leader sleeps");
	} else
		cr_expect_neq(ha_is_leader(&cl, 1 - leader), 1,
		              "the standby cannot load while the paused one holds it");
	cr_assert_eq(kill(cl.s[leader].pid, SIGCONT), 0);
	pthread_join(th, NULL);
	cr_expect_eq(p.rc, MMC_META_BACKUP_ERROR, "the late commit answered %s", mmc_strerror(p.rc));
	cr_expect(metaserver_log_has(&cl.s[leader], "fenced"), "the old leader's log names the fenced commit");
	now = ha_wait_leader(&cl, 15000);
	cr_assert_eq(now, 1 - leader, "the standby leads once the old leader stepped down");
	cr_expect_eq(mmc_is_exist(st, "ha/late"), 0, "the fenced put is not in the new leader's index");
	cr_expect_eq(fixture_get(st, "ha/early", 4096, 41), 0, "what was acknowledged before the pause is kept");
	mmc_destroy(st);
}

Test(ha, a_paused_leader_acknowledges_no_late_commit)
{
	paused_leader(NULL, false);
}

/* ---- the redis:// lock, on a real redis-server ---- */

/* A redis-server of our own, or a skip. Its AOF survives a restart, like a production Redis with appendonly. */
static void start_redis(void)
{
	if (access("/usr/bin/redis-server", X_OK) != 0 && !getenv("MMC_REDIS_SERVER"))
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(redis_proc_start(&redis, "everysec"), 0, "redis-server did not start");
	snprintf(cl.lock_uri, sizeof(cl.lock_uri), "%s/0", redis.uri);
}

static bool redis_has_lock(void)
{
	char reply[64] = "";

	return redis_proc_cmd(&redis, "EXISTS kvcm_lock:mmc_leader", reply, sizeof(reply)) == 0 &&
	       strcmp(reply, ":1") == 0;
}

Test(ha, redis_lock_elects_and_fails_over)
{
	int leader, now;
	uint64_t t0;

	start_redis();
	ha_cluster_start(&cl, 2, NULL);
	leader = ha_wait_leader(&cl, 10000);
	cr_expect_geq(leader, 0, "no leader through redis://");
	if (leader >= 0) {
		expect_cluster_info_agrees(leader);
		cr_expect(redis_has_lock());
		metaserver_kill(&cl.s[leader]);
		t0 = ha_now_ms();
		now = ha_wait_leader(&cl, LEASE_MS + 8000);
		cr_expect_eq(now, 1 - leader, "the standby takes the redis lock");
		cr_expect_leq(ha_now_ms() - t0, LEASE_MS + 2000);
		cr_expect_eq(metaserver_stop(&cl.s[1 - leader]), 0);
		cr_expect(!redis_has_lock(), "a leader that stops gives the redis lock back");
	}
	redis_proc_cleanup(&redis);
}

/* ---- readiness for systemd (Type=notify), written to $NOTIFY_SOCKET by hand ---- */

static bool recv_notify(int fd, const char *want, int ms)
{
	uint64_t end = ha_now_ms() + (uint64_t)ms;
	char buf[512];

	while (ha_now_ms() < end) {
		struct timeval tv = {0, 100000};
		ssize_t n;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (strstr(buf, want))
			return true;
	}
	return false;
}

Test(ha, readiness_and_leadership_reach_systemd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char path[300];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	snprintf(path, sizeof(path), "%s/notify", cl.dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	ha_cluster_start(&cl, 1, NULL);
	unsetenv("NOTIFY_SOCKET");
	cr_expect(recv_notify(fd, "READY=1", 5000), "no READY=1 on $NOTIFY_SOCKET");
	cr_expect(recv_notify(fd, "STATUS=leading", 10000), "no STATUS=leading once it leads");
	close(fd);
}

/* ---- the KVCM half: every location committed before kill -9 of the leader is returned by the next one ---- */

static char *locations_of(uint16_t port, const char *id)
{
	struct hc h;
	json_t *r;
	char *text;

	cr_assert_eq(hc_connect(&h, port), 0);
	r = hc_call(&h, "getCacheLocation", "{\"instance_id\":\"%s\",\"block_keys\":[11,12,13]}", id);
	hc_close(&h);
	cr_assert_not_null(r);
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	text = json_dumps(json_object_get(r, "locations"), JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(r);
	return text;
}

Test(ha, kvcm_locations_survive_a_failover)
{
	char root[300], *before, *after;
	const char *extra[] = {root, NULL};
	int leader, now;
	struct hc h;

	snprintf(root, sizeof(root), "kvcm.default_storage.root_path=%s/nfs/", cl.dir);
	leader = start_and_elect(2, extra);
	cr_assert_eq(hc_connect(&h, cl.s[leader].http_port), 0);
	cr_assert(register_simple(&h, "default", "inst-ha", 4096));
	cr_assert(write_keys(&h, "inst-ha", "[11,12,13]"));
	hc_close(&h);
	before = locations_of(cl.s[leader].http_port, "inst-ha");
	cr_assert(strstr(before, "\"uri\""), "no locations: %s", before);
	metaserver_kill(&cl.s[leader]);
	now = ha_wait_leader(&cl, LEASE_MS + 8000);
	cr_assert_eq(now, 1 - leader);
	after = locations_of(cl.s[now].http_port, "inst-ha");
	cr_expect_str_eq(after, before, "the new leader returns the same locations");
	free(before);
	free(after);
}

/* The lock store goes away: a blip, then an outage longer than the lease. Nobody leads without it (a lease nobody
 * can renew is no lease), and everything comes back by itself when it returns, with the data. */
Test(ha, redis_outage_stands_the_leader_down_and_recovers)
{
	mmc_store *st;
	int leader;

	start_redis();
	leader = start_and_elect(2, NULL);
	st = ha_store(true);
	fixture_put(st, "ha/redis/before", 4096, 51);

	redis_proc_kill(&redis); /* a restart well within the lease: still exactly one leader, and it serves */
	cr_assert_eq(redis_proc_restart(&redis), 0);
	cr_expect_geq(ha_wait_leader(&cl, 10000), 0);
	cr_expect_eq(fixture_get(st, "ha/redis/before", 4096, 51), 0);

	/* deliberate, longer than the lease: with no lock store to renew it the leader stands down, nobody leads */
	redis_proc_kill(&redis);
	usleep((LEASE_MS + 1500) * 1000);
	cr_expect_eq(ha_wait_leader(&cl, 300), -1, "a leader without a lock store");
	cr_assert_eq(redis_proc_restart(&redis), 0);
	leader = ha_wait_leader(&cl, 15000);
	cr_expect_geq(leader, 0, "no leader once redis is back");
	cr_expect_eq(fixture_get(st, "ha/redis/before", 4096, 51), 0, "the data survives the outage");
	fixture_put(st, "ha/redis/after", 4096, 52);
	cr_expect_eq(fixture_get(st, "ha/redis/after", 4096, 52), 0);
	mmc_destroy(st);
	redis_proc_cleanup(&redis);
}

/* With no campaign delay a demotion still hands over, again and again: the demoted server stays out for a few
 * loops and the standby, which asks every loop, takes the lock. */
Test(ha, demotion_without_delay_hands_over_back_and_forth)
{
	int leader;

	leader = start_and_elect(2, NULL);
	for (int round = 0; round < 3; round++) {
		json_t *r = ha_admin(&cl, leader, "leaderDemote", "{}");

		cr_assert_str_eq(ha_code(r), "OK");
		json_decref(r);
		/* until the other one leads (the demoted server stays out for a few loops) */
		for (uint64_t end = ha_now_ms() + 10000; ha_is_leader(&cl, 1 - leader) != 1 && ha_now_ms() < end;)
			usleep(20000);
		cr_assert_eq(ha_wait_leader(&cl, 10000), 1 - leader, "round %d: the other server leads", round);
		leader = 1 - leader;
	}
}

/* A standby listens before it can load the stored accounts: on a bind other hosts reach it needs the configured
 * admin like a leader does, and it refuses to start without one. */
Test(ha, a_standby_on_a_public_bind_needs_credentials)
{
	char data[300], lock[400];
	const char *open_bind[] = {data, lock, "kvcm.service.bind=0.0.0.0", NULL};
	const char *insecure[] = {data, lock, "kvcm.service.bind=0.0.0.0", "kvcm.service.allow_insecure_bind=true",
	                          NULL};

	snprintf(data, sizeof(data), "ock.mmc.meta.data_dir=%s/data", cl.dir);
	snprintf(lock, sizeof(lock), "kvcm.distributed_lock.uri=%s", cl.lock_uri);
	cl.n = 1;
	cr_expect_neq(metaserver_start(&cl.s[0], open_bind), 0, "a public standby without credentials started");
	cr_expect(metaserver_log_has(&cl.s[0], "no credentials are configured"));
	metaserver_cleanup(&cl.s[0]);
	cr_expect_eq(metaserver_start(&cl.s[0], insecure), 0, "allow_insecure_bind is the operator's choice");
}

/* Metadata in Redis and the lock in the same Redis: a commit is fenced by the lease and, at Redis, by the lock key
 * itself, also where the two URIs spell the same db two ways (the store's names no db: 0). kill -9 of the leader:
 * the standby loads from Redis (no data dir to wait for) and every acknowledged put reads back. */
Test(ha, redis_store_and_lock_fail_over_together)
{
	char store[400];
	const char *extra[] = {store, NULL};
	int leader, now;
	mmc_store *st;

	start_redis();
	snprintf(store, sizeof(store), "ock.mmc.meta.store_uri=%s", redis.uri); /* the lock's is .../0 */
	leader = start_and_elect(2, extra);
	cr_expect(metaserver_log_has(&cl.s[leader], "op=ha_fence fence_key=kvcm_lock:mmc_leader"),
	          "the Redis store checks the lock");
	st = ha_store(true);
	for (int i = 0; i < 20; i++) {
		char key[32];

		snprintf(key, sizeof(key), "ha/rs/%d", i);
		fixture_put(st, key, 8192, (uint64_t)i);
	}
	metaserver_kill(&cl.s[leader]);
	now = ha_wait_leader(&cl, LEASE_MS + 8000);
	cr_assert_eq(now, 1 - leader);
	for (int i = 0; i < 20; i++) {
		char key[32];

		snprintf(key, sizeof(key), "ha/rs/%d", i);
		cr_expect_eq(fixture_get(st, key, 8192, (uint64_t)i), 0, "%s after the failover", key);
	}
	fixture_put(st, "ha/rs/after", 8192, 99);
	mmc_destroy(st);
	redis_proc_cleanup(&redis);
}

Test(ha, a_paused_leader_on_the_redis_store_acknowledges_no_late_commit)
{
	char store[400];
	const char *extra[] = {store, NULL};

	start_redis();
	snprintf(store, sizeof(store), "ock.mmc.meta.store_uri=%s", cl.lock_uri);
	paused_leader(extra, true);
	redis_proc_cleanup(&redis);
}

/* The leader renews its lease (PEXPIRE of the lock key) every 10 ms while it commits puts to the same Redis: no put
 * may fail. Each commit WATCHed the lock key, so a renewal between WATCH and EXEC failed a healthy leader's commit
 * with MMC_META_BACKUP_ERROR ("fenced: the lock key changed before EXEC"). */
Test(ha, lease_renewals_on_the_redis_store_fail_no_commit)
{
	char store[400];
	const char *extra[] = {store, "kvcm.leader_elector.loop_interval_ms=10", NULL};
	static char buf[4096];
	int leader, failed = 0;
	mmc_store *st;

	start_redis();
	snprintf(store, sizeof(store), "ock.mmc.meta.store_uri=%s", cl.lock_uri);
	leader = start_and_elect(1, extra);
	cr_assert(metaserver_log_has(&cl.s[leader], "loop_interval_ms=10"), "the lease is not renewed that often");
	st = ha_store(true);
	for (int i = 0; i < 2000; i++) {
		char key[32];
		int rc;

		snprintf(key, sizeof(key), "ha/renew/%d", i);
		rc = mmc_put_from(st, key, buf, sizeof(buf), MMC_COPY_H2G, NULL);
		if (rc && failed++ == 0)
			cr_log_warn("put %s: %d", key, rc);
	}
	cr_expect_eq(failed, 0, "%d of 2000 puts failed on a healthy leader", failed);
	cr_expect(!metaserver_log_has(&cl.s[leader], "fenced"), "a commit was fenced");
	mmc_destroy(st);
	redis_proc_cleanup(&redis);
}

/* With the cluster secret, a standby answers the hello with its redirect before any challenge; the store follows it
 * without the standby's proof, and the leader it names must still prove the secret. */
/* Servers on an IPv6 address name the leader with brackets, so that libmmc and HTTP clients can parse it. */
Test(ha, a_standby_on_ipv6_names_the_leader_in_brackets)
{
	const char *v6[] = {"ock.mmc.meta_service_url=tcp://[::1]:0", NULL};
	char url[96], raw[4096], header[128];
	int leader, standby;
	mmc_store *st;

	leader = start_and_elect(2, v6);
	standby = 1 - leader;
	cr_assert(strstr(cl.s[standby].ready, "rpc=tcp://[::1]:"), "%s", cl.s[standby].ready);
	http_raw(cl.s[standby].http_port, "/api/getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":[1]}", raw,
	         sizeof(raw));
	snprintf(header, sizeof(header), "X-MMC-Leader: http://[::1]:%u", cl.s[leader].http_port);
	cr_expect(strstr(raw, header), "no %s in %s", header, raw);
	/* given only the standby, libmmc follows the redirect it sends: "tcp://[::1]:port" */
	snprintf(url, sizeof(url), "tcp://[::1]:%u", cl.s[standby].rpc_port);
	st = fixture_store(url, true, 16u << 20);
	fixture_put(st, "ha/v6", 4096, 9);
	cr_expect_eq(fixture_get(st, "ha/v6", 4096, 9), 0);
	mmc_destroy(st);
}

Test(ha, a_store_with_the_cluster_secret_follows_the_redirect)
{
	const char *token[] = {"ock.mmc.meta.auth_token=ha-cluster-secret-0123456789", NULL};
	char urls[160];
	mmc_store *s;
	int leader;

	leader = start_and_elect(2, token);
	/* the standby first: the store must be sent on to the leader */
	snprintf(urls, sizeof(urls), "%s,%s", cl.s[1 - leader].url, cl.s[leader].url);
	cr_assert_eq(store_open(urls, "ock.mmc.client.auth_token = wrong-secret-0123456789\n", true, &s),
	             MMC_NOT_AUTHORIZED, "the leader still checks the secret");
	mmc_destroy(s);
	cr_assert_eq(store_open(urls, "ock.mmc.client.auth_token = ha-cluster-secret-0123456789\n", true, &s), 0);
	fixture_put(s, "ha-secret", 4096, 7);
	cr_assert_eq(fixture_get(s, "ha-secret", 4096, 7), 0, "the bytes came back");
	mmc_destroy(s);
}
