/*
 * The reference's leader-election admin API: checkHealth (is_leader), getManagerClusterInfo, getLeaderElectorConfig,
 * updateLeaderElectorConfig, leaderDemote; and the MetaService getClusterInfo, which names the real leader. Every
 * call here is answered by a standby too (ROUTE_ANY_NODE). Without leader election (no kvcm.distributed_lock.uri)
 * this one server is the only candidate, as on the reference's in-memory coordination: a leaderDemote keeps it out
 * for the campaign delay, then it leads again.
 */
#include <string.h>

#include "clock.h"
#include "log.h"

#include "api.h"
#include "elector.h"
#include "kvcm_state.h"
#include "wire_enums.h"

static bool leading(struct kvcm *k)
{
	return k->ha ? ha_serving(k->ha) : !kvcm_demoted(k);
}

/* The leader as the lock names it; without election this node itself, or nobody while demoted. */
static void leader_of(struct kvcm *k, struct ha_holder *l)
{
	if (k->ha) {
		ha_leader(k->ha, l);
		return;
	}
	*l = (struct ha_holder){.http_port = k->http_port, .admin_port = k->admin_port};
	if (kvcm_demoted(k))
		return;
	snprintf(l->node_id, sizeof(l->node_id), "%.127s", k->node_id);
	snprintf(l->host, sizeof(l->host), "%s", k->host);
}

/* The leader's NodeEndpoint. The gRPC ports are known for this node only (0 for another leader), and so is its
 * kvcm.service.custom_info: the lock records the leader's libmmc address, which stands in for it (rpc=<address>).
 * The MetaService's getClusterInfo carries no admin ports (the newest reference keeps them off it), the admin
 * API's does. */
static void write_endpoint(struct jw *w, const struct kvcm *k, const struct ha_holder *l, bool admin_ports)
{
	bool self = strcmp(l->node_id, k->node_id) == 0;
	char custom[sizeof(k->conf.custom_info) + HA_ADDR_MAX];

	if (self && k->conf.custom_info[0])
		snprintf(custom, sizeof(custom), "%s", k->conf.custom_info);
	else
		snprintf(custom, sizeof(custom), "%s%s", l->rpc[0] ? "rpc=" : "", l->rpc);
	jw_obj(w);
	jw_kstr(w, "node_id", l->node_id);
	jw_kstr(w, "host", l->host);
	jw_kint(w, "meta_rpc_port", self ? k->rpc_port : 0);
	jw_kint(w, "meta_http_port", l->http_port);
	if (admin_ports) {
		jw_kint(w, "admin_rpc_port", self ? k->admin_rpc_port : 0);
		jw_kint(w, "admin_http_port", l->admin_port);
	}
	jw_kstr(w, "custom_info", custom);
	jw_obj_end(w);
}

void admin_check_health(struct call *c)
{
	call_ok(c, "");
	jw_kbool(&c->out, "is_leader", leading(c->k));
	jw_kbool(&c->out, "is_health", true);
	jw_ki64s(&c->out, "elector_last_loop_time_ms",
	         c->k->ha ? ha_last_loop_wall_ms(c->k->ha) : (int64_t)(kvcm_now_us() / 1000));
}

void admin_get_manager_cluster_info(struct call *c)
{
	struct kvcm *k = c->k;
	struct ha_holder l;

	leader_of(k, &l);
	call_ok(c, "");
	jw_ki64s(&c->out, "info_updated_time", k->ha ? ha_info_updated_wall_ms(k->ha) : 0);
	jw_ki64s(&c->out, "self_leader_expiration_time", k->ha ? ha_self_expiry_wall_ms(k->ha) : 0);
	jw_kstr(&c->out, "self_node_id", k->node_id);
	jw_kstr(&c->out, "leader_node_id", l.node_id);
	jw_key(&c->out, "leader_endpoint");
	write_endpoint(&c->out, k, &l, true);
}

void api_get_cluster_info(struct call *c)
{
	struct ha_holder l;

	jd_str(&c->d, c->body, "instance_id");
	if (call_decode_failed(c))
		return;
	leader_of(c->k, &l);
	if (!l.node_id[0]) {
		call_fail(c, KC_SERVICE_NOT_READY, "no leader is known yet");
		return;
	}
	call_ok(c, "");
	jw_kstr(&c->out, "self_node_id", c->k->node_id);
	jw_kstr(&c->out, "leader_node_id", l.node_id);
	jw_key(&c->out, "leader_endpoint");
	write_endpoint(&c->out, c->k, &l, false);
}

void admin_get_leader_elector_config(struct call *c)
{
	call_ok(c, "");
	jw_ki64s(&c->out, "campaign_delay_time_ms",
	         c->k->ha ? ha_campaign_delay_ms(c->k->ha) : c->k->conf.campaign_delay_ms);
}

void admin_update_leader_elector_config(struct call *c)
{
	int64_t ms = jd_i64(&c->d, c->body, "campaign_delay_time_ms");

	if (call_decode_failed(c))
		return;
	if (ms < 0 || ms > 86400000) {
		call_fail(c, KC_INVALID_ARGUMENT, "campaign_delay_time_ms must be 0..86400000");
		return;
	}
	if (c->k->ha)
		ha_set_campaign_delay_ms(c->k->ha, (uint32_t)ms);
	c->k->conf.campaign_delay_ms = (uint32_t)ms;
	call_ok(c, "");
}

/* Without election: leader-only calls are refused SERVER_NOT_LEADER for the campaign delay (at least three loop
 * intervals, as with a lock), then this server, the only candidate, leads again. Its state stays in memory. */
static void demote_alone(struct call *c)
{
	struct kvcm *k = c->k;
	uint32_t delay = k->conf.campaign_delay_ms;

	if (kvcm_demoted(k)) {
		call_fail(c, KC_SERVER_NOT_LEADER, "Server is not leader");
		return;
	}
	if (delay < 3 * k->conf.loop_interval_ms)
		delay = 3 * k->conf.loop_interval_ms;
	k->demoted_until_ms = clock_ms() + delay;
	log_warn("op=kvcm_demote node=\"%s\" campaign_delay_ms=%u note=\"no leader election: leading again after the "
	         "delay\"",
	         k->node_id, delay);
	call_ok(c, "");
}

/* Gives the lease up: the fence closes and this node answers as a standby before the reply goes out; the daemon
 * then restarts itself as a standby (docs/operations.md, "High availability"). */
void admin_leader_demote(struct call *c)
{
	if (!c->k->ha) {
		demote_alone(c);
		return;
	}
	if (!ha_serving(c->k->ha)) { /* nothing to give up: a standby stays a candidate */
		call_fail(c, KC_SERVER_NOT_LEADER, "Server is not leader");
		return;
	}
	ha_demote(c->k->ha);
	ha_set_serving(c->k->ha, false);
	call_ok(c, "");
}
