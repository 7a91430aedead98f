#include "leadership.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "data_dir.h"
#include "elector.h"
#include "kvcm.h"
#include "kvcm_conf.h"
#include "log.h"
#include "server.h"
#include "meta_err.h"
#include "mmc/mmc.h"
#include "persist.h"
#include "sd_notify.h"
#include "store_uri.h"
#include "tcp_url.h"

#define RESTART_GRACE_MS 200 /* a demoted leader answers for this long (replies, health) before it restarts */
#define CAMPAIGN_ENV     "MMC_HA_CAMPAIGN_AFTER_MS"
#define ARGC_ENV         "MMC_HA_ARGC" /* the operator's arguments; what a restart appended comes after them */

static struct {
	char **argv;
	int argc;
	int (*load)(struct meta *m);
	struct event *retry_ev, *restart_ev;
	char rpc_url[320];
	bool restarting;
	bool waiting_logged; /* the data dir is busy: said once per wait */
	uint64_t led_as;     /* ha_transitions when the state was loaded: any change since means the lease was lost */
} L;

static void arm(struct event *ev, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(ev, &tv);
}

static void changed(void *arg);

/* Whether two redis:// URIs name one Redis and db (the lock's own key is then in the store's keyspace). */
static bool same_redis(const char *a, const char *b)
{
	struct redis_uri x, y;
	char err[256];

	return redis_uri_parse(a, &x, err, sizeof(err)) == 0 && redis_uri_parse(b, &y, err, sizeof(err)) == 0 &&
	       strcasecmp(x.host, y.host) == 0 && x.port == y.port && x.db == y.db;
}

void leadership_fence(struct meta *m)
{
	const char *key, *lock = kvcm_conf()->lock_uri;
	char value[1024];
	bool lmdb = !m->conf.store_uri[0] || strcmp(m->conf.store_uri, "lmdb") == 0;

	if (!m->rpc->ha)
		return;
	persist_set_fence(m->persist, ha_fence, m->rpc->ha);
	if (lmdb)
		return; /* the data dir's lock keeps every other process out */
	/* a Redis store in the lock's own Redis and db also refuses, at Redis, commits once another node holds the
	 * lock: a commit on its way when this node was paused fails there */
	if (same_redis(lock, m->conf.store_uri) && ha_lock_redis_key(m->rpc->ha, &key, value, sizeof(value)) &&
	    persist_set_redis_fence_key(m->persist, key, value) == 0)
		log_info("op=ha_fence fence_key=%s (every commit checks the lock at Redis)", key);
	else
		log_warn(
		    "op=ha_fence store=redis fence=lease_clock (the lock is not in the store's Redis and db: a commit "
		    "sent just before this node lost its lease can still land; put the lock in the store's Redis for "
		    "a fence at Redis)");
}

static void promote(struct meta *m)
{
	struct meta_err e;

	/* the previous leader's process may still hold the LMDB data dir (paused): asked before loading so that a
	 * standby waiting for it does not log a failed open every loop */
	if (data_dir_busy(m->conf.data_dir)) {
		if (!L.waiting_logged)
			log_warn("op=ha_promote state=waiting reason=data_dir_busy dir=\"%s\" (the previous leader's "
			         "process still holds it)",
			         m->conf.data_dir);
		L.waiting_logged = true;
		arm(L.retry_ev, ha_loop_interval_ms(m->rpc->ha));
		return;
	}
	/* the lease this load is for: lost and won back while loading reads as a change, so another node may have
	 * led (and written) meanwhile, which this load did not see */
	L.led_as = ha_transitions(m->rpc->ha);
	ha_mark_loaded(m->rpc->ha);
	if (L.load(m)) { /* loaded halfway, or not at all: only a fresh process tries again cleanly */
		log_error("op=ha_promote err=load_failed (restarting as a standby)");
		ha_demote(m->rpc->ha);
		L.restarting = true;
		arm(L.restart_ev, RESTART_GRACE_MS);
		return;
	}
	meta_err_clear(&e);
	if (kvcm_promote(server_of(m)->kvcm, m->persist, &e)) {
		log_error("op=ha_promote component=kvcm err=\"%s\"", e.message);
		exit(1);
	}
	if (!ha_lease_valid(m->rpc->ha) || ha_transitions(m->rpc->ha) != L.led_as) {
		changed(m); /* lost while loading: what was loaded is not ours to serve */
		return;
	}
	ha_set_serving(m->rpc->ha, true);
	log_info("op=ha_promote node=\"%s\" objects=%llu services=%u", ha_self(m->rpc->ha)->node_id,
	         (unsigned long long)m->nobjects, m->nservices);
	printf("mmc-metaserver leading node=%s\n", ha_self(m->rpc->ha)->node_id);
	fflush(stdout);
	sd_notify_send("STATUS=leading");
}

/* Back to standby by the shortest sure path: a fresh process image that loads nothing until it leads again. */
static void restart_cb(evutil_socket_t fd, short what, void *arg)
{
	struct meta *m = arg;
	struct kvcm_ports p = kvcm_ports(server_of(m)->kvcm);
	char *args[256], env[7][1200], after[32];
	int n = 0, kept, nenv = 5;

	if (m->rpc->draining) /* a SIGTERM came meanwhile: the loop is ending, and the process with it */
		return;
	for (; n < L.argc && n < 240; n++)
		args[n] = L.argv[n];
	kept = n;
	/* every port as bound: one chosen with :0 would move, and clients and probes know the old one */
	snprintf(env[0], sizeof(env[0]), "kvcm.service.http_port=%u", p.http);
	snprintf(env[1], sizeof(env[1]), "kvcm.service.admin_http_port=%u", p.admin);
	snprintf(env[2], sizeof(env[2]), "ock.mmc.meta_service_url=%s", L.rpc_url);
	snprintf(env[3], sizeof(env[3]), "kvcm.leader_elector.node_id=%s", ha_self(m->rpc->ha)->node_id);
	snprintf(env[4], sizeof(env[4]), "kvcm.leader_elector.campaign_delay_time_ms=%u",
	         ha_campaign_delay_ms(m->rpc->ha));
	if (p.rpc) { /* gRPC is on (equal ports: one listener serves both, and will again) */
		snprintf(env[nenv++], sizeof(env[0]), "kvcm.service.rpc_port=%u", p.rpc);
		snprintf(env[nenv++], sizeof(env[0]), "kvcm.service.admin_rpc_port=%u", p.admin_rpc);
	}
	for (int i = 0; i < nenv; i++) {
		args[n++] = "--env";
		args[n++] = env[i];
	}
	args[n] = NULL;
	snprintf(after, sizeof(after), "%lld", (long long)ha_campaign_after_wall_ms(m->rpc->ha));
	setenv(CAMPAIGN_ENV, after, 1);
	snprintf(after, sizeof(after), "%d", kept);
	setenv(ARGC_ENV, after, 1);
	log_warn("op=ha_restart reason=demoted node=\"%s\"", ha_self(m->rpc->ha)->node_id);
	fflush(stderr);
	/* every socket, the data dir's lock and LMDB's files close with the old image */
	syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
	execv("/proc/self/exe", args);
	log_error("op=ha_restart err=\"execv: %s\"", strerror(errno));
	_exit(1);
}

static void demote(struct meta *m)
{
	ha_set_serving(m->rpc->ha, false); /* from now on every request is redirected */
	evtimer_del(L.retry_ev);
	if (!m->persist || L.restarting)
		return;
	L.restarting = true;
	/* the fence is closed: what is queued fails, and the replies held for it answer MMC_META_BACKUP_ERROR */
	persist_flush(m->persist);
	arm(L.restart_ev, RESTART_GRACE_MS);
}

static void changed(void *arg)
{
	struct meta *m = arg;

	if (ha_holds(m->rpc->ha) && !m->persist && !L.restarting)
		promote(m);
	else if (!ha_holds(m->rpc->ha) || !ha_lease_valid(m->rpc->ha) ||
	         (m->persist && ha_transitions(m->rpc->ha) != L.led_as))
		demote(m); /* a lease lost and won back in between is lost: someone else may have led meanwhile */
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	changed(arg);
}

/* The elector's settings from the kvcm.* keys. */
static struct ha_opts opts_of(const struct kvcm_conf *kc, int64_t campaign_after_wall_ms)
{
	return (struct ha_opts){.lock_uri = kc->lock_uri,
	                        .lease_ms = kc->lease_ms,
	                        .loop_interval_ms = kc->loop_interval_ms,
	                        .campaign_delay_ms = kc->campaign_delay_ms,
	                        .campaign_after_wall_ms = campaign_after_wall_ms,
	                        .lock_password_file = kc->lock_password_file};
}

int leadership_check(const struct kvcm_conf *kc, char *err, size_t errlen)
{
	struct ha_opts o = opts_of(kc, 0);

	if (!kc->lock_uri[0])
		return 0;
	if (strpbrk(kc->node_id, " \t\n")) {
		snprintf(err, errlen, "kvcm.leader_elector.node_id must not contain blanks");
		return MMC_ERROR;
	}
	return ha_check(&o, err, errlen) ? MMC_ERROR : 0;
}

int leadership_open(struct meta *m, int argc, char **argv, int (*load)(struct meta *m), char *err, size_t errlen)
{
	const struct kvcm_conf *kc = kvcm_conf();
	const char *after = getenv(CAMPAIGN_ENV), *keep = getenv(ARGC_ENV);
	struct ha_opts o = opts_of(kc, after ? strtoll(after, NULL, 10) : 0);

	unsetenv(CAMPAIGN_ENV);
	unsetenv(ARGC_ENV);
	if (!kc->lock_uri[0])
		return 0;
	if (leadership_check(kc, err, errlen))
		return MMC_ERROR;
	L.argv = argv;
	L.argc = keep && atoi(keep) > 0 && atoi(keep) <= argc ? atoi(keep) : argc;
	L.load = load;
	L.retry_ev = evtimer_new(m->base, retry_cb, m);
	L.restart_ev = evtimer_new(m->base, restart_cb, m);
	if (!L.retry_ev || !L.restart_ev) {
		snprintf(err, errlen, "out of memory");
		return MMC_ERROR;
	}
	return ha_open(&m->rpc->ha, m->base, &o, changed, m, err, errlen) ? MMC_ERROR : 0;
}

int leadership_start(struct meta *m, const char *rpc_host, unsigned rpc_port)
{
	struct ha_holder self = {0};
	struct kvcm_ports p;
	const char *adv = kvcm_conf()->advertised_host;

	if (!m->rpc->ha)
		return 0;
	p = kvcm_ports(server_of(m)->kvcm);
	tcp_url_format(L.rpc_url, sizeof(L.rpc_url), rpc_host, (uint16_t)rpc_port);
	snprintf(self.node_id, sizeof(self.node_id), "%s", kvcm_node_id(server_of(m)->kvcm));
	/* others reach this node by its advertised host; a wildcard listener is reached by the host name */
	if (adv[0] || strcmp(rpc_host, "0.0.0.0") == 0 || strcmp(rpc_host, "::") == 0) {
		char host[256] = "localhost";

		if (adv[0] == '[' && adv[strlen(adv) - 1] == ']') /* an IPv6 literal as written in a URL */
			snprintf(host, sizeof(host), "%.*s", (int)strlen(adv) - 2, adv + 1);
		else if (adv[0])
			snprintf(host, sizeof(host), "%s", adv);
		else
			gethostname(host, sizeof(host) - 1);
		tcp_url_format(self.rpc, sizeof(self.rpc), host, (uint16_t)rpc_port);
		snprintf(self.host, sizeof(self.host), "%s", host);
	} else {
		snprintf(self.rpc, sizeof(self.rpc), "%s", L.rpc_url);
		snprintf(self.host, sizeof(self.host), "%s", rpc_host);
	}
	self.http_port = p.http;
	self.admin_port = p.admin;
	ha_set_self(m->rpc->ha, &self);
	log_info("op=ha_start node=\"%s\" lock=\"%s\" lease_ms=%u loop_interval_ms=%u", self.node_id,
	         kvcm_conf()->lock_uri, ha_lease_ms(m->rpc->ha), ha_loop_interval_ms(m->rpc->ha));
	return ha_start(m->rpc->ha);
}

void leadership_close(struct meta *m)
{
	if (L.retry_ev)
		event_free(L.retry_ev);
	if (L.restart_ev)
		event_free(L.restart_ev);
	L.retry_ev = L.restart_ev = NULL;
	ha_close(m->rpc->ha);
	m->rpc->ha = NULL;
}
