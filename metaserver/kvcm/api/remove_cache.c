/*
 * removeCache and trimCache (reference kvcm.md §4.8-4.9): asynchronous deletes; the reply says they are
 * scheduled, callers poll to see them done.
 */
#include <stdlib.h>

#include "api.h"
#include "block_index.h"
#include "block_scan.h"
#include "deleter.h"
#include "kvcm_state.h"
#include "request_keys.h"

static uint64_t delay_ms(const struct instance *inst)
{
	return inst->group->delay_before_delete_ms > 0 ? (uint64_t)inst->group->delay_before_delete_ms : 0;
}

void api_remove_cache(struct call *c)
{
	int64_t *keys;
	size_t n;
	struct mask m;

	/* the mask is read for its shape only: the reference ignores it here */
	if (!call_mask(c, c->body, "block_mask", &m) || !call_keys(c, "RemoveCache", &keys, &n))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct block *b = block_find(c->inst, keys[i]);

		if (b)
			deleter_submit_block(c->k, c->inst, b, delay_ms(c->inst));
	}
	free(keys);
	call_ok(c, "Cache removed successfully");
out:
	mask_free(&m);
}

/* Every block of the instance is CLS_DELETING, no longer served: the reference answers then too. */
static void trimmed(void *arg)
{
	struct call *c = arg;

	call_ok(c, "Cache trimmed successfully");
	call_resume(c);
}

void api_trim_cache(struct call *c)
{
	int strategy = jd_enum(&c->d, c->body, "strategy", &enum_trim_strategy);

	jd_i32(&c->d, c->body, "begin_timestamp");
	jd_i32(&c->d, c->body, "end_timestamp");
	if (call_decode_failed(c))
		return;
	if (strategy == TS_REMOVE_ALL_META || strategy == TS_TIMESTAMP) {
		call_fail(c, KC_UNSUPPORTED, "trim strategy %s is not implemented",
		          enum_name(&enum_trim_strategy, strategy));
		return;
	}
	if (strategy != TS_REMOVE_ALL_CACHE) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {TrimCache: {strategy}}");
		return;
	}
	call_defer(c);
	if (trim_instance(c->k, c->inst, trimmed, c)) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		call_resume(c);
	}
}
