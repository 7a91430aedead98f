/*
 * mmc-metaserver: placement, leases, eviction and durable metadata for libmmc (protobuf over TCP), and the KV Cache
 * Manager HTTP/JSON API. One event loop owns all state.
 */
#include <errno.h>
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
#include "data_dir.h"
#include "exit_code.h"
#include "fd_budget.h"
#include "hash.h"
#include "kvcm.h"
#include "kvcm_conf.h"
#include "leadership.h"
#include "listener.h"
#include "log.h"
#include "loop.h"
#include "lru.h"
#include "meta.h"
#include "meta_conf.h"
#include "meta_err.h"
#include "meta_policy.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "persist.h"
#include "reload.h"
#include "rpc.h"
#include "sd_notify.h"
#include "start_checks.h"
#include "server.h"
#include "services.h"
#include "tenants.h"
#include "tier.h"
#include "tls.h"
#include "uri_mask.h"

#define SWEEP_MS         50
#define DATA_DIR_WAIT_MS 10000u /* longer than a stopping server drains (about 1.5 s at most with leader election) */

static void usage(FILE *f)
{
	fprintf(f, "usage: mmc-metaserver [--config FILE] [--env KEY=VALUE]... [--data-dir DIR] [--check-config]\n"
	           "\n"
	           "  -c, --config FILE      load `key = value` settings (default: $MMC_META_CONFIG_PATH, if set)\n"
	           "  -e, --env KEY=VALUE    set one key, after the file (repeatable), e.g.\n"
	           "                         --env ock.mmc.meta_service_url=tcp://[::1]:5000\n"
	           "                         --env kvcm.service.http_port=6382\n"
	           "  -d, --data-dir DIR     LMDB directory (ock.mmc.meta.data_dir, default ./mmc-data)\n"
	           "  -C, --check-config     make every check a start makes short of binding a port or opening the\n"
	           "                         metadata store (keys, values, the TLS, password and log files), then\n"
	           "                         exit as that start would: 0 (valid), 2 or 6, with its message\n"
	           "  -h, --help             this text\n"
	           "  -V, --version          print the version\n"
	           "\n"
	           "With no options it listens on tcp://127.0.0.1:5000 (libmmc), 127.0.0.1:6382 (KVCM) and\n"
	           "127.0.0.1:6492 (admin), and for gRPC on 127.0.0.1:6381 (KVCM) and 127.0.0.1:6491 (admin).\n"
	           "A non-loopback RPC address needs ock.mmc.meta.auth_token_file (or TLS with client certificates)\n"
	           "or ock.mmc.meta.allow_insecure_bind=true; another kvcm.service.bind or kvcm.service.rpc_bind\n"
	           "needs credentials (kvcm.service.admin_user, kvcm.service.admin_password_file) or\n"
	           "kvcm.service.allow_insecure_bind=true (docs/operations.md, Security).\n"
	           "SIGTERM or SIGINT drains and exits 0.\n"
	           "SIGHUP reloads the keys marked SIGHUP in the key list, all or nothing, and reopens the\n"
	           "log file; SIGUSR1 reopens the log file.\n"
	           "A failed start exits 1 (internal), 2 (configuration), 3 (data dir), 4 (listen address),\n"
	           "5 (data dir in use) or 6 (log file), after one line saying why (docs/operations.md).\n"
	           "Every key is documented in docs/configuration.md.\n"
	           "\n"
	           "Keys (name, what it takes, default; SIGHUP: a reload changes it, else the next start):\n");
	meta_conf_print_keys(f);
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
static int main_argc;
static char **main_argv;

/* The first pass: the options that pick the file or end the run. A bad command line is said in err. */
static int parse_options(int argc, char **argv, char *err, size_t errlen)
{
	int opt;

	config_path = getenv("MMC_META_CONFIG_PATH");
	opterr = 0; /* said once, in the op=start line, rather than by getopt too */
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
			exit(EXIT_OK);
		case 'V':
			printf("mmc-metaserver %s\n", MMC_VERSION_STRING);
			exit(EXIT_OK);
		case 'e':
		case 'd':
			break;
		default: /* optopt names a short option, perhaps inside a group such as -xC */
			if (optopt)
				snprintf(
				    err, errlen,
				    "bad command line: -%c is an unknown option or lacks its value (--help lists them)",
				    optopt);
			else
				snprintf(err, errlen,
				         "bad command line: \"%s\" is an unknown option or lacks its value (--help "
				         "lists them)",
				         argv[optind - 1]);
			return MMC_ERROR;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "bad command line: unexpected argument \"%s\"", argv[optind]);
		return MMC_ERROR;
	}
	main_argc = argc;
	main_argv = argv;
	return 0;
}

/* --env and --data-dir in order, after the file, so the command line wins (at start and at every reload). */
static int apply_command_line(struct meta_settings *s, struct meta_err *e)
{
	int opt;

	optind = 1;
	while ((opt = getopt_long(main_argc, main_argv, "c:e:d:hVC", long_opts, NULL)) != -1) {
		const char *key = opt == 'd' ? "ock.mmc.meta.data_dir" : optarg, *value = optarg;
		char kv[1024], *eq;

		if (opt != 'd' && opt != 'e')
			continue;
		if (opt == 'e') {
			if (!(eq = strchr(optarg, '=')) || (size_t)(eq - optarg) >= sizeof(kv))
				return meta_err_set(e, EXIT_CONFIG, NULL,
				                    "--env expects KEY=VALUE (the argument is not shown: it may hold a "
				                    "secret)");
			memcpy(kv, optarg, (size_t)(eq - optarg));
			kv[eq - optarg] = '\0';
			key = kv;
			value = eq + 1;
		}
		if (meta_conf_set(s, key, value, e))
			return MMC_ERROR;
	}
	return 0;
}

/* The configuration as the rows' defaults, the file and the command line make it, at start and at a reload alike.
 * A failure fills *e (its key names what a reload rejects). */
static int read_conf(struct meta_settings *s, struct meta_err *e)
{
	meta_err_clear(e);
	meta_settings_defaults(s);
	if (config_path && config_path[0] && meta_conf_load(s, config_path, e))
		return MMC_ERROR;
	if (apply_command_line(s, e))
		return MMC_ERROR;
	/* the secret's file too, so a reload compares what the running server holds (and says when it changed) */
	if (meta_conf_resolve_secrets(&s->conf, e))
		return MMC_ERROR;
	return meta_conf_check(&s->conf, e) ? MMC_ERROR : 0;
}

/* The one line a failed start leaves (and on stderr too when the log goes to a file), then its exit code. */
static int start_failed(enum exit_code code, const char *reason, const char *err)
{
	char shown[META_ERR_MESSAGE_SIZE + 64];

	log_error("op=start exit_code=%d reason=%s err=\"%s\"", (int)code, reason, err);
	if (log_to_file()) { /* not through the log's formatter: mask a URI's password here */
		uri_mask(err, shown, sizeof(shown));
		fprintf(stderr, "mmc-metaserver: %s (exit %d, %s)\n", shown, (int)code, reason);
	}
	return code;
}

/* A failed start recorded where it happened (the configuration, the KVCM): its exit code names the reason. */
static int start_failed_as(const struct meta_err *e)
{
	switch (e->exit_code) {
	case EXIT_CONFIG:
		return start_failed(EXIT_CONFIG, "config", e->message);
	case EXIT_LISTEN:
		return start_failed(EXIT_LISTEN, "listen", e->message);
	default: /* no other code is recorded in a meta_err; EXIT_OK would be a failure nobody described */
		return start_failed(EXIT_INTERNAL, "internal", e->message[0] ? e->message : "unknown failure");
	}
}

static void meta_sweep(struct meta *m)
{
	uint64_t now = clock_ms();

	if (!m->persist) { /* a standby: no state loaded yet, only its connections to time out */
		conns_sweep(m, now);
		return;
	}
	objects_sweep(m, now);
	lru_checkpoint(m, now, false);
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

	if (m->rpc->draining)
		return;
	log_info("op=shutdown signal=%d", (int)sig);
	sd_notify_send("STOPPING=1");
	m->rpc->draining = true;
	rpc_stop_listening(m);
	if (m->persist)
		persist_flush(m->persist);
	/* let queued replies reach their sockets, then stop */
	event_base_loopexit(m->base, &drain);
}

/* SIGHUP: the file and the command line again, applied whole or not at all. */
static void hup_cb(evutil_socket_t sig, short what, void *arg)
{
	static struct meta_settings fresh; /* too large for the loop's stack */
	struct meta_err e;

	if (read_conf(&fresh, &e))
		reload_rejected(&e);
	else
		reload_apply(arg, &fresh);
}

/* SIGUSR1: reopen the log file under its name, for logrotate (mv, then signal; no copytruncate needed). */
static void usr1_cb(evutil_socket_t sig, short what, void *arg)
{
	char err[512];

	if (log_reopen(err, sizeof(err)))
		log_warn("op=log_reopen err=\"%s\" note=\"still logging to the old file\"", err);
	else
		log_info("op=log_reopen");
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

/*
 * The data dir's lock is held: by a server still stopping on it (a restart right after SIGTERM, a rolling upgrade)
 * for as long as it drains, or by one that runs on. Opens the store once the lock is free, within
 * DATA_DIR_WAIT_MS; else the open's error (the caller reports data_dir_in_use).
 */
static int await_data_dir(struct meta *m, const struct persist_opts *po, char *err, size_t errlen)
{
	uint64_t until = clock_ms() + DATA_DIR_WAIT_MS;
	int rc = MMC_ERROR;

	log_info("op=start waiting=data_dir_lock dir=\"%s\" max_ms=%u", m->conf.data_dir, DATA_DIR_WAIT_MS);
	while (rc && data_dir_busy(m->conf.data_dir) && clock_ms() < until) {
		nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
		rc = persist_open(&m->persist, m->base, po, err, errlen);
	}
	return rc ? persist_open(&m->persist, m->base, po, err, errlen) : 0;
}

/* wait: a start, which may wait for a stopping server's data dir lock; not a standby's promotion, on the loop */
static enum exit_code open_store(struct meta *m, bool wait)
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
	char err[512], password[256];
	bool lmdb = !m->conf.store_uri[0] || strcmp(m->conf.store_uri, "lmdb") == 0;
	int rc;

	if (store_password(&m->conf, password, sizeof(password), err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	po.password = password[0] ? password : NULL;
	rc = persist_open(&m->persist, m->base, &po, err, sizeof(err));
	if (rc && wait && lmdb && data_dir_busy(m->conf.data_dir))
		rc = await_data_dir(m, &po, err, sizeof(err));
	explicit_bzero(password, sizeof(password));
	if (rc) {
		if (lmdb && data_dir_busy(m->conf.data_dir))
			return start_failed(EXIT_DATA_DIR_BUSY, "data_dir_in_use", err);
		return start_failed(EXIT_DATA_DIR, lmdb ? "data_dir" : "store", err);
	}
	leadership_fence(m);
	log_info("op=start store=%s uri=\"%s\"", persist_backend_name(m->persist), m->conf.store_uri); /* masked */
	if (objects_tables_open(m) || persist_table(m->persist, "services", &m->db_services) ||
	    persist_table(m->persist, "info", &m->db_info))
		return start_failed(EXIT_DATA_DIR, lmdb ? "data_dir" : "store", "cannot open the metadata tables");
	if (services_load(m) || objects_load(m) || (services_settle(m), persist_flush(m->persist)))
		return start_failed(EXIT_DATA_DIR, lmdb ? "data_dir" : "store", "cannot load the persisted metadata");
	return EXIT_OK;
}

/* What the loop ended with: EXIT_OK, or a takeover's configuration failure (load_store). */
static enum exit_code loop_exit = EXIT_OK;

/* The load of a standby that won the lease (leadership.c): the same as at start. One refused for its configuration
 * (a file changed since the start's checks) stops the server, as at a start, through the loop's end so that the
 * lease is given back: a standby's restart would win it and fail the same way, a few times a second. */
static int load_store(struct meta *m)
{
	enum exit_code rc = open_store(m, false);

	if (rc == EXIT_CONFIG) {
		loop_exit = EXIT_CONFIG;
		event_base_loopbreak(m->base);
	}
	return rc == EXIT_OK ? 0 : -1;
}

/* The port of a bound "tcp://host:port" (the listener's own rendering, so the last colon starts the port). */
static unsigned url_port(const char *url)
{
	const char *c = strrchr(url, ':');

	return c ? (unsigned)strtoul(c + 1, NULL, 10) : 0;
}

static enum exit_code start(struct meta *m)
{
	char host[256], rpc_url[300], kvcm_ready[256], err[1280];
	struct meta_err e;
	uint16_t port;
	int rc;

	meta_conf_parse_url(m->conf.meta_service_url, host, sizeof(host), &port);
	m->rpc->max_connections = fd_budget_fit(&m->conf);
	if (rpc_tls_open(m, err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	errno = 0;
	if ((rc = rpc_listen(m, host, port, rpc_url, sizeof(rpc_url)))) {
		int saved_errno = errno;

		snprintf(err, sizeof(err), "cannot listen on %s: %s", m->conf.meta_service_url,
		         rc == MMC_INVALID_PARAM ? "not an address this server can bind, or a reachable one without "
		                                   "credentials (the line above says which)"
		                                 : strerror(saved_errno));
		return start_failed(rc == MMC_INVALID_PARAM ? EXIT_CONFIG : EXIT_LISTEN,
		                    rc == MMC_INVALID_PARAM ? "config" : "listen", err);
	}
	meta_err_clear(&e);
	/* a standby (leader election) listens now and loads its state once it leads (leadership.c) */
	if (m->rpc->ha ? kvcm_listen(&server_of(m)->kvcm, m->base, m, m->rpc->ha, kvcm_ready, sizeof(kvcm_ready), &e)
	               : kvcm_start(&server_of(m)->kvcm, m->base, m->persist, m, kvcm_ready, sizeof(kvcm_ready), &e))
		return start_failed_as(&e);
	if (leadership_start(m, host, url_port(rpc_url)))
		return start_failed(EXIT_INTERNAL, "internal", "cannot start the leader elector");
	log_info("op=start version=%s rpc=%s tls=%s auth=%s data_dir=\"%s\" %s%s", MMC_VERSION_STRING, rpc_url,
	         m->rpc->tls ? "on" : "off", m->conf.auth_token[0] ? "token" : "none", m->conf.data_dir, kvcm_ready,
	         m->rpc->ha ? " role=standby" : "");
	/* one machine-readable line on stdout: scripts and tests wait for it (and learn the address bound, and the
	 * ports chosen with :0) */
	printf("mmc-metaserver ready rpc=%s %s%s\n", rpc_url, kvcm_ready, m->rpc->ha ? " role=standby" : "");
	fflush(stdout);
	sd_notify_send(m->rpc->ha ? "READY=1\nSTATUS=standing by" : "READY=1\nSTATUS=serving");
	return EXIT_OK;
}

/* Takes down whatever main() set up, in any state a failed start leaves it. */
static void shutdown_all(struct meta *m)
{
	struct server *s = server_of(m);

	m->rpc->draining = true;
	rpc_stop_listening(m);
	kvcm_stop(s->kvcm);
	if (m->persist) {
		lru_checkpoint(m, clock_ms(), true); /* the touches since the last one: a restart keeps the LRU order */
		persist_flush(m->persist);
	}
	alloc_queue_fini(m);
	tier_fini(m);
	conns_close_all(m);
	if (s->sweep_ev)
		event_free(s->sweep_ev);
	if (s->policy.kick_ev)
		event_free(s->policy.kick_ev);
	objects_fini(m);
	tenants_free(m);
	services_fini(m);
	persist_close(m->persist);
	leadership_close(m); /* after the last commit: gives the lock back, a standby takes over at once */
	arena_fini(&m->arena);
	rpc_tls_close(m);
}

/* The configuration and the log: nothing opened yet but the log file. */
static enum exit_code configure(int argc, char **argv, struct meta_conf *conf)
{
	static struct meta_settings s;
	struct meta_err e;
	char err[512];
	enum log_level lvl;

	if (parse_options(argc, argv, err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	if (read_conf(&s, &e))
		return start_failed_as(&e);
	*conf = s.conf;
	kvcm_conf_use(&s.kvcm);
	if (leadership_check(kvcm_conf(), err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	if (check_only) /* the file is opened as the start would, and left as it was */
		return conf->log_path[0] && log_check(conf->log_path, err, sizeof(err))
		           ? start_failed(EXIT_LOG_FILE, "log_file", err)
		           : EXIT_OK;
	if (log_parse_level(conf->log_level, &lvl) == 0)
		log_set_level(lvl);
	if (conf->log_path[0] && log_open(conf->log_path, err, sizeof(err)))
		return start_failed(EXIT_LOG_FILE, "log_file", err);
	if (conf->log_rotation_set)
		log_warn("op=start key=ock.mmc.log_rotation_file_size note=\"log rotation keys are ignored: rotate "
		         "with logrotate and SIGUSR1 (docs/operations.md)\"");
	return EXIT_OK;
}

/* ock.mmc.meta.tenants_file, when set: before the objects are loaded, so their tenants' counts are kept. */
static int load_tenants(struct meta *m, char *err, size_t errlen)
{
	return m->conf.tenants_file[0] ? tenants_load(m, m->conf.tenants_file, m->conf.auth_token, err, errlen) : 0;
}

/* start_checks() on the settings in effect. */
static enum exit_code settings_check(struct meta *m)
{
	static struct meta_settings s; /* a KVCM configuration is too large for the stack */
	struct meta_err e;

	s.conf = m->conf;
	s.kvcm = *kvcm_conf();
	return start_checks(&s, &e) ? start_failed_as(&e) : EXIT_OK;
}

/* --check-config, once configure() passed: the checks of open_store() and start() with their messages, short of
 * opening the store or binding (start_checks, then the tenants file). */
static enum exit_code check_start(struct meta *m)
{
	char err[1280];
	enum exit_code rc = settings_check(m);

	if (rc)
		return rc;
	if (load_tenants(m, err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	tenants_free(m);
	return EXIT_OK;
}

/* The loop's events; the signal events are freed by main. */
static int add_events(struct meta *m, struct event *sigs[4])
{
	static const int signos[4] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
	event_callback_fn fns[4] = {stop_cb, stop_cb, hup_cb, usr1_cb};
	struct timeval tick = {0, SWEEP_MS * 1000};
	struct server *s = server_of(m);

	for (int i = 0; i < 4; i++)
		if (!(sigs[i] = evsignal_new(m->base, signos[i], fns[i], m)) || event_add(sigs[i], NULL))
			return MMC_ERROR;
	s->sweep_ev = event_new(m->base, -1, EV_PERSIST, sweep_cb, m);
	s->policy.kick_ev = event_new(m->base, -1, 0, kick_cb, m);
	if (!s->sweep_ev || !s->policy.kick_ev || event_add(s->sweep_ev, &tick))
		return MMC_ERROR;
	return 0;
}

int main(int argc, char **argv)
{
	static struct server s;
	struct meta *m = &s.meta;
	struct event *sigs[4] = {NULL};
	enum exit_code rc;
	char err[512] = "";

	/* until the loop's handlers are in (add_events), logrotate's SIGUSR1 or a SIGHUP would end the process: a
	 * start, or a standby's restart after a demotion, is not a time to die of a log rotation */
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	m->rpc = &s.rpc;
	meta_conf_defaults(&m->conf);
	rc = configure(argc, argv, &m->conf);
	if (rc == EXIT_OK && check_only)
		rc = check_start(m);
	if (rc || check_only) {
		if (rc == EXIT_OK)
			printf("mmc-metaserver: configuration ok\n");
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	/* the object and KVCM indexes hash client-chosen keys: unkeyed, a client could pile them into one bucket */
	if (hash_init())
		return start_failed(EXIT_INTERNAL, "internal", "no randomness for the hash key");
	/* every list and table shutdown_all() walks exists before anything can fail */
	list_init(&s.rpc.conns);
	m->sweep = meta_sweep;
	if (getrandom(&s.rpc.run_id, sizeof(s.rpc.run_id), 0) != sizeof(s.rpc.run_id))
		s.rpc.run_id = clock_ns() ^ ((uint64_t)getpid() << 32);
	policy_init(m, &s.policy, &rpc_ops);
	arena_init(&m->arena);
	if (objects_init(m))
		return start_failed(EXIT_INTERNAL, "internal", "out of memory");
	if (load_tenants(m, err, sizeof(err)))
		return start_failed(EXIT_CONFIG, "config", err);
	m->base = event_base_new();
	rc = EXIT_INTERNAL;
	if (!m->base || event_base_priority_init(m->base, 3) || add_events(m, sigs)) {
		start_failed(rc, "internal", "cannot set up the event loop");
		goto out;
	}
	if (leadership_open(m, argc, argv, load_store, err, sizeof(err))) {
		rc = start_failed(EXIT_CONFIG, "config", err);
		goto out;
	}
	/* a standby opens its store only once it leads: what that would refuse (the store's password file) is refused
	 * now, while an operator watches the start, not at a takeover */
	if ((s.rpc.ha && (rc = settings_check(m))) || (!s.rpc.ha && (rc = open_store(m, true))) || (rc = start(m)))
		goto out;
	loop_run(m, &m->conf.loop_spin_us);
	rc = loop_exit;
out:
	shutdown_all(m);
	for (int i = 0; i < 4; i++)
		if (sigs[i])
			event_free(sigs[i]);
	if (m->base)
		event_base_free(m->base);
	log_info("op=exit code=%d", (int)rc);
	return rc;
}
