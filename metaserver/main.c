/*
 * mmc-metaserver: placement, leases, eviction and durable metadata for libmmc (protobuf over TCP), and the KV Cache
 * Manager HTTP/JSON API. One event loop owns all state.
 */
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "alloc_queue.h"
#include "clock.h"
#include "conn.h"
#include "kvcm/kvcm.h"
#include "leadership.h"
#include "log.h"
#include "meta.h"
#include "meta_conf.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "persist.h"
#include "rpc.h"
#include "sd_notify.h"
#include "services.h"
#include "store_uri.h"
#include "tier.h"

#define SWEEP_MS 50

static void usage(FILE *f)
{
	fprintf(f, "usage: mmc-metaserver [--config FILE] [--env KEY=VALUE]... [--data-dir DIR] [--check-config]\n"
	           "\n"
	           "  -c, --config FILE      load `key = value` settings (default: $MMC_META_CONFIG_PATH, if set)\n"
	           "  -e, --env KEY=VALUE    set one key, after the file (repeatable), e.g.\n"
	           "                         --env ock.mmc.meta_service_url=tcp://0.0.0.0:5000\n"
	           "                         --env kvcm.service.http_port=6382\n"
	           "  -d, --data-dir DIR     LMDB directory (ock.mmc.meta.data_dir, default ./mmc-data)\n"
	           "  -C, --check-config     check every key and value, then exit (0: valid, 2: not); opens nothing\n"
	           "  -h, --help             this text\n"
	           "  -V, --version          print the version\n"
	           "\n"
	           "With no options it listens on tcp://127.0.0.1:5000 (libmmc), 127.0.0.1:6382 (KVCM) and\n"
	           "127.0.0.1:6492 (admin). Another kvcm.service.bind needs credentials (kvcm.service.admin_user,\n"
	           "kvcm.service.admin_password_file) or kvcm.service.allow_insecure_bind=true.\n"
	           "SIGTERM or SIGINT drains and exits 0; SIGHUP reloads the log level from the config file.\n"
	           "Every key is documented in docs/configuration.md.\n");
}

static const struct option long_opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"env", required_argument, NULL, 'e'},
    {"data-dir", required_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"check-config", no_argument, NULL, 'C'},
    {NULL, 0, NULL, 0},
};

static const char *config_path;
static bool check_only;

/* Two passes: the file first, then --env and --data-dir in order, so the command line wins. */
static int parse_args(int argc, char **argv, struct meta_conf *conf)
{
	char err[512];
	int opt;

	config_path = getenv("MMC_META_CONFIG_PATH");
	while ((opt = getopt_long(argc, argv, "c:e:d:hVC", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config_path = optarg;
			break;
		case 'C':
			check_only = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("mmc-metaserver %s\n", MMC_VERSION_STRING);
			exit(0);
		case 'e':
		case 'd':
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mmc-metaserver: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	if (config_path && config_path[0] && meta_conf_load(conf, config_path, err, sizeof(err))) {
		fprintf(stderr, "mmc-metaserver: %s\n", err);
		return -1;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:e:d:hVC", long_opts, NULL)) != -1) {
		char *eq;
		int rc = 0;

		if (opt == 'd') {
			rc = meta_conf_set(conf, "ock.mmc.meta.data_dir", optarg, err, sizeof(err));
		} else if (opt == 'e') {
			eq = strchr(optarg, '=');
			if (!eq) {
				fprintf(stderr, "mmc-metaserver: --env expects KEY=VALUE, got \"%s\"\n", optarg);
				return -1;
			}
			*eq = '\0';
			rc = meta_conf_set(conf, optarg, eq + 1, err, sizeof(err));
			*eq = '=';
		}
		if (rc) {
			fprintf(stderr, "mmc-metaserver: %s\n", err);
			return -1;
		}
	}
	if (meta_conf_check(conf, err, sizeof(err))) {
		fprintf(stderr, "mmc-metaserver: %s\n", err);
		return -1;
	}
	return 0;
}

static void meta_sweep(struct meta *m)
{
	uint64_t now = clock_ms();

	if (!m->persist) { /* a standby: no state loaded yet, only its connections to time out */
		conns_sweep(m, now);
		return;
	}
	objects_sweep(m, now);
	services_sweep(m, now);
	conns_sweep(m, now);
	alloc_queue_kick(m); /* waiting requests past their deadline fail now */
	tier_kick(m);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	meta_sweep(arg);
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	if (!((struct meta *)arg)->persist)
		return;
	alloc_queue_kick(arg);
	tier_kick(arg);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct meta *m = arg;
	struct timeval drain = {0, 200000};

	if (m->draining)
		return;
	log_info("op=shutdown signal=%d", (int)sig);
	sd_notify_send("STOPPING=1");
	m->draining = true;
	conn_stop_listening(m);
	if (m->persist)
		persist_flush(m->persist);
	/* let queued replies reach their sockets, then stop */
	event_base_loopexit(m->base, &drain);
}

static void hup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct meta *m = arg;
	struct meta_conf fresh;
	char err[512];
	enum log_level lvl;

	if (!config_path || !config_path[0])
		return;
	meta_conf_defaults(&fresh);
	if (meta_conf_load(&fresh, config_path, err, sizeof(err))) {
		log_warn("op=reload err=\"%s\"", err);
		return;
	}
	if (log_parse_level(fresh.log_level, &lvl) == 0)
		log_set_level(lvl);
	m->conf.evict_high = fresh.evict_high > fresh.evict_low ? fresh.evict_high : m->conf.evict_high;
	m->conf.evict_low = fresh.evict_high > fresh.evict_low ? fresh.evict_low : m->conf.evict_low;
	m->conf.lease_ttl_ms = fresh.lease_ttl_ms;
	log_info("op=reload log_level=%s evict_high=%u evict_low=%u lease_ttl_ms=%llu", fresh.log_level,
	         m->conf.evict_high, m->conf.evict_low, (unsigned long long)m->conf.lease_ttl_ms);
}

/* Tests widen the window between queuing a change and its commit to hit it deterministically; never in production,
 * hence an environment variable and a warning rather than a documented key. */
static unsigned test_commit_delay_ms(void)
{
	const char *v = getenv("MMC_TEST_COMMIT_DELAY_MS");
	unsigned long ms = v ? strtoul(v, NULL, 10) : 0;

	if (ms > 60000)
		ms = 60000;
	if (ms)
		log_warn("op=start warning=\"MMC_TEST_COMMIT_DELAY_MS=%lu: every commit waits (tests only)\"", ms);
	return (unsigned)ms;
}

static int open_store(struct meta *m)
{
	struct persist_opts po = {
	    .dir = m->conf.data_dir,
	    .map_size = m->conf.lmdb_map_size,
	    .sync = m->conf.lmdb_sync,
	    .test_commit_delay_ms = test_commit_delay_ms(),
	    .uri = m->conf.store_uri,
	    .key_prefix = m->conf.store_key_prefix,
	    .timeout_ms = m->conf.redis_timeout_ms,
	    .wait_replicas = m->conf.redis_wait_replicas,
	    .wait_timeout_ms = m->conf.redis_wait_timeout_ms,
	};
	char err[512], password[256] = "", shown[1024];
	int rc;

	/* first: the teardown of a server that could not open its store walks the lists it sets up */
	if (objects_init(m))
		return -1;
	if (m->conf.store_password_file[0] &&
	    store_password_read(m->conf.store_password_file, password, sizeof(password), err, sizeof(err))) {
		log_error("op=start err=\"%s\"", err);
		return -1;
	}
	po.password = password[0] ? password : NULL;
	rc = persist_open(&m->persist, m->base, &po, err, sizeof(err));
	explicit_bzero(password, sizeof(password));
	if (rc) {
		log_error("op=start err=\"%s\"", err);
		return -1;
	}
	store_uri_redact(m->conf.store_uri, shown, sizeof(shown));
	log_info("op=start store=%s uri=\"%s\"", persist_backend_name(m->persist), shown);
	if (persist_table(m->persist, "objects", &m->db_objects) ||
	    persist_table(m->persist, "services", &m->db_services) || persist_table(m->persist, "info", &m->db_info))
		return -1;
	if (services_load(m) || objects_load(m))
		return -1;
	return persist_flush(m->persist);
}

static int start(struct meta *m)
{
	char host[256], kvcm_ready[256], err[512];
	uint16_t port, bound;

	meta_conf_parse_url(m->conf.meta_service_url, host, sizeof(host), &port);
	if (conn_listen(m, host, port, &bound))
		return -1;
	/* a standby (leader election) listens now and loads its state once it leads (leadership.c) */
	if (m->ha ? kvcm_listen(&m->kvcm, m->base, m, m->ha, kvcm_ready, sizeof(kvcm_ready), err, sizeof(err))
	          : kvcm_start(&m->kvcm, m->base, m->persist, m, kvcm_ready, sizeof(kvcm_ready), err, sizeof(err))) {
		log_error("op=start component=kvcm err=\"%s\"", err);
		return -1;
	}
	if (leadership_start(m, host, bound))
		return -1;
	log_info("op=start version=%s rpc=tcp://%s:%u data_dir=\"%s\" %s%s", MMC_VERSION_STRING, host, bound,
	         m->conf.data_dir, kvcm_ready, m->ha ? " role=standby" : "");
	/* one machine-readable line on stdout: scripts and tests wait for it (and learn ports chosen with :0) */
	printf("mmc-metaserver ready rpc=tcp://%s:%u %s%s\n", host, bound, kvcm_ready, m->ha ? " role=standby" : "");
	fflush(stdout);
	sd_notify_send(m->ha ? "READY=1\nSTATUS=standing by" : "READY=1\nSTATUS=serving");
	return 0;
}

static void shutdown_all(struct meta *m)
{
	m->draining = true;
	conn_stop_listening(m);
	kvcm_stop(m->kvcm);
	if (m->persist)
		persist_flush(m->persist);
	if (m->buckets)
		alloc_queue_fini(m);
	tier_fini(m);
	conns_close_all(m);
	if (m->sweep_ev)
		event_free(m->sweep_ev);
	if (m->kick_ev)
		event_free(m->kick_ev);
	if (m->buckets) {
		objects_fini(m);
		services_fini(m);
	}
	persist_close(m->persist);
	leadership_close(m); /* after the last commit: gives the lock back, a standby takes over at once */
	arena_fini(&m->arena);
}

int main(int argc, char **argv)
{
	static struct meta m;
	struct event *sig_term, *sig_int, *sig_hup;
	struct timeval tick = {0, SWEEP_MS * 1000};
	enum log_level lvl;
	char err[512];
	int rc = 1;

	meta_conf_defaults(&m.conf);
	if (parse_args(argc, argv, &m.conf))
		return 2;
	if (check_only) {
		printf("mmc-metaserver: configuration ok\n");
		return 0;
	}
	if (log_parse_level(m.conf.log_level, &lvl) == 0)
		log_set_level(lvl);
	signal(SIGPIPE, SIG_IGN);
	list_init(&m.conns);
	m.ops = &rpc_ops;
	m.sweep = meta_sweep;
	if (getrandom(&m.run_id, sizeof(m.run_id), 0) != sizeof(m.run_id))
		m.run_id = clock_ns() ^ ((uint64_t)getpid() << 32);
	tier_init(&m);
	arena_init(&m.arena);
	m.base = event_base_new();
	if (!m.base || event_base_priority_init(m.base, 3))
		return 1;
	sig_term = evsignal_new(m.base, SIGTERM, stop_cb, &m);
	sig_int = evsignal_new(m.base, SIGINT, stop_cb, &m);
	sig_hup = evsignal_new(m.base, SIGHUP, hup_cb, &m);
	m.sweep_ev = event_new(m.base, -1, EV_PERSIST, sweep_cb, &m);
	m.kick_ev = event_new(m.base, -1, 0, kick_cb, &m);
	if (!sig_term || !sig_int || !sig_hup || !m.sweep_ev || !m.kick_ev)
		goto out;
	event_add(sig_term, NULL);
	event_add(sig_int, NULL);
	event_add(sig_hup, NULL);
	event_add(m.sweep_ev, &tick);
	if (leadership_open(&m, argc, argv, open_store, err, sizeof(err))) {
		fprintf(stderr, "mmc-metaserver: %s\n", err);
		rc = 2;
		goto out;
	}
	if ((!m.ha && open_store(&m)) || start(&m))
		goto out;
	event_base_dispatch(m.base);
	rc = 0;
out:
	shutdown_all(&m);
	event_free(sig_term);
	event_free(sig_int);
	event_free(sig_hup);
	event_base_free(m.base);
	log_info("op=exit code=%d", rc);
	return rc;
}
