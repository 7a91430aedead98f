/*
 * The KV Cache Manager inside mmc-metaserver: wiring of its parts on the meta server's event loop.
 */
#include "kvcm.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "api.h"
#include "block_scan.h"
#include "deleter.h"
#include "fault_injection.h"
#include "group.h"
#include "grpc_services.h"
#include "http.h"
#include "http_tls.h"
#include "instance.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "meta_err.h"
#include "metrics.h"
#include "mmc/mmc.h"
#include "persist.h"
#include "reclaim.h"
#include "reporter.h"
#include "startup_config.h"
#include "state_load.h"
#include "storage.h"
#include "storage_uri.h"
#include "tcp_url.h"
#include "write_session.h"

static void identity(struct kvcm *k)
{
	char rnd[17];

	if (k->conf.node_id[0]) {
		snprintf(k->node_id, sizeof(k->node_id), "%s", k->conf.node_id);
		if (k->conf.advertised_host[0])
			snprintf(k->host, sizeof(k->host), "%s", k->conf.advertised_host);
		else if (gethostname(k->host, sizeof(k->host)) != 0)
			snprintf(k->host, sizeof(k->host), "localhost");
		return;
	}
	if (k->conf.advertised_host[0])
		snprintf(k->host, sizeof(k->host), "%s", k->conf.advertised_host);
	else if (gethostname(k->host, sizeof(k->host)) != 0)
		snprintf(k->host, sizeof(k->host), "localhost");
	kvcm_random_id(k, rnd, 16);
	snprintf(k->node_id, sizeof(k->node_id), "%s:%u_%s", k->host, k->admin_port, rnd);
}

/*
 * Redis's protected mode: reachable from other hosts only with credentials, or when the operator says so. key is
 * the bind key, bind its value; tls whether that listener encrypts.
 */
static int check_exposure(struct kvcm *k, const char *key, const char *bind, bool tls, char *err, size_t errlen)
{
	if (tcp_host_is_loopback(bind))
		return 0;
	if (accounts_admin_enforced(k)) { /* both ports guarded: the admin one needs an admin */
		if (!tls)
			log_warn(
			    "op=kvcm_start warning=\"%s=%s without TLS: passwords cross the network in clear text\"",
			    key, bind);
		return 0;
	}
	if (!k->conf.allow_insecure_bind) {
		snprintf(
		    err, errlen,
		    "%s=%s is reachable from other hosts and no credentials are configured: set "
		    "kvcm.service.admin_user and kvcm.service.admin_password_file (or add a ROLE_ADMIN account while "
		    "bound to 127.0.0.1), or kvcm.service.allow_insecure_bind=true to serve without authentication",
		    key, bind);
		return MMC_ERROR;
	}
	log_warn("op=kvcm_start warning=\"kvcm.service.allow_insecure_bind: %s serves without authentication\"", bind);
	return 0;
}

/* Both listeners' binds: reachable from other hosts only with credentials (check_exposure). */
static int check_binds(struct kvcm *k, char *err, size_t errlen)
{
	return check_exposure(k, "kvcm.service.bind", k->conf.bind, k->conf.tls_cert[0], err, errlen) ||
	       (k->conf.grpc_enabled &&
	        check_exposure(k, "kvcm.service.rpc_bind", k->conf.rpc_bind, k->conf.tls_cert[0], err, errlen));
}

/* Who may reach the listeners: the configured admin account (when accounts), and the binds' exposure. */
static int check_access(struct kvcm *k, bool accounts, struct meta_err *e)
{
	if ((accounts && accounts_bootstrap(k, e->message, sizeof(e->message))) ||
	    check_binds(k, e->message, sizeof(e->message)))
		return meta_err_fail(e, EXIT_CONFIG, NULL);
	return 0;
}

static int start_parts(struct kvcm *k, struct meta_err *e)
{
	if (deleter_start(k) || sessions_start(k) || reclaim_start(k) || reporters_start(k))
		return meta_err_set(e, EXIT_INTERNAL, NULL, "cannot start the KVCM background tasks");
	if (store_open(&k->store, k->persist) || state_load(k))
		return meta_err_set(e, EXIT_INTERNAL, NULL, "cannot open the KVCM databases");
	if (startup_config_apply(k, e->message, sizeof(e->message)))
		return meta_err_fail(e, EXIT_CONFIG, NULL);
	/* a standby (k->ha) took the configured admin before it listened: its stored accounts load only now */
	if (check_access(k, !k->ha, e))
		return MMC_ERROR;
	if (persist_flush(k->persist))
		return meta_err_set(e, EXIT_INTERNAL, NULL, "cannot open the KVCM databases");
	return 0;
}

/* The reference serves its DebugService over HTTP on http_port + 3000 (its harness drives it there); the admin port
 * serves it too. With http_port 0 (any free port) this one is any free port as well. */
static int start_debug_http(struct kvcm *k, struct meta_err *e)
{
	uint32_t port = k->conf.http_port ? k->conf.http_port + 3000 : 0;

	if (!k->conf.debug_service)
		return 0;
	if (port > 65535)
		return meta_err_set(e, EXIT_CONFIG, "kvcm.service.http_port",
		                    "the debug HTTP port, kvcm.service.http_port + 3000, is above 65535");
	return http_server_start(&k->debug, k, k->conf.bind, (uint16_t)port, debug_routes, true, &k->debug_port, e);
}

static int start_http(struct kvcm *k, struct meta_err *e)
{
	if (metrics_new(&k->metrics))
		return meta_err_set(e, EXIT_INTERNAL, NULL, "cannot start the KVCM metrics");
	if (http_server_start(&k->http, k, k->conf.bind, (uint16_t)k->conf.http_port, meta_routes, false, &k->http_port,
	                      e) ||
	    http_server_start(&k->admin, k, k->conf.bind, (uint16_t)k->conf.admin_http_port, admin_routes, true,
	                      &k->admin_port, e) ||
	    grpc_servers_start(k, e) || start_debug_http(k, e))
		return MMC_ERROR;
	http_server_listen_loopback(k->admin, k->conf.bind, k->admin_port); /* best effort: it warns */
	http_server_text_routes(k->admin, admin_text_routes);
	return 0;
}

/* The HTTP and gRPC ports' TLS files, loaded as the listeners load them. */
static int check_tls(struct kvcm *k, struct meta_err *e)
{
	SSL_CTX *tls = NULL;

	if (http_tls_ctx(&k->conf, &tls, e->message, sizeof(e->message)))
		return meta_err_fail(e, EXIT_CONFIG, NULL);
	SSL_CTX_free(tls);
	return 0;
}

int kvcm_check(const struct kvcm_conf *c, struct meta_err *e)
{
	struct kvcm *k = calloc(1, sizeof(*k));
	bool ha = c->lock_uri[0] != '\0';
	int rc;

	if (!k)
		return meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the KVCM");
	k->conf = *c;
	/* in the start's order: a standby checks who may reach it before it listens, a leader after */
	rc = ha ? check_access(k, true, e) || check_tls(k, e) : check_tls(k, e) || check_access(k, true, e);
	accounts_free(k);
	free(k);
	return rc ? -1 : 0;
}

int kvcm_listen(struct kvcm **out, struct event_base *base, struct meta *meta, struct ha *ha, char *ready_line,
                size_t ready_len, struct meta_err *e)
{
	struct kvcm *k = calloc(1, sizeof(*k));

	if (!k) {
		meta_err_set(e, EXIT_INTERNAL, NULL, "out of memory for the KVCM");
		return MMC_MALLOC_FAILED;
	}
	k->base = base;
	k->meta = meta;
	k->ha = ha;
	k->conf = *kvcm_conf();
	k->next_uid = 1;
	list_init(&k->storages);
	list_init(&k->groups);
	list_init(&k->zombie_instances);
	instances_init(k);
	file_refs_init(k);
	kvcm_seed_random(k);
	/* a standby listens before it can load stored accounts: only the configured admin (kvcm.service.admin_user)
	 * guards it, and a bind other hosts reach needs one, as a leader's does */
	if ((ha && check_access(k, true, e)) || start_http(k, e)) {
		kvcm_stop(k);
		return MMC_ERROR;
	}
	identity(k);
	snprintf(ready_line, ready_len, "http=%u admin=%u meta_rpc_port=%u admin_rpc_port=%u debug_http_port=%u",
	         k->http_port, k->admin_port, k->rpc_port, k->admin_rpc_port, k->debug_port);
	log_info("op=kvcm_listen http=%s:%u admin=%s:%u", k->conf.bind, k->http_port, k->conf.bind, k->admin_port);
	*out = k;
	return 0;
}

int kvcm_promote(struct kvcm *k, struct persist *p, struct meta_err *e)
{
	k->persist = p;
	if (start_parts(k, e))
		return MMC_ERROR;
	log_info("op=kvcm_start node=\"%s\"", k->node_id);
	return 0;
}

int kvcm_start(struct kvcm **out, struct event_base *base, struct persist *p, struct meta *meta, char *ready_line,
               size_t ready_len, struct meta_err *e)
{
	int rc = kvcm_listen(out, base, meta, NULL, ready_line, ready_len, e);

	if (rc == 0 && (rc = kvcm_promote(*out, p, e))) {
		kvcm_stop(*out);
		*out = NULL;
	}
	return rc;
}

const char *kvcm_node_id(const struct kvcm *k)
{
	return k->node_id;
}

struct kvcm_ports kvcm_ports(const struct kvcm *k)
{
	return (struct kvcm_ports){k->http_port, k->admin_port, k->rpc_port, k->admin_rpc_port};
}

void kvcm_stop(struct kvcm *k)
{
	if (!k)
		return;
	/* replies waiting for a commit go out now, while their connections still exist */
	block_scans_finish(k);
	if (k->persist)
		persist_flush(k->persist);
	http_server_stop(k->http);
	http_server_stop(k->admin);
	http_server_stop(k->debug);
	grpc_servers_stop(k);
	block_scans_stop(k);
	reporters_stop(k);
	reclaim_stop(k);
	sessions_stop(k);
	deleter_stop(k);
	if (k->persist)
		persist_flush(k->persist);
	instances_free(k);
	while (!list_empty(&k->groups)) {
		struct group *g = list_entry(k->groups.next, struct group, link);

		list_del(&g->link);
		group_free(g);
	}
	while (!list_empty(&k->storages)) {
		struct storage *s = list_entry(k->storages.next, struct storage, link);

		list_del(&s->link);
		storage_free(s);
	}
	file_refs_free(k);
	faults_free(k);
	accounts_free(k);
	metrics_free(k->metrics);
	free(k);
}
