/* KeyBatch round trips shared by every key call, and the argument checks they share. */
#include "key_rpc.h"

#include "clock.h"
#include "meta_conn.h"
#include "store.h"

bool direct_is_put(int32_t d)
{
	return d == MMC_COPY_L2G || d == MMC_COPY_H2G || d == MMC_COPY_L2GH || d == MMC_COPY_H2GH || d == MMC_COPY_AUTO;
}

bool direct_is_get(int32_t d)
{
	return d == MMC_COPY_G2L || d == MMC_COPY_G2H || d == MMC_COPY_GH2L || d == MMC_COPY_GH2H || d == MMC_COPY_AUTO;
}

int fail_all(int *results, size_t n, int code)
{
	/* an n past the limit is the bad argument itself: results[] may be shorter than n */
	if (results && n <= MMC_BATCH_MAX)
		for (size_t i = 0; i < n; i++)
			results[i] = code;
	return code;
}

static int decode_keys(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	struct key_rpc *k = c->arg;
	/* at most one result per key asked (the sinks index the caller's arrays by it), and one for each when the call
	 * succeeded; a plain Reply only refuses the whole call: one that says success, or a positive code, is no
	 * answer to a key batch (the caller would read results nobody wrote) */
	struct wire_results sink = {k->on_result, k->arg, 0, k->items.n};
	int32_t result;

	if (body == WB_REPLY)
		result = meta_decode_reply(c, body, data, len);
	else if (body != WB_KEY_REPLY || wire_decode_key_reply(data, len, &sink, &result))
		return MMC_INTERNAL_ERROR;
	else if (result == 0 && sink.count != k->items.n)
		return MMC_INTERNAL_ERROR;
	return result < 0 || (result == 0 && body == WB_KEY_REPLY) ? result : MMC_INTERNAL_ERROR;
}

/* Calls that mean the same when sent twice: lookups, and removes (a second one finds the key gone). A put's alloc
 * or commit is not: its placement lives only in the server that made it. */
static bool repeatable(uint32_t body)
{
	return body == WB_GET || body == WB_EXIST || body == WB_QUERY || body == WB_REMOVE;
}

uint64_t call_deadline(const struct mmc_store *s)
{
	return clock_ms() + s->conf.c.retry_ms;
}

int key_rpc_call(struct mmc_store *s, struct key_rpc *k)
{
	struct mcall c = {
	    .decode = decode_keys, .arg = k, .reply_by_ms = k->reply_by_ms, .pinned = k->pinned, .on_conn = k->on_conn};
	struct wire_key_batch kb;
	int rc;

	c.deadline_ms = k->deadline_ms ? k->deadline_ms : call_deadline(s);
	wire_key_batch_init(&kb, &k->req, &k->items);
	k->retried = false;
	/* a call the dying connection failed goes again on the next one, within the same deadline as a call made
	 * while the connection was down (meta_call waits for it to come back, so this loop does not spin) */
	while ((rc = meta_call(s->meta, k->body, NULL, &kb.hand, &c)) == MMC_NOT_CONNECTED_META && store_retries(s) &&
	       repeatable(k->body) && clock_ms() < c.deadline_ms)
		k->retried = true;
	k->losses = c.losses;
	return rc;
}

int key_rpc_send(struct mmc_store *s, struct key_rpc *k, const pb_msgdesc_t *fields, const void *msg)
{
	struct mcall c = {
	    .decode = decode_keys, .arg = k, .deadline_ms = k->deadline_ms, .pinned = k->pinned, .on_conn = k->on_conn};
	int rc;

	k->retried = false;
	rc = meta_call(s->meta, k->body, fields, msg, &c);
	k->losses = c.losses;
	return rc;
}

struct codes {
	int *results;
};

static bool on_code(void *arg, size_t i, const mmc_KeyResult *r)
{
	((struct codes *)arg)->results[i] = r->result;
	return true;
}

int key_batch_codes_until(struct mmc_store *s, uint32_t body, const char *const *keys, const int32_t *values, size_t n,
                          uint64_t lease_ttl_ms, uint64_t deadline_ms, int *results)
{
	struct codes c = {results};
	struct key_rpc k = {
	    .body = body, .req = mmc_KeyBatch_init_zero, .on_result = on_code, .arg = &c, .deadline_ms = deadline_ms};
	int rc;

	k.req.lease_ttl_ms = lease_ttl_ms;
	k.items = (struct wire_items){.n = n, .keys = keys, .values = values};
	rc = key_rpc_call(s, &k);
	if (rc)
		return fail_all(results, n, rc);
	/* the first try may have removed the key (released the lease) before its server died: gone is what the
	 * caller asked for */
	for (size_t i = 0; k.retried && i < n; i++)
		if ((body == WB_REMOVE && results[i] == MMC_OBJECT_NOT_EXISTS) ||
		    (body == WB_REMOVE_LEASE && results[i] == MMC_LEASE_EXPIRED))
			results[i] = 0;
	return 0;
}

int key_batch_codes(struct mmc_store *s, uint32_t body, const char *const *keys, const int32_t *values, size_t n,
                    uint64_t lease_ttl_ms, int *results)
{
	return key_batch_codes_until(s, body, keys, values, n, lease_ttl_ms, 0, results);
}
