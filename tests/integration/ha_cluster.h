/*
 * Two or three real mmc-metaserver processes that elect a leader through one lock (file:// in a fresh directory,
 * or a given redis:// URI) and share one data dir, as on one head node with standbys. Ports are free ones; every
 * server is stopped and its directory removed by ha_cluster_stop, which also runs when a test fails.
 */
#ifndef MMC_TEST_HA_CLUSTER_H
#define MMC_TEST_HA_CLUSTER_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvcm_client.h"
#include "proc.h"

#define HA_MAX   3
#define LEASE_MS 2000

struct ha_cluster {
	char dir[256];      /* the shared data dir and the file lock live here */
	char lock_uri[300]; /* file://DIR/lock unless a test sets another before starting */
	int n;
	struct metaserver s[HA_MAX];
	char urls[512]; /* every server's libmmc address, comma-separated */
};

static inline uint64_t ha_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void ha_cluster_init(struct ha_cluster *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "/tmp/mmc-ha-XXXXXX");
	cr_assert_not_null(mkdtemp(c->dir));
	snprintf(c->lock_uri, sizeof(c->lock_uri), "file://%s/lock", c->dir);
}

/* Starts server i (again, after a stop, on the same ports). extra: more `k=v`, NULL-terminated, may be NULL. */
static inline void ha_start_server(struct ha_cluster *c, int i, const char *const *extra)
{
	char data[300], lock[400], node[64], lease[64];
	const char *args[16] = {data, lock, node, lease, "kvcm.leader_elector.loop_interval_ms=100"};
	int n = 5;

	snprintf(data, sizeof(data), "ock.mmc.meta.data_dir=%s/data", c->dir);
	snprintf(lock, sizeof(lock), "kvcm.distributed_lock.uri=%s", c->lock_uri);
	snprintf(node, sizeof(node), "kvcm.leader_elector.node_id=node%d", i);
	snprintf(lease, sizeof(lease), "kvcm.leader_elector.lease_ms=%d", LEASE_MS);
	for (int k = 0; extra && extra[k] && n < 15; k++)
		args[n++] = extra[k];
	args[n] = NULL;
	if (c->s[i].rpc_port) {
		char hp[64], ap[64];
		const char *more[20];
		int m = 0;

		snprintf(hp, sizeof(hp), "kvcm.service.http_port=%u", c->s[i].http_port);
		snprintf(ap, sizeof(ap), "kvcm.service.admin_http_port=%u", c->s[i].admin_port);
		for (int k = 0; k < n; k++)
			more[m++] = args[k];
		more[m++] = hp;
		more[m++] = ap;
		more[m] = NULL;
		cr_assert_eq(metaserver_restart(&c->s[i], more), 0, "restart of server %d", i);
		return;
	}
	cr_assert_eq(metaserver_start(&c->s[i], args), 0, "start of server %d", i);
}

static inline void ha_cluster_start(struct ha_cluster *c, int n, const char *const *extra)
{
	size_t len = 0;

	c->n = n;
	for (int i = 0; i < n; i++) {
		ha_start_server(c, i, extra);
		len += (size_t)snprintf(c->urls + len, sizeof(c->urls) - len, "%s%.63s", i ? "," : "", c->s[i].url);
	}
}

static inline void ha_cluster_stop(struct ha_cluster *c)
{
	char cmd[300];

	for (int i = 0; i < c->n; i++)
		cr_expect_eq(metaserver_cleanup(&c->s[i]), 0, "server %d's log has a sanitizer report", i);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (c->dir[0] && system(cmd) != 0)
		cr_log_warn("could not remove %s", c->dir);
}

/* POST /api/<api> on server i's admin port; NULL when it does not answer. */
static inline json_t *ha_admin(struct ha_cluster *c, int i, const char *api, const char *body)
{
	struct hc h;
	json_t *r;

	if (c->s[i].pid <= 0 || hc_connect(&h, c->s[i].admin_port))
		return NULL;
	r = hc_call(&h, api, "%s", body);
	hc_close(&h);
	return r;
}

static inline const char *ha_code(json_t *r)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(r, "header"), "status"), "code"));
}

/* 1: leads, 0: stands by, -1: does not answer. */
static inline int ha_is_leader(struct ha_cluster *c, int i)
{
	json_t *r = ha_admin(c, i, "checkHealth", "{\"trace_id\":\"t\"}");
	int v = r && ha_code(r) && strcmp(ha_code(r), "OK") == 0 ? json_is_true(json_object_get(r, "is_leader")) : -1;

	json_decref(r);
	return v;
}

/* Server i's is_leader once it answers, waiting up to ms while it does not (a demoted server restarts its process
 * image: its ports refuse connections until the new image listens); -1 when it never answers. */
static inline int ha_is_leader_once_up(struct ha_cluster *c, int i, uint64_t ms)
{
	uint64_t end = ha_now_ms() + ms;
	int v;

	while ((v = ha_is_leader(c, i)) == -1 && ha_now_ms() < end)
		usleep(20000);
	return v;
}

/* The one server that leads, waiting up to ms; -1 when none does (or, failing the test, two do). */
static inline int ha_wait_leader(struct ha_cluster *c, uint64_t ms)
{
	uint64_t end = ha_now_ms() + ms;

	do {
		int leader = -1, count = 0;

		for (int i = 0; i < c->n; i++)
			if (ha_is_leader(c, i) == 1) {
				leader = i;
				count++;
			}
		cr_assert_leq(count, 1, "two servers lead at once");
		if (count == 1)
			return leader;
		usleep(20000);
	} while (ha_now_ms() < end);
	return -1;
}

/* The field of getManagerClusterInfo (a string) on server i, copied into out. */
static inline void ha_cluster_field(struct ha_cluster *c, int i, const char *field, char *out, size_t len)
{
	json_t *r = ha_admin(c, i, "getManagerClusterInfo", "{\"trace_id\":\"t\"}");

	cr_assert_not_null(r, "server %d does not answer getManagerClusterInfo", i);
	cr_assert_str_eq(ha_code(r), "OK");
	snprintf(out, len, "%s",
	         json_is_string(json_object_get(r, field)) ? json_string_value(json_object_get(r, field)) : "");
	json_decref(r);
}

#endif
