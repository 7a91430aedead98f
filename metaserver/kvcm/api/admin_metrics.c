/*
 * getMetrics (reference kvcm.md §4.16): what GET /metrics shows, as JSON. Read back from the very text /metrics
 * serves, so the two cannot disagree: one entry per sample line, its labels as tags, an integer value as
 * int_value and any other as float_value. Then, per API, the two the reference's clients read, in its names:
 * service.query_counter (requests) and service.query_rt_us (mean latency), tagged api_name=<Method>. The reclaimer's
 * metrics also come under the reference's cache_reclaimer.* names, with the same tags.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "kvcm_state.h"
#include "metrics.h"
#include "reclaim.h"

#define MAX_TAGS 8

struct tags {
	const char *key[MAX_TAGS], *value[MAX_TAGS];
	int n;
};

/*
 * Unescapes a label value in place (the text format's \\, \" and \n) up to its closing quote; returns the quote's
 * position, or NULL when there is none.
 */
static char *label_value(char *v)
{
	char *w = v;

	for (; *v && *v != '"'; v++) {
		if (*v == '\\' && v[1]) {
			v++;
			*w++ = *v == 'n' ? '\n' : *v;
		} else {
			*w++ = *v;
		}
	}
	if (!*v)
		return NULL;
	*w = '\0';
	return v;
}

/* The k="v",... of a sample line, split in place; false when it is not of that form. */
static bool parse_tags(char *p, struct tags *t)
{
	t->n = 0;
	while (p && *p && *p != '}') {
		char *eq = strchr(p, '='), *end;

		if (t->n == MAX_TAGS || !eq || eq[1] != '"' || !(end = label_value(eq + 2)))
			return false;
		*eq = '\0';
		t->key[t->n] = p;
		t->value[t->n++] = eq + 2;
		p = end + 1 + (end[1] == ',');
	}
	return true;
}

/* Per-API request counts and latency sums, gathered from the samples for the reference's two metrics. */
#define MAX_APIS 128

struct api_totals {
	int n;
	struct {
		char name[64];
		long long requests, timed;
		double seconds;
	} a[MAX_APIS];
};

static int api_slot(struct api_totals *t, const struct tags *tags)
{
	const char *api = NULL;

	for (int i = 0; i < tags->n; i++)
		if (strcmp(tags->key[i], "api") == 0)
			api = tags->value[i];
	if (!api)
		return -1;
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->a[i].name, api) == 0)
			return i;
	if (t->n == MAX_APIS || strlen(api) >= sizeof(t->a[0].name))
		return -1;
	strcpy(t->a[t->n].name, api);
	return t->n++;
}

static void gather(struct api_totals *t, const char *name, const struct tags *tags, const char *value)
{
	int i = api_slot(t, tags);

	if (i < 0)
		return;
	if (strcmp(name, "mmc_kvcm_requests_total") == 0)
		t->a[i].requests += strtoll(value, NULL, 10);
	else if (strcmp(name, "mmc_kvcm_request_duration_seconds_sum") == 0)
		t->a[i].seconds += strtod(value, NULL);
	else if (strcmp(name, "mmc_kvcm_request_duration_seconds_count") == 0)
		t->a[i].timed += strtoll(value, NULL, 10);
}

static void reference_metric(struct jw *w, const char *name, const char *api, bool integer, double v)
{
	char method[64];

	snprintf(method, sizeof(method), "%c%s", api[0] >= 'a' && api[0] <= 'z' ? api[0] - 'a' + 'A' : api[0], api + 1);
	jw_obj(w);
	jw_kstr(w, "metric_name", name);
	jw_key(w, "metric_value");
	jw_obj(w);
	jw_key(w, integer ? "int_value" : "float_value");
	if (integer)
		jw_i64s(w, (int64_t)v);
	else
		jw_double(w, v);
	jw_obj_end(w);
	jw_key(w, "metric_tags");
	jw_arr(w);
	jw_obj(w);
	jw_kstr(w, "tag_key", "api_name");
	jw_kstr(w, "tag_value", method);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_obj_end(w);
}

static void reference_metrics(struct jw *w, const struct api_totals *t)
{
	for (int i = 0; i < t->n; i++) {
		reference_metric(w, "service.query_counter", t->a[i].name, true, (double)t->a[i].requests);
		if (t->a[i].timed)
			reference_metric(w, "service.query_rt_us", t->a[i].name, false,
			                 t->a[i].seconds * 1e6 / (double)t->a[i].timed);
	}
}

static void entry(struct jw *w, const char *name, const struct tags *tg, const char *value)
{
	char *end;
	long long i;

	jw_obj(w);
	jw_kstr(w, "metric_name", name);
	jw_key(w, "metric_value");
	jw_obj(w);
	i = strtoll(value, &end, 10);
	if (*end) {
		jw_key(w, "float_value");
		jw_double(w, strtod(value, NULL));
	} else {
		jw_key(w, "int_value");
		jw_i64s(w, i);
	}
	jw_obj_end(w);
	jw_key(w, "metric_tags");
	jw_arr(w);
	for (int j = 0; j < tg->n; j++) {
		jw_obj(w);
		jw_kstr(w, "tag_key", tg->key[j]);
		jw_kstr(w, "tag_value", tg->value[j]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* A sample line, and again under the reference's name when it is one of the reclaimer's (cache_reclaimer.*). */
static void sample(struct jw *w, char *line, struct api_totals *t)
{
	char *value = strrchr(line, ' '), *brace = strchr(line, '{'), ref_value[32];
	const char *ref;
	struct tags tg;
	double scale;

	if (!value || line[0] == '#')
		return;
	*value++ = '\0';
	if (brace)
		*brace++ = '\0';
	if (!parse_tags(brace, &tg))
		return;
	gather(t, line, &tg, value);
	entry(w, line, &tg, value);
	if ((ref = reclaim_metric_reference(line, &scale))) {
		snprintf(ref_value, sizeof(ref_value), "%lld", (long long)(strtod(value, NULL) * scale + 0.5));
		entry(w, ref, &tg, ref_value);
	}
}

void admin_get_metrics(struct call *c)
{
	struct evbuffer *b = evbuffer_new();
	struct api_totals *t = calloc(1, sizeof(*t));
	char *text, *line, *save = NULL;
	size_t n;

	if (!b || !t) {
		if (b)
			evbuffer_free(b);
		free(t);
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	metrics_text(c->k, b);
	n = evbuffer_get_length(b);
	text = malloc(n + 1);
	if (!text) {
		evbuffer_free(b);
		free(t);
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	evbuffer_remove(b, text, n);
	text[n] = '\0';
	evbuffer_free(b);
	call_ok(c, "");
	jw_ki64s(&c->out, "timestamp", (int64_t)(kvcm_now_us() / 1000));
	jw_key(&c->out, "metrics");
	jw_arr(&c->out);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		sample(&c->out, line, t);
	reference_metrics(&c->out, t);
	jw_arr_end(&c->out);
	jw_kstr(&c->out, "extra_data", "");
	free(text);
	free(t);
}
