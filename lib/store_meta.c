/* Metadata calls: remove, exist, key info (single and batch), and the explicit tier moves. */
#include <stdlib.h>
#include <string.h>

#include "key_rpc.h"
#include "store.h"

#include <pb_decode.h>
#include <stdio.h>

static int simple_batch(mmc_store *s, uint32_t body, const char *const *keys, size_t n, int *results)
{
	int rc = store_check_ready(s);

	if (!rc && (!keys || !results || n == 0 || n > MMC_BATCH_MAX))
		rc = MMC_INVALID_PARAM;
	for (size_t i = 0; !rc && i < n; i++)
		if (!store_key_ok(s, keys[i]))
			rc = MMC_INVALID_PARAM;
	if (rc)
		return fail_all(results, n, rc);
	return key_batch_codes(s, body, keys, NULL, n, 0, results);
}

int mmc_batch_remove(mmc_store *s, const char *const *keys, size_t n, int *results)
{
	STORE_CALL(s);
	return simple_batch(s, WB_REMOVE, keys, n, results);
}

int mmc_batch_is_exist(mmc_store *s, const char *const *keys, size_t n, int *results)
{
	STORE_CALL(s);
	return simple_batch(s, WB_EXIST, keys, n, results);
}

int mmc_remove(mmc_store *s, const char *key)
{
	STORE_CALL(s);
	int result, rc = simple_batch(s, WB_REMOVE, &key, 1, &result);

	return rc ? rc : result;
}

static int decode_count(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	mmc_Reply r = mmc_Reply_init_zero;
	pb_istream_t st = pb_istream_from_buffer(data, len);

	if (body != WB_REPLY || !pb_decode(&st, mmc_Reply_fields, &r))
		return MMC_INTERNAL_ERROR;
	*(uint64_t *)c->arg = r.count;
	return r.result;
}

/* pattern "" matches every object on the wire; the public call for that is mmc_remove_all */
static int remove_matching(mmc_store *s, const char *pattern, uint64_t *removed)
{
	mmc_RemoveMatching req = mmc_RemoveMatching_init_zero;
	uint64_t n = 0;
	struct mcall c = {.decode = decode_count, .arg = &n};
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	snprintf(req.pattern, sizeof(req.pattern), "%s", pattern);
	rc = meta_call(s->meta, WB_REMOVE_MATCHING, mmc_RemoveMatching_fields, &req, &c);
	if (rc == 0)
		*removed = n;
	return rc;
}

int mmc_remove_by_regex(mmc_store *s, const char *regex, uint64_t *removed)
{
	STORE_CALL(s);
	size_t len = regex ? strlen(regex) : 0;

	if (!s || !removed || len == 0 || len > MMC_WIRE_PATTERN_MAX)
		return MMC_INVALID_PARAM;
	return remove_matching(s, regex, removed);
}

int mmc_remove_all(mmc_store *s, uint64_t *removed)
{
	STORE_CALL(s);
	if (!s || !removed)
		return MMC_INVALID_PARAM;
	return remove_matching(s, "", removed);
}

int mmc_is_exist(mmc_store *s, const char *key)
{
	STORE_CALL(s);
	int result, rc = simple_batch(s, WB_EXIST, &key, 1, &result);

	return rc ? rc : result;
}

static bool on_info(void *arg, size_t i, const mmc_KeyResult *r)
{
	mmc_key_info *out = &((mmc_key_info *)arg)[i];

	memset(out, 0, sizeof(*out));
	if (r->result || r->blobs_count == 0)
		return true;
	out->size = r->size;
	out->blob_num = r->blobs_count;
	for (pb_size_t b = 0; b < r->blobs_count && b < MMC_REPLICA_MAX; b++) {
		out->loc[b] = r->blobs[b].rank;
		out->type[b] = (uint16_t)r->blobs[b].media;
		out->gva[b] = mmc_gva_make(r->blobs[b].rank, r->blobs[b].media, r->blobs[b].offset);
	}
	return true;
}

int mmc_batch_get_key_info(mmc_store *s, const char *const *keys, size_t n, uint32_t flag, mmc_key_info *out)
{
	STORE_CALL(s);
	struct key_rpc k = {.body = WB_QUERY, .req = mmc_KeyBatch_init_zero, .on_result = on_info, .arg = out};
	int rc = store_check_ready(s);

	if (!rc && (!keys || !out || n == 0 || n > MMC_BATCH_MAX))
		rc = MMC_INVALID_PARAM;
	for (size_t i = 0; !rc && i < n; i++)
		if (!store_key_ok(s, keys[i]))
			rc = MMC_INVALID_PARAM;
	if (!rc) {
		k.items = (struct wire_items){.n = n, .keys = keys};
		rc = key_rpc_call(s, &k);
	}
	if (rc && out && n <= MMC_BATCH_MAX)
		memset(out, 0, n * sizeof(*out));
	return rc;
}

int mmc_get_key_info(mmc_store *s, const char *key, uint32_t flag, mmc_key_info *out)
{
	STORE_CALL(s);
	return mmc_batch_get_key_info(s, &key, 1, flag, out);
}

static int tier_move(mmc_store *s, uint32_t body, const char *const *keys, size_t n, bool pair_ok, uint32_t flags)
{
	int *results, rc;

	if ((rc = store_check_ready(s)))
		return rc;
	if (!pair_ok || flags || !keys || n == 0 || n > MMC_BATCH_MAX)
		return MMC_INVALID_PARAM;
	results = calloc(n, sizeof(*results));
	if (!results)
		return MMC_MALLOC_FAILED;
	rc = simple_batch(s, body, keys, n, results);
	for (size_t i = 0; !rc && i < n; i++)
		if (results[i])
			rc = results[i];
	free(results);
	return rc;
}

int mmc_prefetch_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                      uint32_t flags)
{
	STORE_CALL(s);
	return tier_move(s, WB_PREFETCH, keys, n, src_media == MMC_MEDIA_SSD && dst_media == MMC_MEDIA_DRAM, flags);
}

int mmc_evict_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                   uint32_t flags)
{
	STORE_CALL(s);
	return tier_move(s, WB_EVICT, keys, n, src_media == MMC_MEDIA_DRAM && dst_media == MMC_MEDIA_SSD, flags);
}
