/*
 * The core object store end to end: a real mmc-metaserver, two local-service processes and this process as a
 * client, bytes moving over libfabric (the provider comes from MMC_PROTOCOL: meson runs this file once per
 * provider).
 */
#include <criterion/criterion.h>
#include <mmc/mmc.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "proc.h"

static struct metaserver meta;
static struct node a, b, c; /* a, b: local services; c: client only */
static char reply[8192];

static void start_cluster(void)
{
	static char env_meta[128];

	cr_assert_eq(metaserver_start(&meta, NULL), 0, "metaserver did not start");
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	const char *env[] = {env_meta, NULL};
	cr_assert_eq(node_start(&a, env), 0);
	cr_assert_eq(node_start(&b, env), 0);
	cr_assert_eq(node_start(&c, env), 0);
	node_cmd(&a, reply, sizeof(reply), "init 1 %llu", 160ull << 20);
	cr_assert_eq(strncmp(reply, "0 ", 2), 0, "node a init: %s", reply);
	node_cmd(&b, reply, sizeof(reply), "init 1 %llu", 160ull << 20);
	cr_assert_eq(strncmp(reply, "0 ", 2), 0, "node b init: %s", reply);
	node_cmd(&c, reply, sizeof(reply), "init 0");
	cr_assert_eq(strcmp(reply, "0 -1"), 0, "node c init: %s", reply);
}

static void stop_cluster(void)
{
	node_kill(&a);
	node_kill(&b);
	node_kill(&c);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* Runs one node command and returns the first number of its reply. */
#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

/* After a meta server restart each local service rejoins on its own schedule: wait until key is served again. */
static void wait_exists(struct node *n, const char *key)
{
	for (int i = 0; i < 100 && CMD(n, "exist %s", key) != 1; i++)
		usleep(50000);
}

TestSuite(core, .init = start_cluster, .fini = stop_cluster, .timeout = 120);

Test(core, put_in_one_process_get_in_another)
{
	static const size_t sizes[] = {1, 4096, 1u << 20, 64u << 20};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char key[64];

		snprintf(key, sizeof(key), "blk/%zu", sizes[i]);
		cr_assert_eq(CMD(&a, "put %s %zu %zu", key, sizes[i], 7 + i), 0, "put %s: %s", key, reply);
		cr_assert_eq(CMD(&b, "get %s %zu %zu", key, sizes[i], 7 + i), 0, "get %s: %s (99 = bytes differ)", key,
		             reply);
		/* and the same-process path (memcpy from the own pool) */
		cr_assert_eq(CMD(&a, "get %s %zu %zu", key, sizes[i], 7 + i), 0, "local get %s: %s", key, reply);
	}
}

Test(core, exist_remove_and_key_info)
{
	unsigned long long size, blobs, loc, type;
	int rc;

	cr_assert_eq(CMD(&a, "put k1 10000 1"), 0);
	cr_assert_eq(CMD(&b, "exist k1"), 1);
	node_cmd(&b, reply, sizeof(reply), "info k1");
	cr_assert_eq(sscanf(reply, "%d %llu %llu %llu %llu", &rc, &size, &blobs, &loc, &type), 5, "%s", reply);
	cr_assert_eq(rc, 0);
	cr_assert_eq(size, 10000);
	cr_assert_eq(blobs, 1);
	cr_assert_eq(loc, 0, "a single put lands in the writer's own pool (service 0)");
	cr_assert_eq(type, MMC_MEDIA_DRAM);
	cr_assert_eq(CMD(&c, "exist k1"), 1, "client-only processes see the index too");
	cr_assert_eq(CMD(&b, "remove k1"), 0);
	cr_assert_eq(CMD(&a, "exist k1"), 0);
	cr_assert_eq(CMD(&b, "get k1 10000 1"), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(CMD(&b, "remove k1"), MMC_OBJECT_NOT_EXISTS);
	node_cmd(&b, reply, sizeof(reply), "info k1");
	cr_assert_eq(strcmp(reply, "0 0 0"), 0, "absent key info: %s", reply);
	/* a put of an existing key keeps the first value and says OK */
	cr_assert_eq(CMD(&a, "put k2 4096 5"), 0);
	cr_assert_eq(CMD(&b, "put k2 4096 6"), 0);
	cr_assert_eq(CMD(&b, "get k2 4096 5"), 0);
}

Test(core, metaserver_kill9_and_restart_keeps_objects)
{
	cr_assert_eq(CMD(&a, "put durable/1 1048576 11"), 0);
	cr_assert_eq(CMD(&b, "put durable/2 4096 12"), 0);
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	/* the nodes reconnect and rejoin; their calls wait for their own reconnection (retry_ms) */
	wait_exists(&b, "durable/1");
	wait_exists(&b, "durable/2");
	cr_assert_eq(CMD(&b, "get durable/1 1048576 11"), 0, "after restart: %s", reply);
	cr_assert_eq(CMD(&a, "get durable/2 4096 12"), 0, "after restart: %s", reply);
	cr_assert_eq(CMD(&a, "exist durable/1"), 1);
	/* and it still takes new objects */
	cr_assert_eq(CMD(&a, "put durable/3 8192 13"), 0);
	cr_assert_eq(CMD(&b, "get durable/3 8192 13"), 0);
	/* a clean stop exits 0 and keeps everything too */
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	wait_exists(&b, "durable/3");
	cr_assert_eq(CMD(&b, "get durable/3 8192 13"), 0, "after clean restart: %s", reply);
}

Test(core, killing_the_owner_makes_its_keys_absent)
{
	cr_assert_eq(CMD(&a, "put owned/by/a 65536 3"), 0);
	cr_assert_eq(CMD(&b, "put owned/by/b 65536 4"), 0);
	node_kill(&a);
	/* the meta server sees the connection drop and unmounts a's pool */
	for (int i = 0; i < 50 && CMD(&b, "exist owned/by/a") != 0; i++)
		usleep(100000);
	cr_assert_eq(CMD(&b, "exist owned/by/a"), 0);
	cr_assert_eq(CMD(&b, "get owned/by/a 65536 3"), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(CMD(&b, "get owned/by/b 65536 4"), 0);
	/* the key can be written again, now into b */
	cr_assert_eq(CMD(&b, "put owned/by/a 65536 5"), 0);
	cr_assert_eq(CMD(&b, "get owned/by/a 65536 5"), 0);
}

Test(core, put_larger_than_any_pool_fails_cleanly)
{
	cr_assert_eq(CMD(&a, "put huge 419430400 1"), MMC_NOT_ENOUGH_MEMORY, "%s", reply);
	cr_assert_eq(CMD(&b, "exist huge"), 0);
	cr_assert_eq(CMD(&a, "put small 4096 1"), 0);
}
