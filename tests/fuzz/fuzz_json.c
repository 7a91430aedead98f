/*
 * libFuzzer target: the KVCM fast request readers against jansson, differentially. The block-key reader
 * (getCacheLocation's block_keys, getHostCacheState's block_cache_keys) and the reportEvent reader each accept only
 * a subset of JSON and decline the rest to jansson; for every body they accept, what they read must equal what the
 * server reads from jansson's tree of the same body (json_loadb with JSON_REJECT_DUPLICATES, as json_in.c does):
 * the same keys, the same other members, the same events. A difference aborts.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "key_reader.h"
#include "kvcm_state.h"
#include "report_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_KEYS 4096

#define check(cond)                                                                                                    \
	do {                                                                                                           \
		if (!(cond))                                                                                           \
			abort();                                                                                       \
	} while (0)

/* The reader's other members equal jansson's object less the key array. */
static void same_members(json_t *theirs, json_t *ours, const char *skip)
{
	const char *k;
	json_t *v;

	check(json_object_size(theirs) == json_object_size(ours) + (skip ? 1 : 0));
	json_object_foreach(theirs, k, v) if (!skip || strcmp(k, skip) != 0)
	    check(json_equal(v, json_object_get(ours, k)));
}

static void keys_reader(const struct route_reader *reader, const char *name, const char *body, size_t len)
{
	struct kvcm k;
	struct route route = {0};
	struct call c = {0};
	int64_t *keys;
	size_t n;
	json_t *j, *arr;

	memset(&k, 0, sizeof(k));
	k.conf.max_keys = MAX_KEYS;
	route.reader = reader;
	c.k = &k;
	c.route = &route;
	if (!reader->read(&c, body, len))
		return;
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	check(j && json_is_object(j));
	arr = json_object_get(j, name);
	check(json_is_array(arr) && key_reader_take(&c, name, &keys, &n) && n == json_array_size(arr));
	for (size_t i = 0; i < n; i++)
		check(json_is_integer(json_array_get(arr, i)) && json_integer_value(json_array_get(arr, i)) == keys[i]);
	same_members(j, c.body, name);
	free(keys);
	reader->release(c.parsed);
	json_decref(c.body);
	json_decref(j);
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void same_block(const struct er_block *a, const struct er_block *b)
{
	check(a->key == b->key && same_str(a->medium, b->medium) && a->nspecs == b->nspecs);
	for (size_t i = 0; i < a->nspecs; i++)
		check(same_str(a->specs[i].name, b->specs[i].name) && same_str(a->specs[i].uri, b->specs[i].uri));
}

static void events_reader(const char *body, size_t len)
{
	struct er_events scanned, tree;
	json_t *top = NULL, *j, *events;

	er_events_init(&scanned);
	if (!er_events_scan(&scanned, body, len, MAX_KEYS, &top)) {
		er_events_free(&scanned);
		return;
	}
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	events = j ? json_object_get(j, "events") : NULL;
	/* no "events" member is no event, to the handler on either path */
	check(j && json_is_object(j) && (!events || json_is_array(events)));
	er_events_init(&tree);
	check((!events || er_events_from_json(&tree, events) == 0) && tree.n == scanned.n);
	for (size_t i = 0; i < tree.n; i++) {
		const struct er_event *a = &tree.ev[i], *b = &scanned.ev[i];

		check(a->declared == b->declared && a->type == b->type && a->nblocks == b->nblocks);
		if (a->type)
			same_block(&a->b, &b->b);
		for (size_t s = 0; a->type == EV_SNAPSHOT && s < a->nblocks; s++)
			same_block(&a->blocks[s], &b->blocks[s]);
	}
	same_members(j, top, events ? "events" : NULL);
	er_events_free(&tree);
	er_events_free(&scanned);
	json_decref(top);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;

	keys_reader(&block_keys_reader, "block_keys", body, size);
	keys_reader(&block_cache_keys_reader, "block_cache_keys", body, size);
	events_reader(body, size);
	return 0;
}
