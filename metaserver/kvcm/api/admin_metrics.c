/*
 * getMetrics (reference kvcm.md §4.16): what GET /metrics shows, as JSON. Read back from the very text /metrics
 * serves, so the two cannot disagree: one entry per sample line, its labels as tags, an integer value as
 * int_value and any other as float_value.
 */
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "kvcm_state.h"
#include "metrics.h"

#define MAX_TAGS 8

struct tags {
	const char *key[MAX_TAGS], *value[MAX_TAGS];
	int n;
};

/* The k="v",... of a sample line, split in place; false when it is not of that form. */
static bool parse_tags(char *p, struct tags *t)
{
	t->n = 0;
	while (p && *p && *p != '}') {
		char *eq = strchr(p, '='), *end;

		if (t->n == MAX_TAGS || !eq || eq[1] != '"' || !(end = strchr(eq + 2, '"')))
			return false;
		*eq = *end = '\0';
		t->key[t->n] = p;
		t->value[t->n++] = eq + 2;
		p = end + 1 + (end[1] == ',');
	}
	return true;
}

static void sample(struct jw *w, char *line)
{
	char *value = strrchr(line, ' '), *brace = strchr(line, '{'), *end;
	struct tags t;
	long long i;

	if (!value || line[0] == '#')
		return;
	*value++ = '\0';
	if (brace)
		*brace++ = '\0';
	if (!parse_tags(brace, &t))
		return;
	jw_obj(w);
	jw_kstr(w, "metric_name", line);
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
	for (int j = 0; j < t.n; j++) {
		jw_obj(w);
		jw_kstr(w, "tag_key", t.key[j]);
		jw_kstr(w, "tag_value", t.value[j]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

void admin_get_metrics(struct call *c)
{
	struct evbuffer *b = evbuffer_new();
	char *text, *line, *save = NULL;
	size_t n;

	if (!b) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	metrics_text(c->k, b);
	n = evbuffer_get_length(b);
	text = malloc(n + 1);
	if (!text) {
		evbuffer_free(b);
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
		sample(&c->out, line);
	jw_arr_end(&c->out);
	jw_kstr(&c->out, "extra_data", "");
	free(text);
}
