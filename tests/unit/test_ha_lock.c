/* metaserver/ha: the file:// lock (take, renew, expiry, takeover, release) and the elector's fence. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elector.h"
#include "lock.h"
#include "mmc/mmc.h"

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmc-ha-lock-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(ha_lock, .init = mkdir_tmp, .fini = rm_tmp);

static struct ha_holder holder(const char *id, uint32_t port)
{
	struct ha_holder h = {.http_port = port, .admin_port = port + 1};

	snprintf(h.node_id, sizeof(h.node_id), "%s", id);
	snprintf(h.rpc, sizeof(h.rpc), "tcp://127.0.0.1:%u", port);
	snprintf(h.host, sizeof(h.host), "127.0.0.1");
	return h;
}

Test(ha_lock, holder_text_round_trips)
{
	struct ha_holder a = holder("node-a", 5000), b;
	char text[1024];

	a.expiry_wall_ms = 1796000000123;
	cr_assert_gt(ha_holder_format(&a, text, sizeof(text)), 0);
	cr_assert_eq(ha_holder_parse(&b, text), 0);
	cr_expect_eq(memcmp(&a, &b, sizeof(a)), 0);
	cr_expect_eq(ha_holder_parse(&b, "something else"), MMC_INVALID_PARAM);
	snprintf(a.token, sizeof(a.token), "0123456789abcdef");
	cr_assert_gt(ha_holder_format(&a, text, sizeof(text)), 0);
	cr_assert_eq(ha_holder_parse(&b, text), 0);
	cr_expect_eq(memcmp(&a, &b, sizeof(a)), 0, "the process token round-trips");
	cr_expect_eq(ha_holder_parse(&b, "mmc-leader-v1 a tcp://h:1 h 2 3 4\n"), 0, "a value without one still reads");
	cr_expect_str_eq(b.token, "");
}

Test(ha_lock, file_lock_is_taken_renewed_expires_and_is_released)
{
	struct ha_lock *la, *lb;
	struct ha_holder a = holder("a", 1), b = holder("b", 2), cur;
	char uri[128], err[256];

	snprintf(uri, sizeof(uri), "file://%s/lock", dir);
	cr_assert_eq(ha_lock_open(&la, uri, NULL, 100, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ha_lock_open(&lb, uri, NULL, 100, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(la->ops->acquire(la, &a, 300, &cur), 1, "a free lock is taken");
	cr_expect_eq(lb->ops->acquire(lb, &b, 300, &cur), 0, "a held lock is not");
	cr_expect_str_eq(cur.node_id, "a", "and the loser learns who holds it");
	cr_expect_str_eq(cur.rpc, "tcp://127.0.0.1:1");
	cr_expect_eq(la->ops->acquire(la, &a, 300, &cur), 1, "the holder renews");
	usleep(400000);
	cr_expect_eq(lb->ops->acquire(lb, &b, 300, &cur), 1, "an expired lease is taken over");
	cr_expect_eq(la->ops->acquire(la, &a, 300, &cur), 0, "the old holder lost it");
	cr_expect_str_eq(cur.node_id, "b");
	la->ops->release(la, &a); /* not its lock: nothing happens */
	cr_expect_eq(la->ops->peek(la, &cur), 0);
	cr_expect_str_eq(cur.node_id, "b");
	lb->ops->release(lb, &b);
	cr_expect_eq(la->ops->peek(la, &cur), 0);
	cr_expect_str_eq(cur.node_id, "", "released: nobody holds it");
	cr_expect_eq(la->ops->acquire(la, &a, 300, &cur), 1);
	la->ops->close(la);
	lb->ops->close(lb);
}

/* Two processes with one node id (a second one started by mistake, or the next while the last still runs): the one
 * that took the file lock holds it, the other waits for its lease like any node and never releases it. The file
 * lock compared node ids only, and both led. */
Test(ha_lock, a_second_process_of_a_node_does_not_take_its_file_lock)
{
	struct ha_lock *l1, *l2;
	struct ha_holder p1 = holder("same", 1), p2 = holder("same", 2), cur;
	char uri[128], err[256];

	snprintf(p1.token, sizeof(p1.token), "1111111111111111");
	snprintf(p2.token, sizeof(p2.token), "2222222222222222");
	snprintf(uri, sizeof(uri), "file://%s/lock", dir);
	cr_assert_eq(ha_lock_open(&l1, uri, NULL, 100, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ha_lock_open(&l2, uri, NULL, 100, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(l1->ops->acquire(l1, &p1, 300, &cur), 1);
	cr_expect_eq(l2->ops->acquire(l2, &p2, 300, &cur), 0, "the second process of the node took the lock too");
	cr_expect_str_eq(cur.token, p1.token);
	l2->ops->release(l2, &p2); /* not its record */
	cr_expect_eq(l1->ops->peek(l1, &cur), 0);
	cr_expect_str_eq(cur.token, p1.token, "the second process released the first one's lock");
	usleep(400000);
	cr_expect_eq(l2->ops->acquire(l2, &p2, 300, &cur), 1, "an expired lease is taken over");
	l1->ops->close(l1);
	l2->ops->close(l2);
}

Test(ha_lock, bad_uris_are_refused)
{
	struct ha_lock *l;
	char err[256];

	cr_expect_eq(ha_lock_open(&l, "etcd://x", NULL, 100, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_expect(strstr(err, "kvcm.distributed_lock.uri"));
	cr_expect_eq(ha_lock_open(&l, "redis://nohostport", NULL, 100, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_expect_eq(ha_lock_open(&l, "redis://h:99999", NULL, 100, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_expect_eq(ha_lock_open(&l, "redis://u:hunter2@h", NULL, 100, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_expect_null(strstr(err, "hunter2"), "the refusal shows the password: %s", err);
}

/* kvcm.distributed_lock.password_file: read and checked before anything is reached; never echoed. */
Test(ha_lock, a_password_file_is_checked_before_anything_is_reached)
{
	char err[512], pw[128];
	FILE *f;

	cr_expect_eq(ha_lock_check("redis://u@h:1", "/nonexistent/lock.pw", err, sizeof(err)), MMC_INVALID_PARAM);
	cr_expect(strstr(err, "kvcm.distributed_lock.password_file"), "%s", err);
	snprintf(pw, sizeof(pw), "%s/lock.pw", dir);
	cr_assert_not_null(f = fopen(pw, "w"));
	fputs("s3cret-lock-password\n", f);
	fclose(f);
	cr_assert_eq(chmod(pw, 0600), 0); /* a secret open to every user is refused */
	cr_expect_eq(ha_lock_check("redis://u@h:1", pw, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ha_lock_check("redis://h:1", pw, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ha_lock_check("redis://u:in-uri@h:1", pw, err, sizeof(err)), MMC_INVALID_PARAM,
	             "a password in the URI and a file: which one?");
	cr_expect_null(strstr(err, "in-uri"), "%s", err);
	cr_expect_null(strstr(err, "s3cret"), "%s", err);
}

static void on_change(void *arg)
{
	event_base_loopbreak(arg);
}

/* The fence is the lease: valid once won, closed the moment the leader demotes, before the lock store hears. */
Test(ha_lock, the_fence_opens_on_winning_and_closes_on_demote)
{
	struct event_base *base = event_base_new();
	struct ha_opts o = {.lease_ms = 600, .loop_interval_ms = 50};
	struct ha_holder self = holder("me", 7);
	struct timeval limit = {5, 0};
	char uri[128], err[256];
	struct ha *h;

	snprintf(uri, sizeof(uri), "file://%s/lock", dir);
	o.lock_uri = uri;
	cr_assert_eq(ha_open(&h, base, &o, on_change, base, err, sizeof(err)), 0, "%s", err);
	ha_set_self(h, &self);
	cr_expect(!ha_lease_valid(h));
	cr_assert_eq(ha_start(h), 0);
	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
	cr_assert(ha_holds(h), "elected within 5 s");
	cr_expect(ha_fence(h));
	cr_expect_gt(ha_self_expiry_wall_ms(h), ha_wall_ms());
	ha_demote(h);
	cr_expect(!ha_fence(h), "closed at once");
	ha_close(h);

	/* a loop interval too close to the lease is refused */
	o.loop_interval_ms = 300;
	cr_expect_eq(ha_open(&h, base, &o, on_change, base, err, sizeof(err)), MMC_INVALID_PARAM);
	event_base_free(base);
}

/*
 * A process that led and lost its lease does not lead again (it restarts as a standby, leadership.c): its state may
 * be out of date, since another may have led in between, and reopening its fence let it commit from that state. A
 * new process of the same node is another holder: its lock value differs (the token), so a commit of the old one
 * arriving late fails a fence set for the new one.
 */
Test(ha_lock, a_process_that_lost_its_lease_leads_no_more_and_its_successor_is_another_holder)
{
	struct event_base *base = event_base_new();
	struct ha_opts o = {.lease_ms = 600, .loop_interval_ms = 50};
	struct ha_holder self = holder("me", 7);
	struct timeval limit = {5, 0}, turn = {0, 100000};
	int64_t until;
	char uri[128], err[256], first[1024], second[1024];
	const char *key;
	struct ha *h;

	snprintf(uri, sizeof(uri), "file://%s/lock", dir);
	o.lock_uri = uri;
	o.campaign_delay_ms = 100;
	cr_assert_eq(ha_open(&h, base, &o, on_change, base, err, sizeof(err)), 0, "%s", err);
	ha_set_self(h, &self);
	cr_assert_eq(ha_start(h), 0);
	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
	cr_assert(ha_holds(h), "elected within 5 s");
	cr_assert_eq(ha_holder_format(ha_self(h), first, sizeof(first)) > 0, true);
	ha_mark_loaded(h); /* the promotion loads its state */
	ha_demote(h);
	for (until = ha_wall_ms() + 1500; ha_wall_ms() < until;) { /* well past the campaign delay and the lease */
		event_base_loopexit(base, &turn);
		event_base_dispatch(base);
		cr_expect(!ha_holds(h) && !ha_fence(h), "a process that lost its lease led again");
	}
	ha_close(h);
	cr_assert_eq(ha_open(&h, base, &o, on_change, base, err, sizeof(err)), 0, "%s", err);
	ha_set_self(h, &self);
	cr_assert_eq(ha_holder_format(ha_self(h), second, sizeof(second)) > 0, true);
	cr_expect_str_neq(first, second, "the same node's next process holds the lock under the same value");
	cr_expect_not(ha_lock_redis_key(h, &key, first, sizeof(first)), "a file lock has no Redis key");
	/* one that won and lost before it loaded anything (waiting for the data dir) has nothing stale: it campaigns */
	cr_assert_eq(ha_start(h), 0);
	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
	cr_assert(ha_holds(h), "elected within 5 s");
	ha_demote(h);
	for (until = ha_wall_ms() + 3000; ha_wall_ms() < until && !ha_holds(h);) {
		event_base_loopexit(base, &turn);
		event_base_dispatch(base);
	}
	cr_expect(ha_holds(h), "a process that never loaded stays a standby for ever");
	ha_close(h);
	event_base_free(base);
}
