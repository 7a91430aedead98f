/*
 * A peer that stops answering in the middle of a transfer, then answers late (SIGSTOP, then SIGCONT of the process
 * that owns the bytes). Every byte moves by tcp RMA here: the host path is off, as between two hosts. The promise
 * under test: a call that gave up on an RMA leaves nothing behind that can still land, neither in the caller's
 * buffer (a get) nor in pool space that is given to another key afterwards (a put).
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define SIZE (4u << 20)

static struct metaserver meta;
static char env_meta[128], reply[8192];
/* the reader gives up on a stalled RMA after 400 ms; the owner's lease outlives the pause */
static const char *env[] = {env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", "MMC_TEST_RMA_MS=400", NULL};

#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

static void start_node(struct node *n, int lend)
{
	cr_assert_eq(node_start(n, env), 0);
	node_cmd(n, reply, sizeof(reply), "init %d %llu", lend, 64ull << 20);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/*
 * The reader's get times out while the owner is stopped; the reader then reuses its buffer. Once the owner runs
 * again it answers the old read request. A later get from the same owner is answered after it (one connection,
 * served in order), so when that get is back, a late landing of the first read has happened, if it ever will.
 */
Test(stall, a_timed_out_get_never_lands_later, .fini = stop, .timeout = 120)
{
	struct node owner, reader;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&owner, 1);
	start_node(&reader, 0);
	cr_assert_eq(CMD(&owner, "put stalled %u 7", SIZE), 0, "%s", reply);
	cr_assert_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "%s", reply); /* the connection is up */
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(kill(owner.pid, SIGSTOP), 0);
		cr_expect_neq(CMD(&reader, "hold stalled %u", SIZE), 0, "a get from a stopped owner: %s", reply);
		cr_assert_eq(kill(owner.pid, SIGCONT), 0);
		cr_expect_eq(CMD(&owner, "exist stalled"), 1, "the owner still holds the key: %s", reply);
		cr_expect_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "the owner answers again: %s", reply);
		cr_expect_eq(CMD(&reader, "held"), 0,
		             "round %d: the timed-out get wrote into the buffer after it returned "
		             "(byte %s)",
		             round, strchr(reply, ' ') ? strchr(reply, ' ') + 1 : "?");
	}
	node_kill(&reader);
	node_kill(&owner);
}
