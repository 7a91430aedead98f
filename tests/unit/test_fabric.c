/*
 * The data path's batches against real tcp;ofi_rxm endpoints in this process: an RMA lands, and an RMA to a peer
 * whose port refuses connections fails within the stall deadline instead of retrying for ever.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>

#include "clock.h"
#include "fabric.h"
#include "mmc/mmc.h"

static int reaped, last_err;

static void on_done(void *arg, uint32_t tag, int err)
{
	(void)arg;
	(void)tag;
	reaped++;
	last_err = err;
}

/* One RMA of len bytes at buf, to or from peer's (raddr, rkey), waited for. Returns the post's code. */
static int post_rma(struct fab_batch *b, struct fabric *from, bool write, void *buf, size_t len, fi_addr_t peer,
                    uint64_t raddr, uint64_t rkey)
{
	struct iovec iov = {buf, len};
	struct fab_mr mr;
	void *desc;
	int rc;

	cr_assert_eq(fabric_mr_reg(from, buf, len, false, &mr), 0);
	desc = mr.desc;
	last_err = 0;
	rc = fab_batch_post(b, write, &iov, &desc, 1, peer, raddr, rkey, 0);
	fab_batch_wait(b);
	fabric_mr_close(&mr);
	return rc;
}

static int post_write(struct fab_batch *b, struct fabric *from, void *src, size_t len, fi_addr_t peer, uint64_t raddr,
                      uint64_t rkey)
{
	return post_rma(b, from, true, src, len, peer, raddr, rkey);
}

/* two endpoints in this process; returns the address of the second as the first's peer */
static fi_addr_t open_pair(struct fabric **a, struct fabric **b, unsigned char *addr, size_t cap, size_t *len)
{
	const void *ba;
	fi_addr_t peer;

	cr_assert_eq(fabric_open(a, "host_tcp", "tcp://127.0.0.1"), 0);
	cr_assert_eq(fabric_open(b, "host_tcp", "tcp://127.0.0.1"), 0);
	ba = fabric_addr(*b, len);
	cr_assert_leq(*len, cap);
	memcpy(addr, ba, *len);
	return fabric_peer_add(*a, addr, *len, &peer) == 0 ? peer : FI_ADDR_UNSPEC;
}

Test(fabric, a_write_lands_at_a_live_peer, .timeout = 60)
{
	static char src[4096], dst[4096];
	struct fabric *a, *b;
	struct fab_batch batch;
	struct fab_mr target;
	fi_addr_t peer;
	unsigned char addr[256];
	size_t len;
	uint64_t until;

	peer = open_pair(&a, &b, addr, sizeof(addr), &len);
	cr_assert_neq(peer, FI_ADDR_UNSPEC);
	cr_assert_eq(fabric_mr_reg(b, dst, sizeof(dst), true, &target), 0);
	memset(src, 0x5a, sizeof(src));
	cr_assert_eq(fab_batch_init(&batch, a, 4, 2000, on_done, NULL), 0);
	reaped = 0;
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), peer, fabric_virt_addr(b) ? (uint64_t)dst : 0, target.key),
	             0);
	cr_assert_eq(reaped, 1);
	cr_assert_eq(last_err, 0);
	/* without delivery-complete writes the bytes may trail the completion by a moment */
	for (until = clock_ms() + 2000; memcmp(src, dst, sizeof(dst)) && clock_ms() < until;)
		;
	cr_assert_eq(memcmp(src, dst, sizeof(dst)), 0, "the bytes landed");
	fab_batch_fini(&batch);
	fabric_mr_close(&target);
	fabric_close(b);
	fabric_close(a);
}

Test(fabric, a_peer_that_refuses_connections_fails_the_post, .timeout = 60)
{
	static char src[4096];
	struct fabric *a, *gone;
	struct fab_batch batch;
	fi_addr_t peer;
	unsigned char addr[256];
	size_t len;
	uint64_t t0;

	peer = open_pair(&a, &gone, addr, sizeof(addr), &len);
	cr_assert_neq(peer, FI_ADDR_UNSPEC);
	fabric_close(gone); /* its port now refuses connections: rxm answers -FI_EAGAIN to every post */
	cr_assert_eq(fab_batch_init(&batch, a, 4, 300, on_done, NULL), 0);
	reaped = 0;
	t0 = clock_ms();
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), peer, 0, 0), MMC_TIMEOUT);
	cr_expect_lt(clock_ms() - t0, 5000, "gave up after about the stall deadline");
	t0 = clock_ms();
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), peer, 0, 0), MMC_TIMEOUT, "the next op to it");
	cr_expect_lt(clock_ms() - t0, 100, "fails at once: no second wait in one batch");
	cr_assert_eq(reaped, 0, "nothing was posted, so nothing is reported");
	fab_batch_fini(&batch);
	fabric_close(a);
}

/* A lease that holds for its first `left` questions, then answers MMC_NOT_CONNECTED_META. */
static int lease_left, lease_asked;

static int lease_ends(void *arg, uint32_t tag)
{
	(void)arg;
	(void)tag;
	lease_asked++;
	return lease_left-- > 0 ? 0 : MMC_NOT_CONNECTED_META;
}

/*
 * A write into space granted on a meta connection since lost must not go out (the space may be another object's by
 * now): a post the provider keeps waiting ends as soon as the batch's lease does, not at the stall deadline, and
 * once it has ended a post to a live peer changes no byte there.
 */
Test(fabric, no_post_goes_out_after_the_batchs_lease_ends, .timeout = 60)
{
	static char src[4096], dst[4096];
	struct fabric *a, *b, *gone;
	struct fab_batch batch;
	struct fab_mr target;
	fi_addr_t live, dead;
	unsigned char addr[256], addr2[256];
	size_t len, len2;
	uint64_t t0;
	const void *ga;

	live = open_pair(&a, &b, addr, sizeof(addr), &len);
	cr_assert_neq(live, FI_ADDR_UNSPEC);
	cr_assert_eq(fabric_open(&gone, "host_tcp", "tcp://127.0.0.1"), 0);
	ga = fabric_addr(gone, &len2);
	memcpy(addr2, ga, len2);
	cr_assert_eq(fabric_peer_add(a, addr2, len2, &dead), 0);
	fabric_close(gone); /* its port refuses connections: the provider keeps a post to it waiting */
	cr_assert_eq(fabric_mr_reg(b, dst, sizeof(dst), true, &target), 0);
	memset(src, 0x5a, sizeof(src));
	cr_assert_eq(fab_batch_init(&batch, a, 4, 10000, on_done, NULL), 0);
	fab_batch_lease(&batch, lease_ends, NULL);
	lease_left = INT_MAX; /* first a write under the lease: it lands, and the connection to the live peer is up */
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), live, fabric_virt_addr(b) ? (uint64_t)dst : 0, target.key),
	             0);
	for (t0 = clock_ms() + 2000; memcmp(src, dst, sizeof(dst)) && clock_ms() < t0;)
		;
	cr_assert_eq(memcmp(src, dst, sizeof(dst)), 0, "a write under the lease lands");
	memset(dst, 0, sizeof(dst));
	memset(src, 0xa5, sizeof(src));
	reaped = lease_asked = 0;
	lease_left = 5; /* asked once before the post, then while the provider turns it away */
	t0 = clock_ms();
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), dead, 0, 0), MMC_NOT_CONNECTED_META);
	cr_expect_lt(clock_ms() - t0, 5000, "ended with the lease, not at the 10 s stall deadline");
	cr_assert_gt(lease_asked, 1, "asked again while the post waited");
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), live, fabric_virt_addr(b) ? (uint64_t)dst : 0, target.key),
	             MMC_NOT_CONNECTED_META, "a live peer gets nothing either");
	cr_assert_eq(reaped, 0, "nothing was posted");
	usleep(200000);
	for (size_t i = 0; i < sizeof(dst); i++)
		cr_assert_eq(dst[i], 0, "no byte landed at the live peer");
	fab_batch_fini(&batch);
	fabric_mr_close(&target);
	fabric_close(b);
	fabric_close(a);
}

/*
 * What a re-keyed pool relies on (store.c rekey_pool): after the pool is registered again and the old registration
 * closed, a write that still carries the old key changes no byte at the target (tcp;ofi_rxm drops it there; the
 * initiator is not told), and the new key works. The shm provider does not check keys (the same test lets the
 * write land), which is why the meta server also holds new puts off a rejoined pool for rejoin_write_grace_ms.
 */
Test(fabric, a_write_under_a_closed_registrations_key_lands_nowhere, .timeout = 60)
{
	static char src[4096], dst[4096];
	struct fabric *a, *b;
	struct fab_batch batch;
	struct fab_mr old, fresh;
	fi_addr_t peer;
	unsigned char addr[256];
	size_t len;
	uint64_t until, raddr;

	peer = open_pair(&a, &b, addr, sizeof(addr), &len);
	cr_assert_neq(peer, FI_ADDR_UNSPEC);
	raddr = fabric_virt_addr(b) ? (uint64_t)dst : 0;
	cr_assert_eq(fabric_mr_reg(b, dst, sizeof(dst), true, &old), 0);
	cr_assert_eq(fabric_mr_reg(b, dst, sizeof(dst), true, &fresh), 0);
	cr_assert_neq(old.key, fresh.key, "a new registration gets a new key");
	fabric_mr_close(&old);
	cr_assert_eq(fab_batch_init(&batch, a, 4, 2000, on_done, NULL), 0);
	memset(src, 0x77, sizeof(src));
	reaped = last_err = 0;
	post_write(&batch, a, src, sizeof(src), peer, raddr, old.key);
	cr_assert_eq(reaped, 1);
	for (until = clock_ms() + 300; clock_ms() < until;)
		; /* give a write that would land the time to land */
	for (size_t i = 0; i < sizeof(dst); i++)
		cr_assert_eq(dst[i], 0, "byte %zu changed under a closed registration", i);
	cr_log_info("the initiator saw %d for the write under the old key", last_err);
	reaped = last_err = 0;
	cr_assert_eq(post_write(&batch, a, src, sizeof(src), peer, raddr, fresh.key), 0);
	cr_assert_eq(last_err, 0);
	for (until = clock_ms() + 2000; memcmp(src, dst, sizeof(dst)) && clock_ms() < until;)
		;
	cr_assert_eq(memcmp(src, dst, sizeof(dst)), 0, "the new key works");
	fab_batch_fini(&batch);
	fabric_mr_close(&fresh);
	fabric_close(b);
	fabric_close(a);
}

/* host_shm opens no provider: registrations succeed (nothing to register with), and no peer can be added */
static char logged[1024];

static void capture(int level, const char *msg)
{
	(void)level;
	snprintf(logged, sizeof(logged), "%s", msg);
}

/* An hcom_url that is no address of this host: the error names the key (it said only "fi_getinfo (no provider for
 * this protocol)"). 192.0.2.1 is TEST-NET-1, never a local address. */
Test(fabric, an_hcom_url_not_of_this_host_is_named)
{
	struct fabric *f = NULL;

	mmc_set_log_handler(capture);
	cr_expect_neq(fabric_open(&f, "host_tcp", "tcp://192.0.2.1:17000"), 0);
	mmc_set_log_handler(NULL);
	cr_expect(strstr(logged, "ock.mmc.local_service.hcom_url \"tcp://192.0.2.1:17000\""), "%s", logged);
	if (f)
		fabric_close(f);
}

Test(fabric, host_shm_is_the_host_path_only)
{
	static char buf[4096];
	struct fabric *f;
	struct fab_mr mr;
	fi_addr_t peer;
	size_t len;

	unsetenv("FI_PROVIDER");
	cr_assert_eq(fabric_open(&f, "host_shm", ""), 0);
	cr_expect_str_eq(fabric_provider(f), FABRIC_HOST_ONLY);
	fabric_addr(f, &len);
	cr_expect_gt(len, 0); /* an address only in name, so that registration has one */
	cr_expect_eq(fabric_mr_reg(f, buf, sizeof(buf), true, &mr), 0);
	cr_expect_eq(fabric_peer_add(f, "x", 1, &peer), MMC_LINK_NOT_FOUND);
	fabric_mr_close(&mr);
	fabric_close(f);
}

/* A read; its code, or the completion's. */
static int post_read(struct fab_batch *b, struct fabric *from, void *dst, size_t len, fi_addr_t peer, uint64_t raddr,
                     uint64_t rkey)
{
	int rc = post_rma(b, from, false, dst, len, peer, raddr, rkey);

	return rc ? rc : last_err;
}

/*
 * A process that restarts on its predecessor's address (a fixed hcom_url port) gives its pool another key: an RMA
 * granted on the old incarnation and posted late must not read or write the new pool's objects. Keys used to count
 * from 1 in every process, so the new pool got the old one's key at the same offsets.
 */
Test(fabric, a_process_back_on_the_same_address_does_not_take_its_predecessor_s_key, .timeout = 60)
{
	static char old_pool[4096], new_pool[4096], got[4096];
	struct fabric *a, *b;
	struct fab_batch batch;
	struct fab_mr mr_old, mr_new;
	fi_addr_t peer;
	unsigned char addr[256];
	struct sockaddr_in sin;
	char url[64];
	size_t len;
	int rc;

	peer = open_pair(&a, &b, addr, sizeof(addr), &len);
	cr_assert_neq(peer, FI_ADDR_UNSPEC);
	cr_assert_eq(len, sizeof(sin), "tcp's address is a sockaddr_in");
	memcpy(&sin, addr, sizeof(sin));
	memset(old_pool, 'A', sizeof(old_pool));
	cr_assert_eq(fabric_mr_reg(b, old_pool, sizeof(old_pool), true, &mr_old), 0);
	cr_assert_eq(fab_batch_init(&batch, a, 4, 2000, on_done, NULL), 0);
	cr_assert_eq(
	    post_read(&batch, a, got, sizeof(got), peer, fabric_virt_addr(b) ? (uint64_t)old_pool : 0, mr_old.key), 0);
	cr_assert_eq(got[0], 'A');
	fabric_mr_close(&mr_old);
	fabric_close(b);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", (unsigned)ntohs(sin.sin_port));
	cr_assert_eq(fabric_open(&b, "host_tcp", url), 0, "the same port again");
	memset(new_pool, 'B', sizeof(new_pool));
	cr_assert_eq(fabric_mr_reg(b, new_pool, sizeof(new_pool), true, &mr_new), 0);
	cr_expect_neq(mr_new.key, mr_old.key, "the new pool took the old one's key");
	/* the late RMA: the old key, at the old offset; its first try may meet the old connection's end */
	memset(got, 0, sizeof(got));
	for (int i = 0; i < 3; i++) {
		rc = post_read(&batch, a, got, sizeof(got), peer, fabric_virt_addr(b) ? (uint64_t)new_pool : 0,
		               mr_old.key);
		cr_assert_neq(got[0], 'B', "a read under the old key returned the new pool's bytes (rc %d)", rc);
	}
	fab_batch_fini(&batch);
	fabric_mr_close(&mr_new);
	fabric_close(b);
	fabric_close(a);
}
