#include "rpc.h"

#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "conn.h"
#include "elector.h"
#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "service_secret.h"
#include "redirect.h"
#include "rpc_extents.h"
#include "services.h"
#include "tenant_keys.h"
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
	    .ssd_id = req->ssd_id.data,
	    .ssd_id_len = req->ssd_id.len,
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

/*
 * A pattern's walk is bounded in time and memory: glibc's regexec builds its automaton's states as keys need them, and
 * some short patterns need very many (".*a" and 60 dots over 10^5 hex keys: 112 s of the loop and 891 MB). The walk
 * gives up at until_ms, and compiles the pattern again every RECOMPILE_KEYS keys, which frees the states built.
 */
#define RECOMPILE_KEYS 4096

struct matching {
	const struct conn *c;
	regex_t *re; /* NULL: every key */
	const char *pattern;
	uint64_t until_ms;
	uint32_t since; /* keys matched since the pattern was compiled */
	bool out_of_time;
};

/* A key of the caller's tenant that its pattern matches, as the store wrote it (the tag is not the store's). */
static bool regex_match(void *arg, const char *key)
{
	struct matching *mt = arg;
	const char *own = tenant_key_own(mt->c, key, strlen(key));

	if (!own || !mt->re)
		return own != NULL;
	if (mt->out_of_time || clock_ms() >= mt->until_ms) {
		mt->out_of_time = true;
		return false;
	}
	if (++mt->since == RECOMPILE_KEYS) {
		mt->since = 0;
		regfree(mt->re);
		if (regcomp(mt->re, mt->pattern, REG_EXTENDED | REG_NOSUB)) { /* it compiled before: out of memory */
			mt->re = NULL;
			mt->out_of_time = true;
			return false;
		}
	}
	return regexec(mt->re, own, 0, NULL, 0) == 0;
}

/* A pattern whose compilation cannot blow up: no bounded repetition ("{m,n}", which regcomp expands into copies: 27
 * bytes of nested bounds took 6 s and 5 GB of the loop) and no back-reference (a glibc extension that regexec
 * matches by backtracking). A literal brace is "[{]". */
static bool pattern_ok(const char *pattern)
{
	bool in_set = false; /* in [...]: a set ends no later here than for regcomp, so nothing refused slips through */

	if (strlen(pattern) > MMC_WIRE_PATTERN_MAX)
		return false;
	for (const char *p = pattern; *p; p++) {
		if (in_set) {
			in_set = *p != ']';
		} else if (*p == '\\') {
			if (p[1] >= '1' && p[1] <= '9')
				return false;
			p += p[1] != '\0'; /* an escaped character is a literal: "\{" too */
		} else if (*p == '[') {
			in_set = true;
			p += p[1] == '^';
			p += p[1] == ']'; /* a leading ']' is a member */
		} else if (*p == '{') {
			return false;
		}
	}
	return true;
}

/* remove_by_regex / remove_all: the reply carries the count and waits, like a remove's, for the deletes' commit. */
static void on_remove_matching(struct conn *c, const Mmc__Frame *f)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__Reply r = MMC__REPLY__INIT;
	const char *pattern = f->remove_matching->pattern ? f->remove_matching->pattern : "";
	regex_t re;
	bool all = pattern[0] == '\0';
	/* a quarter of the heartbeat timeout at most: the loop serves nothing else meanwhile */
	struct matching mt = {c, all ? NULL : &re, pattern, clock_ms() + c->m->conf.heartbeat_timeout_ms / 4, 0, false};

	if (!all && (!pattern_ok(pattern) || regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))) {
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
		return;
	}
	r.count = objects_remove_matching(c->m, regex_match, &mt);
	if (mt.re)
		regfree(mt.re);
	if (mt.out_of_time)
		r.result = MMC_TIMEOUT; /* what it matched in time is removed */
	log_info("op=remove_matching session=%llu pattern=\"%s\" removed=%llu%s", (unsigned long long)c->session.id,
	         pattern, (unsigned long long)r.count, mt.out_of_time ? " err=out_of_time" : "");
	out.id = f->id;
	out.body_case = MMC__FRAME__BODY_REPLY;
	out.reply = &r;
	if (f->id)
		conn_send(c, &out, true);
}

static void on_ping(struct conn *c, const Mmc__Frame *f)
{
	rpc_reply_code(c, f->id, 0);
}

/* a local service finished a task we sent it */
static void on_task_reply(struct conn *c, const Mmc__Frame *f)
{
	tier_task_done(c->m, c->session.svc, f->id, f->reply->result);
}

static void on_key_batch(struct conn *c, const Mmc__Frame *f);

/* How a body is served. */
struct rpc_route {
	void (*fn)(struct conn *c, const Mmc__Frame *f); /* NULL: a body this server does not serve */
	unsigned flags;                                  /* ROUTE_* */
	size_t batch; /* a key batch's offset of its KeyBatch pointer in the Frame (on_key_batch) */
};

#define ROUTE_STANDBY 1u /* served by a standby too (else redirected to the leader): a task's reply */

#define KEYS(body, field) [MMC__FRAME__BODY_##body] = {on_key_batch, 0, offsetof(Mmc__Frame, field)}

/* Every body a peer may send, by its case; what the connection may send before its hello is auth.c's to say. */
static const struct rpc_route routes[] = {
    [MMC__FRAME__BODY_HELLO] = {auth_on_hello, 0, 0},
    [MMC__FRAME__BODY_AUTH_PROOF] = {auth_on_proof, 0, 0},
    [MMC__FRAME__BODY_REGISTER] = {on_register, 0, 0},
    [MMC__FRAME__BODY_UNREGISTER] = {on_unregister, 0, 0},
    [MMC__FRAME__BODY_PING] = {on_ping, 0, 0},
    [MMC__FRAME__BODY_SERVICE] = {on_service, 0, 0},
    [MMC__FRAME__BODY_REPLY] = {on_task_reply, ROUTE_STANDBY, 0},
    [MMC__FRAME__BODY_REMOVE_MATCHING] = {on_remove_matching, 0, 0},
    [MMC__FRAME__BODY_EXTENT_REQUEST] = {rpc_extent_request, 0, 0},
    [MMC__FRAME__BODY_PUT] = {rpc_put, 0, 0},
    [MMC__FRAME__BODY_EXTENT_RETURN] = {rpc_extent_return, 0, 0},
    KEYS(ALLOC, alloc),
    KEYS(COMMIT, commit),
    KEYS(GET, get),
    KEYS(RELEASE, release),
    KEYS(REMOVE, remove),
    KEYS(EXIST, exist),
    KEYS(QUERY, query),
    KEYS(ADD_LEASE, add_lease),
    KEYS(REMOVE_LEASE, remove_lease),
    KEYS(MALLOC, malloc),
    KEYS(WRITE_FINISH, write_finish),
    KEYS(EVICT, evict),
    KEYS(PREFETCH, prefetch),
};

static const struct rpc_route *route_of(const Mmc__Frame *f)
{
	static const struct rpc_route none;
	unsigned body = (unsigned)f->body_case;

	return body < sizeof(routes) / sizeof(routes[0]) ? &routes[body] : &none;
}

static Mmc__KeyBatch *batch_of(const Mmc__Frame *f)
{
	return *(Mmc__KeyBatch *const *)((const char *)f + route_of(f)->batch);
}

static void on_key_batch(struct conn *c, const Mmc__Frame *f)
{
	rpc_keys(c, f, batch_of(f));
}

int rpc_dispatch(struct conn *c, const Mmc__Frame *f)
{
	const struct rpc_route *r = route_of(f);

	c->m->stats.requests[(unsigned)f->body_case % 64]++;
	if (!auth_admits(c, f))
		return MMC_NOT_AUTHORIZED;
	/* leader election: a standby, or a leader still loading its state, serves nothing but redirects (a store
	 * follows one without the server's proof: the leader it names must still prove the cluster secret) */
	if (c->m->rpc->ha && !ha_serving(c->m->rpc->ha) && !(r->flags & ROUTE_STANDBY)) {
		rpc_redirect(c, f);
		return 0;
	}
	/* the decoded request is the arena's until the next one: its keys move into the tenant's namespace in place */
	tenant_keys_map(c, r->fn == on_key_batch ? batch_of(f) : NULL,
	                f->body_case == MMC__FRAME__BODY_PUT ? f->put : NULL);
	if (r->fn)
		r->fn(c, f);
	else /* a body this server does not serve: fail the request, keep the connection */
		rpc_reply_code(c, f->id, MMC_INVALID_PARAM);
	return 0;
}
