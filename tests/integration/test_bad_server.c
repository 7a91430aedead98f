/*
 * A meta server that answers wrong (a bug, another version, something in between): libmmc fails the call with
 * MMC_INTERNAL_ERROR and writes nothing past the caller's arrays; it never reports success for bytes it did not
 * move. The server here is this test, speaking the wire protocol by hand.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mmc/mmc.h"
#include "raw_rpc.h"
#include "store_fixture.h"
#include "wire_limits.h"

enum answer {
	EXTRA_ITEM,      /* a KeyBatchReply with one result more than the keys asked */
	BARE_OK,         /* a plain Reply{result 0} where a KeyBatchReply is due */
	POSITIVE,        /* a KeyBatchReply whose whole-call result is 1, with no items */
	FEWER_ITEMS,     /* a KeyBatchReply with one result less */
	FEWER_ALLOCATED, /* as FEWER_ITEMS, each result an allocation */
};

static struct raw_server srv;
static atomic_int answer;

static size_t items_of(const Mmc__Frame *f)
{
	switch (f->body_case) {
	case MMC__FRAME__BODY_GET:
		return f->get->n_items;
	case MMC__FRAME__BODY_EXIST:
		return f->exist->n_items;
	case MMC__FRAME__BODY_QUERY:
		return f->query->n_items;
	case MMC__FRAME__BODY_REMOVE:
		return f->remove->n_items;
	case MMC__FRAME__BODY_MALLOC:
		return f->malloc->n_items;
	default:
		return 0;
	}
}

static void wrong_answer(int fd, const Mmc__Frame *f)
{
	Mmc__KeyBatchReply kr = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__Reply plain = MMC__REPLY__INIT;
	Mmc__KeyResult res[MMC_BATCH_MAX + 1], *pr[MMC_BATCH_MAX + 1];
	Mmc__Blob blob = MMC__BLOB__INIT, *pb = &blob;
	size_t n = items_of(f);

	switch ((enum answer)atomic_load(&answer)) {
	case BARE_OK:
		raw_send_body(fd, f->id, MMC__FRAME__BODY_REPLY, &plain);
		return;
	case POSITIVE:
		kr.result = 1;
		break;
	case EXTRA_ITEM:
		n++;
		break;
	case FEWER_ITEMS:
	case FEWER_ALLOCATED:
		n = n ? n - 1 : 0;
		break;
	}
	blob.media = MMC_MEDIA_DRAM;
	blob.offset = 1 << 20;
	for (size_t i = 0; i < n && i <= MMC_BATCH_MAX; i++) {
		mmc__key_result__init(&res[i]);
		res[i].result = 1; /* "exists", and for a get a success with no blob */
		res[i].size = 4096;
		if (atomic_load(&answer) == FEWER_ALLOCATED) {
			res[i].result = 0;
			res[i].n_blobs = 1;
			res[i].blobs = &pb;
			res[i].lease_ms = 10000;
			res[i].token = 1 + i;
		}
		pr[i] = &res[i];
	}
	kr.n_items = n;
	kr.items = pr;
	raw_send_body(fd, f->id, MMC__FRAME__BODY_KEY_REPLY, &kr);
}

static void serve(int fd, int n)
{
	Mmc__Frame *f;

	(void)n;
	while ((f = raw_recv(fd))) {
		if (f->body_case == MMC__FRAME__BODY_HELLO)
			raw_hello_reply(fd, f, 10000);
		else if (f->id && f->body_case != MMC__FRAME__BODY_PING)
			wrong_answer(fd, f);
		mmc__frame__free_unpacked(f, NULL);
	}
}

static void start(void)
{
	cr_assert_eq(raw_server_start(&srv, serve), 0);
}

static void stop(void)
{
	raw_server_stop(&srv);
}

TestSuite(bad_server, .init = start, .fini = stop, .timeout = 60);

static mmc_store *client(void)
{
	char url[64];

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", srv.port);
	return fixture_store(url, false, 0);
}

/* Each answer, to a lookup of one key and a get of one key into a buffer that must stay as it was. */
static void refused(enum answer a, const char *what)
{
	mmc_store *s = client();
	const char *keys[2] = {"k0", "k1"};
	int results[2 + 1] = {7, 7, 7}; /* one more than asked: it must stay 7 */
	unsigned char buf[4096];

	atomic_store(&answer, a);
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(mmc_is_exist(s, "k"), MMC_INTERNAL_ERROR, "%s: exist", what);
	cr_assert_eq(mmc_batch_is_exist(s, keys, 2, results), MMC_INTERNAL_ERROR, "%s: batch exist", what);
	cr_assert_eq(results[2], 7, "%s: nothing written past the results", what);
	cr_assert_eq(mmc_get_into(s, "k", buf, sizeof(buf), MMC_COPY_G2H), MMC_INTERNAL_ERROR, "%s: get", what);
	for (size_t i = 0; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xee, "%s: the get wrote the buffer", what);
	mmc_destroy(s);
}

Test(bad_server, a_reply_with_a_result_too_many_is_refused_before_it_is_read)
{
	refused(EXTRA_ITEM, "one result too many");
}

Test(bad_server, a_bare_success_is_no_answer_to_a_key_batch)
{
	refused(BARE_OK, "Reply{0}");
}

Test(bad_server, a_positive_whole_call_result_is_no_success)
{
	refused(POSITIVE, "result 1");
}

Test(bad_server, a_reply_with_a_result_too_few_is_refused)
{
	refused(FEWER_ITEMS, "one result too few");
}

Test(bad_server, a_malloc_refused_for_its_reply_gives_no_address)
{
	mmc_store *s = client();
	const char *keys[2] = {"m0", "m1"};
	size_t sizes[2] = {4096, 4096};
	mmc_gva gvas[2] = {1, 1};

	atomic_store(&answer, FEWER_ALLOCATED);
	cr_assert_eq(mmc_batch_malloc(s, keys, sizes, 2, MMC_MEDIA_DRAM, 0, gvas), MMC_INTERNAL_ERROR);
	cr_assert_eq(gvas[0], 0, "an address decoded before the reply was found short");
	cr_assert_eq(gvas[1], 0);
	mmc_destroy(s);
}
