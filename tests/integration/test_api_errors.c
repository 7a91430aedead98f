/* Bad input at the public boundary: every call returns its documented code and the store stays usable. */
#include <criterion/criterion.h>
#include <mmc/mmc.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "proc.h"

static struct metaserver meta;
static mmc_store *s;

static mmc_local_config config(const char *url)
{
	mmc_local_config c = mmc_default_local_config();
	const char *proto = getenv("MMC_PROTOCOL");

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", url);
	snprintf(c.protocol, sizeof(c.protocol), "%s", proto ? proto : "host_tcp");
	c.dram_size = 32u << 20;
	return c;
}

static void start(void)
{
	mmc_local_config c;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	c = config(meta.url);
	s = mmc_create();
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
}

static void stop(void)
{
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(api_errors, .init = start, .fini = stop, .timeout = 60);

Test(api_errors, bad_keys)
{
	char k256[257], k255[256];
	char buf[16] = "0123456789abcdef";

	memset(k256, 'k', 256);
	k256[256] = '\0';
	memset(k255, 'k', 255);
	k255[255] = '\0';
	cr_assert_eq(mmc_put_from(s, "", buf, sizeof(buf), MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, NULL, buf, sizeof(buf), MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, k256, buf, sizeof(buf), MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_into(s, k256, buf, sizeof(buf), MMC_COPY_G2H), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_is_exist(s, ""), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove(s, k256), MMC_INVALID_PARAM);
	/* 255 bytes is the longest key */
	cr_assert_eq(mmc_put_from(s, k255, buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_is_exist(s, k255), 1);
}

Test(api_errors, bad_buffers_sizes_and_directions)
{
	char buf[4096];
	mmc_replicate_config rc9 = {.replica_num = 9};
	mmc_replicate_config pref = {.replica_num = 1, .preferred_count = 2};

	cr_assert_eq(mmc_put_from(s, "k", NULL, 10, MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, "k", buf, 0, MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, "k", buf, 10, MMC_COPY_G2H, NULL), MMC_INVALID_PARAM, "a get direction on put");
	cr_assert_eq(mmc_put_from(s, "k", buf, 10, 42, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, "k", buf, 10, MMC_COPY_H2G, &rc9), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(s, "k", buf, 10, MMC_COPY_H2G, &pref), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_into(s, "k", NULL, 10, MMC_COPY_G2H), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_into(s, "k", buf, 0, MMC_COPY_G2H), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_is_exist(s, "k"), 0, "nothing was stored by the rejected calls");
	memset(buf, 7, sizeof(buf));
	cr_assert_eq(mmc_put_from(s, "k", buf, 100, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into(s, "k", buf, 99, MMC_COPY_G2H), MMC_INVALID_PARAM, "wrong size on get");
	cr_assert_eq(mmc_get_into(s, "k", buf, 101, MMC_COPY_G2H), MMC_INVALID_PARAM, "wrong size on get");
	cr_assert_eq(mmc_get_into(s, "k", buf, 100, MMC_COPY_H2G), MMC_INVALID_PARAM, "a put direction on get");
	cr_assert_eq(mmc_get_into(s, "missing", buf, 100, MMC_COPY_G2H), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(mmc_get_into(s, "k", buf, 100, MMC_COPY_G2H), 0, "the store is still usable");
	cr_assert_eq(mmc_register_buffer(s, NULL, 10), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_register_buffer(s, buf, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_register_buffer(s, buf, SIZE_MAX), MMC_INVALID_PARAM, "a range past the address space");
	cr_assert_eq(mmc_unregister_buffer(s, buf, 10), MMC_INVALID_PARAM, "never registered");
	cr_assert_eq(mmc_register_buffer(s, buf, sizeof(buf)), 0);
	cr_assert_eq(mmc_get_into(s, "k", buf, 100, MMC_COPY_G2H), 0);
	cr_assert_eq(mmc_unregister_buffer(s, buf, sizeof(buf)), 0);
	cr_assert_eq(mmc_get_key_info(s, "k", 0, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_local_service_id(s, NULL), MMC_INVALID_PARAM);
}

/* An n past MMC_BATCH_MAX is the bad argument itself: the call writes no result (the array may be shorter). */
Test(api_errors, a_batch_past_the_limit_writes_no_result)
{
	const char *keys[4] = {"a", "b", "c", "d"};
	const void *bufs[4] = {"x", "x", "x", "x"};
	size_t sizes[4] = {1, 1, 1, 1};
	int32_t wr[4] = {0};
	int res[4];

	for (size_t n = MMC_BATCH_MAX + 1; n; n = n == SIZE_MAX ? 0 : SIZE_MAX) {
		for (int i = 0; i < 4; i++)
			res[i] = 12345;
		cr_expect_eq(mmc_batch_is_exist(s, keys, n, res), MMC_INVALID_PARAM);
		cr_expect_eq(mmc_batch_remove(s, keys, n, res), MMC_INVALID_PARAM);
		cr_expect_eq(mmc_batch_put_from(s, keys, bufs, sizes, n, MMC_COPY_H2G, NULL, res), MMC_INVALID_PARAM);
		cr_expect_eq(mmc_batch_get_into(s, keys, (void *const *)bufs, sizes, n, MMC_COPY_G2H, res),
		             MMC_INVALID_PARAM);
		cr_expect_eq(mmc_batch_add_lease(s, keys, n, 1000, res), MMC_INVALID_PARAM);
		cr_expect_eq(mmc_batch_write_finish(s, keys, wr, n, res), MMC_INVALID_PARAM);
		for (int i = 0; i < 4; i++)
			cr_expect_eq(res[i], 12345, "n = %zu: results[%d] was written", n, i);
	}
}

Test(api_errors, null_store_and_strerror)
{
	uint32_t id;
	mmc_key_info info;

	cr_assert_eq(mmc_setup(NULL, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_init(NULL, 0, true), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_teardown(NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_put_from(NULL, "k", "x", 1, MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_is_exist(NULL, "k"), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_local_service_id(NULL, &id), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_key_info(NULL, "k", 0, &info), MMC_INVALID_PARAM);
	mmc_destroy(NULL);
	cr_assert_str_eq(mmc_strerror(MMC_NOT_ENOUGH_MEMORY), "MMC_NOT_ENOUGH_MEMORY: not enough memory in the pool");
	cr_assert_str_eq(mmc_strerror(12345), "unknown error");
	cr_assert_str_eq(mmc_version(), MMC_VERSION_STRING);
	cr_assert_eq(mmc_setup(s, NULL), MMC_REPEAT_CALL, "setup while initialised");
	cr_assert_eq(mmc_init(s, 0, true), 0, "init twice is fine");
	cr_assert_eq(mmc_init(s, 384, true), MMC_INVALID_PARAM, "device id out of range");
}

/* A second init with the same arguments is a no-op; with others it would be answered as if they were granted. */
Test(api_errors, a_second_init_must_ask_for_the_same)
{
	cr_assert_eq(mmc_init(s, 0, true), 0);
	cr_assert_eq(mmc_init(s, 0, false), MMC_INVALID_PARAM, "client only, on a store that lends");
	cr_assert_eq(mmc_init(s, 1, true), MMC_INVALID_PARAM, "another device");
	cr_assert_eq(mmc_put_from(s, "init-twice", "x", 1, MMC_COPY_H2G, NULL), 0, "the store goes on");
}

Test(api_errors, calls_before_init)
{
	mmc_store *t = mmc_create();
	char buf[8];
	int res[1];
	const char *keys[] = {"k"};
	uint32_t id;
	size_t size = 8;
	mmc_gva gva = 0;
	void *bufp = buf;

	cr_assert_not_null(t);
	cr_assert_eq(mmc_put_from(t, "k", buf, 8, MMC_COPY_H2G, NULL), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_get_into(t, "k", buf, 8, MMC_COPY_G2H), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_is_exist(t, "k"), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_remove(t, "k"), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_register_buffer(t, buf, 8), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_get_local_service_id(t, &id), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_batch_is_exist(t, keys, 1, res), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(res[0], MMC_CLIENT_NOT_INIT);
	/* the GVA calls read the store's connection: not before the store is checked */
	cr_assert_eq(mmc_batch_malloc(t, keys, &size, 1, MMC_MEDIA_DRAM, 0, &gva), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_batch_malloc(NULL, keys, &size, 1, MMC_MEDIA_DRAM, 0, &gva), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_add_lease(t, keys, 1, 0, res), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_batch_add_lease(NULL, keys, 1, 0, res), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_copy(t, &gva, &bufp, &size, 1, MMC_COPY_H2G, 0), MMC_CLIENT_NOT_INIT);
	cr_assert_eq(
	    mmc_batch_copy_keys(t, keys, &gva, &(uint32_t){1}, &(uint64_t){0}, &bufp, &size, 1, MMC_COPY_H2G, 0, res),
	    MMC_CLIENT_NOT_INIT);
	cr_assert_eq(mmc_batch_copy_keys(NULL, keys, &gva, &(uint32_t){1}, &(uint64_t){0}, &bufp, &size, 1,
	                                 MMC_COPY_H2G, 0, res),
	             MMC_INVALID_PARAM);
	cr_assert_eq(mmc_teardown(t), 0);
	mmc_destroy(t);
}

Test(api_errors, no_metaserver)
{
	mmc_local_config c = config("tcp://127.0.0.1:1");
	mmc_store *t = mmc_create();
	char buf[8];

	c.meta_service_url[0] = '\0';
	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "tcp://127.0.0.1:%u", free_port());
	cr_assert_eq(mmc_setup(t, &c), 0);
	cr_assert_eq(mmc_init(t, 0, true), MMC_NOT_CONNECTED_META);
	cr_assert_eq(mmc_put_from(t, "k", buf, 8, MMC_COPY_H2G, NULL), MMC_CLIENT_NOT_INIT);
	/* a failed init leaves the store reusable: point it at the real server */
	c = config(meta.url);
	cr_assert_eq(mmc_setup(t, &c), 0);
	cr_assert_eq(mmc_init(t, 0, false), 0);
	cr_assert_eq(mmc_is_exist(t, "nothing"), 0);
	mmc_destroy(t);
}

Test(api_errors, bad_config)
{
	mmc_local_config c = config(meta.url);
	mmc_store *t = mmc_create();

	snprintf(c.protocol, sizeof(c.protocol), "carrier_pigeon");
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	c = config("http://nowhere");
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	c = config(meta.url);
	c.world_size = 0;
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	c = config(meta.url);
	c.hbm_size = 1 << 20;
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM, "no accelerator here");
	c = config(meta.url);
	snprintf(c.config_path, sizeof(c.config_path), "/nonexistent/mmc.conf");
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	mmc_destroy(t);
}

Test(api_errors, protocol_choice_and_fi_provider_override)
{
	mmc_local_config c = config(meta.url);
	mmc_store *t = mmc_create();

	/* no RDMA NIC here: host_rdma finds no provider */
	snprintf(c.protocol, sizeof(c.protocol), "host_rdma");
	cr_assert_eq(mmc_setup(t, &c), 0);
	cr_assert_eq(mmc_init(t, 0, false), MMC_ERROR, "verbs is not available on this host");
	/* FI_PROVIDER wins over the protocol, as libfabric users expect */
	setenv("FI_PROVIDER", "tcp", 1);
	cr_assert_eq(mmc_setup(t, &c), 0);
	cr_assert_eq(mmc_init(t, 0, false), 0);
	cr_assert_eq(mmc_is_exist(t, "anything"), 0);
	mmc_destroy(t);
	unsetenv("FI_PROVIDER");
}

/* ---- the log handler's contract (mmc_set_log_handler) ---- */

static atomic_int provider_lines; /* "fabric: provider ..." is logged at info by every mmc_init */

static void count_provider_lines(int level, const char *msg)
{
	if (level == MMC_LOG_INFO && strstr(msg, "fabric: provider"))
		atomic_fetch_add(&provider_lines, 1);
}

/* mmc_init against a port nobody listens on: it opens the fabric (one info line), then fails at the meta server */
static int info_lines_of_one_init(mmc_store *t)
{
	atomic_store(&provider_lines, 0);
	cr_assert_eq(mmc_init(t, 0, false), MMC_NOT_CONNECTED_META);
	return atomic_load(&provider_lines);
}

/* Sets t up against a port nobody listens on, at the given log level. */
static void setup_at_level(mmc_store *t, const char *level)
{
	static unsigned port;
	mmc_local_config c = config("tcp://127.0.0.1:1");

	port = port ? port : free_port();
	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "tcp://127.0.0.1:%u", port);
	snprintf(c.log_level, sizeof(c.log_level), "%s", level);
	cr_assert_eq(mmc_setup(t, &c), 0);
}

Test(api_errors, log_level_is_the_most_verbose_of_the_configured_stores)
{
	mmc_store *a = mmc_create(), *b = mmc_create();

	mmc_set_log_handler(count_provider_lines);
	setup_at_level(a, "info");
	setup_at_level(b, "error");
	/* b's "error", set up last, does not silence what a asked for */
	cr_assert_eq(info_lines_of_one_init(b), 1, "a store's info level holds while another is set to error");
	mmc_teardown(a);
	setup_at_level(b, "error");
	cr_assert_eq(info_lines_of_one_init(b), 0, "a torn down store's level no longer counts");
	setup_at_level(a, "debug");
	setup_at_level(a, "error");
	cr_assert_eq(info_lines_of_one_init(b), 0, "setting a store up again replaces its level");
	mmc_set_log_handler(NULL);
	mmc_destroy(a);
	mmc_destroy(b);
}

static atomic_int slow_entered, slow_left;

static void slow_handler(int level, const char *msg)
{
	struct timespec ts = {0, 200 * 1000 * 1000};

	if (atomic_exchange(&slow_entered, 1))
		return;
	nanosleep(&ts, NULL);
	atomic_store(&slow_left, 1);
}

static void *bad_setup(void *arg)
{
	mmc_local_config c = config("http://nowhere"); /* logs one error line */

	mmc_setup(arg, &c);
	return NULL;
}

Test(api_errors, replacing_the_log_handler_waits_for_calls_in_it)
{
	mmc_store *t = mmc_create();
	pthread_t th;

	mmc_set_log_handler(slow_handler);
	cr_assert_eq(pthread_create(&th, NULL, bad_setup, t), 0);
	while (!atomic_load(&slow_entered))
		sched_yield();
	mmc_set_log_handler(NULL);
	cr_assert(atomic_load(&slow_left), "mmc_set_log_handler returned while another thread was in the old handler");
	pthread_join(th, NULL);
	mmc_destroy(t);
}

static atomic_int nested_lines;
static mmc_store *idle_store; /* no thread holds its locks: a call on it from the handler cannot deadlock */

static void reentering_handler(int level, const char *msg)
{
	mmc_local_config c = mmc_default_local_config();

	atomic_fetch_add(&nested_lines, 1);
	/* the error this setup logs, from inside the handler, is dropped rather than recursing; the swap must not
	 * wait for this very call */
	snprintf(c.protocol, sizeof(c.protocol), "bad");
	cr_expect_eq(mmc_setup(idle_store, &c), MMC_INVALID_PARAM);
	mmc_set_log_handler(NULL);
}

Test(api_errors, a_handler_may_replace_itself_and_is_not_reentered)
{
	mmc_local_config c = config("http://nowhere");
	mmc_store *t = mmc_create();

	idle_store = mmc_create();
	mmc_set_log_handler(reentering_handler);
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	cr_assert_eq(atomic_load(&nested_lines), 1, "one line, no recursion");
	cr_assert_eq(mmc_setup(t, &c), MMC_INVALID_PARAM);
	cr_assert_eq(atomic_load(&nested_lines), 1, "the handler replaced itself");
	mmc_destroy(idle_store);
	mmc_destroy(t);
}
