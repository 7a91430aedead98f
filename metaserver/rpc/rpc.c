#include "rpc.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "conn.h"
#include "elector.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "service_secret.h"
#include "redirect.h"
#include "rpc_extents.h"
#include "services.h"
#include "tier.h"

static void reply_code(struct conn *c, uint64_t id, int result, bool durable)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__Reply r = MMC__REPLY__INIT;

	if (!id)
		return;
	r.result = result;
	f.id = id;
	f.body_case = MMC__FRAME__BODY_REPLY;
	f.reply = &r;
	conn_send(c, &f, durable);
}

void rpc_reply_code(struct conn *c, uint64_t id, int result)
{
	reply_code(c, id, result, false);
}

void rpc_reply_durable(struct conn *c, uint64_t id, int result)
{
	reply_code(c, id, result, true);
}

/* registered: a Register's reply, the one that carries the service's rejoin secret (never a query's) */
static void send_service_info(struct conn *c, uint64_t id, int result, const struct service *svc, bool registered)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__ServiceInfo r = MMC__SERVICE_INFO__INIT;
	Mmc__Segment segs[MMC_WIRE_SEGMENTS], *psegs[MMC_WIRE_SEGMENTS];
	uint8_t secret[MMC_WIRE_MAC];

	r.result = result;
	if (svc && result == 0) {
		r.rank = svc->rank;
		r.incarnation = svc->incarnation;
		r.fabric_addr.data = (uint8_t *)svc->fabric_addr;
		r.fabric_addr.len = svc->addr_len;
		r.provider = (char *)svc->provider;
		r.host = (char *)svc->host;
		r.pid = svc->pid;
		r.boot_id = (char *)svc->boot_id;
		r.pool_path = (char *)svc->pool_path;
		for (uint32_t i = 0; i < svc->nsegs; i++) {
			mmc__segment__init(&segs[i]);
			segs[i].media = svc->segs[i].media;
			segs[i].size = svc->segs[i].size;
			segs[i].base_addr = svc->segs[i].base;
			segs[i].key = svc->segs[i].key;
			segs[i].host_key = svc->segs[i].host_key;
			psegs[i] = &segs[i];
		}
		r.n_segments = svc->nsegs;
		r.segments = psegs;
		if (registered && service_secret(c->m, svc->rank, svc->incarnation, secret) == 0)
			r.secret = (ProtobufCBinaryData){sizeof(secret), secret};
	}
	out.id = id;
	out.body_case = MMC__FRAME__BODY_SERVICE_INFO;
	out.service_info = &r;
	if (id)
		conn_send(c, &out, registered); /* durable: the secret's record and incarnation are on disk first */
}

/* The state layer knows services, not frames: copy what it needs out of the decoded Register. */
static int register_spec(const Mmc__Register *req, struct service_spec *spec)
{
	if (req->n_segments > MMC_WIRE_SEGMENTS)
		return MMC_INVALID_PARAM;
	*spec = (struct service_spec){
	    .rank = req->rank,
	    .incarnation = req->incarnation,
	    .world_size = req->world_size,
	    .fabric_addr = req->fabric_addr.data,
	    .addr_len = req->fabric_addr.len,
	    .provider = req->provider,
	    .ssd_path = req->ssd_path,
	    .boot_id = req->boot_id,
	    .pool_path = req->pool_path,
	    .secret = req->secret.data,
	    .secret_len = req->secret.len,
	    .nsegs = req->n_segments,
	};
	for (size_t i = 0; i < req->n_segments; i++)
		spec->segs[i] = (struct service_spec_segment){req->segments[i]->media, req->segments[i]->size,
		                                              req->segments[i]->base_addr, req->segments[i]->key};
	for (size_t i = 0; i < req->n_segments; i++)
		spec->host_key[i] = req->segments[i]->host_key;
	return 0;
}

static void on_register(struct conn *c, const Mmc__Frame *f)
{
	struct service *svc = NULL;
	struct service_spec spec;
	int rc = register_spec(f->register_, &spec);

	if (rc == 0)
		rc = service_register(c->m, &c->session, &spec, &svc);

	send_service_info(c, f->id, rc, svc, true);
}

static void on_unregister(struct conn *c, const Mmc__Frame *f)
{
	struct service *svc = c->session.svc;

	if (svc)
		service_unmount(c->m, svc, "unregister");
	rpc_reply_durable(c, f->id, svc ? 0 : MMC_NOT_STARTED);
}

static void on_service(struct conn *c, const Mmc__Frame *f)
{
	struct service *svc = service_get(c->m, f->service->rank);

	if (!svc || !svc->session)
		send_service_info(c, f->id, MMC_LINK_NOT_FOUND, NULL, false);
	else
		send_service_info(c, f->id, 0, svc, false);
}

static bool regex_match(void *arg, const char *key)
{
	return !arg || regexec(arg, key, 0, NULL, 0) == 0;
}

/* remove_by_regex / remove_all: the reply carries the count and waits, like a remove's, for the deletes' commit. */
static void on_remove_matching(struct conn *c, const Mmc__Frame *f)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__Reply r = MMC__REPLY__INIT;
	const char *pattern = f->remove_matching->pattern ? f->remove_matching->pattern : "";
	regex_t re;
	bool all = pattern[0] == '\0';

	if (!all && (strlen(pattern) > MMC_WIRE_PATTERN_MAX || regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	r.count = objects_remove_matching(c->m, regex_match, all ? NULL : &re);
	if (!all)
		regfree(&re);
	log_info("op=remove_matching session=%llu pattern=\"%s\" removed=%llu", (unsigned long long)c->session.id,
	         pattern, (unsigned long long)r.count);
	out.id = f->id;
	out.body_case = MMC__FRAME__BODY_REPLY;
	out.reply = &r;
	if (f->id)
		conn_send(c, &out, true);
}

static const Mmc__KeyBatch *key_batch(const Mmc__Frame *f)
{
	switch (f->body_case) {
	case MMC__FRAME__BODY_ALLOC:
		return f->alloc;
	case MMC__FRAME__BODY_COMMIT:
		return f->commit;
	case MMC__FRAME__BODY_GET:
		return f->get;
	case MMC__FRAME__BODY_RELEASE:
		return f->release;
	case MMC__FRAME__BODY_REMOVE:
		return f->remove;
	case MMC__FRAME__BODY_EXIST:
		return f->exist;
	case MMC__FRAME__BODY_QUERY:
		return f->query;
	case MMC__FRAME__BODY_ADD_LEASE:
		return f->add_lease;
	case MMC__FRAME__BODY_REMOVE_LEASE:
		return f->remove_lease;
	case MMC__FRAME__BODY_MALLOC:
		return f->malloc;
	case MMC__FRAME__BODY_WRITE_FINISH:
		return f->write_finish;
	case MMC__FRAME__BODY_EVICT:
		return f->evict;
	case MMC__FRAME__BODY_PREFETCH:
		return f->prefetch;
	default:
		return NULL;
	}
}

int rpc_dispatch(struct conn *c, const Mmc__Frame *f)
{
	const Mmc__KeyBatch *kb;

	c->m->stats.requests[(unsigned)f->body_case % 64]++;
	if (!auth_admits(c, f))
		return MMC_NOT_AUTHORIZED;
	/* leader election: a standby, or a leader still loading its state, serves nothing but redirects (a store
	 * follows one without the server's proof: the leader it names must still prove the cluster secret) */
	if (c->m->rpc->ha && !ha_serving(c->m->rpc->ha) && f->body_case != MMC__FRAME__BODY_REPLY) {
		rpc_redirect(c, f);
		return 0;
	}
	switch (f->body_case) {
	case MMC__FRAME__BODY_HELLO:
		auth_on_hello(c, f);
		return 0;
	case MMC__FRAME__BODY_AUTH_PROOF:
		auth_on_proof(c, f);
		return 0;
	case MMC__FRAME__BODY_REGISTER:
		on_register(c, f);
		return 0;
	case MMC__FRAME__BODY_UNREGISTER:
		on_unregister(c, f);
		return 0;
	case MMC__FRAME__BODY_PING:
		rpc_reply_code(c, f->id, 0);
		return 0;
	case MMC__FRAME__BODY_SERVICE:
		on_service(c, f);
		return 0;
	case MMC__FRAME__BODY_REPLY: /* a local service finished a task we sent it */
		tier_task_done(c->m, f->id, f->reply->result);
		return 0;
	case MMC__FRAME__BODY_REMOVE_MATCHING:
		on_remove_matching(c, f);
		return 0;
	default:
		break;
	}
	if (rpc_extents(c, f))
		return 0;
	kb = key_batch(f);
	if (!kb) {
		/* a body this server does not serve: fail the request, keep the connection */
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return 0;
	}
	rpc_keys(c, f, kb);
	return 0;
}
