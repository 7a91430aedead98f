#include "key_reply.h"

#include "conn.h"
#include "key_codec.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"
#include "rpc.h"

int key_reply_begin(struct key_reply *r, struct arena *a, size_t n)
{
	r->items = r->end = arena_alloc(a, (n ? n : 1) * KEY_RESULT_MAX);
	r->n = 0;
	r->cap = n;
	return r->items ? 0 : MMC_MALLOC_FAILED;
}

void key_reply_add(struct key_reply *r, const struct key_result *kr)
{
	MMC_ASSERT(r->n < r->cap);
	r->end = key_result_put(r->end, kr);
	r->n++;
}

void key_reply_add_code(struct key_reply *r, int32_t result)
{
	MMC_ASSERT(r->n < r->cap);
	r->end = key_result_code_put(r->end, result);
	r->n++;
}

void key_reply_send(struct conn *c, uint64_t id, const struct key_reply *r, int32_t result, bool durable)
{
	uint8_t head[32];
	size_t items = result || !r->items ? 0 : (size_t)(r->end - r->items);

	if (!id)
		return;
	conn_send_bytes(c, head, key_reply_head(head, id, result, items), r->items, items, durable);
}

void key_results_send(struct conn *c, uint64_t id, const struct key_result *r, size_t n, bool durable)
{
	struct key_reply rep;

	if (!id)
		return;
	if (key_reply_begin(&rep, &c->m->arena, n)) {
		rpc_reply_code(c, id, MMC_MALLOC_FAILED);
		return;
	}
	for (size_t i = 0; i < n; i++)
		key_reply_add(&rep, &r[i]);
	key_reply_send(c, id, &rep, 0, durable);
}
