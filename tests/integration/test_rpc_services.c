/*
 * Service identity that cannot be guessed (issue 17, D1). ServiceQuery and every key query name a local service's
 * rank and incarnation; those used to be all a rejoin needed, so any client could Register{rank, incarnation} and
 * either unmount the live service (another pool size: reason=pool_changed, its objects dropped) or take over its
 * fabric address (the same size: readers then fetched the attacker's bytes). Now a rejoin must present the secret
 * the Register reply gave the owner alone, also after a meta server restart.
 */
#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "raw_rpc.h"
#include "store_conf.h"

static struct metaserver meta;

static void fini(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(rpc_services, .fini = fini, .timeout = 120);

/* ServiceInfo for a request (Register or ServiceQuery) on fd; free with mmc__frame__free_unpacked. */
static Mmc__Frame *ask(int fd, uint64_t id, Mmc__Frame__BodyCase bc, void *body)
{
	Mmc__Frame *r;

	cr_assert_eq(raw_send_body(fd, id, bc, body), 0);
	r = raw_recv(fd);
	cr_assert_not_null(r, "no reply to request %d", bc);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_SERVICE_INFO);
	return r;
}

static Mmc__Frame *query(int fd, uint32_t rank)
{
	Mmc__ServiceQuery q = MMC__SERVICE_QUERY__INIT;

	q.rank = rank;
	return ask(fd, 7, MMC__FRAME__BODY_SERVICE, &q);
}

/* Register{rank, incarnation} (rank < 0: a new service) with a DRAM pool of pool bytes and fabric address addr. */
static Mmc__Frame *reg(int fd, int32_t rank, uint64_t incarnation, uint64_t pool, const char *addr,
                       ProtobufCBinaryData secret)
{
	Mmc__Register r = MMC__REGISTER__INIT;
	Mmc__Segment seg = MMC__SEGMENT__INIT, *segs[1] = {&seg};

	r.rank = rank;
	r.incarnation = incarnation;
	r.fabric_addr = (ProtobufCBinaryData){strlen(addr), (uint8_t *)addr};
	r.provider = "tcp;ofi_rxm";
	seg.media = MMC_MEDIA_DRAM;
	seg.size = pool;
	r.segments = segs;
	r.n_segments = 1;
	r.secret = secret;
	return ask(fd, 8, MMC__FRAME__BODY_REGISTER, &r);
}

static int dial_hello(void)
{
	int fd = raw_dial(meta.rpc_port);

	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	return fd;
}

static const ProtobufCBinaryData no_secret = {0, NULL};

Test(rpc_services, a_second_client_cannot_take_over_a_live_service)
{
	char in[4096], out[4096];
	mmc_store *owner, *reader;
	Mmc__Frame *info, *r;
	uint8_t addr[256];
	size_t alen;
	int fd;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	cr_assert_eq(store_open(meta.url, NULL, true, &owner), 0);
	memset(in, 'o', sizeof(in));
	cr_assert_eq(mmc_put_from(owner, "owned", in, sizeof(in), MMC_COPY_H2G, NULL), 0);

	/* what anyone can learn */
	fd = dial_hello();
	info = query(fd, 0);
	cr_assert_eq(info->service_info->result, 0);
	cr_assert_eq(info->service_info->secret.len, 0, "a query hands out the rejoin secret");
	alen = info->service_info->fabric_addr.len;
	memcpy(addr, info->service_info->fabric_addr.data, alen);

	/* another pool size: the service used to be unmounted, its objects dropped */
	r = reg(fd, 0, info->service_info->incarnation, 16u << 20, "attacker", no_secret);
	cr_assert_eq(r->service_info->result, MMC_NOT_AUTHORIZED, "a rejoin without the secret got %d",
	             r->service_info->result);
	mmc__frame__free_unpacked(r, NULL);
	/* the same size: the service's fabric address used to become the attacker's */
	r = reg(fd, 0, info->service_info->incarnation, 8u << 20, "attacker",
	        (ProtobufCBinaryData){8, (uint8_t *)"guessed!"});
	cr_assert_eq(r->service_info->result, MMC_NOT_AUTHORIZED);
	mmc__frame__free_unpacked(r, NULL);
	mmc__frame__free_unpacked(info, NULL);

	/* the owner keeps its identity, its objects and its readers */
	info = query(fd, 0);
	cr_assert_eq(info->service_info->fabric_addr.len, alen);
	cr_assert_eq(memcmp(info->service_info->fabric_addr.data, addr, alen), 0, "the fabric address changed");
	mmc__frame__free_unpacked(info, NULL);
	close(fd);
	cr_assert_eq(store_open(meta.url, NULL, false, &reader), 0);
	cr_assert_eq(mmc_get_into(reader, "owned", out, sizeof(out), MMC_COPY_G2H), 0);
	cr_assert_eq(memcmp(in, out, sizeof(in)), 0);
	mmc_destroy(reader);
	cr_assert_eq(mmc_remove(owner, "owned"), 0);
	mmc_destroy(owner);
}

/* The owner's secret is what a rejoin needs: on a new connection while the old one lingers (a half-open
 * connection), and after a meta server restart; a wrong one is refused in both cases. */
Test(rpc_services, the_owner_rejoins_with_its_secret_after_a_restart)
{
	uint8_t secret[32];
	Mmc__Frame *r;
	uint64_t inc;
	int a, b;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	a = dial_hello();
	r = reg(a, -1, 0, 8u << 20, "owner", no_secret);
	cr_assert_eq(r->service_info->result, 0);
	cr_assert_geq(r->service_info->secret.len, 16, "the secret has at least 128 bits");
	memcpy(secret, r->service_info->secret.data, sizeof(secret));
	inc = r->service_info->incarnation;
	mmc__frame__free_unpacked(r, NULL);

	b = dial_hello();
	r = reg(b, 0, inc, 8u << 20, "owner-again", (ProtobufCBinaryData){sizeof(secret), secret});
	cr_assert_eq(r->service_info->result, 0, "the owner on a second connection");
	cr_assert_eq(r->service_info->incarnation, inc);
	mmc__frame__free_unpacked(r, NULL);

	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	close(a);
	close(b);
	a = dial_hello();
	secret[0] ^= 1;
	r = reg(a, 0, inc, 8u << 20, "attacker", (ProtobufCBinaryData){sizeof(secret), secret});
	cr_assert_eq(r->service_info->result, MMC_NOT_AUTHORIZED, "a wrong secret after the restart");
	mmc__frame__free_unpacked(r, NULL);
	secret[0] ^= 1;
	b = dial_hello();
	r = reg(b, 0, inc, 8u << 20, "owner", (ProtobufCBinaryData){sizeof(secret), secret});
	cr_assert_eq(r->service_info->result, 0, "the owner's secret survives the restart");
	cr_assert_eq(r->service_info->rank, 0);
	cr_assert_eq(r->service_info->incarnation, inc, "rejoined, not registered anew");
	mmc__frame__free_unpacked(r, NULL);
	close(a);
	close(b);
}
