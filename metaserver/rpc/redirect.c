/*
 * What a standby answers on the libmmc port (leader election): every request fails with MMC_NOT_LEADER in the
 * reply shape its caller decodes, and names the leader the lock names, so that a client moves there at once
 * instead of trying every address it knows. A hello gets a HelloReply with standby set.
 */
#include "redirect.h"

#include "conn.h"
#include "elector.h"
#include "mmc/mmc.h"

static bool is_key_batch(const Mmc__Frame *f)
{
	return f->body_case >= MMC__FRAME__BODY_ALLOC && f->body_case <= MMC__FRAME__BODY_PREFETCH;
}

void rpc_redirect(struct conn *c, const Mmc__Frame *f)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__HelloReply h = MMC__HELLO_REPLY__INIT;
	Mmc__KeyBatchReply k = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__Reply r = MMC__REPLY__INIT;
	struct ha_holder l;

	if (!f->id)
		return;
	ha_leader(c->m->rpc->ha, &l);
	out.id = f->id;
	if (f->body_case == MMC__FRAME__BODY_HELLO) {
		h.result = MMC_NOT_LEADER;
		h.session = c->session.id;
		h.server_run = c->m->rpc->run_id;
		h.standby = true;
		h.leader_address = l.rpc;
		h.leader_node_id = l.node_id;
		out.body_case = MMC__FRAME__BODY_HELLO_REPLY;
		out.hello_reply = &h;
	} else if (is_key_batch(f)) {
		k.result = MMC_NOT_LEADER;
		out.body_case = MMC__FRAME__BODY_KEY_REPLY;
		out.key_reply = &k;
	} else {
		r.result = MMC_NOT_LEADER;
		r.leader_address = l.rpc;
		r.leader_node_id = l.node_id;
		out.body_case = MMC__FRAME__BODY_REPLY;
		out.reply = &r;
	}
	conn_send(c, &out, false);
}
