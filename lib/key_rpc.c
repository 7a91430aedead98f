/* KeyBatch round trips shared by every key call, and the argument checks they share. */
#include "store_ops.h"

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
	if (results)
		for (size_t i = 0; i < n; i++)
			results[i] = code;
	return code;
}

static int decode_keys(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	struct key_rpc *k = c->arg;
	struct wire_results sink = {k->on_result, k->arg, 0};
	int32_t result;

	if (body == WB_REPLY)
		return meta_decode_reply(c, body, data, len);
	if (body != WB_KEY_REPLY || wire_decode_key_reply(data, len, &sink, &result))
		return MMC_INTERNAL_ERROR;
	if (result == 0 && sink.count != k->items.n)
		return MMC_INTERNAL_ERROR;
	return result;
}

int key_rpc_call(struct mmc_store *s, struct key_rpc *k)
{
	struct mcall c = {.decode = decode_keys, .arg = k};

	wire_items_bind(&k->req, &k->items);
	return meta_call(s->meta, k->body, mmc_KeyBatch_fields, &k->req, &c);
}

struct codes {
	int *results;
};

static bool on_code(void *arg, size_t i, const mmc_KeyResult *r)
{
	((struct codes *)arg)->results[i] = r->result;
	return true;
}

int key_batch_codes(struct mmc_store *s, uint32_t body, const char *const *keys, const int32_t *values, size_t n,
                    uint64_t lease_ttl_ms, int *results)
{
	struct codes c = {results};
	struct key_rpc k = {.body = body, .req = mmc_KeyBatch_init_zero, .on_result = on_code, .arg = &c};
	int rc;

	k.req.lease_ttl_ms = lease_ttl_ms;
	k.items = (struct wire_items){.n = n, .keys = keys, .values = values};
	rc = key_rpc_call(s, &k);
	return rc ? fail_all(results, n, rc) : 0;
}
