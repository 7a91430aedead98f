#include "auth.h"

#include <stdio.h>
#include <string.h>

#include "auth_proof.h"
#include "conn.h"
#include "log.h"
#include "mmc/mmc.h"
#include "tls.h"

static int refused_bucket;
static int version_bucket; /* a peer that says hello in another version again and again */

static bool token_set(const struct conn *c)
{
	return c->m->conf.auth_token[0] != '\0';
}

/* A tenant named in a hello that no tenant of this server is: challenged with a secret nobody has, so the store
 * cannot tell a name that is not configured from a secret that is wrong (tenant names are not to be probed). NULL
 * when no random secret could be drawn: then nobody is challenged with one (a fixed one could be proved). */
static const char *unknown_secret(void)
{
	static char secret[2 * MMC_WIRE_NONCE + 1];
	uint8_t r[MMC_WIRE_NONCE];

	if (!secret[0]) {
		if (auth_random(r, sizeof(r)))
			return NULL;
		for (size_t i = 0; i < sizeof(r); i++)
			snprintf(secret + 2 * i, 3, "%02x", r[i]);
	}
	return secret;
}

/* Whether the tenant c claimed can be admitted: the default one, or one of this server's that is not removed. */
static bool claim_live(const struct conn *c)
{
	return c->claim == 0 || (c->claim != TENANT_NONE && !c->m->tenants.t[c->claim].removed);
}

/* The secret c must prove and the label its proofs carry, for the tenant its hello claimed (NULL: none can be). A
 * removed tenant's secret is gone (wiped): it is challenged as a name nobody configured. */
static const char *claimed_secret(const struct conn *c, const char *base, char *label, size_t cap)
{
	const struct tenants *ts = &c->m->tenants;

	if (c->claim == 0) {
		auth_tenant_label(label, cap, base, NULL);
		return c->m->conf.auth_token;
	}
	auth_tenant_label(label, cap, base, c->claim_name);
	return claim_live(c) ? ts->t[c->claim].secret : unknown_secret();
}

/* The tenant c's client certificate was issued to (its common name is the tenant's), or NULL: none, or a name of
 * no tenant. */
static const struct tenant *certificate_tenant(const struct conn *c)
{
	char cn[MMC_TENANT_NAME_MAX + 2];

	if (!c->m->tenants.n || !rpc_tls_peer_name(c->m, c->bev, cn, sizeof(cn)))
		return NULL;
	return tenant_by_name(c->m, cn);
}

/* A connection whose certificate was issued to a tenant may be that tenant's only (it still proves the tenant's
 * secret). */
static bool certificate_agrees(const struct conn *c)
{
	const struct tenant *t = certificate_tenant(c);

	return !t || t == c->m->tenants.t || (uint32_t)(t - c->m->tenants.t) == c->claim;
}

/* The tenant a Hello names: 0 (none, or "default"), its index, or TENANT_NONE (not one of this server's). */
static uint32_t hello_tenant(struct conn *c, const Mmc__Hello *h)
{
	const struct tenant *t;

	if (!h->tenant || !h->tenant[0] || strcmp(h->tenant, "default") == 0)
		return 0;
	snprintf(c->claim_name, sizeof(c->claim_name), "%.*s", MMC_TENANT_NAME_MAX, h->tenant);
	t = strlen(h->tenant) <= MMC_TENANT_NAME_MAX ? tenant_by_name(c->m, h->tenant) : NULL;
	return t ? (uint32_t)(t - c->m->tenants.t) : TENANT_NONE;
}

static void send_hello_reply(struct conn *c, uint64_t id, int result)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__HelloReply r = MMC__HELLO_REPLY__INIT;

	if (!id) /* a Hello that wants no reply (no client sends one) */
		return;
	r.result = result;
	r.version = MMC_WIRE_VERSION;
	r.minor = MMC_WIRE_MINOR;
	if (result == 0) {
		r.session = c->session.id;
		r.lease_ttl_ms = c->m->conf.lease_ttl_ms;
		r.heartbeat_timeout_ms = c->m->conf.heartbeat_timeout_ms;
		r.server_run = c->m->rpc->run_id;
	}
	out.id = id;
	out.body_case = MMC__FRAME__BODY_HELLO_REPLY;
	out.hello_reply = &r;
	conn_send(c, &out, false);
}

/* Every credential refused: one count, one line (rate-limited: peers that never got in cannot fill the log). */
static void credentials_refused(struct conn *c, const char *why, const char *note)
{
	c->m->stats.rpc_refused[RPC_REFUSED_CREDENTIALS]++;
	log_ratelimited(&refused_bucket, LOG_WARN,
	                "op=hello session=%llu peer=%s host=\"%s\" pid=%u err=%s note=\"%s\"",
	                (unsigned long long)c->session.id, c->peer, c->session.host, c->session.pid, why, note);
}

/* Answers the request with the refusal, then closes: the peer learns why instead of seeing a bare close. */
static void refuse(struct conn *c, uint64_t id, int result, const char *why, const char *note)
{
	credentials_refused(c, why, note);
	send_hello_reply(c, id, result);
	conn_close_flushed(c, why);
}

static void admit(struct conn *c, uint64_t id)
{
	c->phase = CONN_READY;
	c->session.tenant = c->claim;
	conn_admitted(c);
	send_hello_reply(c, id, 0);
}

static void challenge(struct conn *c, const Mmc__Hello *h, uint64_t id)
{
	char label[64];
	const char *token = claimed_secret(c, AUTH_LABEL_SERVER, label, sizeof(label));
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__AuthChallenge ch = MMC__AUTH_CHALLENGE__INIT;
	uint8_t proof[MMC_WIRE_MAC];

	if (!token) {
		refuse(c, id, MMC_ERROR, "no_randomness", "the server could not make a secret to challenge with");
		return;
	}
	if (h->client_nonce.len != MMC_WIRE_NONCE) {
		refuse(c, id, MMC_NOT_AUTHORIZED, "no_credentials", "the hello holds no nonce to challenge");
		return;
	}
	memcpy(c->client_nonce, h->client_nonce.data, MMC_WIRE_NONCE);
	if (auth_random(c->server_nonce, MMC_WIRE_NONCE) ||
	    auth_mac(token, strlen(token), label, c->client_nonce, MMC_WIRE_NONCE, c->server_nonce, MMC_WIRE_NONCE,
	             proof)) {
		refuse(c, id, MMC_ERROR, "no_randomness", "the server could not make a nonce");
		return;
	}
	ch.server_nonce = (ProtobufCBinaryData){MMC_WIRE_NONCE, c->server_nonce};
	ch.server_proof = (ProtobufCBinaryData){MMC_WIRE_MAC, proof};
	out.id = id;
	out.body_case = MMC__FRAME__BODY_AUTH_CHALLENGE;
	out.auth_challenge = &ch;
	c->phase = CONN_CHALLENGED;
	conn_send(c, &out, false);
}

void auth_on_hello(struct conn *c, const Mmc__Frame *f)
{
	const Mmc__Hello *h = f->hello;

	if (h->host)
		snprintf(c->session.host, sizeof(c->session.host), "%s", h->host);
	c->session.pid = h->pid;
	c->session.minor = h->minor;
	if (h->version != MMC_WIRE_VERSION) {
		log_ratelimited(
		    &version_bucket, LOG_WARN,
		    "op=hello peer=%s host=\"%s\" err=wire_version_mismatch client_version=%u server_version=%u",
		    c->peer, c->session.host, h->version, MMC_WIRE_VERSION);
		c->m->stats.rpc_refused[RPC_REFUSED_WIRE_VERSION]++;
		send_hello_reply(c, f->id, MMC_INVALID_PARAM);
		conn_close_flushed(c, "wire_version_mismatch");
		return;
	}
	if (c->phase == CONN_READY) {
		send_hello_reply(c, f->id, 0); /* a second hello changes nothing, its tenant least of all */
		return;
	}
	c->claim = hello_tenant(c, h);
	if (!certificate_agrees(c)) {
		refuse(c, f->id, MMC_NOT_AUTHORIZED, "tenant_certificate",
		       "the client certificate names a tenant, the hello another one");
		return;
	}
	if (c->claim == 0 && !token_set(c))
		admit(c, f->id);
	else
		challenge(c, h, f->id);
}

/* A client certificate that names a tenant other than the default one: such a connection says its hello, and who
 * it is there (certificate_agrees), before anything else is served. */
static bool certificate_names_tenant(const struct conn *c)
{
	const struct tenant *t = certificate_tenant(c);

	return t && t != c->m->tenants.t;
}

void auth_on_proof(struct conn *c, const Mmc__Frame *f)
{
	char label[64];
	const char *token = claimed_secret(c, AUTH_LABEL_CLIENT, label, sizeof(label));
	const ProtobufCBinaryData *p = &f->auth_proof->client_proof;
	uint8_t expected[MMC_WIRE_MAC];

	/* a tenant removed while its connection was challenged (reload) is refused whatever it proves */
	if (!token || !claim_live(c) ||
	    auth_mac(token, strlen(token), label, c->server_nonce, MMC_WIRE_NONCE, c->client_nonce, MMC_WIRE_NONCE,
	             expected) ||
	    !auth_mac_equal(p->data, p->len, expected)) {
		refuse(c, f->id, MMC_NOT_AUTHORIZED, "bad_credentials",
		       c->claim ? "the proof is not of the tenant's secret" : "the proof is not of the cluster secret");
		return;
	}
	admit(c, f->id);
}

void auth_on_close(struct conn *c, const char *why)
{
	/* libmmc checks the server's proof before it proves its own: a store without the secret, or with another one,
	 * hangs up after the challenge, and that close is the only sign the server gets of it */
	if (c->phase != CONN_CHALLENGED || c->closing || (strcmp(why, "eof") != 0 && strcmp(why, "socket_error") != 0))
		return;
	credentials_refused(c, "no_proof",
	                    "the peer left after the challenge: a store without the cluster secret or with another one "
	                    "(ock.mmc.client.auth_token_file)");
}

bool auth_admits(const struct conn *c, const Mmc__Frame *f)
{
	if (c->phase == CONN_READY)
		return f->body_case != MMC__FRAME__BODY_AUTH_PROOF;
	if (c->phase == CONN_CHALLENGED)
		return f->body_case == MMC__FRAME__BODY_AUTH_PROOF;
	/* without a cluster secret, a peer that skips its hello is served as before (raw-frame tools and tests), in
	 * frames no larger than a hello's until it says one (conn.c), as the default tenant: not one whose client
	 * certificate names another tenant */
	return f->body_case == MMC__FRAME__BODY_HELLO ||
	       (!token_set(c) && f->body_case != MMC__FRAME__BODY_AUTH_PROOF && !certificate_names_tenant(c));
}
